package verify

import (
	"fmt"
)

// This file checks an unsigned_transaction: the call of the RAIL0 contract
// that the step must make, on the payment's terms, and the gas it may
// spend.

// The default bounds on the gas of a prepared transaction (see
// WithFeeCap) are far above what a RAIL0 call costs. They are low enough
// that a gateway cannot drain a signer. There are two:
//   - gas_limit per operation (maxGasLimit, below);
//   - gas_limit × max_fee_per_gas per chain, in that chain's native unit
//     (DefaultFeeBound, trust.go).

// contractGas is the gas each call of the RAIL0 contract v1.3.0 used. It
// was measured in an EVM with a minimal EIP-3009 token (contract guide,
// section 12.2). Each figure is the call's dearest measured state:
//   - authorize as the first payment of a fresh deployment (411,000
//     afterwards);
//   - charge with the same first-payment extra (98,000) over its measured
//     417,000, since a deployment's first payment may as well be a charge;
//   - capture at the dearer of its two figures;
//   - refund while the contract holds none of the token (207,000 from
//     escrow).
var contractGas = map[string]uint64{
	OpAuthorize: 509_000, OpCharge: 417_000 + 98_000, OpCapture: 175_000, OpRefund: 328_000,
	OpVoid: 77_000, OpRelease: 77_000, OpDispute: 43_000, OpCloseDispute: 43_000,
}

// gasMargin turns contractGas into the default bound on gas_limit. An
// honest limit exceeds the measured figure for two reasons:
//   - A production token costs more than the minimal one measured. USDC
//     sits behind a proxy, which adds a delegatecall, its storage reads
//     and a blocklist check to every transfer. That is allowed for here up
//     to a third more.
//   - A gateway estimates on the chain and adds its own margin, commonly
//     10 to 50%.
//
// 4/3 × 3/2 = 2. A limit above that is not an estimate of this call.
const gasMargin = 2

// ContractGas is the gas op was measured to use (contractGas): what an
// honest estimate starts from.
func ContractGas(op string) uint64 { return contractGas[op] }

// l1DataInGasLimit lists the chains whose gas limit also pays for the
// transaction's L1 data. Arbitrum One, Nova and Sepolia charge it in L2
// gas, before execution. There an honest limit follows the L1 price, and
// can be many times the call's own gas. So the default bound per operation
// does not apply there; the fee bound still does.
var l1DataInGasLimit = map[int64]bool{42161: true, 42170: true, 421614: true}

// MaxGasLimit is the bound on the gas_limit of op on chainID. It is the
// caller's (WithFeeCap) when set, else gasMargin × contractGas[op]. Zero
// means no bound but the fee's.
func (tr *Trust) MaxGasLimit(op string, chainID int64) uint64 {
	switch {
	case tr.MaxGas != 0:
		return tr.MaxGas
	case l1DataInGasLimit[chainID]:
		return 0
	}
	return gasMargin * contractGas[op]
}

// Function selectors of the RAIL0 contract (README section 12.1): the first
// four bytes of keccak256 of each signature, Payment as its tuple.
const paymentTuple = "(address,address,address,uint120,uint48,uint48)"

var callSignatures = map[string]string{
	OpAuthorize:    "authorize(bytes32," + paymentTuple + ",uint8,bytes32,bytes32)",
	OpCharge:       "charge(bytes32," + paymentTuple + ",uint8,bytes32,bytes32)",
	OpCapture:      "capture(bytes32," + paymentTuple + ",uint256)",
	OpVoid:         "void(bytes32," + paymentTuple + ")",
	OpRelease:      "release(bytes32," + paymentTuple + ")",
	OpRefund:       "refund(bytes32," + paymentTuple + ",uint256,uint8,bytes32,bytes32)",
	OpDispute:      "dispute(bytes32," + paymentTuple + ",bytes32)",
	OpCloseDispute: "closeDispute(bytes32," + paymentTuple + ",bytes32)",
}

// OnChain reports whether op is a step with an on-chain call.
func OnChain(op string) bool {
	_, ok := callSignatures[op]
	return ok
}

// Selector is the function selector of op's call.
func Selector(op string) [4]byte {
	h := KeccakString(callSignatures[op])
	return [4]byte(h[:4])
}

