package integration_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0test"
	"github.com/rail0/rail0-go/signing"
)

// afterwardsProxy sits in front of rail0test and, for the requests it is
// told of, lets the gateway run them and then answers something else, as a
// proxy that timed out, an authenticating proxy or a captive portal does
// after passing a request on.
type afterwardsProxy struct {
	*httptest.Server
	mu      sync.Mutex
	route   string // "METHOD path" to answer for; empty: none
	answer  proxyAnswer
	answers int
}

type proxyAnswer struct {
	status      int
	contentType string
	body        string
}

func newAfterwardsProxy(t *testing.T, gw *rail0test.Server) *afterwardsProxy {
	p := &afterwardsProxy{}
	p.Server = newProxy(t, gw, proxyHooks{out: func(resp *http.Response) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.route == "" || resp.Request.Method+" "+resp.Request.URL.Path != p.route {
			return nil
		}
		if _, err := drain(resp.Body); err != nil {
			return err
		}
		p.answers++
		resp.StatusCode = p.answer.status
		resp.Status = strconv.Itoa(p.answer.status) + " " + http.StatusText(p.answer.status)
		resp.Header = http.Header{}
		if p.answer.contentType != "" {
			resp.Header.Set("Content-Type", p.answer.contentType)
		}
		resp.Body, resp.ContentLength = withBody(resp.Header, []byte(p.answer.body))
		return nil
	}})
	return p
}

func (p *afterwardsProxy) set(route string, a proxyAnswer) {
	p.mu.Lock()
	p.route, p.answer, p.answers = route, a, 0
	p.mu.Unlock()
}

func (p *afterwardsProxy) answered() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.answers
}

