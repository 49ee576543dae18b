package rail0test

import (
	"encoding/json"
	"errors"
	"math/big"
	"strconv"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"
)

// Payment operations, as transaction rows name them.
const (
	opAuthorize    = "authorize"
	opCharge       = "charge"
	opCapture      = "capture"
	opVoid         = "void"
	opRelease      = "release"
	opRefund       = "refund"
	opDispute      = "dispute"
	opCloseDispute = "close_dispute"
)

var genericOperations = []string{opAuthorize, opCapture, opCharge, opVoid, opRelease, opRefund}

var allOperations = append(append([]string(nil), genericOperations...), opDispute, opCloseDispute)

var eip3009Fields = []apitypes.Type{
	{Name: "from", Type: "address"},
	{Name: "to", Type: "address"},
	{Name: "value", Type: "uint256"},
	{Name: "validAfter", Type: "uint256"},
	{Name: "validBefore", Type: "uint256"},
	{Name: "nonce", Type: "bytes32"},
}

// authorizationTypedData builds an EIP-3009 authorization in two forms.
// One is go-ethereum typed data, to verify signatures. The other is the
// JSON document sent to clients.
func authorizationTypedData(primary string, t *token, from, to common.Address, value *big.Int,
	validBefore int64, nonce common.Hash) (apitypes.TypedData, map[string]any) {
	chainID := math.NewHexOrDecimal256(t.ChainID)
	msg := map[string]any{
		"from":        from.Hex(),
		"to":          to.Hex(),
		"value":       value.String(),
		"validAfter":  "0",
		"validBefore": strconv.FormatInt(validBefore, 10),
		"nonce":       nonce.Hex(),
	}
	td := apitypes.TypedData{
		Types: apitypes.Types{
			"EIP712Domain": {
				{Name: "name", Type: "string"},
				{Name: "version", Type: "string"},
				{Name: "chainId", Type: "uint256"},
				{Name: "verifyingContract", Type: "address"},
			},
			primary: eip3009Fields,
		},
		PrimaryType: primary,
		Domain: apitypes.TypedDataDomain{
			Name: t.Name, Version: t.Version, ChainId: chainID, VerifyingContract: t.Address.Hex(),
		},
		Message: msg,
	}
	doc := map[string]any{
		"types":       td.Types,
		"primaryType": primary,
		"domain": map[string]any{
			"name":              t.Name,
			"version":           t.Version,
			"chainId":           t.ChainID,
			"verifyingContract": t.Address.Hex(),
		},
		"message": msg,
	}
	return td, doc
}

// payerTypedData is the payer's TransferWithAuthorization into the RAIL0
// contract. Its nonce is bound to the payment's mode, id and config hash.
func (s *Server) payerTypedData(p *payment) (apitypes.TypedData, map[string]any) {
	op := opAuthorize
	if p.Mode == modeCharge {
		op = opCharge
	}
	return authorizationTypedData("TransferWithAuthorization", p.Token, p.Payer, p.Chain.Contract.Address,
		p.Amount, p.AuthExpiry, authorizationNonce(op, p.Rail0ID, p.ConfigHash))
}

// refundTypedData is the payee's ReceiveWithAuthorization for a refund of
// amount. Its nonce is bound to the refundable balance before the refund.
// It is deterministic. So phase 2 and the simulated chain can check a
// signature without stored state.
func (s *Server) refundTypedData(p *payment, amount *big.Int) (apitypes.TypedData, map[string]any) {
	return authorizationTypedData("ReceiveWithAuthorization", p.Token, p.Payee, p.Chain.Contract.Address,
		amount, p.RefundExpiry, refundNonce(p.Rail0ID, p.ConfigHash, p.Refundable))
}

// verifyTypedSignature checks that sigHex over td recovers to want.
// It also checks that the token accepts the signature: s in the lower half
// of the curve order.
func verifyTypedSignature(td apitypes.TypedData, sigHex string, want common.Address) error {
	digest, _, err := apitypes.TypedDataAndHash(td)
	if err != nil {
		return err
	}
	got, err := recoverSigner(digest, sigHex)
	if err != nil {
		return err
	}
	if got != want {
		return errors.New("signature recovers to another address")
	}
	if !canonicalSignature(common.FromHex(sigHex), false) {
		return errors.New("the signature's s is in the upper half of the curve order")
	}
	return nil
}

// unsignedTx is the JSON carried in Transaction.unsigned_transaction.
type unsignedTx struct {
	ChainID              int64  `json:"chain_id"`
	Nonce                uint64 `json:"nonce"`
	To                   string `json:"to"`
	Value                string `json:"value"`
	Data                 string `json:"data"`
	GasLimit             uint64 `json:"gas_limit"`
	MaxPriorityFeePerGas string `json:"max_priority_fee_per_gas"`
	MaxFeePerGas         string `json:"max_fee_per_gas"`
	From                 string `json:"from"`
}

