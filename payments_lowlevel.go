package rail0

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/rail0/rail0-go/internal/evm"
	"github.com/rail0/rail0-go/internal/ops"
	"github.com/rail0/rail0-go/internal/verify"
)

// This file is the low-level path of a payment's steps, for programs that
// sign elsewhere. It holds the payer's signature (SubmitSignature),
// Prepare, Submit, SubmitByHash and PrepareRefund. Check what Prepare
// returns with VerifyTransaction (payments_verify.go) before signing it.

var signPayment = declare(ops.SignPayment)

// PaymentSubmitSignatureParams carries the payer's signature of a payment.
type PaymentSubmitSignatureParams struct {
	// Signature is the payer's EIP-712 signature of the payment's
	// signing_payload. It is 65 bytes r‖s‖v as 0x hex.
	Signature string `json:"signature"`
}

// SubmitSignature stores the payer's signature of the payment's
// signing_payload. It moves the payment from unsigned to signed. It is the
// low-level step for a payer who signs elsewhere; check the payload with
// VerifyPayload first. PayerSign reads and checks the payload, signs it
// and calls SubmitSignature.
//
// The answer must be the payment id names. A 2xx that is not (a proxy's
// null, {} or page) proves nothing. It is reconciled as a repeat is.
//
// A repeat whose first answer was lost is refused 422 already_signed (or
// not_signable). (A proxy's 502 after the gateway stored the signature,
// say.) SubmitSignature then reads the payment back (GET /payments/{id}).
// It returns it, with Response.Reconciled set, when it holds what this
// call sent. That is the payment VerifyPayload checked on this client,
// signed, and the signature sent its payer's authorization of it. Without
// that record, a token domain this client learned from an accepted
// signature serves.
//
// The gateway does not show the signature it keeps. It keeps only one
// that recovers to the payer over that authorization, whose nonce is spent
// once. So one sent that recovers too authorizes what is on file.
// Otherwise the call is a *ReconcileError over the refusal: the claim is
// false, or the signature on file is another.
//
// PUT /payments/{id}/sign — the payer or the payee. The signature must
// recover to the payer (else 422 signer_mismatch). Only an unsigned
// payment takes it (422 not_signable).
func (s *PaymentsService) SubmitSignature(ctx context.Context, id string, params PaymentSubmitSignatureParams) (*PaymentDetail, error) {
	return s.submitSignature(ctx, id, params, nil)
}

// submitSignature is SubmitSignature of a signature made for signed.
// signed is nil when the SDK did not make it (see reconcileSignature).
func (s *PaymentsService) submitSignature(ctx context.Context, id string, params PaymentSubmitSignatureParams, signed *signedFor) (*PaymentDetail, error) {
	if params.Signature == "" {
		return nil, &ValidationError{Field: "signature", Reason: "is required"}
	}
	var p PaymentDetail
	r := &request{op: signPayment, args: pathArgs{id}, body: params}
	r.identify = func() string { return notThePaymentNamed(&p, id) }
	resp, err := s.client.do(ctx, r, &p)
	if err != nil {
		return s.reconcileSignature(ctx, id, params.Signature, signed, err)
	}
	p.Response = resp
	return &p, nil
}

// ---- Lifecycle operations: prepare, then submit (README section 4.5) ----

// PaymentPrepareParams is the body of a prepare call. Which fields a step
// needs depends on the operation:
//   - Amount for capture and refund;
//   - Signature for the second refund phase;
//   - From for release;
//   - Reason for the dispute steps.
//
// The first refund phase has its own (PrepareRefund).
type PaymentPrepareParams struct {
	// Amount is a human decimal ("10.50"), required for capture and refund.
	Amount string `json:"amount,omitempty"`
	// Signature is the payee's signature of the refund phase-1
	// signing_payload. The second refund phase requires it.
	Signature string `json:"signature,omitempty"`
	// From is the address that will submit a release. The gateway defaults
	// to the payer.
	From string `json:"from,omitempty"`
	// Reason is the bytes32 reason (0x + 64 hex) of a dispute or a dispute
	// close. Empty means zero.
	Reason string `json:"reason,omitempty"`
}

