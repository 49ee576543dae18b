package integration_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0test"
	"github.com/rail0/rail0-go/signing"
)

// Issue 21, item 3: an order costs the requests the contract needs, counted
// through the flows against rail0test. A step is a prepare and a submit
// (a refund two prepares and a submit); a payment's terms are read once per
// client, and the refundable balance a refund's nonce commits to is tracked
// from the client's own steps, read once when another client made it stale.

// requestLog records the requests a client sends, as "METHOD route" with
// the ids replaced by the contract's placeholders.
type requestLog struct {
	base http.RoundTripper
	mu   sync.Mutex
	sent []string
}

var uuidOrHash = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|0x[0-9a-fA-F]{64}`)

func (l *requestLog) RoundTrip(r *http.Request) (*http.Response, error) {
	l.mu.Lock()
	l.sent = append(l.sent, r.Method+" "+uuidOrHash.ReplaceAllString(r.URL.Path, "{id}"))
	l.mu.Unlock()
	return l.base.RoundTrip(r)
}

// since returns the requests sent after the first n.
func (l *requestLog) since(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.sent[n:]...)
}

func (l *requestLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sent)
}

// countedClient is a signing client of party on gw, signed in, whose
// requests log records.
func countedClient(t *testing.T, gw *rail0test.Server, party rail0test.Party) (*rail0.Client, *requestLog) {
	t.Helper()
	key, err := signing.NewPrivateKeySigner(party.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	log := &requestLog{base: gw.HTTPClient().Transport}
	c, err := gw.Client(rail0.WithSigner(key), rail0.WithHTTPClient(&http.Client{Transport: log}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Session(context.Background()); err != nil { // signing in is not the order's
		t.Fatal(err)
	}
	return c, log
}

// step runs one lifecycle step and checks the requests it sent.
func step(t *testing.T, log *requestLog, name string, want []string, run func() error) {
	t.Helper()
	before := log.count()
	if err := run(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if got := log.since(before); strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("%s sent %d requests %v, want %d: %v", name, len(got), got, len(want), want)
	}
}

// Requests of each step, as the contract names them.
var (
	readPayment = "GET /payments/{id}"
	prepareOf   = func(op string) string { return "POST /payments/{id}/" + op + "/prepare" }
	submitOf    = func(op string) string { return "POST /payments/{id}/" + op }
)

func TestRequestsPerOrder(t *testing.T) {
	ctx := context.Background()
	gw := rail0test.NewServer(rail0test.WithoutRateLimits())
	defer gw.Close()
	buyer, buyerLog := countedClient(t, gw, gw.Buyer)
	merchant, log := countedClient(t, gw, gw.Merchant)
	payer := rail0.Expectation{Payer: gw.Buyer.Address}

	// order creates and signs a payment as the buyer.
	order := func() *rail0.PaymentDetail {
		t.Helper()
		var p *rail0.PaymentDetail
		step(t, buyerLog, "Create", []string{"POST /payments"}, func() (err error) {
			p, err = buyer.Payments.Create(ctx, rail0.PaymentCreateParams{ChainID: gw.ChainID, Mode: rail0.ModeAuthorize,
				Amount: "25.00", Token: gw.Token, Payer: gw.Buyer.Address, Payee: gw.Merchant.Address})
			return err
		})
		step(t, buyerLog, "PayerSign", []string{readPayment, "PUT /payments/{id}/sign"}, func() error {
			_, err := buyer.Payments.PayerSign(ctx, p.ID, rail0.PaymentPayerSignParams{})
			return err
		})
		return p
	}
	// confirmed waits for a step's transaction: polling, not counted.
	confirmed := func(c *rail0.Client, id string) func(*rail0.Transaction, error) error {
		return func(tx *rail0.Transaction, err error) error {
			if err != nil {
				return err
			}
			_, err = c.Payments.WaitForTransaction(ctx, id, tx.ID, rail0.PaymentWaitForTransactionParams{})
			return err
		}
	}
	perStep := map[string]int{}

	t.Run("an order after the merchant saw it signed", func(t *testing.T) {
		p := order()
		// The merchant learns that the buyer signed by polling (or a
		// webhook and one read): not counted, like every poll.
		if _, err := merchant.Payments.WaitForStatus(ctx, p.ID, rail0.PaymentWaitForStatusParams{Statuses: []rail0.PaymentStatus{rail0.StatusSigned}}); err != nil {
			t.Fatal(err)
		}
		for _, s := range []struct {
			name string
			want []string
			run  func() (*rail0.Transaction, error)
		}{
			{"Authorize", []string{prepareOf("authorize"), submitOf("authorize")}, func() (*rail0.Transaction, error) {
				return merchant.Payments.Authorize(ctx, p.ID, rail0.PaymentAuthorizeParams{})
			}},
			{"Capture", []string{prepareOf("capture"), submitOf("capture")}, func() (*rail0.Transaction, error) {
				return merchant.Payments.Capture(ctx, p.ID, rail0.PaymentCaptureParams{Amount: "10.00"})
			}},
			{"Refund", []string{prepareOf("refund"), prepareOf("refund"), submitOf("refund")}, func() (*rail0.Transaction, error) {
				return merchant.Payments.Refund(ctx, p.ID, rail0.PaymentRefundParams{Amount: "4.00", Expect: payer})
			}},
		} {
			var tx *rail0.Transaction
			before := log.count()
			step(t, log, s.name, s.want, func() (err error) {
				tx, err = s.run()
				return err
			})
			perStep[s.name] = log.count() - before
			if err := confirmed(merchant, p.ID)(tx, nil); err != nil {
				t.Fatal(err)
			}
		}
		got, err := merchant.Payments.Get(ctx, p.ID)
		if err != nil || got.CapturableAmount != "15000000" || got.RefundableAmount != "6000000" {
			t.Fatalf("after the order: %+v, %v", got, err)
		}
		t.Logf("requests per step: %v; per order %d", perStep, perStep["Authorize"]+perStep["Capture"]+perStep["Refund"])
	})

	t.Run("an order the merchant acts on unread", func(t *testing.T) {
		p := order()
		// The first step reads the payment: its terms, once.
		step(t, log, "Authorize", []string{readPayment, prepareOf("authorize"), submitOf("authorize")}, func() error {
			_, err := merchant.Payments.Authorize(ctx, p.ID, rail0.PaymentAuthorizeParams{})
			return err
		})
		// Confirmed by another means than polling (a webhook, say): the
		// next steps still read nothing.
		step(t, log, "Capture", []string{prepareOf("capture"), submitOf("capture")}, func() error {
			_, err := merchant.Payments.Capture(ctx, p.ID, rail0.PaymentCaptureParams{Amount: "10.00"})
			return err
		})
		step(t, log, "Refund", []string{prepareOf("refund"), prepareOf("refund"), submitOf("refund")}, func() error {
			_, err := merchant.Payments.Refund(ctx, p.ID, rail0.PaymentRefundParams{Amount: "4.00", Expect: payer})
			return err
		})
	})

	t.Run("a refund after another client captured", func(t *testing.T) {
		p := order()
		if _, err := merchant.Payments.WaitForStatus(ctx, p.ID, rail0.PaymentWaitForStatusParams{Statuses: []rail0.PaymentStatus{rail0.StatusSigned}}); err != nil {
			t.Fatal(err)
		}
		if err := confirmed(merchant, p.ID)(merchant.Payments.Authorize(ctx, p.ID, rail0.PaymentAuthorizeParams{})); err != nil {
			t.Fatal(err)
		}
		if err := confirmed(merchant, p.ID)(merchant.Payments.Capture(ctx, p.ID, rail0.PaymentCaptureParams{Amount: "10.00"})); err != nil {
			t.Fatal(err)
		}
		// Another process of the merchant captures 5.00 more: this
		// client's refundable balance (10.00) is stale.
		other, _ := countedClient(t, gw, gw.Merchant)
		if err := confirmed(other, p.ID)(other.Payments.Capture(ctx, p.ID, rail0.PaymentCaptureParams{Amount: "5.00"})); err != nil {
			t.Fatal(err)
		}
		// The payload's nonce commits to 15.00: refused against 10.00
		// before anything is signed, checked again after one read.
		var tx *rail0.Transaction
		step(t, log, "Refund", []string{prepareOf("refund"), readPayment, prepareOf("refund"), submitOf("refund")}, func() (err error) {
			tx, err = merchant.Payments.Refund(ctx, p.ID, rail0.PaymentRefundParams{Amount: "4.00", Expect: payer})
			return err
		})
		if err := confirmed(merchant, p.ID)(tx, nil); err != nil {
			t.Fatal(err)
		}
		// The read refreshed the balance: the next refund reads nothing.
		step(t, log, "a second Refund", []string{prepareOf("refund"), prepareOf("refund"), submitOf("refund")}, func() error {
			_, err := merchant.Payments.Refund(ctx, p.ID, rail0.PaymentRefundParams{Amount: "1.00", Expect: payer})
			return err
		})
		got, err := merchant.Payments.Get(ctx, p.ID)
		if err != nil || got.RefundableAmount != "10000000" {
			t.Fatalf("after the refunds: %+v, %v", got, err)
		}
		if n := gw.Ledger.CountOperation(p.ID, "refund"); n != 2 {
			t.Fatalf("%d refunds submitted, want 2", n)
		}
	})
}
