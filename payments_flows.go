package rail0

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rail0/rail0-go/internal/verify"
)

// This file is the flows: one call per lifecycle step for a client with an
// identity (WithSigner). Each flow:
//   - reads the payment, checks it and binds it to what the caller named
//     and meant (payments_binding.go);
//   - prepares the step;
//   - checks what the gateway prepared against the payment and the request
//     (package internal/verify);
//   - signs the digest of what it checked, and submits.
//
// Nothing the gateway hands over is signed unchecked. Submitting is not
// confirmation. Before the next step, follow a flow with WaitForTransaction
// (payments_wait.go). Tie it to the hash the returned transaction carries,
// the one sent.
//
// The steps follow the machinery, in this order: the on-chain steps, the
// payer's signature (PayerSign) and the refund. Callers who sign elsewhere
// (a browser wallet, another service) use the low-level path instead
// (payments_lowlevel.go). That is Prepare, VerifyTransaction (or
// PrepareRefund and VerifyPayload), their own signature, then Submit or
// SubmitByHash.

// FlowStep names the stage of a flow that failed.
type FlowStep string

// Stages of a flow, in order.
const (
	// StepRead is reading the payment.
	StepRead FlowStep = "read"
	// StepPrepare is the prepare call (for a refund, either phase).
	StepPrepare FlowStep = "prepare"
	// StepVerify is checking an artifact against the payment and the
	// request. The error is an *ArtifactError (or an *UntrustedError), and
	// nothing was signed.
	StepVerify FlowStep = "verify"
	// StepSign is the signer signing a checked digest.
	StepSign FlowStep = "sign"
	// StepSubmit is the submit call (or, for PayerSign, PUT .../sign).
	StepSubmit FlowStep = "submit"
)

// FlowError reports which stage of a flow failed. It unwraps to the cause,
// so errors.As(err, &apiErr), errors.As(err, &artifactErr) and
// errors.Is(err, ErrNotFound) see through it. When TransactionID is set, a
// pending transaction exists on the gateway. Running the flow again with
// the same request reuses it.
type FlowError struct {
	// PaymentID is the payment the flow acted on.
	PaymentID string
	// Operation is the lifecycle step ("" for PayerSign).
	Operation Operation
	// Step is the stage that failed.
	Step FlowStep
	// TransactionID is the prepared transaction, once there is one.
	TransactionID string
	// Calls holds the transcript of every call the flow made, in order. The
	// failed one is last when a call failed.
	Calls []*Call
	// Err is the cause.
	Err error
}

// Error returns one readable line.
func (e *FlowError) Error() string {
	what := "payer signature"
	if e.Operation != "" {
		what = string(e.Operation)
	}
	cause := e.Err.Error()
	var ae *ArtifactError
	if errors.As(e.Err, &ae) && ae == e.Err {
		cause = ae.detail()
	}
	return fmt.Sprintf("rail0: %s of payment %s: %s: %s", what, e.PaymentID, e.Step, cause)
}

// Unwrap returns the cause.
func (e *FlowError) Unwrap() error { return e.Err }

// Every flow takes (ctx, id, params). id is the payment's UUID or its
// rail0_id (0x + 64 hex), as every /payments/{id} route of the gateway
// accepts. The payment read must carry it. params carries the step's
// arguments and Expect, what the caller knows of the payment (see
// Expectation). Expect is checked before anything is prepared or signed.

// flow is one run of a lifecycle step.
type flow struct {
	s *PaymentsService
	// id is the payment as the caller named it (UUID or rail0_id). Every
	// request of the flow addresses it so.
	id     string
	op     Operation
	signer Signer
	// expect is the caller's expectation. asked is what this client's
	// Create asked for, when remembered; askedKey is the id it is kept
	// under.
	expect   Expectation
	asked    *Expectation
	askedKey string
	// paymentID is the UUID of the payment read, once bound. payment is
	// that payment: this flow's read, or the one the client holds. Its
	// transactions say which rows were sent already.
	paymentID string
	payment   *PaymentDetail
	txID      string
	// calls keeps the transcripts of the requests of the flow. They are
	// made through a view of the client that records them (s.client).
	calls *callRecord
}

