package integration_test

import (
	"context"
	"testing"

	"github.com/rail0/rail0-go"
)

// The review's cache poisoning: one lie read by a poll (the swap proxy
// answering for the buyer's payment A with the attacker's B during one
// WaitForStatus) was remembered as A's terms, and every later flow bound to
// the order's payer was refused from them, without a read, against an
// honest gateway. Now the flow forgets them, reads once, and the honest
// answer serves this refund and the next ones.
func TestOneLieDoesNotPoisonTheKnownTerms(t *testing.T) {
	ctx := context.Background()
	w := newBindingWorld(t)
	buyer := w.gw.Buyer.Address
	a, b := w.payment(w.buyer, buyer, "10.00"), w.payment(w.attacker, w.attackerAddress, "10.00")
	merchant, _ := w.client(w.gw.Merchant.PrivateKey) // a fresh merchant client (a restart)

	w.proxy.swap(a, b, true) // one lie, during one poll
	if _, err := merchant.Payments.WaitForStatus(ctx, a.ID, rail0.PaymentWaitForStatusParams{Statuses: []rail0.PaymentStatus{rail0.StatusPartiallyCaptured}}); err != nil {
		t.Fatal(err)
	}
	w.proxy.swap(nil, nil, false) // honest from now on

	order := rail0.Expectation{Payer: buyer}
	for i := range 3 {
		tx, err := merchant.Payments.Refund(ctx, a.ID, rail0.PaymentRefundParams{Amount: "1.00", Expect: order})
		if err != nil {
			t.Fatalf("honest gateway, refund %d: %v", i+1, err)
		}
		w.confirm(a.ID)(tx, nil)
	}
	if n, m := w.executed("refund", a), w.executed("refund", b); n != 3 || m != 0 {
		t.Fatalf("refunds: A %d, B %d, want A's three only", n, m)
	}
}