// A capture that the gateway ran and whose answer a proxy replaced (a 202
// HTML page, an empty 200, its own 401, a 408) comes back as
// ErrOutcomeUnknown, not as a failure that invites a second capture, or,
// for a 2xx, as the capture itself: the submit reads the payment and finds
// the transaction that carries the hash of the one it sent. The
// payment shows the capture; a second Capture made while the first is
// under way (the chain has not confirmed it: 30 s here) meets it and
// captures nothing. Once the first has confirmed, a second Capture of the
// same amount is a second partial capture as far as the SDK or the gateway
// can tell (only the caller knows it is a repeat): that is why the first
// comes back as an unknown outcome, which says to read the payment first.
func TestCaptureAnsweredByAProxyAfterItRanIsOutcomeUnknown(t *testing.T) {
	answers := []struct {
		name string
		proxyAnswer
		reconciled bool // a 2xx: the payment read shows the capture sent
	}{
		{"202 with an HTML page", proxyAnswer{http.StatusAccepted, "text/html", "<html><body>Request accepted</body></html>"}, true},
		{"an empty 200", proxyAnswer{http.StatusOK, "", ""}, true},
		{"the proxy's own 401", proxyAnswer{http.StatusUnauthorized, "text/html", "<html><head><title>401 Authorization Required</title></head></html>"}, false},
		{"a bodiless 401", proxyAnswer{http.StatusUnauthorized, "", ""}, false},
		{"408", proxyAnswer{http.StatusRequestTimeout, "text/plain", "request timeout"}, false},
	}
	for _, a := range answers {
		t.Run(a.name, func(t *testing.T) {
			clock := rail0test.NewManualClock(time.Now())
			gw := rail0test.NewServer(rail0test.WithoutRateLimits(), rail0test.WithClock(clock),
				rail0test.WithConfirmationDelay(30*time.Second))
			defer gw.Close()
			proxy := newAfterwardsProxy(t, gw)
			ctx := context.Background()
			buyer, merchant := signingClients(t, gw, proxy.URL)
			p := escrow{gw, clock, buyer, gw.Buyer.Address, merchant}.authorized(t, "25.00")

			proxy.set("POST /payments/"+p.ID+"/capture", a.proxyAnswer)
			captured, err := merchant.Payments.Capture(ctx, p.ID, rail0.PaymentCaptureParams{Amount: "10.00"})
			if proxy.answered() != 1 {
				t.Fatalf("the proxy answered %d submits", proxy.answered())
			}
			proxy.set("", proxyAnswer{})
			var unknown *rail0.OutcomeUnknownError
			var flowErr *rail0.FlowError
			switch {
			case a.reconciled:
				if err != nil || captured.ID == "" || captured.Operation != rail0.OpCapture || captured.TransactionHash == nil {
					t.Fatalf("Capture answered %d after it ran: %v, %+v, want the capture found on the payment", a.status, err, captured)
				}
			case !errors.Is(err, rail0.ErrOutcomeUnknown) || !errors.As(err, &unknown) || !errors.As(err, &flowErr) || flowErr.Step != rail0.StepSubmit:
				t.Fatalf("Capture answered %d after it ran: %v, want ErrOutcomeUnknown at the submit step", a.status, err)
			}
			if n := gw.Ledger.CountOperation(p.ID, "capture"); n != 1 {
				t.Fatalf("%d capture submits ran, want 1", n)
			}

			// What the error says to do: read the payment. The capture is there.
			got, err := merchant.Payments.Get(ctx, p.ID)
			if err != nil {
				t.Fatal(err)
			}
			underway := 0
			for _, tx := range got.Transactions {
				if tx.Operation == rail0.OpCapture && tx.TransactionHash != nil {
					underway++
				}
			}
			if underway != 1 {
				t.Fatalf("%d captures on the payment, want the one that ran", underway)
			}

			// A caller who calls Capture again at once captures nothing more.
			_, err = merchant.Payments.Capture(ctx, p.ID, rail0.PaymentCaptureParams{Amount: "10.00"})
			var apiErr *rail0.APIError
			if !errors.As(err, &apiErr) || apiErr.Code != rail0.CodeTransactionNotOverwritable || errors.Is(err, rail0.ErrOutcomeUnknown) {
				t.Fatalf("a second Capture while the first is under way: %v, want the gateway's transaction_not_overwritable", err)
			}
			if n := gw.Ledger.CountOperation(p.ID, "capture"); n != 1 {
				t.Fatalf("%d capture submits ran after the repeat, want 1", n)
			}
			clock.Advance(time.Minute)
			got, err = merchant.Payments.Get(ctx, p.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.CapturableAmount != "15000000" {
				t.Fatalf("capturable %s, want 15000000: captured once", got.CapturableAmount)
			}
		})
	}
}

// A payment creation that the gateway ran and whose 201 a proxy replaced
// with an HTML page keeps the Idempotency-Key the SDK generated: creating
// again with it replays the payment instead of making a second one.
func TestCreateAnsweredByAProxyKeepsItsKey(t *testing.T) {
	gw := rail0test.NewServer(rail0test.WithoutRateLimits())
	defer gw.Close()
	proxy := newAfterwardsProxy(t, gw)
	ctx := context.Background()
	buyerKey, _ := signing.NewPrivateKeySigner(gw.Buyer.PrivateKey)
	buyer, err := rail0.NewClient(proxy.URL, rail0.WithSigner(buyerKey))
	if err != nil {
		t.Fatal(err)
	}
	params := rail0.PaymentCreateParams{ChainID: gw.ChainID, Mode: rail0.ModeAuthorize,
		Amount: "25.00", Token: gw.Token, Payer: gw.Buyer.Address, Payee: gw.Merchant.Address}
	proxy.set("POST /payments", proxyAnswer{http.StatusCreated, "text/html", "<html><body>Created</body></html>"})
	_, err = buyer.Payments.Create(ctx, params)
	proxy.set("", proxyAnswer{})
	var unknown *rail0.OutcomeUnknownError
	var decodeErr *rail0.DecodeError
	if !errors.As(err, &unknown) || !errors.As(err, &decodeErr) || unknown.IdempotencyKey == "" {
		t.Fatalf("Create answered with HTML: %v, want an *OutcomeUnknownError with the key, over a *DecodeError", err)
	}

	params.IdempotencyKey = unknown.IdempotencyKey
	p, err := buyer.Payments.Create(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if p.Response.StatusCode != http.StatusOK {
		t.Fatalf("the repeat answered %d, want 200: the replay of the payment made", p.Response.StatusCode)
	}
	created := gw.Ledger.CountFunc(func(e rail0test.Execution) bool {
		return e.Route == "POST /payments" && e.Status == http.StatusCreated
	})
	if created != 1 {
		t.Fatalf("%d payments created, want 1", created)
	}
}