func (f *flow) fail(step FlowStep, err error) error {
	return &FlowError{PaymentID: f.id, Operation: f.op, Step: step, TransactionID: f.txID, Calls: f.calls.all(), Err: err}
}

// callRecord keeps the transcripts of a flow's calls, in order.
type callRecord struct {
	mu    sync.Mutex
	calls []*Call
}

// add records the transcript of a call that has ended.
func (r *callRecord) add(call *Call) {
	r.mu.Lock()
	r.calls = append(r.calls, call)
	r.mu.Unlock()
}

// all returns the transcripts recorded so far.
func (r *callRecord) all() []*Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clip(r.calls)
}

// done hands the flow's transcripts to what it returns (Response.Calls).
// resp is its Response on success. A FlowError has them already.
func (f *flow) done(resp *Response, err error) {
	if err == nil && resp != nil {
		resp.Calls = f.calls.all()
	}
}

// newFlow checks the flow's id and expectation and its binding (see
// requireBinding) before any request.
func (s *PaymentsService) newFlow(id string, op Operation, expect Expectation) (*flow, error) {
	if s.client.signer == nil {
		return nil, ErrNoSigner
	}
	if _, err := getPayment.path(pathArgs{id}); err != nil {
		return nil, err
	}
	if err := expect.check(); err != nil {
		return nil, err
	}
	// The flow's requests go through a view of the client that records
	// their transcripts. It is one allocation, with the record.
	rec := &callRecord{}
	v := newView(s.client.clientState, s.client.policy, s.client.over, s.client.viewErr)
	v.record = rec
	f := &flow{s: v.Payments, id: id, op: op, signer: s.client.signer, expect: expect, calls: rec}
	if a, key, ok := s.client.created.lookup(id); ok {
		f.asked, f.askedKey = &a, key
	}
	if err := f.requireBinding(); err != nil {
		return nil, err
	}
	return f, nil
}

// signPayload is the one way a flow signs a signing_payload. It checks the
// payload against the terms and the intent. The flow's signer signs the
// digest computed from the checked fields. signPayload returns the
// signature in hex and the payload checked. PayerSign keeps the payload's
// token domain once the gateway accepts the signature.
func (f *flow) signPayload(ctx context.Context, t *verify.Terms, in Intent, payload json.RawMessage) (string, *verify.Payload, error) {
	pc, err := checkPayload(t, in, payload)
	if err != nil {
		return "", nil, f.fail(StepVerify, err)
	}
	sig, err := signDigest(ctx, f.signer, pc.Digest)
	if err != nil {
		return "", nil, f.fail(StepSign, err)
	}
	return "0x" + hex.EncodeToString(sig), pc, nil
}

// read gets the payment, checks it and binds the flow to it. The client
// remembers its terms under the name the caller gave (payments_known.go).
func (f *flow) read(ctx context.Context) (*PaymentDetail, *verify.Terms, *verify.Trust, error) {
	p, err := f.s.Get(ctx, f.id)
	if err != nil {
		return nil, nil, nil, f.fail(StepRead, err)
	}
	tr := f.s.client.trust()
	t, err := checkPayment(p, tr)
	if err != nil {
		return nil, nil, nil, f.fail(StepVerify, err)
	}
	if err := f.bind(p, t); err != nil {
		return nil, nil, nil, f.fail(StepVerify, err)
	}
	f.s.client.known.remember(f.id, p, t)
	return p, t, tr, nil
}