// PreparedTransaction is the pending transaction returned by a prepare call.
type PreparedTransaction struct {
	Transaction
	// Reused is true when the gateway answered 200: a pending transaction
	// for this step already existed and was returned again. It is false
	// when the gateway created a new one (201). Preparing twice is
	// therefore harmless. A reused transaction may carry an older nonce or
	// fees. The close-dispute route answers 200 either way, so Reused is
	// always false for it.
	Reused bool `json:"-"`
	// Response is the metadata of the call that returned this value. It is
	// nil on a value nested in another call's result.
	Response *Response `json:"-"`
}

// RefundAuthorization is the answer to the first refund phase: an EIP-3009
// ReceiveWithAuthorization for the payee to sign. No transaction exists yet.
type RefundAuthorization struct {
	// SigningPayload is the EIP-712 typed data, kept exactly as received.
	// Check it with VerifyPayload. Sign the digest that returns, or have a
	// wallet sign the typed data. Pass the signature to Prepare(OpRefund)
	// with the same amount.
	SigningPayload json.RawMessage `json:"signing_payload"`
	// Response is the metadata of the call that returned this value. It is
	// nil on a value nested in another call's result.
	Response *Response `json:"-"`
}

// stepRoute returns which of a call's three declared operations serves the
// step op on payment id. They are the generic route, the dispute's and the
// dispute close's. It returns the path arguments too; the generic routes
// name the step.
func stepRoute(op Operation, id string, generic, dispute, closeDispute *operation) (*operation, pathArgs, error) {
	switch op {
	case OpAuthorize, OpCapture, OpCharge, OpVoid, OpRelease, OpRefund:
		return generic, pathArgs{id, string(op)}, nil
	case OpDispute:
		return dispute, pathArgs{id}, nil
	case OpCloseDispute:
		return closeDispute, pathArgs{id}, nil
	case "":
		return nil, pathArgs{}, &ValidationError{Field: "operation", Reason: "is required"}
	default:
		return nil, pathArgs{}, &ValidationError{Field: "operation", Reason: fmt.Sprintf("%q has no prepare or submit route", string(op))}
	}
}

var (
	preparePaymentOperation = declare(ops.PreparePaymentOperation)
	prepareDispute          = declare(ops.PrepareDispute)
	prepareCloseDispute     = declare(ops.PrepareCloseDispute)
)

// Prepare builds the unsigned EIP-1559 transaction of one lifecycle step.
// It records it as a pending Transaction. Sign its UnsignedTransaction
// with the acting party's key and send it with Submit. Or broadcast it
// yourself and report it with SubmitByHash. Pass its ID as the params'
// TransactionID. Preparing again while one is pending returns that same
// transaction with Reused set. A 2xx answer without a transaction id is a
// *DecodeError.
//
// op may be any Operation:
//   - the six generic steps use POST /payments/{id}/{operation}/prepare;
//   - OpDispute uses POST /payments/{id}/dispute/prepare;
//   - OpCloseDispute uses POST /payments/{id}/dispute/close/prepare.
//
// The first refund phase does not produce a transaction: use
// PrepareRefund for it. Prepare with OpRefund requires params.Signature
// (the second phase).
//
// Caller: the acting party, by step:
//   - the payee for authorize, capture, charge, void and refund;
//   - either participant for release;
//   - a participant for dispute and close_dispute (signed by the payer).
//
// A missing required field is a
// *ValidationError before any request: a capture's and a refund's amount,
// a refund's signature.
func (s *PaymentsService) Prepare(ctx context.Context, id string, op Operation, params PaymentPrepareParams) (*PreparedTransaction, error) {
	route, args, err := stepRoute(op, id, preparePaymentOperation, prepareDispute, prepareCloseDispute)
	if err != nil {
		return nil, err
	}
	if err := params.check(op); err != nil {
		return nil, err
	}
	var body any
	if params != (PaymentPrepareParams{}) {
		body = params
	}
	var out PreparedTransaction
	r := &request{op: route, args: args, body: body}
	// The prepared row's id is what its submit's answer must name (see
	// notTheTransaction). An answer without one is no prepared
	// transaction.
	r.identify = func() string {
		if out.ID == "" {
			return "carries no transaction id"
		}
		return ""
	}
	resp, err := s.client.do(ctx, r, &out.Transaction)
	if err != nil {
		return nil, err
	}
	// The close-dispute route answers 200 for new transactions too.
	out.Reused = resp.StatusCode == http.StatusOK && op != OpCloseDispute
	out.Response = resp
	return &out, nil
}

