package rail0

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// This file holds the convenience flows on top of the prepare and submit
// calls: each runs prepare → sign → submit with a Signer (package signing
// provides one backed by a private key; the root package does not import
// go-ethereum) and returns the submitted Transaction. Submitting is not
// confirmation: follow a flow with WaitForTransaction before the next step.

// FlowStep names the stage of a convenience flow that failed.
type FlowStep string

// Stages of a convenience flow, in order.
const (
	// StepRead is reading the payment (PayerSign).
	StepRead FlowStep = "read"
	// StepPrepare is the prepare call (for a refund, either phase).
	StepPrepare FlowStep = "prepare"
	// StepSignPayload is the signer signing an EIP-712 signing_payload.
	StepSignPayload FlowStep = "sign_payload"
	// StepSignTransaction is the signer signing an unsigned transaction.
	StepSignTransaction FlowStep = "sign_transaction"
	// StepSubmit is the submit call (or, for PayerSign, PUT .../sign).
	StepSubmit FlowStep = "submit"
)

// FlowError reports which stage of a convenience flow failed. It unwraps to
// the underlying error, so errors.As(err, &apiErr) and errors.Is(err,
// ErrNotFound) see through it. When Step is StepSignTransaction or
// StepSubmit, a pending transaction (TransactionID) exists on the gateway:
// running the flow again reuses it.
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
	return fmt.Sprintf("rail0: %s of payment %s: %s: %v", what, e.PaymentID, e.Step, e.Err)
}

// Unwrap returns the cause.
func (e *FlowError) Unwrap() error { return e.Err }

// ErrNoUnsignedTransaction is returned (inside a *FlowError) when a prepare
// answer carries no unsigned_transaction to sign.
var ErrNoUnsignedTransaction = errors.New("rail0: prepared transaction has no unsigned_transaction")

// ErrNotSignable is returned (inside a *FlowError) by PayerSign when the
// payment is no longer waiting for the payer's signature.
var ErrNotSignable = errors.New("rail0: payment is not waiting for the payer signature")

// ErrSigningPayloadUnavailable is returned (inside a *FlowError) by PayerSign
// when the payment stays unsigned but its signing_payload is still null after
// the re-reads (the gateway could not reach a node to build it).
var ErrSigningPayloadUnavailable = errors.New("rail0: signing_payload is still unavailable")

func requireSigner(signer Signer) error {
	if signer == nil {
		return &ValidationError{Field: "signer", Reason: "is required"}
	}
	return nil
}

// signAndSubmit signs a prepared transaction with signer and submits it.
func (s *PaymentsService) signAndSubmit(ctx context.Context, id string, op Operation, prep *PreparedTransaction, signer Signer) (*Transaction, error) {
	fail := func(step FlowStep, err error) (*Transaction, error) {
		return nil, &FlowError{PaymentID: id, Operation: op, Step: step, TransactionID: prep.ID, Err: err}
	}
	if prep.UnsignedTransaction == nil || *prep.UnsignedTransaction == "" {
		return fail(StepSignTransaction, ErrNoUnsignedTransaction)
	}
	signed, err := signer.SignTransaction(ctx, *prep.UnsignedTransaction)
	if err != nil {
		return fail(StepSignTransaction, err)
	}
	tx, err := s.Submit(ctx, id, op, signed)
	if err != nil {
		return fail(StepSubmit, err)
	}
	return tx, nil
}

// runStep prepares op with params, then signs and submits it.
func (s *PaymentsService) runStep(ctx context.Context, id string, op Operation, params PrepareParams, signer Signer) (*Transaction, error) {
	if err := requireSigner(signer); err != nil {
		return nil, err
	}
	prep, err := s.Prepare(ctx, id, op, params)
	if err != nil {
		return nil, &FlowError{PaymentID: id, Operation: op, Step: StepPrepare, Err: err}
	}
	return s.signAndSubmit(ctx, id, op, prep, signer)
}