// run takes the payment's checked terms: the client's, or a read. It
// prepares the step with params and checks the prepared transaction against
// in. It checks params.Amount too, a human decimal, in base units. Then it
// signs the transaction and submits it.
func (f *flow) run(ctx context.Context, in Intent, params PaymentPrepareParams) (*Transaction, error) {
	t, tr, known, err := f.terms(ctx)
	if err != nil {
		return nil, err
	}
	if params.Amount != "" {
		if in.Amount, err = baseUnits(t, "amount", params.Amount); err != nil {
			return nil, f.fail(StepVerify, err)
		}
	}
	sent, err := f.prepareSignSubmit(ctx, t, tr, in, params)
	return sent, f.forgetOnRefusal(known, err)
}

func (f *flow) prepareSignSubmit(ctx context.Context, t *verify.Terms, tr *verify.Trust, in Intent, params PaymentPrepareParams) (*Transaction, error) {
	in.Operation, in.Signer = f.op, f.signer.Address()
	if _, err := checkSigner(t, f.op, in.Signer); err != nil {
		return nil, f.fail(StepVerify, err)
	}
	prep, err := f.s.Prepare(ctx, f.id, f.op, params)
	if err != nil {
		return nil, f.fail(StepPrepare, err)
	}
	f.txID = prep.ID
	if prep.UnsignedTransaction == nil || *prep.UnsignedTransaction == "" {
		return nil, f.fail(StepPrepare, ErrNoUnsignedTransaction)
	}
	if err := fromVerify(verify.CheckPrepared(rowOf(&prep.Transaction), f.id, string(f.op), f.paymentID, in.Amount, f.sentAlready)); err != nil {
		return nil, f.fail(StepVerify, err)
	}
	tx, err := checkTransaction(t, in, *prep.UnsignedTransaction, tr)
	if err != nil {
		f.s.client.forgetTokenDomain(t, in, tr, err)
		return nil, f.fail(StepVerify, err)
	}
	raw, err := signTx(ctx, f.signer, tx)
	if err != nil {
		return nil, f.fail(StepSign, err)
	}
	sent, err := f.s.submitSigned(ctx, f.id, f.op, PaymentSubmitParams{SignedTransaction: raw}, preparedRow{id: prep.ID, paymentID: f.paymentID})
	if err != nil {
		return nil, f.fail(StepSubmit, err)
	}
	f.s.client.known.stepped(f.id, f.op, in.Amount)
	f.s.client.known.sent(f.paymentID, prep.ID)
	return sent, nil
}

// sentAlready reports why the row id, a prepare's answer, was sent already.
// Either the payment the flow bound shows it sent (its read, or the rows
// the client holds), or this client sent it. It returns "" when neither.
// Ids match ignoring case, as the wait matches them (sameUUID).
func (f *flow) sentAlready(id string) string {
	for i := range f.payment.Transactions {
		if tx := &f.payment.Transactions[i]; sameUUID(id, tx.ID) && wasSent(tx) {
			return clip(oneLine(string(tx.Status))) + " on the payment already"
		}
	}
	if f.s.client.known.sentBy(f.paymentID, id) {
		return "sent by this client already"
	}
	return ""
}

// The on-chain steps other than the refund. Each prepares one transaction,
// checks it, signs it and submits it (flow.run). Each step sends its
// prepare and its submit. It reads the payment (GET /payments/{id}) first
// only when this client has not checked the payment's terms under the name
// the caller gives (payments_known.go).

// PaymentAuthorizeParams is the request of Authorize.
type PaymentAuthorizeParams struct {
	// Expect is what the payment must match. Zero fields are not checked.
	Expect Expectation
}

// PaymentChargeParams is the request of Charge.
type PaymentChargeParams struct {
	// Expect is what the payment must match. Zero fields are not checked.
	Expect Expectation
}

// PaymentCaptureParams is the request of Capture.
type PaymentCaptureParams struct {
	// Amount is a human decimal ("10.00"), 0 < amount <= capturable.
	Amount string
	// Expect is what the payment must match. Zero fields are not checked.
	Expect Expectation
}

