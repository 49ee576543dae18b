package rail0

import (
	"context"
)

// This file is the on-chain steps other than the refund: each prepares one
// transaction, checks it, signs it and submits it (flow.go). Each step sends
// its prepare and its submit; it reads the payment (GET /payments/{id})
// first only when this client has not checked the payment's terms under the
// name the caller gives (flow_known.go).

// PaymentAuthorizeParams is the request of Authorize.
type PaymentAuthorizeParams struct {
	// Expect is what the payment must match; zero fields are not checked.
	Expect Expectation
}

// PaymentChargeParams is the request of Charge.
type PaymentChargeParams struct {
	// Expect is what the payment must match; zero fields are not checked.
	Expect Expectation
}

// PaymentCaptureParams is the request of Capture.
type PaymentCaptureParams struct {
	// Amount is a human decimal ("10.00"), 0 < amount <= capturable.
	Amount string
	// Expect is what the payment must match; zero fields are not checked.
	Expect Expectation
}

// PaymentVoidParams is the request of Void.
type PaymentVoidParams struct {
	// Expect is what the payment must match; zero fields are not checked.
	Expect Expectation
}

// PaymentReleaseParams is the request of Release.
type PaymentReleaseParams struct {
	// Expect is what the payment must match; zero fields are not checked.
	Expect Expectation
}

// PaymentDisputeParams is the request of Dispute.
type PaymentDisputeParams struct {
	// Reason is a bytes32 hex value (0x + 64 hex); empty records zero.
	Reason string
	// Expect is what the payment must match; zero fields are not checked.
	Expect Expectation
}

// PaymentCloseDisputeParams is the request of CloseDispute.
type PaymentCloseDisputeParams struct {
	// Reason is a bytes32 hex value (0x + 64 hex); empty records zero.
	Reason string
	// Expect is what the payment must match; zero fields are not checked.
	Expect Expectation
}

// step runs one lifecycle step with the client's signer: a release is
// prepared for the signer's address, and params.Amount (a human decimal) is
// what a capture must move, exactly.
func (s *PaymentsService) step(ctx context.Context, id string, op Operation, expect Expectation, in Intent, params PaymentPrepareParams) (*Transaction, error) {
	f, err := s.newFlow(id, op, expect)
	if err != nil {
		return nil, err
	}
	if op == OpRelease {
		params.From = f.signer.Address()
	}
	return f.run(ctx, in, params)
}

// Authorize moves a signed authorize-mode payment into escrow with the
// client's signer (the payee): prepare, check, sign, submit.
//
// POST /payments/{id}/authorize/prepare, then
// POST /payments/{id}/authorize — the payee. GET /payments/{id}
// first, when this client has not checked the payment yet.
func (s *PaymentsService) Authorize(ctx context.Context, id string, params PaymentAuthorizeParams) (*Transaction, error) {
	return s.step(ctx, id, OpAuthorize, params.Expect, Intent{}, PaymentPrepareParams{})
}

// Charge settles a signed charge-mode payment straight to the payee with
// the client's signer (the payee): prepare, check, sign, submit.
//
// POST /payments/{id}/charge/prepare, then
// POST /payments/{id}/charge — the payee. GET /payments/{id}
// first, when this client has not checked the payment yet.
func (s *PaymentsService) Charge(ctx context.Context, id string, params PaymentChargeParams) (*Transaction, error) {
	return s.step(ctx, id, OpCharge, params.Expect, Intent{}, PaymentPrepareParams{})
}

// Capture captures params.Amount from escrow to the payee with the client's
// signer (the payee). The prepared transaction must capture exactly that
// amount: a pending capture prepared earlier for another amount, which the
// gateway hands back instead of a new one, is refused (*ArtifactError on
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
// authorization_expiry, prepared for and signed by the client's signer (the
// payer or the payee).
//
// POST /payments/{id}/release/prepare, then
// POST /payments/{id}/release — either participant. GET /payments/{id}
// first, when this client has not checked the payment yet.
func (s *PaymentsService) Release(ctx context.Context, id string, params PaymentReleaseParams) (*Transaction, error) {
	return s.step(ctx, id, OpRelease, params.Expect, Intent{}, PaymentPrepareParams{})
}

// Dispute opens a dispute (an on-chain signal; no funds move) with the
// client's signer (the payer).
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
