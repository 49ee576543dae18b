package rail0test

import (
	"errors"
	"math/big"
	"net/http"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// Payment statuses and modes (README section 5).
const (
	statusUnsigned          = "unsigned"
	statusSigned            = "signed"
	statusAuthorized        = "authorized"
	statusCharged           = "charged"
	statusCaptured          = "captured"
	statusPartiallyCaptured = "partially_captured"
	statusVoided            = "voided"
	statusReleased          = "released"
	statusRefunded          = "refunded"
	statusPartiallyRefunded = "partially_refunded"

	modeAuthorize = "authorize"
	modeCharge    = "charge"
)

var paymentStatuses = []string{statusUnsigned, statusSigned, statusAuthorized, statusCharged, statusCaptured,
	statusPartiallyCaptured, statusVoided, statusReleased, statusRefunded, statusPartiallyRefunded}

func paymentView(p *payment) map[string]any {
	return map[string]any{
		"id":                   p.ID,
		"contract_id":          p.ContractID,
		"rail0_id":             p.Rail0ID.Hex(),
		"status":               p.Status,
		"mode":                 p.Mode,
		"amount":               p.Amount.String(),
		"capturable_amount":    p.Capturable.String(),
		"refundable_amount":    p.Refundable.String(),
		"config_hash":          p.ConfigHash.Hex(),
		"payer":                p.Payer.Hex(),
		"payee":                p.Payee.Hex(),
		"token":                p.Token.Address.Hex(),
		"authorization_expiry": p.AuthExpiry,
		"refund_expiry":        p.RefundExpiry,
		"disputed":             p.Disputed,
		"last_error_code":      p.LastErrCode,
		"last_error_message":   p.LastErrMsg,
		"description":          p.Description,
		"metadata":             p.Metadata,
		"signed_at":            tsPtr(p.SignedAt),
		"created_at":           ts(p.CreatedAt),
		"updated_at":           ts(p.UpdatedAt),
	}
}

func (s *Server) paymentDetailView(p *payment) map[string]any {
	v := paymentView(p)
	v["chain_id"] = p.Chain.ChainID
	v["rail0_contract"] = p.Chain.Contract.Address.Hex()
	txs := []map[string]any{}
	for _, tx := range p.Txs {
		txs = append(txs, transactionView(tx))
	}
	v["transactions"] = txs
	v["signing_payload"] = nil
	if p.Status == statusUnsigned {
		_, payload := s.payerTypedData(p)
		v["signing_payload"] = payload
	}
	return v
}

func bigPtr(v *big.Int) *string {
	if v == nil {
		return nil
	}
	s := v.String()
	return &s
}

func transactionView(tx *transaction) map[string]any {
	var hash *string
	if tx.Hash != nil {
		h := tx.Hash.Hex()
		hash = &h
	}
	var gasLimit, gasCost *string
	if tx.GasUsed != nil {
		gl := new(big.Int).SetUint64(tx.GasLimit).String()
		gasLimit = &gl
		gasCost = bigPtr(new(big.Int).Mul(tx.GasUsed, tx.GasPrice))
	}
	return map[string]any{
		"id":                   tx.ID,
		"payment_id":           tx.Payment.ID,
		"operation":            tx.Operation,
		"status":               tx.Status,
		"error_code":           tx.ErrCode,
		"error_title":          tx.ErrTitle,
		"error_detail":         tx.ErrDetail,
		"error_message":        tx.ErrDetail,
		"unsigned_transaction": tx.Unsigned,
		"transaction_hash":     hash,
		"amount":               bigPtr(tx.Amount),
		"block_number":         tx.BlockNumber,
		"gas_used":             bigPtr(tx.GasUsed),
		"gas_limit":            gasLimit,
		"effective_gas_price":  bigPtr(tx.GasPrice),
		"base_fee_per_gas":     bigPtr(tx.BaseFee),
		"gas_cost":             gasCost,
		"pending_at":           tsPtr(tx.PendingAt),
		"submitted_at":         tsPtr(tx.SubmittedAt),
		"confirmed_at":         tsPtr(tx.ConfirmedAt),
		"created_at":           ts(tx.CreatedAt),
		"updated_at":           ts(tx.UpdatedAt),
	}
}

// findPayment resolves a path id: a UUID or a rail0_id.
// Call with s.mu held.
func (s *Server) findPayment(r *http.Request) (*payment, *apiError) {
	id := r.PathValue("id")
	p := s.st.byID[id]
	if p == nil && len(id) == 66 && strings.HasPrefix(id, "0x") {
		h := common.HexToHash(id)
		for _, x := range s.st.payments {
			if x.Rail0ID == h {
				p = x
				break
			}
		}
	}
	if p == nil {
		return nil, errNotFound("payment")
	}
	info(r).paymentID = p.ID
	return p, nil
}

func isParticipant(p *payment, sess *session) bool {
	return sess.address == p.Payer || sess.address == p.Payee
}

func notParticipant() *apiError {
	return errForbidden("not_a_participant", "Only the payer or the payee of this payment may do this.")
}

func notPayee() *apiError {
	return errForbidden("not_the_payee", "Only the payee of this payment may do this.")
}

func notPayer() *apiError {
	return errForbidden("not_the_payer", "Only the payer of this payment may do this.")
}

// participantPayment finds the payment and checks that the session takes part.
func (s *Server) participantPayment(r *http.Request, sess *session) (*payment, *apiError) {
	p, e := s.findPayment(r)
	if e != nil {
		return nil, e
	}
	if !isParticipant(p, sess) {
		return nil, notParticipant()
	}
	return p, nil
}

func (s *Server) handleCreatePayment(w http.ResponseWriter, r *http.Request, sess *session) {
	var body struct {
		ChainID     *int64         `json:"chain_id"`
		Mode        *string        `json:"mode"`
		Amount      *string        `json:"amount"`
		Token       *string        `json:"token"`
		Payer       *string        `json:"payer"`
		Payee       *string        `json:"payee"`
		Description *string        `json:"description"`
		Metadata    map[string]any `json:"metadata"`
	}
	if e := decodeBody(r, &body); e != nil {
		writeError(w, e)
		return
	}
	for _, f := range []struct {
		name    string
		present bool
	}{{"chain_id", body.ChainID != nil}, {"mode", body.Mode != nil}, {"amount", body.Amount != nil},
		{"token", body.Token != nil}, {"payer", body.Payer != nil}, {"payee", body.Payee != nil}} {
		if !f.present {
			writeError(w, errMissing(f.name, http.StatusUnprocessableEntity))
			return
		}
	}
	if !common.IsHexAddress(*body.Payer) || common.HexToAddress(*body.Payer) != sess.address {
		writeError(w, errForbidden("payer_must_be_caller", "The payer must be the address of this session."))
		return
	}
	payer := sess.address
	key := r.Header.Get("Idempotency-Key")

	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle()
	if key != "" {
		if rec, ok := s.st.idem[key]; ok {
			if rec.Payer != payer {
				writeError(w, &apiError{status: http.StatusConflict, code: "idempotency_key_reused", title: "Idempotency key in use",
					detail: "This Idempotency-Key was already used by another caller; choose a new key."})
				return
			}
			p := s.st.byID[rec.PaymentID]
			info(r).paymentID = p.ID
			writeJSON(w, http.StatusOK, s.paymentDetailView(p))
			return
		}
	}
	if *body.Mode != modeAuthorize && *body.Mode != modeCharge {
		writeError(w, &apiError{status: http.StatusUnprocessableEntity, code: "invalid_param", title: "Invalid parameter",
			detail: "mode must be authorize or charge.", extra: map[string]any{"param": "mode"}})
		return
	}
	if !common.IsHexAddress(*body.Payee) || common.HexToAddress(*body.Payee) == payer {
		writeError(w, &apiError{status: http.StatusUnprocessableEntity, code: "invalid_payee", title: "Invalid payee",
			detail: "The payee must be an address different from the payer.", extra: map[string]any{"param": "payee"}})
		return
	}
	payee := common.HexToAddress(*body.Payee)
	c := s.st.chainByID(*body.ChainID)
	if c == nil || !c.Active {
		writeError(w, errUnprocessable("unknown_chain", "Unknown chain", "This gateway does not serve that chain."))
		return
	}
	t := s.st.tokenOn(c.ChainID, *body.Token)
	if t == nil || !t.Active {
		writeError(w, errUnprocessable("unknown_token", "Unknown token", "That token is not configured on this chain."))
		return
	}
	if c.Contract == nil || !c.Contract.Active {
		writeError(w, errUnprocessable("no_active_contract", "No RAIL0 contract", "RAIL0 is not deployed on this chain."))
		return
	}
	if !s.accepts(payee, t) {
		writeError(w, errUnprocessable("unsupported_payment_method", "Payment method not accepted",
			"The payee has no active wallet accepting this token on this chain."))
		return
	}
	amount, err := parseUnits(*body.Amount, t.Decimals)
	if err == nil && amount.BitLen() > 120 {
		err = errors.New("amount does not fit the contract's uint120")
	}
	if err != nil {
		writeError(w, &apiError{status: http.StatusUnprocessableEntity, code: "invalid_amount", title: "Invalid amount",
			detail: "The amount is not valid for this token: " + err.Error() + ".", extra: map[string]any{"param": "amount"}})
		return
	}
	now := s.now()
	p := &payment{
		ID: s.ent.uuid(), ContractID: c.Contract.ID, Status: statusUnsigned, Mode: *body.Mode,
		Amount: amount, Capturable: new(big.Int), Refundable: new(big.Int), Captured: new(big.Int), Refunded: new(big.Int),
		Payer: payer, Payee: payee, Token: t, Chain: c,
		AuthExpiry:   now.Add(s.cfg.authorizeWindow).Unix(),
		RefundExpiry: now.Add(s.cfg.refundWindow).Unix(),
		Description:  body.Description, Metadata: body.Metadata,
		CreatedAt: now, UpdatedAt: now, seq: s.st.next(),
	}
	p.Rail0ID = keccak(c.Contract.Address.Bytes(), big.NewInt(c.ChainID).Bytes(), []byte(p.ID))
	p.ConfigHash = paymentConfigHash(p)
	s.st.payments = append(s.st.payments, p)
	s.st.byID[p.ID] = p
	if key != "" {
		s.st.idem[key] = idempotencyRecord{Payer: payer, PaymentID: p.ID}
	}
	info(r).paymentID = p.ID
	s.emit("payments.created", p, nil)
	writeJSON(w, http.StatusCreated, s.paymentDetailView(p))
}

// accepts reports whether payee has an active wallet with an active
// holding of t.
func (s *Server) accepts(payee common.Address, t *token) bool {
	wl := s.st.walletByAddress(payee)
	if wl == nil || !wl.Active {
		return false
	}
	h := s.holdingFor(wl, t.ID)
	return h != nil && h.Active
}

func (s *Server) handleGetPayment(w http.ResponseWriter, r *http.Request, sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle()
	p, e := s.participantPayment(r, sess)
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, s.paymentDetailView(p))
}

