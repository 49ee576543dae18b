package integration_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0test"
	"github.com/rail0/rail0-go/signing"
)

// TestRail0testGasFitsTheDefaultBounds ties rail0test, an honest gateway, to
// the SDK's default gas bound per operation: in every state the shared
// contract guide measured (section 12.2: a fresh deployment's first
// payment, a refund from escrow or while the contract holds none of the
// token), each step rail0test prepares asks for at least what the real
// RAIL0 contract uses there, a client with no option set signs and sends
// it, and the chain confirms it.
func TestRail0testGasFitsTheDefaultBounds(t *testing.T) {
	ctx := context.Background()
	seen := map[string]bool{}
	// gateway starts a fresh deployment with a payer and a payee client.
	gateway := func() (*rail0test.Server, *rail0test.ManualClock, *rail0.Client, *rail0.Client) {
		clock := rail0test.NewManualClock(time.Now())
		gw := rail0test.NewServer(rail0test.WithoutRateLimits(), rail0test.WithClock(clock),
			rail0test.WithPaymentWindows(time.Hour, 48*time.Hour))
		t.Cleanup(gw.Close)
		buyerKey, _ := signing.NewPrivateKeySigner(gw.Buyer.PrivateKey)
		merchantKey, _ := signing.NewPrivateKeySigner(gw.Merchant.PrivateKey)
		buyer, _ := gw.Client(rail0.WithSigner(buyerKey))
		merchant, _ := gw.Client(rail0.WithSigner(merchantKey))
		return gw, clock, buyer, merchant
	}
	// run waits for a step and checks its gas against what the contract
	// uses in the state it met.
	run := func(c *rail0.Client, id, state string, want uint64, tx *rail0.Transaction, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s with the default bounds: %v", state, err)
		}
		done, err := c.Payments.WaitForTransaction(ctx, id, tx.ID, rail0.PaymentWaitForTransactionParams{TransactionHash: deref(tx.TransactionHash)})
		if err != nil {
			t.Fatalf("%s: %v", state, err)
		}
		limit, _ := strconv.ParseUint(deref(done.GasLimit), 10, 64)
		used, _ := strconv.ParseUint(deref(done.GasUsed), 10, 64)
		if done.Status != rail0.TxConfirmed || used != want || limit < want {
			t.Fatalf("%s: %s with gas limit %d, used %d; want confirmed, using the contract's %d", state, done.Status, limit, used, want)
		}
		seen[state] = true
	}
	newPayment := func(buyer *rail0.Client, gw *rail0test.Server, mode rail0.PaymentMode) string {
		t.Helper()
		p, err := buyer.Payments.Create(ctx, rail0.PaymentCreateParams{ChainID: gw.ChainID, Mode: mode, Amount: "25.00",
			Token: gw.Token, Payer: gw.Buyer.Address, Payee: gw.Merchant.Address})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := buyer.Payments.PayerSign(ctx, p.ID, rail0.PaymentPayerSignParams{}); err != nil {
			t.Fatal(err)
		}
		return p.ID
	}
	refund := func(merchant *rail0.Client, gw *rail0test.Server, id, amount, state string, want uint64) {
		t.Helper()
		tx, err := merchant.Payments.Refund(ctx, id, rail0.PaymentRefundParams{Amount: amount, Expect: rail0.Expectation{Payer: gw.Buyer.Address}})
		run(merchant, id, state, want, tx, err)
	}

	// A deployment whose first payment is an escrow.
	gw, clock, buyer, merchant := gateway()
	a := newPayment(buyer, gw, rail0.ModeAuthorize)
	tx, err := merchant.Payments.Authorize(ctx, a, rail0.PaymentAuthorizeParams{})
	run(merchant, a, "authorize, the first payment", 509_000, tx, err)
	tx, err = merchant.Payments.Capture(ctx, a, rail0.PaymentCaptureParams{Amount: "10.00"})
	run(merchant, a, "capture", 175_000, tx, err)
	refund(merchant, gw, a, "4.00", "refund from escrow", 207_000)
	tx, err = buyer.Payments.Dispute(ctx, a, rail0.PaymentDisputeParams{})
	run(buyer, a, "dispute", 43_000, tx, err)
	tx, err = buyer.Payments.CloseDispute(ctx, a, rail0.PaymentCloseDisputeParams{})
	run(buyer, a, "closeDispute", 43_000, tx, err)
	v := newPayment(buyer, gw, rail0.ModeAuthorize)
	tx, err = merchant.Payments.Authorize(ctx, v, rail0.PaymentAuthorizeParams{})
	run(merchant, v, "authorize, a later payment", 411_000, tx, err)
	tx, err = merchant.Payments.Void(ctx, v, rail0.PaymentVoidParams{})
	run(merchant, v, "void", 77_000, tx, err)
	clock.Advance(2 * time.Hour) // past a's authorization_expiry
	tx, err = buyer.Payments.Release(ctx, a, rail0.PaymentReleaseParams{})
	run(buyer, a, "release", 77_000, tx, err)
	refund(merchant, gw, a, "1.00", "refund after a release", 328_000)

	// A deployment whose first payment is a charge.
	gw, _, buyer, merchant = gateway()
	c := newPayment(buyer, gw, rail0.ModeCharge)
	tx, err = merchant.Payments.Charge(ctx, c, rail0.PaymentChargeParams{})
	run(merchant, c, "charge, the first payment", 515_000, tx, err)
	refund(merchant, gw, c, "5.00", "refund after a charge", 328_000)
	d := newPayment(buyer, gw, rail0.ModeCharge)
	tx, err = merchant.Payments.Charge(ctx, d, rail0.PaymentChargeParams{})
	run(merchant, d, "charge, a later payment", 417_000, tx, err)
	f := newPayment(buyer, gw, rail0.ModeAuthorize)
	tx, err = merchant.Payments.Authorize(ctx, f, rail0.PaymentAuthorizeParams{})
	run(merchant, f, "authorize, a later payment", 411_000, tx, err)
	tx, err = merchant.Payments.Capture(ctx, f, rail0.PaymentCaptureParams{Amount: "25.00"})
	run(merchant, f, "capture", 175_000, tx, err)
	refund(merchant, gw, f, "25.00", "refund after a full capture", 328_000)

	if len(seen) != 13 {
		t.Fatalf("ran %v, want every operation in every state", seen)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
