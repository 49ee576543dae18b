package rail0test

import (
	"context"
	"testing"

	rail0 "github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/signing"
	rail0webhook "github.com/rail0/rail0-go/webhook"
)

// TestSDKLifecycle runs the escrow lifecycle through the SDK's own client and
// signing package against the server: login, create, payer signs, authorize,
// partial capture, two-phase refund, dispute, and a webhook delivery verified
// with the SDK's webhook package.
func TestSDKLifecycle(t *testing.T) {
	srv := NewServer(WithoutRateLimits())
	defer srv.Close()
	ctx := context.Background()
	receiver, deliveries := newReceiver(t, 200)

	session := func(p Party) *rail0.Client {
		t.Helper()
		key, err := signing.NewPrivateKeySigner(p.PrivateKey)
		if err != nil {
			t.Fatal(err)
		}
		c, err := srv.Client(rail0.WithSigner(key))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	buyer := session(srv.Buyer)
	merchant := session(srv.Merchant)

	hook, err := merchant.Webhooks.Create(ctx, rail0.WebhookCreateParams{Name: "captures",
		CallbackURL: receiver.URL, Topic: "payments.captured"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := buyer.Payments.Create(ctx, rail0.PaymentCreateParams{ChainID: srv.ChainID, Mode: "authorize",
		Amount: "25.00", Token: srv.Token, Payer: srv.Buyer.Address, Payee: srv.Merchant.Address})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := buyer.Payments.PayerSign(ctx, p.ID, rail0.PaymentPayerSignParams{}); err != nil {
		t.Fatalf("PayerSign: %v", err)
	}
	confirm := func(c *rail0.Client, tx *rail0.Transaction, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Payments.WaitForTransaction(ctx, p.ID, tx.ID, rail0.PaymentWaitForTransactionParams{}); err != nil {
			t.Fatalf("waiting for %s: %v", tx.Operation, err)
		}
	}
	tx, err := merchant.Payments.Authorize(ctx, p.ID, rail0.PaymentAuthorizeParams{})
	confirm(merchant, tx, err)
	tx, err = merchant.Payments.Capture(ctx, p.ID, rail0.PaymentCaptureParams{Amount: "10.00"})
	confirm(merchant, tx, err)
	tx, err = merchant.Payments.Refund(ctx, p.ID, rail0.PaymentRefundParams{Amount: "4.00", Expect: rail0.Expectation{Payer: srv.Buyer.Address}})
	confirm(merchant, tx, err)
	tx, err = buyer.Payments.Dispute(ctx, p.ID, rail0.PaymentDisputeParams{})
	confirm(buyer, tx, err)

	got, err := buyer.Payments.Get(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != "partially_captured" || got.CapturableAmount != "15000000" || got.RefundableAmount != "6000000" || !got.Disputed {
		t.Fatalf("payment = %+v", got.Payment)
	}
	d := waitDelivery(t, deliveries)
	if err := rail0webhook.NewVerifier(hook.SharedSecret()).Verify(d.body, d.header.Get("X-Rail0-Signature"), d.header.Get("X-Rail0-Timestamp")); err != nil {
		t.Fatalf("the SDK rejects the delivery: %v", err)
	}
}