// check validates params for op before any request. Required fields must
// be present and well formed. Fields that op does not take must be empty:
// the gateway would ignore them silently.
func (p PaymentPrepareParams) check(op Operation) error {
	for _, f := range []struct {
		name, value string
		applies     bool
	}{
		{"amount", p.Amount, op == OpCapture || op == OpRefund},
		{"signature", p.Signature, op == OpRefund},
		{"from", p.From, op == OpRelease},
		{"reason", p.Reason, op == OpDispute || op == OpCloseDispute},
	} {
		if f.value != "" && !f.applies {
			return &ValidationError{Field: f.name, Reason: fmt.Sprintf("does not apply to %s", op)}
		}
	}
	if op == OpCapture || op == OpRefund {
		if err := checkHumanAmount("amount", p.Amount); err != nil {
			return err
		}
	}
	if op == OpRefund && p.Signature == "" {
		return &ValidationError{Field: "signature", Reason: "is required to prepare a refund transaction; sign the payload of PrepareRefund first"}
	}
	if p.From != "" {
		if err := checkHex("from", p.From, 20); err != nil {
			return err
		}
	}
	if p.Reason != "" {
		if err := checkHex("reason", p.Reason, 32); err != nil {
			return err
		}
	}
	return nil
}

// The chain cannot mine the same signed bytes twice. But the gateway does
// not promise to answer a repeated submit like the first. It may refuse
// it (transaction_not_overwritable). Or it may record it as a failed
// attempt (already_known, nonce_too_low) while the first one goes through.
// Submit reads the payment's transactions instead (reconcileSubmit).
var (
	submitPaymentOperation = declare(ops.SubmitPaymentOperation)
	submitDispute          = declare(ops.SubmitDispute)
	submitCloseDispute     = declare(ops.SubmitCloseDispute)
)

// PaymentSubmitParams carries the signed transaction of a prepared step.
type PaymentSubmitParams struct {
	// SignedTransaction is 0x02… hex. It is the RLP of the signed EIP-1559
	// transaction.
	SignedTransaction string `json:"signed_transaction"`
	// TransactionID is the id of the prepared Transaction that
	// SignedTransaction signs (PreparedTransaction.ID). It is not sent.
	// The gateway answers a submit with that row. So when it is set, an
	// answer naming another transaction is not taken for the submit's (see
	// Submit). The flows always set it.
	TransactionID string `json:"-"`
}

// Submit sends the signed transaction of a prepared step for broadcast.
// The gateway checks the sender. It answers at once with the Transaction
// as it stands, usually submitting or submitted. Nothing is final until it
// is confirmed: wait with WaitForTransaction before preparing the next
// step.
//
// POST /payments/{id}/{operation}, POST /payments/{id}/dispute or
// POST /payments/{id}/dispute/close — who may call:
//   - the payee for authorize, capture, charge, void and refund (sent from
//     the payee);
//   - any session for release (sent from the payer or the payee);
//   - any session for dispute and close_dispute (sent from the payer).
//
// A repeat of a submit whose first answer was lost may be refused with a
// 422, since the transaction is known already. The codes are
// already_known, nonce_too_low and transaction_not_overwritable. Submit
// then reads the payment (GET
// /payments/{id}). It returns the transaction of op that carries this
// signed transaction's hash, as the gateway recorded it. With no such
// transaction the refusal stands.
//
// The answer must be the transaction sent:
//   - of op;
//   - of the payment id names (when id is its UUID);
//   - carrying this signed transaction's hash, once it has one;
//   - that very row, when params.TransactionID is set.
//
// A 2xx that is not (null, a proxy's JSON, another transaction) proves
// nothing about the submit. The payment is read as for a refusal. Without
// the transaction there, the call is an *OutcomeUnknownError over a
// *DecodeError, never a success. Do not submit again before reading the
// payment.
//
// An answer without a hash comes back carrying the hash of the transaction
// sent. Wait for the step with it
// (PaymentWaitForTransactionParams.TransactionHash). An id proves nothing
// a rewritten Prepare answer did not also say.
func (s *PaymentsService) Submit(ctx context.Context, id string, op Operation, params PaymentSubmitParams) (*Transaction, error) {
	return s.submitSigned(ctx, id, op, params, preparedRow{id: params.TransactionID, paymentID: paymentUUIDOf(id), typed: true})
}