func (s *Server) handleListPayments(w http.ResponseWriter, r *http.Request, sess *session) {
	q := r.URL.Query()
	status, e := enumParam(q, "status", paymentStatuses...)
	if e != nil {
		writeError(w, e)
		return
	}
	mode, e := enumParam(q, "mode", modeAuthorize, modeCharge)
	if e != nil {
		writeError(w, e)
		return
	}
	disputed, e := boolParam(q, "disputed")
	if e != nil {
		writeError(w, e)
		return
	}
	chainID, e := intParam(q, "chain_id")
	if e != nil {
		writeError(w, e)
		return
	}
	from, e := timeParam(q, "created_from")
	if e != nil {
		writeError(w, e)
		return
	}
	to, e := timeParam(q, "created_to")
	if e != nil {
		writeError(w, e)
		return
	}
	var minAmt, maxAmt *big.Int
	for _, f := range []struct {
		name string
		dst  **big.Int
	}{{"min_amount", &minAmt}, {"max_amount", &maxAmt}} {
		if v := q.Get(f.name); v != "" {
			n, ok := new(big.Int).SetString(v, 10)
			if !ok || n.Sign() < 0 {
				writeError(w, errBadRequest("invalid_param", f.name, f.name+" must be a base-unit integer."))
				return
			}
			*f.dst = n
		}
	}
	addrFilter := func(name string) (*common.Address, *apiError) {
		v := q.Get(name)
		if v == "" {
			return nil, nil
		}
		if !common.IsHexAddress(v) {
			return nil, errBadRequest("invalid_param", name, name+" must be an address.")
		}
		a := common.HexToAddress(v)
		return &a, nil
	}
	payer, e := addrFilter("payer")
	if e != nil {
		writeError(w, e)
		return
	}
	payee, e := addrFilter("payee")
	if e != nil {
		writeError(w, e)
		return
	}
	tokenF := q.Get("token")
	rail0ID := q.Get("rail0_id")

	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle()
	var list []*payment
	for _, p := range s.st.payments {
		switch {
		case !isParticipant(p, sess),
			status != "" && p.Status != status,
			mode != "" && p.Mode != mode,
			disputed != nil && p.Disputed != *disputed,
			chainID != nil && p.Chain.ChainID != *chainID,
			from != nil && p.CreatedAt.Before(*from),
			to != nil && p.CreatedAt.After(*to),
			minAmt != nil && p.Amount.Cmp(minAmt) < 0,
			maxAmt != nil && p.Amount.Cmp(maxAmt) > 0,
			payer != nil && p.Payer != *payer,
			payee != nil && p.Payee != *payee,
			tokenF != "" && !tokenMatches(p.Token, tokenF),
			rail0ID != "" && !strings.EqualFold(rail0ID, p.Rail0ID.Hex()):
			continue
		}
		list = append(list, p)
	}
	writePage(w, r, list, "-created_at", paymentSortKeys, paymentView)
}