// PaymentVoidParams is the request of Void.
type PaymentVoidParams struct {
	// Expect is what the payment must match. Zero fields are not checked.
	Expect Expectation
}

// PaymentReleaseParams is the request of Release.
type PaymentReleaseParams struct {
	// Expect is what the payment must match. Zero fields are not checked.
	Expect Expectation
}

// PaymentDisputeParams is the request of Dispute.
type PaymentDisputeParams struct {
	// Reason is a bytes32 hex value (0x + 64 hex). Empty records zero.
	Reason string
	// Expect is what the payment must match. Zero fields are not checked.
	Expect Expectation
}

// PaymentCloseDisputeParams is the request of CloseDispute.
type PaymentCloseDisputeParams struct {
	// Reason is a bytes32 hex value (0x + 64 hex). Empty records zero.
	Reason string
	// Expect is what the payment must match. Zero fields are not checked.
	Expect Expectation
}

// step runs one lifecycle step with the client's signer. A release is
// prepared for the signer's address. params.Amount, a human decimal, is
// exactly what a capture must move.
func (s *PaymentsService) step(ctx context.Context, id string, op Operation, expect Expectation, in Intent, params PaymentPrepareParams) (*Transaction, error) {
	f, err := s.newFlow(id, op, expect)
	if err != nil {
		return nil, err
	}
	if op == OpRelease {
		params.From = f.signer.Address()
	}
	tx, err := f.run(ctx, in, params)
	if tx != nil {
		f.done(tx.Response, err)
	}
	return tx, err
}

// Authorize moves a signed authorize-mode payment into escrow. It
// prepares, checks, signs and submits with the client's signer (the
// payee).
//
// POST /payments/{id}/authorize/prepare, then
// POST /payments/{id}/authorize — the payee. GET /payments/{id}
// first, when this client has not checked the payment yet.
func (s *PaymentsService) Authorize(ctx context.Context, id string, params PaymentAuthorizeParams) (*Transaction, error) {
	return s.step(ctx, id, OpAuthorize, params.Expect, Intent{}, PaymentPrepareParams{})
}

// Charge settles a signed charge-mode payment straight to the payee. It
// prepares, checks, signs and submits with the client's signer (the
// payee).
//
// POST /payments/{id}/charge/prepare, then
// POST /payments/{id}/charge — the payee. GET /payments/{id}
// first, when this client has not checked the payment yet.
func (s *PaymentsService) Charge(ctx context.Context, id string, params PaymentChargeParams) (*Transaction, error) {
	return s.step(ctx, id, OpCharge, params.Expect, Intent{}, PaymentPrepareParams{})
}

// Capture captures params.Amount from escrow to the payee with the client's
// signer (the payee). The prepared transaction must capture exactly that
// amount. The gateway may hand back a pending capture prepared earlier for
// another amount, instead of a new one. That is refused (*ArtifactError on
// field amount), never signed.
//
// POST /payments/{id}/capture/prepare, then
// POST /payments/{id}/capture — the payee. GET /payments/{id}
// first, when this client has not checked the payment yet.
func (s *PaymentsService) Capture(ctx context.Context, id string, params PaymentCaptureParams) (*Transaction, error) {
	if err := checkHumanAmount("amount", params.Amount); err != nil {
		return nil, err
	}
	return s.step(ctx, id, OpCapture, params.Expect, Intent{}, PaymentPrepareParams{Amount: params.Amount})
}

// Void returns the whole escrow to the payer before anything was captured,
// with the client's signer (the payee).
//
// POST /payments/{id}/void/prepare, then
// POST /payments/{id}/void — the payee. GET /payments/{id}
// first, when this client has not checked the payment yet.
func (s *PaymentsService) Void(ctx context.Context, id string, params PaymentVoidParams) (*Transaction, error) {
	return s.step(ctx, id, OpVoid, params.Expect, Intent{}, PaymentPrepareParams{})
}

