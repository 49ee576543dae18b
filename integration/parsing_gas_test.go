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
// the SDK's default gas bound per operation: every step it prepares asks
// for at least what the real RAIL0 contract uses (shared contract guide,
// section 12.2) and 25% more, and a client with no option set signs and
// sends each of them, and the chain confirms each one.
func TestRail0testGasFitsTheDefaultBounds(t *testing.T) {
	measured := map[rail0.Operation]uint64{ // the guide's figures; authorize as a deployment's first payment
		rail0.OpAuthorize: 509_000, rail0.OpCharge: 417_000, rail0.OpCapture: 175_000, rail0.OpRefund: 207_000,
		rail0.OpVoid: 77_000, rail0.OpRelease: 77_000, rail0.OpDispute: 43_000, rail0.OpCloseDispute: 43_000,
	}
	clock := rail0test.NewManualClock(time.Now())
	gw := rail0test.NewServer(rail0test.WithoutRateLimits(), rail0test.WithClock(clock),
		rail0test.WithPaymentWindows(time.Hour, 48*time.Hour))
	defer gw.Close()
	ctx := context.Background()
	buyerKey, _ := signing.NewPrivateKeySigner(gw.Buyer.PrivateKey)
	merchantKey, _ := signing.NewPrivateKeySigner(gw.Merchant.PrivateKey)
	buyer, _ := gw.Client(rail0.WithSigner(buyerKey))
	merchant, _ := gw.Client(rail0.WithSigner(merchantKey))

	seen := map[rail0.Operation]bool{}
	run := func(id string, op rail0.Operation, tx *rail0.Transaction, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s with the default bounds: %v", op, err)
		}
		clock.Advance(time.Minute)
		done, err := merchant.Payments.WaitForTransaction(ctx, id, tx.ID, rail0.PaymentWaitForTransactionParams{PollInterval: 200 * time.Millisecond, MaxPollInterval: 200 * time.Millisecond})
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		limit, _ := strconv.ParseUint(deref(done.GasLimit), 10, 64)
		used, _ := strconv.ParseUint(deref(done.GasUsed), 10, 64)
		if done.Status != rail0.TxConfirmed || limit < measured[op]+measured[op]/4 || used > limit {
			t.Fatalf("%s: %s with gas limit %d, used %d; want confirmed, a limit of at least %d (the contract's %d and 25%%)",
				op, done.Status, limit, used, measured[op]+measured[op]/4, measured[op])
		}
		seen[op] = true
	}
	newPayment := func(mode rail0.PaymentMode) string {
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

	a := newPayment(rail0.ModeAuthorize) // the deployment's first payment
	tx, err := merchant.Payments.Authorize(ctx, a, rail0.PaymentAuthorizeParams{})
	run(a, rail0.OpAuthorize, tx, err)
	tx, err = merchant.Payments.Capture(ctx, a, rail0.PaymentCaptureParams{Amount: "10.00"})
	run(a, rail0.OpCapture, tx, err)
	tx, err = merchant.Payments.Refund(ctx, a, rail0.PaymentRefundParams{Amount: "4.00", Expect: rail0.Expectation{Payer: gw.Buyer.Address}})
	run(a, rail0.OpRefund, tx, err)
	tx, err = buyer.Payments.Dispute(ctx, a, rail0.PaymentDisputeParams{})
	run(a, rail0.OpDispute, tx, err)
	tx, err = buyer.Payments.CloseDispute(ctx, a, rail0.PaymentCloseDisputeParams{})
	run(a, rail0.OpCloseDispute, tx, err)
	clock.Advance(2 * time.Hour) // past authorization_expiry
	tx, err = merchant.Payments.Release(ctx, a, rail0.PaymentReleaseParams{})
	run(a, rail0.OpRelease, tx, err)

	v := newPayment(rail0.ModeAuthorize)
	tx, err = merchant.Payments.Authorize(ctx, v, rail0.PaymentAuthorizeParams{})
	run(v, rail0.OpAuthorize, tx, err)
	tx, err = merchant.Payments.Void(ctx, v, rail0.PaymentVoidParams{})
	run(v, rail0.OpVoid, tx, err)

	c := newPayment(rail0.ModeCharge)
	tx, err = merchant.Payments.Charge(ctx, c, rail0.PaymentChargeParams{})
	run(c, rail0.OpCharge, tx, err)

	if len(seen) != len(measured) {
		t.Fatalf("ran %v, want every operation of %v", seen, measured)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