// newTransaction records a pending transaction for op, to be sent by from.
// For a refund, sig is the payee's refund authorization. Call with s.mu
// held.
func (s *Server) newTransaction(p *payment, op string, from common.Address, amount *big.Int, reason common.Hash, sig []byte) *transaction {
	now := s.now()
	c := call{op: op, id: p.Rail0ID, terms: termsOf(p), amount: amount, sig: sig, reason: reason}
	if op == opAuthorize || op == opCharge {
		c.sig = p.Signature
	}
	data := c.encode()
	gas := gasLimit(op, s.gasStateOf(p))
	u := unsignedTx{
		ChainID: p.Chain.ChainID, Nonce: s.st.nonceOf[from], To: p.Chain.Contract.Address.Hex(), Value: "0",
		Data: "0x" + common.Bytes2Hex(data), GasLimit: gas,
		MaxPriorityFeePerGas: simPriorityFee, MaxFeePerGas: simMaxFee, From: from.Hex(),
	}
	raw, _ := json.Marshal(u)
	unsigned := string(raw)
	tx := &transaction{
		ID: s.ent.uuid(), Payment: p, Operation: op, Status: "pending", Unsigned: &unsigned, Amount: amount,
		From: from, Data: data, Value: new(big.Int), Reason: reason, GasLimit: gas,
		PendingAt: &now, CreatedAt: now, UpdatedAt: now, seq: s.st.next(),
	}
	p.Txs = append(p.Txs, tx)
	return tx
}

var errUndecodable = errors.New("undecodable transaction")

// decodeSigned decodes a 0x02 raw transaction for chainID.
// It recovers the transaction's sender.
func decodeSigned(raw string, chainID int64) (*types.Transaction, common.Address, error) {
	b, err := hexBytes(raw)
	if err != nil || len(b) == 0 || b[0] != types.DynamicFeeTxType {
		return nil, common.Address{}, errUndecodable
	}
	var tx types.Transaction
	if err := tx.UnmarshalBinary(b); err != nil {
		return nil, common.Address{}, errUndecodable
	}
	if tx.ChainId() == nil || tx.ChainId().Cmp(big.NewInt(chainID)) != 0 {
		return nil, common.Address{}, errUndecodable
	}
	from, err := types.Sender(types.LatestSignerForChainID(big.NewInt(chainID)), &tx)
	if err != nil {
		return nil, common.Address{}, errUndecodable
	}
	return &tx, from, nil
}

func hexBytes(s string) ([]byte, error) {
	if len(s) < 2 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') {
		return nil, errUndecodable
	}
	b := common.FromHex(s)
	if len(b)*2 != len(s)-2 {
		return nil, errUndecodable
	}
	return b, nil
}

// markSubmitted moves tx to submitted with hash and queues it for confirmation.
// Call with s.mu held.
func (s *Server) markSubmitted(tx *transaction, hash common.Hash) {
	now := s.now()
	tx.Hash = &hash
	tx.Status = "submitted"
	tx.SubmittedAt = &now
	tx.UpdatedAt = now
	tx.ErrCode, tx.ErrTitle, tx.ErrDetail = nil, nil, nil
	tx.Unsigned = nil
	tx.submitClock = s.Clock.Now()
	for _, x := range s.st.inflight {
		if x == tx {
			return
		}
	}
	s.st.inflight = append(s.st.inflight, tx)
}

// settle confirms every submitted transaction whose confirmation delay has
// passed on the server clock. It goes in submission order, applying each
// effect. That is how the simulated chain advances: lazily, whenever a
// request reads state. Call with s.mu held.
func (s *Server) settle() {
	now := s.Clock.Now()
	keep := s.st.inflight[:0]
	for _, tx := range s.st.inflight {
		if tx.Status != "submitted" {
			continue
		}
		at := tx.submitClock
		if now.Before(at.Add(s.cfg.confirmationDelay)) {
			keep = append(keep, tx)
			continue
		}
		s.confirm(tx, at)
	}
	clear(s.st.inflight[len(keep):])
	s.st.inflight = keep
}

