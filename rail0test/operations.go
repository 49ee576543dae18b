package rail0test

import (
	"math/big"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// guard applies the state rules of README section 4.5 to op on p at time at.
// It is used before preparing, so an illegal step never costs gas. It is
// used again when the simulated chain mines the transaction.
func (s *Server) guard(p *payment, op string, amount *big.Int, at time.Time) *apiError {
	unix := at.Unix()
	switch op {
	case opAuthorize, opCharge:
		want := modeAuthorize
		if op == opCharge {
			want = modeCharge
		}
		if p.Mode != want {
			return errState("wrong_mode", "Wrong mode", "This payment was created with mode "+p.Mode+"; use "+p.Mode+" instead of "+op+".")
		}
		if p.Signature == nil {
			return errState("no_signature", "No payer signature", "The payer has not signed this payment yet.")
		}
		if p.Status != statusSigned {
			return errState("invalid_state", "Invalid state", "This payment is "+p.Status+"; "+op+" needs a signed payment.")
		}
		if unix >= p.AuthExpiry {
			return errState("authorization_expired", "Authorization expired",
				"The payer's authorization expired at the authorization expiry; the token refuses it.")
		}
	case opCapture:
		if p.Mode != modeAuthorize {
			return errState("wrong_mode", "Wrong mode", "A charged payment has nothing to capture.")
		}
		if p.Status != statusAuthorized && p.Status != statusPartiallyCaptured {
			return errState("not_capturable", "Not capturable", "Capture needs an authorized or partially captured payment.")
		}
		if unix >= p.AuthExpiry {
			return errState("authorization_expired", "Authorization expired", "The capture window has closed; release the escrow instead.")
		}
		if amount != nil && amount.Cmp(p.Capturable) > 0 {
			return errState("amount_exceeds_capturable", "Capture larger than escrow",
				"Only "+formatUnits(p.Capturable, p.Token.Decimals)+" is still held for this payment; lower the capture amount.")
		}
	case opVoid:
		if p.Mode != modeAuthorize {
			return errState("wrong_mode", "Wrong mode", "A charged payment cannot be voided; refund it instead.")
		}
		if p.Status != statusAuthorized || p.Captured.Sign() > 0 {
			return errState("not_voidable", "Not voidable", "Void is only possible on an authorized payment before any capture.")
		}
	case opRelease:
		if p.Mode != modeAuthorize {
			return errState("wrong_mode", "Wrong mode", "A charged payment holds no escrow to release.")
		}
		if p.Status != statusAuthorized && p.Status != statusPartiallyCaptured || p.Capturable.Sign() == 0 {
			return errState("not_releasable", "Not releasable", "There is no escrow left to release.")
		}
		if unix < p.AuthExpiry {
			return errState("authorization_not_expired", "Authorization not expired",
				"Release is possible only after the authorization expiry; void the payment instead.")
		}
	case opRefund:
		if unix >= p.RefundExpiry {
			return errState("refund_expired", "Refund window closed", "The refund expiry has passed.")
		}
		if p.Refundable.Sign() == 0 {
			return errState("not_refundable", "Not refundable", "Nothing is refundable on this payment.")
		}
		if amount != nil && amount.Cmp(p.Refundable) > 0 {
			return errState("amount_exceeds_refundable", "Refund larger than refundable balance",
				"Only "+formatUnits(p.Refundable, p.Token.Decimals)+" can still be refunded; lower the refund amount.")
		}
	case opDispute:
		if unix >= p.RefundExpiry {
			return errState("refund_expired", "Refund window closed", "The refund expiry has passed; disputes are closed.")
		}
		if openDispute(p) != nil {
			return errState("already_disputed", "Already disputed", "A dispute is already open on this payment.")
		}
		if p.Refundable.Sign() == 0 {
			return errState("nothing_to_dispute", "Nothing to dispute", "Disputes need a refundable balance held by the payee.")
		}
	case opCloseDispute:
		if openDispute(p) == nil {
			return errState("not_disputed", "Not disputed", "No dispute is open on this payment.")
		}
	}
	return nil
}

// pendingTx returns the pending transaction of op.
// It also reports whether one is under way: submitting or submitted. Call
// with s.mu held.
func pendingTx(p *payment, op string) (pending *transaction, underway bool) {
	for _, tx := range p.Txs {
		if tx.Operation != op {
			continue
		}
		switch tx.Status {
		case "pending":
			pending = tx
		case "submitting", "submitted":
			underway = true
		}
	}
	return pending, underway
}

func notOverwritable() *apiError {
	return errState("transaction_not_overwritable", "Transaction under way",
		"A transaction for this step is already under way; wait for it to be confirmed.")
}

func (s *Server) handlePrepare(w http.ResponseWriter, r *http.Request, sess *session) {
	op := r.PathValue("operation")
	if !slices.Contains(genericOperations, op) {
		writeError(w, errNotFound("operation"))
		return
	}
	info(r).operation = op
	var body struct {
		Amount    *string `json:"amount"`
		Signature *string `json:"signature"`
		From      *string `json:"from"`
	}
	if e := decodeBody(r, &body); e != nil {
		writeError(w, e)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle()
	p, e := s.findPayment(r)
	if e != nil {
		writeError(w, e)
		return
	}
	if op == opRelease {
		if !isParticipant(p, sess) {
			writeError(w, notParticipant())
			return
		}
	} else if sess.address != p.Payee {
		writeError(w, notPayee())
		return
	}
	var amount *big.Int
	if op == opCapture || op == opRefund {
		if body.Amount == nil || *body.Amount == "" {
			writeError(w, errMissing("amount", http.StatusBadRequest))
			return
		}
		v, err := parseUnits(*body.Amount, p.Token.Decimals)
		if err != nil {
			writeError(w, &apiError{status: http.StatusUnprocessableEntity, code: "invalid_amount", title: "Invalid amount",
				detail: "The amount is not valid for this token: " + err.Error() + ".", extra: map[string]any{"param": "amount"}})
			return
		}
		amount = v
	}
	if op == opAuthorize || op == opCharge {
		amount = p.Amount // the whole payment moves
	}
	pending, underway := pendingTx(p, op)
	if pending != nil {
		writeJSON(w, http.StatusOK, transactionView(pending))
		return
	}
	if underway {
		writeError(w, notOverwritable())
		return
	}
	if e := s.guard(p, op, amount, s.Clock.Now()); e != nil {
		writeError(w, e)
		return
	}
	from := p.Payee
	var refundSig []byte
	switch op {
	case opRefund:
		td, payload := s.refundTypedData(p, amount)
		if body.Signature == nil || *body.Signature == "" {
			// Phase 1: the payee signs a ReceiveWithAuthorization first.
			writeJSON(w, http.StatusOK, map[string]any{"signing_payload": payload})
			return
		}
		if err := verifyTypedSignature(td, *body.Signature, p.Payee); err != nil {
			writeError(w, errUnprocessable("signer_mismatch", "Signature mismatch",
				"The refund authorization does not recover to the payee, or its s is in the upper half of the curve order."))
			return
		}
		refundSig = common.FromHex(*body.Signature)
	case opRelease:
		from = p.Payer
		if body.From != nil && *body.From != "" {
			if !common.IsHexAddress(*body.From) {
				writeError(w, errBadRequest("invalid_param", "from", "from must be an address."))
				return
			}
			from = common.HexToAddress(*body.From)
			if from != p.Payer && from != p.Payee {
				writeError(w, errUnprocessable("not_payer_or_payee", "Not a party",
					"Only the payer or the payee can send a release."))
				return
			}
		}
	}
	tx := s.newTransaction(p, op, from, amount, common.Hash{}, refundSig)
	writeJSON(w, http.StatusCreated, transactionView(tx))
}

// submitRole checks who may send a raw transaction for op.
// It returns the 403 for a session that may not call. It also returns it
// for a sender that may not send.
func submitRole(p *payment, op string, sess *session, sender *common.Address) *apiError {
	switch op {
	case opRelease:
		if sender != nil && *sender != p.Payer && *sender != p.Payee {
			return notParticipant()
		}
	case opDispute, opCloseDispute:
		if sender != nil && *sender != p.Payer {
			return notPayer()
		}
	default:
		if sess.address != p.Payee || sender != nil && *sender != p.Payee {
			return notPayee()
		}
	}
	return nil
}

// submitRaw is the shared body of every raw-transaction submit route.
func (s *Server) submitRaw(w http.ResponseWriter, r *http.Request, sess *session, op string) {
	info(r).operation = op
	var body struct {
		SignedTransaction *string `json:"signed_transaction"`
	}
	if e := decodeBody(r, &body); e != nil {
		writeError(w, e)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle()
	p, e := s.findPayment(r)
	if e != nil {
		writeError(w, e)
		return
	}
	if e := submitRole(p, op, sess, nil); e != nil {
		writeError(w, e)
		return
	}
	if body.SignedTransaction == nil || *body.SignedTransaction == "" {
		writeError(w, errMissing("signed_transaction", http.StatusBadRequest))
		return
	}
	raw, sender, err := decodeSigned(*body.SignedTransaction, p.Chain.ChainID)
	if err != nil {
		// The gateway answers an undecodable transaction with a bare 400.
		writeError(w, &apiError{status: http.StatusBadRequest, empty: true})
		return
	}
	if e := submitRole(p, op, sess, &sender); e != nil {
		writeError(w, e)
		return
	}
	hash := raw.Hash()
	for _, tx := range p.Txs {
		if tx.Hash == nil || *tx.Hash != hash {
			continue
		}
		// The same signed transaction again: a repeat after a lost answer.
		// The gateway broadcasts it and passes on what the node says, as the
		// contract guide's node codes do. A repeat is not deduplicated into a
		// 202. The client reads the payment to learn what happened.
		if tx.Status == "submitting" || tx.Status == "submitted" {
			writeError(w, errUnprocessable("already_known", "Transaction already known",
				"The identical transaction is already pending on the network."))
		} else {
			writeError(w, errUnprocessable("nonce_too_low", "Nonce too low",
				"The account nonce of this transaction is used; prepare the step again."))
		}
		return
	}
	pending, underway := pendingTx(p, op)
	if pending == nil {
		if underway {
			writeError(w, notOverwritable())
			return
		}
		writeError(w, errState("transaction_not_prepared", "Nothing prepared",
			"Prepare this step before submitting a signed transaction."))
		return
	}
	// The gateway binds a raw transaction to this step by what it calls:
	// this payment's contract, this step's function, this payment's id.
	// Everything else in it is for the chain to judge: terms, amount,
	// signature, value, gas.
	callOp, callID, err := callTarget(raw.Data())
	if raw.To() == nil || *raw.To() != p.Chain.Contract.Address || err != nil || callOp != op || callID != p.Rail0ID {
		writeError(w, errBadRequest("invalid_param", "signed_transaction",
			"The signed transaction is not a call of this step on this payment's RAIL0 contract."))
		return
	}
	if n := raw.Nonce() + 1; n > s.st.nonceOf[sender] {
		s.st.nonceOf[sender] = n
	}
	pending.Data, pending.Value, pending.GasLimit = raw.Data(), raw.Value(), raw.Gas()
	s.markSubmitted(pending, hash)
	writeJSON(w, http.StatusAccepted, transactionView(pending))
}

// submitHash is the shared body of every submitted-by-hash route.
func (s *Server) submitHash(w http.ResponseWriter, r *http.Request, sess *session, op string) {
	info(r).operation = op
	var body struct {
		TransactionHash *string `json:"transaction_hash"`
	}
	if e := decodeBody(r, &body); e != nil {
		writeError(w, e)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle()
	p, e := s.findPayment(r)
	if e != nil {
		writeError(w, e)
		return
	}
	switch op {
	case opRelease:
		if !isParticipant(p, sess) {
			writeError(w, notParticipant())
			return
		}
	case opDispute, opCloseDispute:
		if sess.address != p.Payer {
			writeError(w, notPayer())
			return
		}
	default:
		if sess.address != p.Payee {
			writeError(w, notPayee())
			return
		}
	}
	if body.TransactionHash == nil {
		writeError(w, &apiError{status: http.StatusBadRequest, empty: true})
		return
	}
	b, err := hexBytes(*body.TransactionHash)
	if err != nil || len(b) != 32 {
		writeError(w, &apiError{status: http.StatusBadRequest, empty: true})
		return
	}
	hash := common.BytesToHash(b)
	for _, x := range s.st.payments { // a hash the chain knows for another call is foreign
		for _, tx := range x.Txs {
			if tx.Hash != nil && *tx.Hash == hash && (x != p || tx.Operation != op) {
				writeError(w, &apiError{status: http.StatusUnprocessableEntity, empty: true})
				return
			}
		}
	}
	var target *transaction
	for _, tx := range p.Txs {
		if tx.Operation == op && tx.Status != "confirmed" {
			target = tx
		}
	}
	if target == nil {
		// Nothing prepared, or the step is confirmed already (final).
		writeError(w, &apiError{status: http.StatusUnprocessableEntity, empty: true})
		return
	}
	s.markSubmitted(target, hash)
	writeJSON(w, http.StatusAccepted, transactionView(target))
}

func (s *Server) handleSubmit(w http.ResponseWriter, r *http.Request, sess *session) {
	op := r.PathValue("operation")
	if !slices.Contains(genericOperations, op) {
		writeError(w, errNotFound("operation"))
		return
	}
	s.submitRaw(w, r, sess, op)
}

func (s *Server) handleSubmitted(w http.ResponseWriter, r *http.Request, sess *session) {
	op := r.PathValue("operation")
	if !slices.Contains(genericOperations, op) {
		writeError(w, errNotFound("operation"))
		return
	}
	s.submitHash(w, r, sess, op)
}

func (s *Server) handleDisputePrepare(op string) func(http.ResponseWriter, *http.Request, *session) {
	return func(w http.ResponseWriter, r *http.Request, sess *session) {
		info(r).operation = op
		var body struct {
			Reason *string `json:"reason"`
		}
		if e := decodeBody(r, &body); e != nil {
			writeError(w, e)
			return
		}
		var reason common.Hash
		if body.Reason != nil && *body.Reason != "" {
			b, err := hexBytes(*body.Reason)
			if err != nil || len(b) != 32 || !strings.HasPrefix(*body.Reason, "0x") {
				writeError(w, errBadRequest("invalid_param", "reason", "reason must be bytes32 hex (0x + 64 hex digits)."))
				return
			}
			reason = common.BytesToHash(b)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.settle()
		p, e := s.participantPayment(r, sess)
		if e != nil {
			writeError(w, e)
			return
		}
		pending, underway := pendingTx(p, op)
		if pending != nil {
			writeJSON(w, http.StatusOK, transactionView(pending))
			return
		}
		if underway {
			writeError(w, notOverwritable())
			return
		}
		if e := s.guard(p, op, nil, s.Clock.Now()); e != nil {
			writeError(w, e)
			return
		}
		tx := s.newTransaction(p, op, p.Payer, nil, reason, nil)
		status := http.StatusCreated
		if op == opCloseDispute {
			status = http.StatusOK // the contract documents only 200 here
		}
		writeJSON(w, status, transactionView(tx))
	}
}

func (s *Server) handleDisputeSubmit(op string) func(http.ResponseWriter, *http.Request, *session) {
	return func(w http.ResponseWriter, r *http.Request, sess *session) { s.submitRaw(w, r, sess, op) }
}

func (s *Server) handleDisputeSubmitted(op string) func(http.ResponseWriter, *http.Request, *session) {
	return func(w http.ResponseWriter, r *http.Request, sess *session) { s.submitHash(w, r, sess, op) }
}
