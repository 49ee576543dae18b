package rail0test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/ethereum/go-ethereum/crypto"
)

// TestFullRefundClosesDispute: a refund that brings refundable_amount to 0
// closes an open dispute whatever the status, even with escrow still
// capturable (shared contract guide, section 4.5): the payee closed it,
// with the contract's reason for a full refund, in the refund's block, and
// GET /payments/{id}/disputes, GET /disputes and the
// payments.dispute_closed event say so. A refund that leaves a refundable
// balance leaves the dispute open.
func TestFullRefundClosesDispute(t *testing.T) {
	for _, c := range []struct {
		name, mode, amount, capture string
		refunds                     []string
		closed                      bool
		status, capturable          string
	}{
		{"escrow left", modeAuthorize, "612.05", "440.26", []string{"440.26"}, true, statusPartiallyCaptured, "171790000"},
		{"after a charge", modeCharge, "50", "", []string{"20", "30"}, true, statusRefunded, "0"},
		{"fully captured", modeAuthorize, "80", "80", []string{"80"}, true, statusRefunded, "0"},
		{"refundable left", modeAuthorize, "100", "40", []string{"15", "24.99"}, false, statusPartiallyCaptured, "60000000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			buyer, merchant := h.login(h.srv.Buyer), h.login(h.srv.Merchant)
			receiver, deliveries := newReceiver(t, http.StatusOK)
			for _, topic := range []string{"payments.dispute_closed", "payments.refunded"} {
				expect(t, h.call("POST", "/webhooks", merchant, map[string]string{"name": topic,
					"callback_url": receiver.URL, "topic": topic}), http.StatusCreated, "")
			}

			mk := h.srv.Merchant.Key()
			id := h.createPayment(buyer, c.mode, c.amount, true)
			if c.mode == modeCharge {
				h.step(merchant, mk, id, opCharge, nil)
			} else {
				h.step(merchant, mk, id, opAuthorize, nil)
				h.step(merchant, mk, id, opCapture, map[string]any{"amount": c.capture})
			}
			h.step(buyer, h.srv.Buyer.Key(), id, opDispute, map[string]any{})
			var refund map[string]any
			for _, amount := range c.refunds {
				refund = h.refund(merchant, id, amount)
			}

			p := h.detailOf(buyer, id)
			if p["disputed"] != !c.closed || p["status"] != c.status || p["capturable_amount"] != c.capturable || (p["refundable_amount"] == "0") != c.closed {
				t.Fatalf("after the refunds: disputed %v, status %v, capturable %v, refundable %v; want disputed %v, %s, %s",
					p["disputed"], p["status"], p["capturable_amount"], p["refundable_amount"], !c.closed, c.status, c.capturable)
			}
			status := "open"
			if c.closed {
				status = "closed"
			}
			byPayment := h.call("GET", "/payments/"+id+"/disputes", buyer, nil).list(t)
			account := h.call("GET", "/disputes?status="+status, merchant, nil).list(t)
			if len(byPayment) != 1 || len(account) != 1 || account[0]["id"] != byPayment[0]["id"] {
				t.Fatalf("GET /payments/{id}/disputes = %v, GET /disputes?status=%s = %v; want the one dispute", byPayment, status, account)
			}
			for _, d := range []map[string]any{byPayment[0], account[0]} {
				if !c.closed {
					if d["status"] != "open" || d["closed_by"] != nil || d["closed_block"] != nil {
						t.Errorf("dispute %v, want it open", d)
					}
					continue
				}
				want := crypto.Keccak256Hash([]byte("rail0.dispute.full_refund")).Hex()
				if d["status"] != "closed" || d["closed_by"] != "payee" || d["close_reason"] != want ||
					d["closed_block"] != refund["block_number"] || d["closed_at"] == nil {
					t.Errorf("dispute %v, want closed by the payee with %s in block %v", d, want, refund["block_number"])
				}
			}
			if !c.closed {
				return
			}
			// One payments.refunded per refund, then payments.dispute_closed:
			// the last refund's events show the payment as it left it.
			closing := 0
			for range len(c.refunds) + 1 {
				got := waitDelivery(t, deliveries)
				var event struct {
					Topic   string
					Payment struct {
						ID       string
						Disputed bool
					}
					Transaction struct {
						ID        string
						Operation string
					}
				}
				if err := json.Unmarshal(got.body, &event); err != nil {
					t.Fatal(err)
				}
				if event.Transaction.ID != refund["id"] {
					continue // an earlier refund's
				}
				closing++
				if event.Topic != "payments.dispute_closed" && event.Topic != "payments.refunded" ||
					event.Payment.ID != id || event.Payment.Disputed || event.Transaction.Operation != opRefund {
					t.Errorf("delivered %s; want the payment undisputed by the refund %v", got.body, refund["id"])
				}
			}
			if closing != 2 {
				t.Fatalf("%d events of the last refund, want payments.refunded and payments.dispute_closed", closing)
			}
		})
	}
}
