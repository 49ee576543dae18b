package integration_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0test"
	"github.com/rail0/rail0-go/signing"
)

// Issue 29, item 1, end to end: the low-level writes reconcile "already
// done" after a lost answer, and a claim of "already done" that the
// payment does not bear out is no success. A proxy in front of rail0test
// (reconcileProxy) lets a write run and answers 502 instead, answers a write
// itself as done without passing it on, or routes it to another payment.

// reconcileProxy is the proxy of these attacks: for the requests whose
// "METHOD path" ends with route, it answers the gateway's first answers
// with a 502 page (lost), or answers itself without passing the request on
// (claim), or sends the request to another path (to).
type reconcileProxy struct {
	url   string
	mu    sync.Mutex
	route string
	lost  int // answers still to replace with a 502
	claim *proxyAnswer
	from  string // a path prefix rewritten to to
	to    string
	hits  int
}

func newReconcileProxy(t *testing.T, gw *rail0test.Server) *reconcileProxy {
	p := &reconcileProxy{}
	matches := func(r *http.Request) bool {
		return p.route != "" && strings.HasSuffix(r.Method+" "+r.URL.Path, p.route)
	}
	srv := newProxy(t, gw, proxyHooks{
		front: func(w http.ResponseWriter, r *http.Request) bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.claim == nil || !matches(r) {
				return false
			}
			p.hits++
			if p.claim.contentType != "" {
				w.Header().Set("Content-Type", p.claim.contentType)
			}
			w.WriteHeader(p.claim.status)
			_, _ = w.Write([]byte(p.claim.body))
			return true
		},
		in: func(r *http.Request) {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.from != "" && strings.HasPrefix(r.URL.Path, p.from) && matches(r) {
				p.hits++
				r.URL.Path = p.to + strings.TrimPrefix(r.URL.Path, p.from)
			}
		},
		out: func(resp *http.Response) error {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.lost == 0 || !matches(resp.Request) {
				return nil
			}
			if _, err := drain(resp.Body); err != nil {
				return err
			}
			p.lost--
			p.hits++
			resp.StatusCode, resp.Status = http.StatusBadGateway, "502 Bad Gateway"
			resp.Header = http.Header{"Content-Type": {"text/html"}}
			resp.Body, resp.ContentLength = withBody(resp.Header, []byte("<html><body>502 Bad Gateway</body></html>"))
			return nil
		},
	})
	p.url = srv.URL
	return p
}

// set arms the proxy for route; reset disarms it and returns how many
// requests it acted on.
func (p *reconcileProxy) set(route string, arm func(p *reconcileProxy)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.route, p.lost, p.claim, p.from, p.to, p.hits = route, 0, nil, "", "", 0
	arm(p)
}

func (p *reconcileProxy) reset() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	hits := p.hits
	p.route, p.lost, p.claim, p.from, p.to, p.hits = "", 0, nil, "", "", 0
	return hits
}

// checkoutWorld is a checkout on the low-level path: the buyer's backend
// holds a session but no key (the key is in the browser wallet), creates
// the payment and checks its payload (VerifyPayload); the wallet signs the
// checked typed data; the backend stores the signature (SubmitSignature).
type checkoutWorld struct {
	t        *testing.T
	ctx      context.Context
	gw       *rail0test.Server
	clock    *rail0test.ManualClock
	proxy    *reconcileProxy
	backend  *rail0.Client
	merchant *rail0.Client
	order    rail0.PaymentCreateParams
}