// submitSigned is Submit of the prepared row prepared. A flow knows that
// row from the gateway's answers: Prepare's, and the payment it read,
// whatever name the caller gave the payment.
func (s *PaymentsService) submitSigned(ctx context.Context, id string, op Operation, params PaymentSubmitParams, prepared preparedRow) (*Transaction, error) {
	routes := [3]*operation{submitPaymentOperation, submitDispute, submitCloseDispute}
	return s.submit(ctx, id, op, routes, params, prepared, func() (verify.Word, error) {
		return signedTransactionHash(params.SignedTransaction)
	})
}

var (
	submitPaymentOperationByHash = declare(ops.SubmitPaymentOperationByHash)
	submitDisputeByHash          = declare(ops.SubmitDisputeByHash)
	submitCloseDisputeByHash     = declare(ops.SubmitCloseDisputeByHash)
)

// PaymentSubmitByHashParams carries the hash of a transaction the caller
// broadcast itself.
type PaymentSubmitByHashParams struct {
	// TransactionHash is 0x + 64 hex.
	TransactionHash string `json:"transaction_hash"`
	// TransactionID is the id of the prepared Transaction that the hash is
	// the transaction of (PreparedTransaction.ID). It is not sent. When it
	// is set, an answer naming another transaction is not taken for the
	// report's, as for Submit.
	TransactionID string `json:"-"`
}

// SubmitByHash reports a prepared step that the caller signed and
// broadcast itself. The caller is typically a browser wallet that never
// hands over the raw bytes. The gateway checks that the hash calls this
// payment's contract for this payment. A hash not yet visible on any node
// is still accepted. It can be called again to replace a stuck or wrong
// hash, until the transaction is confirmed.
//
// POST /payments/{id}/{operation}/submitted,
// POST /payments/{id}/dispute/submitted or
// POST /payments/{id}/dispute/close/submitted — the payee for authorize,
// capture, charge, void and refund; either participant for release; the
// payer for dispute and close_dispute. A hash that is not 0x + 64 hex is a
// *ValidationError before any request.
//
// A report may be refused with a 422 because the row is confirmed and
// final. That is a repeat whose first answer was lost while the
// transaction confirmed. It is reconciled as Submit's is. The payment is
// read, and the transaction of op carrying params.TransactionHash is
// returned. With none, the refusal stands. An answer without a hash comes
// back carrying params.TransactionHash, as Submit's carries the hash sent.
func (s *PaymentsService) SubmitByHash(ctx context.Context, id string, op Operation, params PaymentSubmitByHashParams) (*Transaction, error) {
	routes := [3]*operation{submitPaymentOperationByHash, submitDisputeByHash, submitCloseDisputeByHash}
	prepared := preparedRow{id: params.TransactionID, paymentID: paymentUUIDOf(id), typed: true}
	return s.submit(ctx, id, op, routes, params, prepared, func() (verify.Word, error) {
		return parseTransactionHash(params.TransactionHash)
	})
}

// parseTransactionHash reads a transaction hash the caller gave (0x + 64
// hex). Anything else is a *ValidationError.
func parseTransactionHash(s string) (verify.Word, error) {
	if err := checkHex("transaction_hash", s, 32); err != nil {
		return verify.Word{}, err
	}
	return verify.ParseWord(s)
}

// submit is what Submit and SubmitByHash share. In order:
//   - op's route among routes: the generic step's, the dispute's, the
//     dispute close's, as stepRoute takes them;
//   - body checked by checked, which returns the hash the chain and the
//     gateway know the transaction by;
//   - the send. Its answer must be that transaction, and the prepared row
//     where it is known (notTheTransaction).
//
// A send that fails is reconciled by that hash (reconcileSubmit), for a
// repeat whose first answer was lost.
func (s *PaymentsService) submit(ctx context.Context, id string, op Operation, routes [3]*operation, body any, prepared preparedRow, checked func() (verify.Word, error)) (*Transaction, error) {
	route, args, err := stepRoute(op, id, routes[0], routes[1], routes[2])
	if err != nil {
		return nil, err
	}
	hash, err := checked()
	if err != nil {
		return nil, err
	}
	var tx Transaction
	r := &request{op: route, args: args, body: body}
	r.identify = func() string { return notTheTransaction(&tx, op, hash, prepared) }
	resp, err := s.client.do(ctx, r, &tx)
	if err != nil {
		return s.reconcileSubmit(ctx, id, op, hash, err)
	}
	if tx.TransactionHash == nil || *tx.TransactionHash == "" {
		// What ties this step to its confirmation is the hash sent, not an
		// id the answer names. The caller's wait looks for it
		// (PaymentWaitForTransactionParams.TransactionHash).
		sent := hash.String()
		tx.TransactionHash = &sent
	}
	tx.Response = resp
	return &tx, nil
}

