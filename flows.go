package rail0

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/rail0/rail0-go/internal/verify"
)

// This file holds the flows: one call per lifecycle step for a client with
// an identity (WithSigner). Each flow reads the payment, checks it, prepares
// the step, checks what the gateway prepared against the payment and the
// request (artifacts.go), signs the digest of what it checked, and submits.
// Nothing the gateway hands over is signed unchecked. Submitting is not
// confirmation: follow a flow with WaitForTransaction before the next step.
//
// Callers who sign elsewhere (a browser wallet, another service) use the
// low-level path instead: Prepare, VerifyTransaction (or PrepareRefund and
// VerifyPayload), their own signature, then Submit or SubmitByHash.

// FlowStep names the stage of a flow that failed.
type FlowStep string

// Stages of a flow, in order.
const (
	// StepRead is reading the payment.
	StepRead FlowStep = "read"
	// StepPrepare is the prepare call (for a refund, either phase).
	StepPrepare FlowStep = "prepare"
	// StepVerify is checking an artifact against the payment and the
	// request; the error is an *ArtifactError (or an *UntrustedError) and
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
// pending transaction exists on the gateway: running the flow again with the
// same request reuses it.
type FlowError struct {
	// PaymentID is the payment the flow acted on.
	PaymentID string
	// Operation is the lifecycle step ("" for PayerSign).
	Operation Operation
	// Step is the stage that failed.
	Step FlowStep
	// TransactionID is the prepared transaction, once there is one.
	TransactionID string
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

// ErrNoUnsignedTransaction is returned (inside a *FlowError) when a prepare
// answer carries no unsigned_transaction to sign.
var ErrNoUnsignedTransaction = errors.New("rail0: prepared transaction has no unsigned_transaction")

// ErrNotSignable is returned (inside a *FlowError) by PayerSign when the
// payment is neither waiting for the payer's signature nor signed.
var ErrNotSignable = errors.New("rail0: payment is not waiting for the payer signature")

// ErrSigningPayloadUnavailable is returned (inside a *FlowError) by PayerSign
// when the payment stays unsigned but its signing_payload is still null after
// the re-reads (the gateway could not reach a node to build it).
var ErrSigningPayloadUnavailable = errors.New("rail0: signing_payload is still unavailable")

// ErrNoSigner is returned by a flow on a client created without WithSigner.
var ErrNoSigner = errors.New("rail0: the client has no signer (WithSigner)")

// Every flow takes (ctx, id, params): id is the payment's UUID or its
// rail0_id (0x + 64 hex), as every /payments/{id} route of the gateway
// accepts, and the payment read must carry it; params carries the step's
// arguments and Expect, what the caller knows of the payment (see
// Expectation), checked before anything is prepared or signed.

// PayerSignParams is the request of PayerSign.
type PayerSignParams struct {
	// Expect is the order the payment must match. PayerSign needs it, with
	// ChainID, Mode, Token, Payee and Amount set, unless this client
	// created the payment and still remembers what Create asked for.
	Expect Expectation
	// PollInterval and MaxPollInterval pace the re-reads of a payment whose
	// signing_payload is null, as WithPollInterval paces WaitFor; zero
	// means DefaultPollInterval and DefaultMaxPollInterval.
	PollInterval, MaxPollInterval time.Duration
}

// AuthorizeParams is the request of Authorize.
type AuthorizeParams struct {
	// Expect is what the payment must match; zero fields are not checked.
	Expect Expectation
}

// ChargeParams is the request of Charge.
type ChargeParams struct {
	// Expect is what the payment must match; zero fields are not checked.
	Expect Expectation
}

// CaptureParams is the request of Capture.
type CaptureParams struct {
	// Amount is a human decimal ("10.00"), 0 < amount <= capturable.
	Amount string
	// Expect is what the payment must match; zero fields are not checked.
	Expect Expectation
}

// VoidParams is the request of Void.
type VoidParams struct {
	// Expect is what the payment must match; zero fields are not checked.
	Expect Expectation
}

// ReleaseParams is the request of Release.
type ReleaseParams struct {
	// Expect is what the payment must match; zero fields are not checked.
	Expect Expectation
}

// RefundParams is the request of Refund.
type RefundParams struct {
	// Amount is a human decimal ("4.00"), 0 < amount <= refundable.
	Amount string
	// Expect is what the payment must match. Refund needs Expect.Payer or
	// Expect.Rail0ID, unless the payment is named by its rail0_id: a refund
	// pays the payer, so the gateway's word alone never says who that is.
	Expect Expectation
}

// DisputeParams is the request of Dispute and CloseDispute.
type DisputeParams struct {
	// Reason is a bytes32 hex value (0x + 64 hex); empty records zero.
	Reason string
	// Expect is what the payment must match; zero fields are not checked.
	Expect Expectation
}

// ---- the flows ----

// flow is one run of a lifecycle step.
type flow struct {
	s *PaymentsService
	// id is the payment as the caller named it (UUID or rail0_id); every
	// request of the flow addresses it so.
	id     string
	op     Operation
	signer Signer
	// expect is the caller's expectation; asked is what this client's
	// Create asked for (askedKey the id it is kept under), when remembered.
	expect   Expectation
	asked    *Expectation
	askedKey string
	// paymentID is the UUID of the payment read, once bound.
	paymentID string
	txID      string
}

func (f *flow) fail(step FlowStep, err error) error {
	return &FlowError{PaymentID: f.id, Operation: f.op, Step: step, TransactionID: f.txID, Err: err}
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
	f := &flow{s: s, id: id, op: op, signer: s.client.signer, expect: expect}
	if a, key, ok := s.client.created.lookup(id); ok {
		f.asked, f.askedKey = &a, key
	}
	if err := f.requireBinding(); err != nil {
		return nil, err
	}
	return f, nil
}

// signPayload is the one way a flow signs a signing_payload: checked
// against the terms and the intent, the digest computed from the checked
// fields signed by the flow's signer, the token's EIP-712 domain kept for
// later checks of the payer's signature. It returns the signature in hex.
func (f *flow) signPayload(ctx context.Context, t *verify.Terms, in Intent, payload json.RawMessage) (string, error) {
	pc, err := checkPayload(t, in, payload)
	if err != nil {
		return "", f.fail(StepVerify, err)
	}
	sig, err := signDigest(ctx, f.signer, pc.Digest)
	if err != nil {
		return "", f.fail(StepSign, err)
	}
	f.s.client.learnTokenDomain(t, pc)
	return "0x" + hex.EncodeToString(sig), nil
}

// read gets the payment, checks it and binds the flow to it.
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
	return p, t, tr, nil
}

// run reads and checks the payment, prepares the step with params, checks
// the prepared transaction against in (and params.Amount, a human decimal,
// in base units), signs it and submits it.
func (f *flow) run(ctx context.Context, in Intent, params PrepareParams) (*Transaction, error) {
	_, t, tr, err := f.read(ctx)
	if err != nil {
		return nil, err
	}
	if params.Amount != "" {
		if in.Amount, err = baseUnits(t, "amount", params.Amount); err != nil {
			return nil, f.fail(StepVerify, err)
		}
	}
	return f.prepareSignSubmit(ctx, t, tr, in, params)
}

// step runs one lifecycle step with the client's signer: a release is
// prepared for the signer's address, and params.Amount (a human decimal) is
// what a capture must move, exactly.
func (s *PaymentsService) step(ctx context.Context, id string, op Operation, expect Expectation, in Intent, params PrepareParams) (*Transaction, error) {
	f, err := s.newFlow(id, op, expect)
	if err != nil {
		return nil, err
	}
	if op == OpRelease {
		params.From = f.signer.Address()
	}
	return f.run(ctx, in, params)
}

func (f *flow) prepareSignSubmit(ctx context.Context, t *verify.Terms, tr *verify.Trust, in Intent, params PrepareParams) (*Transaction, error) {
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
	art := func(field, expected, got string) error {
		return f.fail(StepVerify, &ArtifactError{PaymentID: f.id, Operation: f.op, Artifact: "transaction", Field: field, Expected: expected, Got: got})
	}
	if prep.Operation != f.op {
		return nil, art("operation", string(f.op), string(prep.Operation))
	}
	if prep.PaymentID != "" && prep.PaymentID != f.paymentID {
		return nil, art("payment_id", f.paymentID, prep.PaymentID)
	}
	if in.Amount != "" && prep.Amount != nil && *prep.Amount != in.Amount {
		// A pending transaction prepared earlier for another amount is
		// handed back rather than a new one (Reused): never sign it.
		return nil, art("amount", in.Amount, *prep.Amount)
	}
	tx, err := checkTransaction(t, in, *prep.UnsignedTransaction, tr)
	if err != nil {
		return nil, f.fail(StepVerify, err)
	}
	raw, err := signTx(ctx, f.signer, tx)
	if err != nil {
		return nil, f.fail(StepSign, err)
	}
	sent, err := f.s.Submit(ctx, f.id, f.op, raw)
	if err != nil {
		return nil, f.fail(StepSubmit, err)
	}
	return sent, nil
}

// Authorize moves a signed authorize-mode payment into escrow with the
// client's signer (the payee): prepare, check, sign, submit.
//
// GET /payments/{id}, POST /payments/{id}/authorize/prepare, then
// POST /payments/{id}/authorize — the payee.
func (s *PaymentsService) Authorize(ctx context.Context, id string, params AuthorizeParams) (*Transaction, error) {
	return s.step(ctx, id, OpAuthorize, params.Expect, Intent{}, PrepareParams{})
}

// Charge settles a signed charge-mode payment straight to the payee with
// the client's signer (the payee): prepare, check, sign, submit.
//
// GET /payments/{id}, POST /payments/{id}/charge/prepare, then
// POST /payments/{id}/charge — the payee.
func (s *PaymentsService) Charge(ctx context.Context, id string, params ChargeParams) (*Transaction, error) {
	return s.step(ctx, id, OpCharge, params.Expect, Intent{}, PrepareParams{})
}

// Capture captures params.Amount from escrow to the payee with the client's
// signer (the payee). The prepared transaction must capture exactly that
// amount: a pending capture prepared earlier for another amount, which the
// gateway hands back instead of a new one, is refused (*ArtifactError on
// field amount), never signed.
//
// GET /payments/{id}, POST /payments/{id}/capture/prepare, then
// POST /payments/{id}/capture — the payee.
func (s *PaymentsService) Capture(ctx context.Context, id string, params CaptureParams) (*Transaction, error) {
	if err := checkHumanAmount("amount", params.Amount); err != nil {
		return nil, err
	}
	return s.step(ctx, id, OpCapture, params.Expect, Intent{}, PrepareParams{Amount: params.Amount})
}

// Void returns the whole escrow to the payer before anything was captured,
// with the client's signer (the payee).
//
// GET /payments/{id}, POST /payments/{id}/void/prepare, then
// POST /payments/{id}/void — the payee.
func (s *PaymentsService) Void(ctx context.Context, id string, params VoidParams) (*Transaction, error) {
	return s.step(ctx, id, OpVoid, params.Expect, Intent{}, PrepareParams{})
}

// Release returns the uncaptured escrow to the payer after
// authorization_expiry, prepared for and signed by the client's signer (the
// payer or the payee).
//
// GET /payments/{id}, POST /payments/{id}/release/prepare, then
// POST /payments/{id}/release — either participant.
func (s *PaymentsService) Release(ctx context.Context, id string, params ReleaseParams) (*Transaction, error) {
	return s.step(ctx, id, OpRelease, params.Expect, Intent{}, PrepareParams{})
}

// Dispute opens a dispute (an on-chain signal; no funds move) with the
// client's signer (the payer).
//
// GET /payments/{id}, POST /payments/{id}/dispute/prepare, then
// POST /payments/{id}/dispute — the payer.
func (s *PaymentsService) Dispute(ctx context.Context, id string, params DisputeParams) (*Transaction, error) {
	return s.step(ctx, id, OpDispute, params.Expect, Intent{Reason: params.Reason}, PrepareParams{Reason: params.Reason})
}

// CloseDispute closes the open dispute with the client's signer (the
// payer).
//
// GET /payments/{id}, POST /payments/{id}/dispute/close/prepare, then
// POST /payments/{id}/dispute/close — the payer.
func (s *PaymentsService) CloseDispute(ctx context.Context, id string, params DisputeParams) (*Transaction, error) {
	return s.step(ctx, id, OpCloseDispute, params.Expect, Intent{Reason: params.Reason}, PrepareParams{Reason: params.Reason})
}

// Refund sends params.Amount back to the payer with the client's signer (the
// payee), running both refund phases: the ReceiveWithAuthorization payload
// is checked (exactly that amount, to the contract, on the payment's chain
// and token, with the refund nonce) and signed, then the refund transaction
// is checked to carry that same amount and that same signature, signed and
// submitted.
//
// A refund is the one step that sends the merchant's own money to someone
// else, so it is never signed on the gateway's word alone about who that
// is: name the payment by its rail0_id (the chain binds it to the payment's
// terms, payer included), or set params.Expect.Payer (or Expect.Rail0ID).
// Without either, Refund refuses before any request (ErrUnbound), unless
// this client created the payment and remembers what Create asked for.
//
// GET /payments/{id}, POST /payments/{id}/refund/prepare (twice), then
// POST /payments/{id}/refund — the payee.
func (s *PaymentsService) Refund(ctx context.Context, id string, params RefundParams) (*Transaction, error) {
	if err := checkHumanAmount("amount", params.Amount); err != nil {
		return nil, err
	}
	f, err := s.newFlow(id, OpRefund, params.Expect)
	if err != nil {
		return nil, err
	}
	_, t, tr, err := f.read(ctx)
	if err != nil {
		return nil, err
	}
	base, err := baseUnits(t, "amount", params.Amount)
	if err != nil {
		return nil, f.fail(StepVerify, err)
	}
	in := Intent{Operation: OpRefund, Signer: f.signer.Address(), Amount: base}
	if _, err := checkSigner(t, OpRefund, in.Signer); err != nil {
		return nil, f.fail(StepVerify, err)
	}
	auth, err := s.PrepareRefund(ctx, id, PrepareParams{Amount: params.Amount})
	if err != nil {
		return nil, f.fail(StepPrepare, err)
	}
	if in.Signature, err = f.signPayload(ctx, t, in, auth.SigningPayload); err != nil {
		return nil, err
	}
	return f.prepareSignSubmit(ctx, t, tr, in, PrepareParams{Amount: params.Amount, Signature: in.Signature})
}

// payerSignReads bounds how often PayerSign reads a payment whose
// signing_payload is null before giving up.
const payerSignReads = 5

// PayerSign has the client's signer (the payer) sign the payment's EIP-3009
// authorization and stores the signature, moving the payment from unsigned
// to signed. The signing_payload is checked against the payment first
// (TransferWithAuthorization over the token's domain on the payment's chain,
// from the payer to the RAIL0 contract, exactly the payment's amount, valid
// until authorization_expiry, with the nonce recomputed locally) and the
// payment against its config_hash.
//
// The payment must also be the order the payer means to pay, since the
// gateway could answer Create with one payment and this read with another,
// consistent in itself. On the client that created it, the payment must
// carry what Create asked for: chain, mode, token, payer, payee and amount
// (in base units with the pinned decimals). params.Expect is checked too,
// and takes the record's place when there is none: after a restart, on
// another client, or once more than 1024 newer payments were created. With
// neither, PayerSign refuses before any request (ErrUnbound): set Expect's
// ChainID, Mode, Token, Payee and Amount from the order, or call Create
// again with the order's IdempotencyKey, which the gateway answers with the
// same payment and which restores the record.
//
// A payment found signed already (status past unsigned, signed_at set),
// whether by this call's PUT answered already_signed after its first answer
// was lost or by an earlier call, is returned as a success when it is the
// payment bound and checked: the gateway keeps only a signature that
// recovers to the payer, this client's signer, over that payment's
// authorization.
//
// If the gateway answers with a null signing_payload (a transient node
// failure on its side), the payment is read again, waiting between reads as
// WaitFor does (params.PollInterval and MaxPollInterval apply), at most five
// reads in all.
//
// GET /payments/{id}, then PUT /payments/{id}/sign — the payer.
func (s *PaymentsService) PayerSign(ctx context.Context, id string, params PayerSignParams) (*PaymentDetail, error) {
	f, err := s.newFlow(id, "", params.Expect)
	if err != nil {
		return nil, err
	}
	cfg, err := params.waitConfig()
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
				return nil, f.fail(StepRead, fmt.Errorf("%w (status %s)", ErrNotSignable, payment.Status))
			}
			if _, err := checkSigner(t, "", f.signer.Address()); err != nil {
				return nil, f.fail(StepVerify, err)
			}
			f.forgetAsked()
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
	sig, err := f.signPayload(ctx, t, Intent{}, payment.SigningPayload)
	if err != nil {
		return nil, err
	}
	signed, err := s.Sign(ctx, id, sig)
	if err != nil {
		done, ok := f.signedAlready(ctx, t, err)
		if !ok {
			return nil, f.fail(StepSubmit, err)
		}
		signed = done
	}
	f.forgetAsked()
	return signed, nil
}