func newCheckoutWorld(t *testing.T) *checkoutWorld {
	t.Helper()
	clock := rail0test.NewManualClock(time.Now())
	gw := rail0test.NewServer(rail0test.WithoutRateLimits(), rail0test.WithClock(clock), rail0test.WithConfirmationDelay(30*time.Second))
	t.Cleanup(gw.Close)
	w := &checkoutWorld{t: t, ctx: context.Background(), gw: gw, clock: clock, proxy: newReconcileProxy(t, gw)}
	buyer, merchant := signingClients(t, gw, w.proxy.url)
	session, err := buyer.Session(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if w.backend, err = rail0.NewClient(w.proxy.url, rail0.WithToken(session.Token()), gw.Pins()); err != nil {
		t.Fatal(err)
	}
	w.merchant = merchant
	w.order = rail0.PaymentCreateParams{ChainID: gw.ChainID, Mode: rail0.ModeAuthorize, Amount: "25.00",
		Token: gw.Token, Payer: gw.Buyer.Address, Payee: gw.Merchant.Address}
	return w
}

// checkout creates a payment and returns it with the signature the buyer's
// wallet made of its checked payload.
func (w *checkoutWorld) checkout() (*rail0.PaymentDetail, string) {
	w.t.Helper()
	p, err := w.backend.Payments.Create(w.ctx, w.order)
	if err != nil {
		w.t.Fatal(err)
	}
	v, err := w.backend.Payments.VerifyPayload(w.ctx, p, rail0.Intent{}, p.SigningPayload)
	if err != nil {
		w.t.Fatal(err)
	}
	return p, browserWallet(w.gw, v.TypedData)
}

// status is the payment's status at the gateway, read past the proxy.
func (w *checkoutWorld) status(id string) rail0.PaymentStatus {
	w.t.Helper()
	c, err := rail0.NewClient(w.gw.URL, w.gw.Pins(), rail0.WithToken(w.sessionOf()))
	if err != nil {
		w.t.Fatal(err)
	}
	p, err := c.Payments.Get(w.ctx, id)
	if err != nil {
		w.t.Fatal(err)
	}
	return p.Status
}

// summary is a payment a call returned, in a few words, for a failure.
func summary(p *rail0.PaymentDetail) string {
	if p == nil {
		return "no payment"
	}
	return "payment " + p.ID + " " + string(p.Status)
}

func (w *checkoutWorld) sessionOf() string {
	key, err := signing.NewPrivateKeySigner(w.gw.Buyer.PrivateKey)
	if err != nil {
		w.t.Fatal(err)
	}
	c, err := rail0.NewClient(w.gw.URL, w.gw.Pins(), rail0.WithSigner(key))
	if err != nil {
		w.t.Fatal(err)
	}
	s, err := c.Session(w.ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	return s.Token()
}

// The review's case: the gateway stored the signature, a proxy replaced
// its answer with a 502, the SDK sent the PUT again and the gateway
// refused it already_signed. The checkout gets the signed payment, marked
// reconciled (the write's refusal in Response.Reconciled), not a failure
// that would have the buyer pay twice; and the merchant authorizes with the
// signature on file.
func TestAttackSubmitSignatureAnswerLost(t *testing.T) {
	w := newCheckoutWorld(t)
	p, sig := w.checkout()
	w.proxy.set("PUT /payments/"+p.ID+"/sign", func(p *reconcileProxy) { p.lost = 1 })
	signed, err := w.backend.Payments.SubmitSignature(w.ctx, p.ID, rail0.PaymentSubmitSignatureParams{Signature: sig})
	if hits := w.proxy.reset(); hits != 1 {
		t.Fatalf("the proxy replaced %d answers, want 1: the test proves nothing", hits)
	}
	if err != nil || signed.Status != rail0.StatusSigned || signed.SignedAt == nil {
		t.Fatalf("SubmitSignature after a lost answer = %s, %v; want the signed payment", summary(signed), err)
	}
	var apiErr *rail0.APIError
	if r := signed.Response.Reconciled; r == nil || !errors.As(r.Err, &apiErr) || apiErr.Code != rail0.CodeAlreadySigned {
		t.Fatalf("Response.Reconciled = %+v, want the write's already_signed", r)
	}
	if call := rail0.CallOf(signed.Response.Reconciled.Err); call == nil || len(call.Attempts) != 2 || call.Attempts[0].StatusCode != http.StatusBadGateway {
		t.Errorf("the write's transcript = %+v, want the 502 and the repeat", call)
	}
	tx, err := w.merchant.Payments.Authorize(w.ctx, p.ID, rail0.PaymentAuthorizeParams{})
	if err != nil {
		t.Fatalf("authorize with the signature on file: %v", err)
	}
	escrow{gw: w.gw, clock: w.clock, merchant: w.merchant}.confirmed(t, p.ID, tx)
}

// A proxy that answers already_signed itself, the gateway never having seen
// the signature: the payment reads unsigned, and the checkout gets a
// *ReconcileError over the refusal, not the signed payment.
func TestAttackSubmitSignatureFalselyOnFile(t *testing.T) {
	w := newCheckoutWorld(t)
	p, sig := w.checkout()
	w.proxy.set("PUT /payments/"+p.ID+"/sign", func(p *reconcileProxy) {
		p.claim = &proxyAnswer{status: http.StatusUnprocessableEntity, contentType: "application/json",
			body: `{"code":"already_signed","title":"Already signed","detail":"A payer signature is already on file for this payment.","status":"invalid_state"}`}
	})
	signed, err := w.backend.Payments.SubmitSignature(w.ctx, p.ID, rail0.PaymentSubmitSignatureParams{Signature: sig})
	if hits := w.proxy.reset(); hits != 1 {
		t.Fatalf("the proxy answered %d times, want 1", hits)
	}
	var re *rail0.ReconcileError
	var apiErr *rail0.APIError
	if signed != nil || !errors.As(err, &re) || !errors.As(err, &apiErr) || apiErr.Code != rail0.CodeAlreadySigned {
		t.Fatalf("SubmitSignature answered already_signed by a proxy = %s, %v; want a *ReconcileError", summary(signed), err)
	}
	if !strings.Contains(re.Reason, "no signature is on file") {
		t.Errorf("Reason = %q, want it to say nothing is on file", re.Reason)
	}
	if got := w.status(p.ID); got != rail0.StatusUnsigned {
		t.Fatalf("the payment is %s at the gateway", got)
	}
}

// A signature on file that is not this one: the buyer's wallet signed
// payment B, and the signature goes to payment A, which the buyer signed
// before. The gateway's already_signed is true, of another signature; the
// checkout of B must not be told B is paid. Whether a proxy routed B's PUT
// to A (the read of B shows it unsigned) or the signature was sent to A
// (A is signed, but not with it), the call is a *ReconcileError.
func TestAttackSubmitSignatureAnotherOnFile(t *testing.T) {
	w := newCheckoutWorld(t)
	a, sigA := w.checkout()
	if _, err := w.backend.Payments.SubmitSignature(w.ctx, a.ID, rail0.PaymentSubmitSignatureParams{Signature: sigA}); err != nil {
		t.Fatal(err)
	}
	b, sigB := w.checkout()

	t.Run("routed to a payment signed already", func(t *testing.T) {
		w.proxy.set("/sign", func(p *reconcileProxy) { p.from, p.to = "/payments/"+b.ID, "/payments/"+a.ID })
		signed, err := w.backend.Payments.SubmitSignature(w.ctx, b.ID, rail0.PaymentSubmitSignatureParams{Signature: sigB})
		if hits := w.proxy.reset(); hits == 0 {
			t.Fatal("the proxy routed nothing")
		}
		var re *rail0.ReconcileError
		if signed != nil || !errors.As(err, &re) {
			t.Fatalf("SubmitSignature of B routed to A = %s, %v; want a *ReconcileError", summary(signed), err)
		}
		if got := w.status(b.ID); got != rail0.StatusUnsigned {
			t.Fatalf("B is %s at the gateway", got)
		}
	})
	t.Run("sent to a payment signed already", func(t *testing.T) {
		signed, err := w.backend.Payments.SubmitSignature(w.ctx, a.ID, rail0.PaymentSubmitSignatureParams{Signature: sigB})
		var re *rail0.ReconcileError
		var apiErr *rail0.APIError
		if signed != nil || !errors.As(err, &re) || !errors.As(err, &apiErr) || apiErr.Code != rail0.CodeAlreadySigned {
			t.Fatalf("B's signature sent to A = %s, %v; want a *ReconcileError over already_signed", summary(signed), err)
		}
		if !strings.Contains(re.Reason, "signature") {
			t.Errorf("Reason = %q, want it to name the signature", re.Reason)
		}
	})
	// B's own signature, sent twice (a double click): the second is
	// reconciled, the first stored it.
	first, err := w.backend.Payments.SubmitSignature(w.ctx, b.ID, rail0.PaymentSubmitSignatureParams{Signature: sigB})
	if err != nil || first.Response.Reconciled != nil {
		t.Fatalf("B's signature = %s, %v", summary(first), err)
	}
	again, err := w.backend.Payments.SubmitSignature(w.ctx, b.ID, rail0.PaymentSubmitSignatureParams{Signature: sigB})
	if err != nil || again.Response.Reconciled == nil {
		t.Fatalf("B's signature again = %s, %v; want the signed payment, reconciled", summary(again), err)
	}
}

// The low-level submits, by raw transaction and by hash, a generic step
// and a dispute step: a repeat after a lost answer is reconciled and says
// so; a proxy that answers "known already" itself, the gateway never having
// seen the transaction, gets a *ReconcileError, not a success.
func TestAttackLowLevelSubmitsClaimedDone(t *testing.T) {
	w := newCheckoutWorld(t)
	buyer, _ := signingClients(t, w.gw, w.proxy.url)
	authorized := escrow{w.gw, w.clock, buyer, w.gw.Buyer.Address, w.merchant}.authorized(t, "25.00")
	w.clock.Advance(time.Minute)

	prepare := func(c *rail0.Client, op rail0.Operation, params rail0.PaymentPrepareParams, key string) (string, string) {
		t.Helper()
		prep, err := c.Payments.Prepare(w.ctx, authorized.ID, op, params)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := signRaw(key, *prep.UnsignedTransaction)
		if err != nil {
			t.Fatal(err)
		}
		return raw, crypto.Keccak256Hash(hexutil.MustDecode(raw)).Hex()
	}

	// A capture's raw submit: its 202 replaced with a 502 (the outcome is
	// unknown), sent again: already_known, reconciled.
	raw, hash := prepare(w.merchant, rail0.OpCapture, rail0.PaymentPrepareParams{Amount: "5.00"}, w.gw.Merchant.PrivateKey)
	w.proxy.set("POST /payments/"+authorized.ID+"/capture", func(p *reconcileProxy) { p.lost = 1 })
	_, err := w.merchant.Payments.Submit(w.ctx, authorized.ID, rail0.OpCapture, rail0.PaymentSubmitParams{SignedTransaction: raw})
	if !errors.Is(err, rail0.ErrOutcomeUnknown) {
		t.Fatalf("a capture whose answer was lost: %v, want ErrOutcomeUnknown", err)
	}
	tx, err := w.merchant.Payments.Submit(w.ctx, authorized.ID, rail0.OpCapture, rail0.PaymentSubmitParams{SignedTransaction: raw})
	w.proxy.reset()
	var apiErr *rail0.APIError
	if err != nil || !strings.EqualFold(*tx.TransactionHash, hash) || tx.Response.Reconciled == nil ||
		!errors.As(tx.Response.Reconciled.Err, &apiErr) || apiErr.Code != rail0.CodeAlreadyKnown {
		t.Fatalf("the capture sent again = %+v, %v; want its transaction, reconciled from already_known", tx, err)
	}
	escrow{gw: w.gw, clock: w.clock, merchant: w.merchant}.confirmed(t, authorized.ID, tx)

	claims := []struct {
		name   string
		route  string
		answer proxyAnswer
		submit func() (*rail0.Transaction, error)
	}{
		{"a capture answered already_known", "/capture", proxyAnswer{status: 422, contentType: "application/json",
			body: `{"code":"already_known","title":"Transaction already known","detail":"The identical transaction is already pending on the network."}`},
			func() (*rail0.Transaction, error) {
				raw, _ := prepare(w.merchant, rail0.OpCapture, rail0.PaymentPrepareParams{Amount: "1.00"}, w.gw.Merchant.PrivateKey)
				return w.merchant.Payments.Submit(w.ctx, authorized.ID, rail0.OpCapture, rail0.PaymentSubmitParams{SignedTransaction: raw})
			}},
		{"a dispute reported by hash, answered 422", "/dispute/submitted", proxyAnswer{status: 422},
			func() (*rail0.Transaction, error) {
				_, hash := prepare(buyer, rail0.OpDispute, rail0.PaymentPrepareParams{}, w.gw.Buyer.PrivateKey)
				return buyer.Payments.SubmitByHash(w.ctx, authorized.ID, rail0.OpDispute, rail0.PaymentSubmitByHashParams{TransactionHash: hash})
			}},
	}
	for _, c := range claims {
		t.Run(c.name, func(t *testing.T) {
			before := len(w.gw.Ledger.Executions())
			w.proxy.set(c.route, func(p *reconcileProxy) { p.claim = &c.answer })
			tx, err := c.submit()
			if hits := w.proxy.reset(); hits != 1 {
				t.Fatalf("the proxy answered %d times, want 1", hits)
			}
			var re *rail0.ReconcileError
			var apiErr *rail0.APIError
			if tx != nil || !errors.As(err, &re) || !errors.As(err, &apiErr) || apiErr.StatusCode != 422 {
				t.Fatalf("a submit the proxy claimed done = %+v, %v; want a *ReconcileError over the 422", tx, err)
			}
			for _, e := range w.gw.Ledger.Executions()[before:] {
				if !strings.HasSuffix(e.Route, "/prepare") && !strings.HasPrefix(e.Route, "GET ") {
					t.Errorf("%s reached the gateway", e.Route)
				}
			}
		})
	}
}