// Authorize moves a signed authorize-mode payment into escrow: it prepares
// the authorize step, has signer (the payee) sign the transaction and submits
// it. See PrepareAuthorize and SubmitAuthorize.
//
// POST /payments/{id}/authorize/prepare, then POST /payments/{id}/authorize
// — the payee.
func (s *PaymentsService) Authorize(ctx context.Context, id string, signer Signer) (*Transaction, error) {
	return s.runStep(ctx, id, OpAuthorize, PrepareParams{}, signer)
}

// Charge settles a signed charge-mode payment straight to the payee:
// prepare, sign with signer (the payee), submit.
//
// POST /payments/{id}/charge/prepare, then POST /payments/{id}/charge — the
// payee.
func (s *PaymentsService) Charge(ctx context.Context, id string, signer Signer) (*Transaction, error) {
	return s.runStep(ctx, id, OpCharge, PrepareParams{}, signer)
}

// Capture captures amount (a human decimal such as "10.00") from escrow to
// the payee: prepare, sign with signer (the payee), submit.
//
// POST /payments/{id}/capture/prepare, then POST /payments/{id}/capture —
// the payee.
func (s *PaymentsService) Capture(ctx context.Context, id, amount string, signer Signer) (*Transaction, error) {
	return s.runStep(ctx, id, OpCapture, PrepareParams{Amount: amount}, signer)
}

// Void returns the whole escrow to the payer before anything was captured:
// prepare, sign with signer (the payee), submit.
//
// POST /payments/{id}/void/prepare, then POST /payments/{id}/void — the
// payee.
func (s *PaymentsService) Void(ctx context.Context, id string, signer Signer) (*Transaction, error) {
	return s.runStep(ctx, id, OpVoid, PrepareParams{}, signer)
}

// Release returns the uncaptured escrow to the payer after
// authorization_expiry. The release is prepared for signer's address (payer
// or payee), signed by signer and submitted.
//
// POST /payments/{id}/release/prepare, then POST /payments/{id}/release —
// either participant.
func (s *PaymentsService) Release(ctx context.Context, id string, signer Signer) (*Transaction, error) {
	if err := requireSigner(signer); err != nil {
		return nil, err
	}
	return s.runStep(ctx, id, OpRelease, PrepareParams{From: signer.Address()}, signer)
}

// Refund sends amount (a human decimal) back to the payer, running both
// refund phases: PrepareRefund, signer.SignPayload on the
// ReceiveWithAuthorization payload, PrepareRefundTransaction with that
// signature, signer.SignTransaction, SubmitRefund.
//
// POST /payments/{id}/refund/prepare (twice), then
// POST /payments/{id}/refund — the payee.
func (s *PaymentsService) Refund(ctx context.Context, id, amount string, signer Signer) (*Transaction, error) {
	if err := requireSigner(signer); err != nil {
		return nil, err
	}
	fail := func(step FlowStep, err error) (*Transaction, error) {
		return nil, &FlowError{PaymentID: id, Operation: OpRefund, Step: step, Err: err}
	}
	auth, err := s.PrepareRefund(ctx, id, amount)
	if err != nil {
		return fail(StepPrepare, err)
	}
	sig, err := signer.SignPayload(ctx, auth.SigningPayload)
	if err != nil {
		return fail(StepSignPayload, err)
	}
	prep, err := s.PrepareRefundTransaction(ctx, id, amount, sig)
	if err != nil {
		return fail(StepPrepare, err)
	}
	return s.signAndSubmit(ctx, id, OpRefund, prep, signer)
}

// Dispute opens a dispute (an on-chain signal; no funds move): prepare with
// reason (bytes32 hex, or empty for none), sign with signer (the payer),
// submit.
//
// POST /payments/{id}/dispute/prepare, then POST /payments/{id}/dispute —
// the payer.
func (s *PaymentsService) Dispute(ctx context.Context, id, reason string, signer Signer) (*Transaction, error) {
	return s.runStep(ctx, id, OpDispute, PrepareParams{Reason: reason}, signer)
}

// CloseDispute closes the open dispute: prepare with reason (bytes32 hex, or
// empty), sign with signer (the payer), submit.
//
// POST /payments/{id}/dispute/close/prepare, then
// POST /payments/{id}/dispute/close — the payer.
func (s *PaymentsService) CloseDispute(ctx context.Context, id, reason string, signer Signer) (*Transaction, error) {
	return s.runStep(ctx, id, OpCloseDispute, PrepareParams{Reason: reason}, signer)
}

