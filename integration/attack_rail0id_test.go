package integration_test

import (
	"context"
	"errors"
	"testing"

	"github.com/rail0/rail0-go"
)

// A rail0_id binds a refund only when it comes from the merchant's own
// order record, stored at checkout. One read from the gateway when
// refunding names whatever payment the gateway chose: through the swap
// proxy, the read of the buyer's payment A carries the attacker's B's
// rail0_id, so a refund named by it would be B's (the review's finding; the
// SDK cannot tell where a rail0_id came from, hence the documentation). The
// stored rail0_id and Expect.Payer are refused before anything is signed.
func TestRail0IDFromAReadBindsNothing(t *testing.T) {
	ctx := context.Background()
	w := newBindingWorld(t)
	a, b := w.payment(w.buyer, w.gw.Buyer.Address, "10.00"), w.payment(w.attacker, w.attackerAddress, "10.00")
	stored := a.Rail0ID // the order record, at checkout
	merchant, _ := w.client(w.gw.Merchant.PrivateKey)
	w.proxy.swap(a, b, true)
	defer w.proxy.swap(nil, nil, false)

	read, err := merchant.Payments.Get(ctx, a.ID) // by the UUID the shop stored
	if err != nil {
		t.Fatal(err)
	}
	if read.ID != a.ID || read.Rail0ID != b.Rail0ID {
		t.Fatalf("the read at refund time: id %s, rail0_id %s; the premise is a read that names B's rail0_id under A's id", read.ID, read.Rail0ID)
	}

	for _, tt := range []struct {
		name   string
		id     string
		expect rail0.Expectation
		field  string
	}{
		{"named by the stored rail0_id", stored, rail0.Expectation{}, "rail0_id"},
		{"the stored rail0_id expected", a.ID, rail0.Expectation{Rail0ID: stored}, "rail0_id"},
		{"the order's payer expected", a.ID, rail0.Expectation{Payer: w.gw.Buyer.Address}, "payer"},
	} {
		_, err := merchant.Payments.Refund(ctx, tt.id, rail0.PaymentRefundParams{Amount: "4.00", Expect: tt.expect})
		var ae *rail0.ArtifactError
		if !errors.As(err, &ae) || ae.Field != tt.field {
			t.Errorf("%s: %v, want an *ArtifactError on the payment's %s", tt.name, err, tt.field)
		}
	}
	if n := w.executed("refund", a, b); n != 0 {
		t.Fatalf("%d refunds ran", n)
	}
}