// waitConfig is the pacing of PayerSign's re-reads.
func (p PayerSignParams) waitConfig() (*waitConfig, error) {
	first := p.PollInterval
	if first == 0 {
		first = DefaultPollInterval
	}
	last := p.MaxPollInterval
	if last == 0 {
		last = max(first, DefaultMaxPollInterval)
	}
	if first < 0 || last < 0 {
		return nil, &ValidationError{Field: "poll interval", Reason: "is negative"}
	}
	return newWaitConfig([]WaitOption{WithPollInterval(first, last)})
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

// ---- Waiting for confirmation ----

// Polling limits of WaitFor. The gateway allows a session 300 requests per
// 60 s, one every 200 ms on average, shared by everything the session does;
// the default starts at one poll per second and slows down to one per ten
// seconds, since confirmations take from seconds to minutes.
const (
	// MinPollInterval is the shortest wait between two polls that WaitFor
	// accepts: the session rate limit's average spacing (60 s / 300).
	MinPollInterval = 200 * time.Millisecond
	// DefaultPollInterval is the first wait between polls.
	DefaultPollInterval = time.Second
	// DefaultMaxPollInterval is the longest wait between polls; the wait
	// grows by half after each poll until it reaches it.
	DefaultMaxPollInterval = 10 * time.Second
)

// WaitOption configures WaitFor and WaitForTransaction.
type WaitOption func(*waitConfig) error

type waitConfig struct {
	interval, max time.Duration
	// sleep waits d or until ctx ends; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
}

// WithPollInterval sets the first wait between polls and the longest one;
// the wait grows by half after each poll from first to last. Values below
// MinPollInterval are raised to it, so a poller never outpaces the session
// rate limit on its own. last below first is an error.
func WithPollInterval(first, last time.Duration) WaitOption {
	return func(c *waitConfig) error {
		first, last = max(first, MinPollInterval), max(last, MinPollInterval)
		if last < first {
			return &ValidationError{Field: "poll interval", Reason: "last is below first"}
		}
		c.interval, c.max = first, last
		return nil
	}
}

func newWaitConfig(opts []WaitOption) (*waitConfig, error) {
	c := &waitConfig{interval: DefaultPollInterval, max: DefaultMaxPollInterval, sleep: pollSleep}
	for _, opt := range opts {
		if opt == nil {
			return nil, errors.New("rail0: nil WaitOption")
		}
		if err := opt(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// next returns the wait before the next poll and grows the following one.
func (c *waitConfig) next() time.Duration {
	d := c.interval
	grown := c.interval + c.interval/2
	if grown < c.interval || grown > c.max { // overflow, or past the cap
		grown = c.max
	}
	c.interval = grown
	return d
}

// pollSleep waits d, or returns ctx's error as soon as ctx ends.
func pollSleep(ctx context.Context, d time.Duration) error {
	if !sleepCtx(ctx, d) {
		return ctx.Err()
	}
	return nil
}

// WaitCondition tells WaitFor what to wait for. Build one with ForStatus;
// WaitForTransaction waits for a transaction.
type WaitCondition struct {
	transactionID string
	statuses      []PaymentStatus
}

// forTransaction waits until the payment's transaction txID is confirmed.
// If it fails instead, WaitFor returns a *TransactionFailedError at once.
func forTransaction(txID string) WaitCondition {
	return WaitCondition{transactionID: txID}
}

// ForStatus waits until the payment's status is one of statuses. A failed
// transaction never changes a payment's status, so after submitting a step
// prefer WaitForTransaction, which stops as soon as the transaction fails.
func ForStatus(statuses ...PaymentStatus) WaitCondition {
	return WaitCondition{statuses: slices.Clone(statuses)}
}

// ErrTransactionFailed matches a *TransactionFailedError with errors.Is.
var ErrTransactionFailed = errors.New("rail0: transaction failed")

// ErrUnknownTransaction is returned by WaitFor when the payment has no
// transaction with the awaited id.
var ErrUnknownTransaction = errors.New("rail0: payment has no such transaction")

// TransactionFailedError is a transaction that the gateway marked failed:
// reverted on chain, or rejected before reaching it. Code uses the same
// values as error responses (for example CodeNonceTooLow: prepare again).
type TransactionFailedError struct {
	// PaymentID is the payment the transaction belongs to.
	PaymentID string
	// Transaction is the failed row as last read.
	Transaction *Transaction
	// Code is the row's error_code; empty when the gateway gave none.
	Code ErrorCode
	// Title is the row's error_title.
	Title string
	// Detail is the row's error_detail, or its older error_message.
	Detail string
}

// Error returns one readable line.
func (e *TransactionFailedError) Error() string {
	msg := "rail0: transaction of payment " + oneLine(e.PaymentID) + " failed"
	if tx := e.Transaction; tx != nil {
		msg = fmt.Sprintf("rail0: %s transaction %s of payment %s failed", oneLine(string(tx.Operation)), oneLine(tx.ID), oneLine(e.PaymentID))
	}
	if e.Code != "" {
		msg += ": " + oneLine(string(e.Code))
	}
	if e.Detail != "" {
		msg += ": " + oneLine(e.Detail)
	} else if e.Title != "" {
		msg += ": " + oneLine(e.Title)
	}
	return msg
}

// Is matches ErrTransactionFailed.
func (e *TransactionFailedError) Is(target error) bool { return target == ErrTransactionFailed }

// WaitFor polls the payment until cond holds and returns the payment as last
// read. Each poll is a GET /payments/{id} through the client's retry rules
// (and its pacing, when the client has WithPacing). A 429 is not fatal: the
// next poll waits at least its Retry-After (capped by RetryAfterCap). Other
// errors end the wait.
// Between polls WaitFor waits DefaultPollInterval, growing to
// DefaultMaxPollInterval (see WithPollInterval), never less than
// MinPollInterval: with the defaults, one waiter uses at most a fifth of the
// session's budget, and soon much less. It returns ctx's error as soon as ctx
// ends; give it a generous deadline, since confirmations can take minutes.
//
// GET /payments/{id} — a participant.
func (s *PaymentsService) WaitFor(ctx context.Context, id string, cond WaitCondition, opts ...WaitOption) (*PaymentDetail, error) {
	if cond.transactionID == "" && len(cond.statuses) == 0 {
		return nil, &ValidationError{Field: "condition", Reason: "use ForStatus"}
	}
	cfg, err := newWaitConfig(opts)
	if err != nil {
		return nil, err
	}
	for {
		payment, err := s.Get(ctx, id)
		wait := cfg.next()
		switch {
		case err == nil:
			done, err := cond.check(payment)
			if done || err != nil {
				return payment, err
			}
		default:
			var apiErr *APIError
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests {
				return nil, err
			}
			// Wait at least the gateway's instruction, bounded like every
			// server-given wait by the client's RetryAfterCap.
			wait = max(wait, min(apiErr.RetryAfter, s.client.policy.retryAfterCap))
		}
		if err := cfg.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// check reports whether the condition holds for p, or the error that ends
// the wait.
func (c WaitCondition) check(p *PaymentDetail) (bool, error) {
	if c.transactionID == "" {
		return slices.Contains(c.statuses, p.Status), nil
	}
	for i := range p.Transactions {
		tx := &p.Transactions[i]
		if tx.ID != c.transactionID {
			continue
		}
		switch tx.Status {
		case TxConfirmed:
			return true, nil
		case TxFailed:
			return true, &TransactionFailedError{
				PaymentID:   p.ID,
				Transaction: tx,
				Code:        deref(tx.ErrorCode),
				Title:       deref(tx.ErrorTitle),
				Detail:      firstNonEmpty(deref(tx.ErrorDetail), deref(tx.ErrorMessage)),
			}
		}
		return false, nil
	}
	return true, fmt.Errorf("%w: %s on payment %s", ErrUnknownTransaction, oneLine(c.transactionID), oneLine(p.ID))
}

// WaitForTransaction waits until the payment's transaction txID is
// confirmed and returns it; a failed transaction is a
// *TransactionFailedError, returned as soon as the gateway reports it.
//
// GET /payments/{id} — a participant.
func (s *PaymentsService) WaitForTransaction(ctx context.Context, id, txID string, opts ...WaitOption) (*Transaction, error) {
	if txID == "" {
		return nil, &ValidationError{Field: "transaction id", Reason: "is required"}
	}
	p, err := s.WaitFor(ctx, id, forTransaction(txID), opts...)
	if err != nil {
		return nil, err
	}
	for i := range p.Transactions {
		if p.Transactions[i].ID == txID {
			tx := p.Transactions[i]
			tx.Response = p.Response // the last poll's
			return &tx, nil
		}
	}
	return nil, fmt.Errorf("%w: %s on payment %s", ErrUnknownTransaction, txID, id)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