// PaymentPrepareRefundParams is the request of the first refund phase.
type PaymentPrepareRefundParams struct {
	// Amount is a human decimal ("4.00"), 0 < amount <= refundable_amount.
	Amount string `json:"amount"`
}

// PrepareRefund runs the first refund phase for params.Amount, before
// refund_expiry. The gateway answers with an EIP-3009
// ReceiveWithAuthorization for the payee to sign. It creates no
// transaction yet. Check it with VerifyPayload and sign the digest. Pass
// the signature with the same amount to Prepare(OpRefund) for the second
// phase. Refund does all of it.
//
// An empty or malformed amount is a *ValidationError before any request.
// A 2xx answer without a signing_payload is a *DecodeError, as is any
// answer that is not the resource the operation promises
// (request.identify). It carries the answer's status, body and request
// id, and the call's transcript (CallOf).
//
// POST /payments/{id}/refund/prepare {"amount"} (200) — the payee.
func (s *PaymentsService) PrepareRefund(ctx context.Context, id string, params PaymentPrepareRefundParams) (*RefundAuthorization, error) {
	if err := checkHumanAmount("amount", params.Amount); err != nil {
		return nil, err
	}
	var out RefundAuthorization
	r := &request{op: preparePaymentOperation, args: pathArgs{id, string(OpRefund)}, body: params}
	r.identify = func() string {
		if !hasJSON(out.SigningPayload) {
			return "carries no signing_payload"
		}
		return ""
	}
	resp, err := s.client.do(ctx, r, &out)
	if err != nil {
		return nil, err
	}
	out.Response = resp
	return &out, nil
}

// ---- client-side checks ----

// checkHumanAmount checks that a required human decimal amount is
// present, well formed (see ToBaseUnits) and positive. So a typo fails
// before any request, rather than as a 400 or 422.
func checkHumanAmount(field, amount string) error {
	if amount == "" {
		return &ValidationError{Field: field, Reason: "is required"}
	}
	whole, frac, hasDot := strings.Cut(amount, ".")
	if !isDigits(whole) || (hasDot && !isDigits(frac)) {
		return &ValidationError{Field: field, Reason: fmt.Sprintf("%q is not a decimal such as \"10.50\"", amount)}
	}
	if strings.Trim(whole+frac, "0") == "" {
		return &ValidationError{Field: field, Reason: "must be greater than zero"}
	}
	return nil
}

// checkHex checks that s is 0x followed by exactly 2*n hex digits.
func checkHex(field, s string, n int) error {
	if verify.DecodeFixedHex(s, make([]byte, n)) != nil {
		return &ValidationError{Field: field, Reason: fmt.Sprintf("must be 0x followed by %d hex digits", 2*n)}
	}
	return nil
}

// signedTransactionHash checks s, a submit's signed transaction: 0x and
// the hex of at least one byte. It returns its hash, which the chain and
// the gateway know it by.
func signedTransactionHash(s string) (verify.Word, error) {
	if s == "" {
		return verify.Word{}, &ValidationError{Field: "signed_transaction", Reason: "is required"}
	}
	raw, err := verify.DecodeHex(s)
	if err != nil || len(raw) == 0 {
		return verify.Word{}, &ValidationError{Field: "signed_transaction", Reason: "must be 0x-prefixed hex (the RLP of the signed transaction)"}
	}
	return evm.Keccak256(raw), nil
}

// paymentUUIDOf returns id when it names a payment by its UUID, and ""
// when it is a rail0_id. Every /payments/{id} route takes either (section
// 7 of the contract).
func paymentUUIDOf(id string) string {
	if _, ok := rail0IDOf(id); ok {
		return ""
	}
	return id
}