var paymentSortKeys = sortKeys[*payment]{
	"created_at": func(a, b *payment) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return int(a.seq - b.seq)
	},
	"updated_at": byTime(func(p *payment) time.Time { return p.UpdatedAt }),
	"status":     byString(func(p *payment) string { return p.Status }),
	"mode":       byString(func(p *payment) string { return p.Mode }),
	"amount":     func(a, b *payment) int { return a.Amount.Cmp(b.Amount) },
}

func (s *Server) handleSign(w http.ResponseWriter, r *http.Request, sess *session) {
	var body struct {
		Signature *string `json:"signature"`
	}
	if e := decodeBody(r, &body); e != nil {
		writeError(w, e)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle()
	p, e := s.participantPayment(r, sess)
	if e != nil {
		writeError(w, e)
		return
	}
	if body.Signature == nil || *body.Signature == "" {
		writeError(w, errMissing("signature", http.StatusUnprocessableEntity))
		return
	}
	if p.Signature != nil {
		writeError(w, errState("already_signed", "Already signed", "A payer signature is already on file for this payment."))
		return
	}
	if p.Status != statusUnsigned {
		writeError(w, errState("not_signable", "Not signable", "Only an unsigned payment takes the payer signature."))
		return
	}
	td, _ := s.payerTypedData(p)
	if err := verifyTypedSignature(td, *body.Signature, p.Payer); err != nil {
		writeError(w, errUnprocessable("signer_mismatch", "Signature mismatch",
			"The signature does not recover to the payer of this payment."))
		return
	}
	sig := common.FromHex(*body.Signature)
	now := s.now()
	p.Signature, p.Status, p.SignedAt, p.UpdatedAt = sig, statusSigned, &now, now
	s.emit("payments.signed", p, nil)
	writeJSON(w, http.StatusOK, s.paymentDetailView(p))
}

func (s *Server) handleListTransactions(w http.ResponseWriter, r *http.Request, sess *session) {
	q := r.URL.Query()
	op, e := enumParam(q, "operation", allOperations...)
	if e != nil {
		writeError(w, e)
		return
	}
	status, e := enumParam(q, "status", "pending", "submitting", "submitted", "confirmed", "failed")
	if e != nil {
		writeError(w, e)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle()
	p, e := s.participantPayment(r, sess)
	if e != nil {
		writeError(w, e)
		return
	}
	var list []*transaction
	for _, tx := range p.Txs {
		if (op == "" || tx.Operation == op) && (status == "" || tx.Status == status) {
			list = append(list, tx)
		}
	}
	writePage(w, r, list, "created_at", sortKeys[*transaction]{
		"created_at": func(a, b *transaction) int {
			if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
				return c
			}
			return int(a.seq - b.seq)
		},
		"updated_at": byTime(func(t *transaction) time.Time { return t.UpdatedAt }),
		"status":     byString(func(t *transaction) string { return t.Status }),
		"operation":  byString(func(t *transaction) string { return t.Operation }),
	}, transactionView)
}

// tokenMatches reports whether ref (an address or a symbol) names t.
func tokenMatches(t *token, ref string) bool {
	if common.IsHexAddress(ref) {
		return common.HexToAddress(ref) == t.Address
	}
	return strings.EqualFold(ref, t.Symbol)
}