// confirm mines tx. The contract re-checks the step at the block time,
// the moment tx was submitted. Then it either applies the step or reverts.
func (s *Server) confirm(tx *transaction, blockTime time.Time) {
	p := tx.Payment
	now := s.now()
	block := p.Chain.nextBlock
	p.Chain.nextBlock++
	tx.BlockNumber = &block
	gas := gasUsed(tx.Operation, s.gasStateOf(p))
	tx.GasUsed = new(big.Int).SetUint64(min(gas, tx.GasLimit))
	tx.GasPrice, tx.BaseFee = simGasPrice, simBaseFee
	tx.UpdatedAt = now

	if e := s.chainCheck(tx, blockTime, gas); e != nil {
		tx.Status = "failed"
		code, title, detail := e.code, e.title, e.detail
		tx.ErrCode, tx.ErrTitle, tx.ErrDetail = &code, &title, &detail
		p.LastErrCode, p.LastErrMsg = &code, &detail
		p.UpdatedAt = now
		s.emit("payments.failed", p, tx)
		return
	}
	tx.Status = "confirmed"
	tx.ConfirmedAt = &now
	p.LastErrCode, p.LastErrMsg = nil, nil
	p.UpdatedAt = now
	s.applyEffect(tx, block, now)
}

// errRevert is a revert the gateway cannot name: it has no reason data.
// Causes are running out of gas, a value sent to a function that is not
// payable, and calldata the contract's ABI decoder refuses.
func errRevert(detail string) *apiError {
	return &apiError{code: "revert", title: "Transaction reverted", detail: detail}
}

func errTokenSignature(detail string) *apiError {
	return &apiError{code: "invalid_token_signature", title: "Invalid token authorization", detail: detail}
}

// chainCheck is what the EVM, the contract and the token would refuse at
// block time. It checks in the order they would meet it:
//  1. the gas and the value;
//  2. the ABI decoding of the calldata;
//  3. the Payment tuple against the stored config hash;
//  4. the step's rules;
//  5. the EIP-3009 signature;
//  6. the paying wallet's balance.
//
// It records on tx the amount and reason the calldata carries. That is what
// the chain executes. gas is what the call uses in the state it meets.
func (s *Server) chainCheck(tx *transaction, blockTime time.Time, gas uint64) *apiError {
	p := tx.Payment
	if tx.GasLimit < gas {
		return errRevert("The transaction ran out of gas.")
	}
	if tx.Value != nil && tx.Value.Sign() != 0 {
		return errRevert("The RAIL0 contract's functions are not payable; the call carried a value.")
	}
	c, err := decodeCall(tx.Data)
	if err != nil || c.op != tx.Operation || c.id != p.Rail0ID {
		return errRevert("The calldata does not decode as the RAIL0 call for this step of this payment.")
	}
	switch tx.Operation {
	case opCapture, opRefund:
		tx.Amount = c.amount
	case opDispute, opCloseDispute:
		tx.Reason = c.reason
	}
	if configHash(p.Chain.ChainID, p.Chain.Contract.Address, c.terms) != p.ConfigHash {
		return &apiError{code: "config_hash_mismatch", title: "Payment terms mismatch",
			detail: "The Payment terms in the call differ from this payment's; the contract reverted with PaymentMismatch."}
	}
	if tx.Amount != nil && tx.Amount.Sign() == 0 {
		return &apiError{code: "invalid_amount", title: "Invalid amount", detail: "The contract refuses an amount of 0."}
	}
	if e := s.guard(p, tx.Operation, tx.Amount, blockTime); e != nil {
		return &apiError{code: e.code, title: e.title, detail: e.detail}
	}
	var td apitypes.TypedData
	var from common.Address
	need := tx.Amount
	switch tx.Operation {
	case opAuthorize, opCharge:
		td, _ = s.payerTypedData(p)
		from, need = p.Payer, p.Amount
	case opRefund:
		td, _ = s.refundTypedData(p, tx.Amount)
		from = p.Payee
	default:
		return nil
	}
	if !canonicalSignature(c.sig, true) || verifyTypedSignature(td, hexutil.Encode(c.sig), from) != nil {
		return errTokenSignature("The EIP-3009 authorization in the call does not recover to the paying wallet.")
	}
	if s.balance(from, p.Token).Cmp(need) < 0 {
		return &apiError{code: "insufficient_token_balance", title: "Insufficient token balance",
			detail: "The paying wallet holds too little of the token."}
	}
	return nil
}

