package rail0

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/rail0/rail0-go/internal/verify"
)

// This file is the machinery of the flows: one call per lifecycle step for a
// client with an identity (WithSigner). Each flow reads the payment, checks
// it and binds it to what the caller named and meant (binding.go), prepares
// the step, checks what the gateway prepared against the payment and the
// request (package internal/verify), signs the digest of what it checked,
// and submits. Nothing the gateway hands over is signed unchecked.
// Submitting is not confirmation: follow a flow with WaitForTransaction,
// tied to the hash the returned transaction carries (the one sent), before
// the next step (flow_wait.go).
//
// The steps themselves are in flow_steps.go (the on-chain steps),
// flow_refund.go and flow_payersign.go. Callers who sign elsewhere (a
// browser wallet, another service) use the low-level path instead: Prepare,
// VerifyTransaction (or PrepareRefund and VerifyPayload), their own
// signature, then Submit or SubmitByHash.

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

// Every flow takes (ctx, id, params): id is the payment's UUID or its
// rail0_id (0x + 64 hex), as every /payments/{id} route of the gateway
// accepts, and the payment read must carry it; params carries the step's
// arguments and Expect, what the caller knows of the payment (see
// Expectation), checked before anything is prepared or signed.

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
	// paymentID is the UUID of the payment read, once bound; payment is
	// that payment (this flow's read, or the one the client holds), whose
	// transactions say which rows were sent already.
	paymentID string
	payment   *PaymentDetail
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
// fields signed by the flow's signer. It returns the signature in hex and
// the payload checked, whose token domain PayerSign keeps once the gateway
// accepts the signature.
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

// read gets the payment, checks it and binds the flow to it; the client
// remembers its terms under the name the caller gave (flow_known.go).
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

// run takes the payment's checked terms (the client's, or a read), prepares
// the step with params, checks the prepared transaction against in (and
// params.Amount, a human decimal, in base units), signs it and submits it.
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
	if len(prep.ID) > maxRowID {
		// The contract's ids are UUIDs; the client keeps the ids it sends
		// (knownPayments.sent), and keeps none this long.
		return nil, f.fail(StepVerify, &ArtifactError{PaymentID: f.id, Operation: f.op, Artifact: "transaction", Field: "id",
			Reason: fmt.Sprintf("is %d bytes long, longer than a transaction id (a UUID) can be", len(prep.ID))})
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
	// A row sent already (confirmed, failed, carrying a hash) is not this
	// step's: its submit's answer would name it, its wait would find it
	// settled, and the caller would take an old step for this one.
	if why := f.sentAlready(prep.ID); why != "" {
		return nil, f.fail(StepVerify, &ArtifactError{PaymentID: f.id, Operation: f.op, Artifact: "transaction", Field: "id",
			Reason: fmt.Sprintf("names transaction %s, %s: a prepare answers with a new row, or the pending one not yet sent", clip(oneLine(prep.ID)), why)})
	}
	if in.Amount != "" && prep.Amount != nil && *prep.Amount != in.Amount {
		// A pending transaction prepared earlier for another amount is
		// handed back rather than a new one (Reused): never sign it.
		return nil, art("amount", in.Amount, *prep.Amount)
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

// sentAlready reports why the row id, a prepare's answer, was sent already:
// the payment the flow bound (its read, or the rows the client holds) shows
// it sent, or this client sent it; "" when neither. Ids match ignoring
// case, as the wait matches them (sameUUID).
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