// Release returns the uncaptured escrow to the payer after
// authorization_expiry. It is prepared for and signed by the client's
// signer (the payer or the payee).
//
// POST /payments/{id}/release/prepare, then
// POST /payments/{id}/release — either participant. GET /payments/{id}
// first, when this client has not checked the payment yet.
func (s *PaymentsService) Release(ctx context.Context, id string, params PaymentReleaseParams) (*Transaction, error) {
	return s.step(ctx, id, OpRelease, params.Expect, Intent{}, PaymentPrepareParams{})
}

// Dispute opens a dispute with the client's signer (the payer). A dispute
// is an on-chain signal; no funds move.
//
// POST /payments/{id}/dispute/prepare, then
// POST /payments/{id}/dispute — the payer. GET /payments/{id}
// first, when this client has not checked the payment yet.
func (s *PaymentsService) Dispute(ctx context.Context, id string, params PaymentDisputeParams) (*Transaction, error) {
	return s.step(ctx, id, OpDispute, params.Expect, Intent{Reason: params.Reason}, PaymentPrepareParams{Reason: params.Reason})
}

// CloseDispute closes the open dispute with the client's signer (the
// payer).
//
// POST /payments/{id}/dispute/close/prepare, then
// POST /payments/{id}/dispute/close — the payer. GET /payments/{id}
// first, when this client has not checked the payment yet.
func (s *PaymentsService) CloseDispute(ctx context.Context, id string, params PaymentCloseDisputeParams) (*Transaction, error) {
	return s.step(ctx, id, OpCloseDispute, params.Expect, Intent{Reason: params.Reason}, PaymentPrepareParams{Reason: params.Reason})
}

// The payer's signature of a payment (PayerSign). It is no transaction, but
// the EIP-3009 authorization the payment's escrow or charge will spend.

// PaymentPayerSignParams is the request of PayerSign.
type PaymentPayerSignParams struct {
	// Expect is the order the payment must match. PayerSign needs it, with
	// ChainID, Mode, Token, Payee and Amount set. It does not when this
	// client created the payment and still remembers what Create asked for.
	Expect Expectation
	// PollInterval and MaxPollInterval pace the re-reads of a payment whose
	// signing_payload is null. They pace WaitForStatus's polls the same way
	// (see PaymentWaitForStatusParams).
	PollInterval, MaxPollInterval time.Duration
}

// payerSignReads bounds how often PayerSign reads a payment whose
// signing_payload is null before giving up.
const payerSignReads = 5