// applyEffect changes the payment as the confirmed transaction says.
// It emits the matching webhook event.
func (s *Server) applyEffect(tx *transaction, block int64, now time.Time) {
	p := tx.Payment
	escrow := p.Chain.Contract.Address
	if tx.Operation == opAuthorize || tx.Operation == opCharge {
		p.Chain.Contract.paid = true // later payments find its storage written
	}
	switch tx.Operation {
	case opAuthorize:
		s.move(p.Token, p.Payer, escrow, p.Amount)
		p.Status = statusAuthorized
		p.Capturable = new(big.Int).Set(p.Amount)
		s.emit("payments.authorized", p, tx)
	case opCharge:
		s.move(p.Token, p.Payer, p.Payee, p.Amount)
		p.Status = statusCharged
		p.Refundable = new(big.Int).Set(p.Amount)
		p.Captured = new(big.Int).Set(p.Amount)
		s.emit("payments.charged", p, tx)
	case opCapture:
		s.move(p.Token, escrow, p.Payee, tx.Amount)
		p.Capturable = new(big.Int).Sub(p.Capturable, tx.Amount)
		p.Refundable = new(big.Int).Add(p.Refundable, tx.Amount)
		p.Captured = new(big.Int).Add(p.Captured, tx.Amount)
		p.Status = statusPartiallyCaptured
		if p.Capturable.Sign() == 0 {
			p.Status = statusCaptured
		}
		s.emit("payments.captured", p, tx)
	case opVoid:
		s.move(p.Token, escrow, p.Payer, p.Capturable)
		tx.Amount = new(big.Int).Set(p.Capturable)
		p.Capturable = new(big.Int)
		p.Status = statusVoided
		s.emit("payments.voided", p, tx)
	case opRelease:
		s.move(p.Token, escrow, p.Payer, p.Capturable)
		tx.Amount = new(big.Int).Set(p.Capturable)
		p.Capturable = new(big.Int)
		if p.Captured.Sign() == 0 {
			p.Status = statusReleased
		}
		s.emit("payments.released", p, tx)
	case opRefund:
		s.move(p.Token, p.Payee, p.Payer, tx.Amount)
		p.Refundable = new(big.Int).Sub(p.Refundable, tx.Amount)
		p.Refunded = new(big.Int).Add(p.Refunded, tx.Amount)
		if p.Refundable.Sign() == 0 && p.Capturable.Sign() == 0 {
			p.Status = statusRefunded
		}
		// A refund that brings refundable_amount to 0 closes an open
		// dispute, whatever the status: escrow may still be capturable.
		// The payee sent it, with the contract's reserved reason.
		d := openDispute(p)
		closes := d != nil && p.Refundable.Sign() == 0
		if closes {
			s.closeDispute(d, "payee", fullRefundReason, block, now)
		}
		s.emit("payments.refunded", p, tx)
		if closes {
			s.emit("payments.dispute_closed", p, tx)
		}
	case opDispute:
		d := &dispute{ID: s.ent.uuid(), Payment: p, Status: "open", Reason: tx.Reason, OpenedBlock: &block,
			OpenedAt: now, seq: s.st.next()}
		p.Disputes = append(p.Disputes, d)
		s.st.disputes = append(s.st.disputes, d)
		p.Disputed = true
		s.emit("payments.disputed", p, tx)
	case opCloseDispute:
		if d := openDispute(p); d != nil {
			s.closeDispute(d, "payer", tx.Reason, block, now)
		}
		s.emit("payments.dispute_closed", p, tx)
	}
}

// fullRefundReason is the reason of the DisputeClosed event a full refund
// emits. It is the contract's REASON_FULL_REFUND: keccak256 of the name the
// shared contract guide gives it.
var fullRefundReason = keccak([]byte("rail0.dispute.full_refund"))

func openDispute(p *payment) *dispute {
	for _, d := range p.Disputes {
		if d.Status == "open" {
			return d
		}
	}
	return nil
}

func (s *Server) closeDispute(d *dispute, by string, reason common.Hash, block int64, now time.Time) {
	d.Status = "closed"
	d.ClosedBy = &by
	d.CloseReason = &reason
	d.ClosedBlock = &block
	d.ClosedAt = &now
	d.Payment.Disputed = false
}

// faucet is the balance every address starts with in each token: one million.
func faucet(t *token) *big.Int {
	return new(big.Int).Mul(big.NewInt(1_000_000), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Decimals)), nil))
}

// balance returns a's balance of t, creating the faucet balance on first
// use. The RAIL0 contract starts empty. Call with s.mu held.
func (s *Server) balance(a common.Address, t *token) *big.Int {
	m := s.st.balances[a]
	if m == nil {
		m = map[common.Address]*big.Int{}
		s.st.balances[a] = m
	}
	b := m[t.Address]
	if b == nil {
		b = new(big.Int)
		isContract := false
		for _, c := range s.st.chains {
			isContract = isContract || c.Contract != nil && c.Contract.Address == a
		}
		if !isContract {
			b = faucet(t)
		}
		m[t.Address] = b
	}
	return b
}

func (s *Server) move(t *token, from, to common.Address, amount *big.Int) {
	fb := s.balance(from, t)
	tb := s.balance(to, t)
	fb.Sub(fb, amount)
	tb.Add(tb, amount)
}