// CheckTransaction verifies an unsigned_transaction for in against t. It
// returns it parsed, ready to sign. It reads it strictly
// (ParseUnsignedTx). Then the rows of ArtUnsignedTx compare its fields
// with the chain, the contract and the gas the step may spend. They
// compare its call with the step's function, on the payment's terms and
// the intent's arguments.
func CheckTransaction(t *Terms, in Intent, unsigned string, tr *Trust) (*Tx, error) {
	if _, ok := callSignatures[in.Operation]; !ok {
		return nil, &Invalid{Field: "operation", Reason: fmt.Sprintf("%q is not an on-chain step", in.Operation)}
	}
	signer, err := CheckSigner(t, in.Operation, in.Signer)
	if err != nil {
		return nil, err
	}
	tx, err := ParseUnsignedTx(unsigned)
	if err != nil {
		return nil, readRefusal(err, t.ID, in.Operation, "unsigned_transaction", "")
	}
	c := &txCase{t: t, in: in, tr: tr, tx: tx, signer: signer, extra: callArguments[in.Operation]}
	if in.Operation == OpRefund {
		if c.refundSig, err = DecodeSignatureHex(in.Signature); err != nil {
			return nil, &Invalid{Field: "signature", Reason: err.Error()}
		}
	}
	if err := run(ArtUnsignedTx, c); err != nil {
		return nil, err
	}
	return tx, nil
}

// callArguments names the arguments of each step's call after paymentId
// and the Payment tuple, all static 32-byte words.
var callArguments = map[string][]string{
	OpAuthorize: {"v", "r", "s"},
	OpCharge:    {"v", "r", "s"},
	OpCapture:   {"amount"},
	OpRefund:    {"amount", "v", "r", "s"},
	OpDispute:   {"reason"},

	OpCloseDispute: {"reason"},
}

// callWords names every word of each step's call after the selector:
// paymentId, the Payment tuple's terms (p.payer, …), then its arguments.
var callWords = func() map[string][]string {
	m := map[string][]string{}
	for op := range callSignatures {
		words := []string{"paymentId"}
		for _, name := range termNames {
			words = append(words, "p."+name)
		}
		m[op] = append(words, callArguments[op]...)
	}
	return m
}()

// DecodeSignatureHex reads a 65-byte r ‖ s ‖ v signature with v = 27 or 28.
func DecodeSignatureHex(s string) ([]byte, error) {
	b := make([]byte, 65)
	if err := DecodeFixedHex(s, b); err != nil {
		return nil, err
	}
	if b[64] < 27 {
		b[64] += 27
	}
	return b, nil
}

// CheckPrepared runs the rows of ArtPreparedRow on row, a prepare's
// answer. The step is op, on the payment named id whose UUID is paymentID.
// amount is the base units asked for, "" when the step takes none. sent
// says why a row id was sent already, "" when it was not.
func CheckPrepared(row Row, id, op, paymentID, amount string, sent func(id string) string) error {
	return run(ArtPreparedRow, &preparedCase{row: row, id: id, op: op, paymentID: paymentID, amount: amount, sent: sent})
}

// CheckSubmitAnswer checks row against the row prepared (the rows of
// ArtSubmitAnswer). row is the 2xx answer to a submit (or a report by
// hash) of op, whose transaction hash is hash. A refusal is a *Mismatch
// whose Reason says why the answer is not the transaction sent.
func CheckSubmitAnswer(row Row, op string, hash Word, prepared Prepared) error {
	return run(ArtSubmitAnswer, &answerCase{row: row, op: op, hash: hash, prepared: prepared})
}

// FindSubmitted runs the rows of ArtSubmittedRow on a payment read back
// (uuid, rail0ID) for a submit of op to the payment named. It returns the
// index of the row carrying hash. Its refusal's Reason says what the read
// shows.
func FindSubmitted(named, uuid, rail0ID string, rows []Row, op string, hash Word) (int, error) {
	c := &submittedCase{named: named, uuid: uuid, rail0ID: rail0ID, rows: rows, op: op, hash: hash}
	if err := run(ArtSubmittedRow, c); err != nil {
		return 0, err
	}
	return c.found, nil
}

// CheckAwaitedRow checks that row, the one a wait found, may be the
// transaction whose hash is hash (the rows of ArtAwaitedRow).
func CheckAwaitedRow(row Row, hash Word) error {
	return run(ArtAwaitedRow, &awaitedCase{row: row, hash: hash})
}