// PayerSign has the client's signer (the payer) sign the payment's EIP-3009
// authorization. It stores the signature, moving the payment from unsigned
// to signed.
//
// Before signing, it checks three things:
//   - The signing_payload matches the payment. It must be a
//     TransferWithAuthorization over the token's domain on the payment's
//     chain, from the payer to the RAIL0 contract. It must move exactly the
//     payment's amount and be valid until authorization_expiry. Its nonce
//     is recomputed locally.
//   - The payment matches its config_hash.
//   - The expiries the payment commits to fit the client's bounds
//     (WithExpiryBounds), on the local clock. By default
//     authorization_expiry is at most 30 days ahead, and refund_expiry 1 to
//     365 days ahead.
//
// The payment must also be the order the payer means to pay. The gateway
// could answer Create with one payment and this read with another,
// consistent in itself. On the client that created it, the payment must
// carry what Create asked for: chain, mode, token, payer, payee and amount
// (in base units with the pinned decimals). params.Expect is checked too.
// It takes the record's place when there is none: after a restart, on
// another client, or once more than 1024 newer payments were created.
//
// With neither, PayerSign refuses before any request (ErrUnbound). Set
// Expect's ChainID, Mode, Token, Payee and Amount from the order. Or call
// Create again with the order's IdempotencyKey: the gateway answers with
// the same payment, which restores the record.
//
// A payment found signed already by an earlier call (status past unsigned,
// signed_at set) is a success when it is the payment bound and checked.
// The gateway keeps only a signature that recovers to the payer, this
// client's signer, over that payment's authorization. This call's PUT may
// be answered already_signed after its first answer was lost. That is
// reconciled as SubmitSignature reconciles it. The payment then comes back
// with Response.Reconciled set.
//
// The gateway may answer with a null signing_payload, after a transient
// node failure on its side. The payment is then read again, at most five
// reads in all. PayerSign waits between reads as WaitForStatus does
// (params.PollInterval and MaxPollInterval apply).
//
// GET /payments/{id}, then PUT /payments/{id}/sign — the payer.
func (s *PaymentsService) PayerSign(ctx context.Context, id string, params PaymentPayerSignParams) (*PaymentDetail, error) {
	f, err := s.newFlow(id, "", params.Expect)
	if err != nil {
		return nil, err
	}
	cfg, err := s.client.newWaitConfig(params.PollInterval, params.MaxPollInterval)
	if err != nil {
		return nil, err
	}
	var payment *PaymentDetail
	var t *verify.Terms
	for read := 1; ; read++ {
		payment, t, _, err = f.read(ctx)
		if err != nil {
			return nil, err
		}
		if payment.Status != StatusUnsigned {
			if !isSigned(payment) {
				return nil, f.fail(StepRead, fmt.Errorf("%w (status %s)", ErrNotSignable, oneLine(string(payment.Status))))
			}
			if _, err := checkSigner(t, "", f.signer.Address()); err != nil {
				return nil, f.fail(StepVerify, err)
			}
			f.forgetAsked()
			f.done(payment.Response, nil)
			return payment, nil // signed already, with the terms bound
		}
		if hasJSON(payment.SigningPayload) {
			break
		}
		if read == payerSignReads {
			return nil, f.fail(StepRead, ErrSigningPayloadUnavailable)
		}
		if err := cfg.sleep(ctx, cfg.next()); err != nil {
			return nil, f.fail(StepRead, err)
		}
	}
	if _, err := checkSigner(t, "", f.signer.Address()); err != nil {
		return nil, f.fail(StepVerify, err)
	}
	if err := s.client.checkExpiries(t); err != nil {
		return nil, f.fail(StepVerify, err)
	}
	sig, pc, err := f.signPayload(ctx, t, Intent{}, payment.SigningPayload)
	if err != nil {
		return nil, err
	}
	signed, err := f.s.submitSignature(ctx, id, PaymentSubmitSignatureParams{Signature: sig}, &signedFor{terms: t, digest: pc.Digest})
	if err != nil {
		return nil, f.fail(StepSubmit, err)
	}
	if signed.Response.Reconciled == nil {
		// The gateway accepted the signature over this domain. The payer's
		// signature in a later authorize or charge can be recovered.
		s.client.learnTokenDomain(t, pc)
	}
	f.forgetAsked()
	f.done(signed.Response, nil)
	return signed, nil
}

// checkExpiries checks the expiries the payer's signature commits to
// against the client's bounds (WithExpiryBounds), from the local clock.
func (c *Client) checkExpiries(t *verify.Terms) error {
	return fromVerify(verify.CheckExpiries(t, c.now(), c.expiries))
}

// forgetAsked drops this client's record of the payment once it is signed.
func (f *flow) forgetAsked() {
	if f.asked != nil {
		f.s.client.created.forget(f.askedKey)
	}
}

// hasJSON reports whether raw holds a JSON value other than null.
func hasJSON(raw json.RawMessage) bool {
	trimmed := strings.TrimSpace(string(raw))
	return trimmed != "" && trimmed != "null"
}

// The refund, the one step with two phases. First comes the payee's
// EIP-3009 authorization of the refund, then the transaction that carries
// it.