// payerSignReads bounds how often PayerSign reads a payment whose
// signing_payload is null before giving up.
const payerSignReads = 5

// PayerSign has signer (the payer) sign the payment's EIP-3009
// signing_payload and stores the signature, moving the payment from unsigned
// to signed. If the gateway answers with a null signing_payload (a transient
// node failure on its side), the payment is read again, waiting as WaitFor
// does between reads (opts apply), at most five reads in all.
//
// GET /payments/{id}, then PUT /payments/{id}/sign — a participant; the
// signature must recover to the payer.
func (s *PaymentsService) PayerSign(ctx context.Context, id string, signer Signer, opts ...WaitOption) (*PaymentDetail, error) {
	if err := requireSigner(signer); err != nil {
		return nil, err
	}
	cfg, err := newWaitConfig(opts)
	if err != nil {
		return nil, err
	}
	fail := func(step FlowStep, err error) (*PaymentDetail, error) {
		return nil, &FlowError{PaymentID: id, Step: step, Err: err}
	}
	var payment *PaymentDetail
	for read := 1; ; read++ {
		payment, err = s.Get(ctx, id)
		if err != nil {
			return fail(StepRead, err)
		}
		if payment.Status != StatusUnsigned {
			return fail(StepRead, fmt.Errorf("%w (status %s)", ErrNotSignable, payment.Status))
		}
		if hasJSON(payment.SigningPayload) {
			break
		}
		if read == payerSignReads {
			return fail(StepRead, ErrSigningPayloadUnavailable)
		}
		if err := cfg.sleep(ctx, cfg.next()); err != nil {
			return fail(StepRead, err)
		}
	}
	sig, err := signer.SignPayload(ctx, payment.SigningPayload)
	if err != nil {
		return fail(StepSignPayload, err)
	}
	signed, err := s.Sign(ctx, id, sig)
	if err != nil {
		return fail(StepSubmit, err)
	}
	return signed, nil
}

// hasJSON reports whether raw holds a JSON value other than null.
func hasJSON(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
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

// WaitOption configures WaitFor, WaitForTransaction and PayerSign.
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

// WaitCondition tells WaitFor what to wait for. Build one with
// ForTransaction or ForStatus.
type WaitCondition struct {
	transactionID string
	statuses      []PaymentStatus
}

// ForTransaction waits until the payment's transaction txID is confirmed.
// If it fails instead, WaitFor returns a *TransactionFailedError at once.
func ForTransaction(txID string) WaitCondition {
	return WaitCondition{transactionID: txID}
}

// ForStatus waits until the payment's status is one of statuses. A failed
// transaction never changes a payment's status, so after submitting a step
// prefer ForTransaction, which stops as soon as the transaction fails.
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
	msg := "rail0: transaction of payment " + e.PaymentID + " failed"
	if tx := e.Transaction; tx != nil {
		msg = fmt.Sprintf("rail0: %s transaction %s of payment %s failed", tx.Operation, tx.ID, e.PaymentID)
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
		return nil, &ValidationError{Field: "condition", Reason: "use ForTransaction or ForStatus"}
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
	return true, fmt.Errorf("%w: %s on payment %s", ErrUnknownTransaction, c.transactionID, p.ID)
}

// WaitForTransaction waits until the payment's transaction txID is
// confirmed and returns it; a failed transaction is a
// *TransactionFailedError. It is WaitFor with ForTransaction.
//
// GET /payments/{id} — a participant.
func (s *PaymentsService) WaitForTransaction(ctx context.Context, id, txID string, opts ...WaitOption) (*Transaction, error) {
	if txID == "" {
		return nil, &ValidationError{Field: "transaction id", Reason: "is required"}
	}
	p, err := s.WaitFor(ctx, id, ForTransaction(txID), opts...)
	if err != nil {
		return nil, err
	}
	for i := range p.Transactions {
		if p.Transactions[i].ID == txID {
			return &p.Transactions[i], nil
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
