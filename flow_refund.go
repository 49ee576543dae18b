package rail0

import (
	"context"
	"errors"

	"github.com/rail0/rail0-go/internal/verify"
)

// This file is the refund, the one step with two phases: the payee's
// EIP-3009 authorization of the refund, then the transaction that carries
// it.

// PaymentRefundParams is the request of Refund.
type PaymentRefundParams struct {
	// Amount is a human decimal ("4.00"), 0 < amount <= refundable.
	Amount string
	// Expect is what the payment must match. Refund needs Expect.Payer
	// (recommended) or Expect.Rail0ID, unless the payment is named by its
	// rail0_id: a refund pays the payer, so the gateway's word alone never
	// says who that is. A rail0_id must come from the merchant's own order
	// record, never from a read of the gateway at refund time.
	Expect Expectation
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
// is: set params.Expect.Payer to the order's payer (recommended), or name
// the payment by the rail0_id stored in the merchant's own order record at
// checkout (the chain binds it to the payment's terms, payer included), as
// the id or Expect.Rail0ID. A rail0_id read from the gateway when refunding
// binds nothing: the read returns whatever payment the gateway chose.
// Without either, Refund refuses before any request (ErrUnbound), unless
// this client created the payment and remembers what Create asked for.
//
// The refund's nonce commits to the refundable balance before it. A client
// that already checked the payment's terms (flow_known.go) tracks that
// balance from its own steps and reads, and sends no read; when another
// client's capture or refund made it stale, the payload's nonce differs, and
// Refund reads the payment once and checks the same payload again before
// anything is signed.
//
// POST /payments/{id}/refund/prepare (twice), then POST /payments/{id}/refund
// — the payee; GET /payments/{id} first when this client has not checked the
// payment yet, or between the prepares when its balance was stale.
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
	return sent, f.forgetOnRefusal(known, err)
}

// refund runs both phases on terms t; known says the refundable balance is
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
		// The tracked balance may be stale: nothing was signed; read the
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