// PaymentRefundParams is the request of Refund.
type PaymentRefundParams struct {
	// Amount is a human decimal ("4.00"), 0 < amount <= refundable.
	Amount string
	// Expect is what the payment must match. Refund needs Expect.Payer
	// (recommended) or Expect.Rail0ID, unless the payment is named by its
	// rail0_id. A refund pays the payer, so the gateway's word alone never
	// says who that is. A rail0_id must come from the merchant's own order
	// record, never from a read of the gateway at refund time.
	Expect Expectation
}

// Refund sends params.Amount back to the payer with the client's signer
// (the payee). It runs both refund phases:
//   - The ReceiveWithAuthorization payload is checked and signed. It must
//     move exactly that amount to the contract, on the payment's chain and
//     token, with the refund nonce.
//   - The refund transaction is checked to carry that same amount and that
//     same signature. Then it is signed and submitted.
//
// A refund is the one step that sends the merchant's own money to someone
// else. So it is never signed on the gateway's word alone about who that
// is. Set params.Expect.Payer to the order's payer (recommended). Or name
// the payment by the rail0_id stored in the merchant's own order record at
// checkout, as the id or Expect.Rail0ID. The chain binds that rail0_id to
// the payment's terms, payer included. A rail0_id read from the gateway
// when refunding binds nothing: the read returns whatever payment the
// gateway chose. Without either, Refund refuses before any request
// (ErrUnbound). It does not when this client created the payment and
// remembers what Create asked for.
//
// The refund's nonce commits to the refundable balance before it. A client
// that already checked the payment's terms (payments_known.go) tracks that
// balance from its own steps and reads. It sends no read. Another client's
// capture or refund may have made the balance stale. Then the payload's
// nonce differs. Refund reads the payment once and checks the same payload
// again before anything is signed.
//
// POST /payments/{id}/refund/prepare (twice), then POST /payments/{id}/refund
// — the payee. GET /payments/{id} first when this client has not checked
// the payment yet, or between the prepares when its balance was stale.
func (s *PaymentsService) Refund(ctx context.Context, id string, params PaymentRefundParams) (*Transaction, error) {
	if err := checkHumanAmount("amount", params.Amount); err != nil {
		return nil, err
	}
	f, err := s.newFlow(id, OpRefund, params.Expect)
	if err != nil {
		return nil, err
	}
	t, tr, known, err := f.terms(ctx)
	if err != nil {
		return nil, err
	}
	sent, err := f.refund(ctx, t, tr, known, params.Amount)
	if sent != nil {
		f.done(sent.Response, err)
	}
	return sent, f.forgetOnRefusal(known, err)
}

// refund runs both phases on terms t. known says the refundable balance is
// the client's tracking rather than this flow's read.
func (f *flow) refund(ctx context.Context, t *verify.Terms, tr *verify.Trust, known bool, amount string) (*Transaction, error) {
	base, err := baseUnits(t, "amount", amount)
	if err != nil {
		return nil, f.fail(StepVerify, err)
	}
	in := Intent{Operation: OpRefund, Signer: f.signer.Address(), Amount: base}
	if _, err := checkSigner(t, OpRefund, in.Signer); err != nil {
		return nil, f.fail(StepVerify, err)
	}
	auth, err := f.s.PrepareRefund(ctx, f.id, PaymentPrepareRefundParams{Amount: amount})
	if err != nil {
		return nil, f.fail(StepPrepare, err)
	}
	in.Signature, _, err = f.signPayload(ctx, t, in, auth.SigningPayload)
	var ae *ArtifactError
	if known && errors.As(err, &ae) && ae.Artifact == "signing_payload" && ae.Field == "message.nonce" {
		// The tracked balance may be stale. Nothing was signed. Read the
		// payment once and check the same payload against what it says.
		if _, t, tr, err = f.read(ctx); err != nil {
			return nil, err
		}
		in.Signature, _, err = f.signPayload(ctx, t, in, auth.SigningPayload)
	}
	if err != nil {
		return nil, err
	}
	return f.prepareSignSubmit(ctx, t, tr, in, PaymentPrepareParams{Amount: amount, Signature: in.Signature})
}
