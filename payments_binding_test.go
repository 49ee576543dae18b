package rail0

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rail0/rail0-go/internal/evmtest"
	"github.com/rail0/rail0-go/internal/verify"
	"github.com/rail0/rail0-go/internal/verifytest"
	"github.com/stretchr/testify/assert"
)

// The parties of artGateway's payment, and the order they agreed on.
var (
	artPayer   = evmtest.NewKey("payer").Address()
	artPayee   = evmtest.NewKey("payee").Address()
	artRail0ID = verifytest.Rail0ID.String()
)

// artOrder is the order behind artGateway's payment, as its payer knows it.
func artOrder(mode PaymentMode) Expectation {
	return Expectation{ChainID: artChain, Mode: mode, Token: artToken, Payee: artPayee, Amount: "25.00"}
}

// bindGateway wraps artGateway: it serves the payment under its rail0_id
// too (every /payments/{id} route takes either), records every request, and
// can answer Create with a new payment id each time, null signing payloads,
// and the PUT .../sign of its choice.
type bindGateway struct {
	*artGateway
	mu       sync.Mutex
	requests []string // "METHOD /path", as sent
	// numberCreates gives each Create after the first its own payment id.
	numberCreates bool
	creates       int
	// nullPayloads is how many more reads answer signing_payload null.
	nullPayloads int
	// sign, when set, answers PUT .../sign instead of artGateway.
	sign func(g *bindGateway) (int, any)
}

func newBindGateway(t *testing.T, mode PaymentMode, status PaymentStatus) *bindGateway {
	return &bindGateway{artGateway: newArtGateway(t, mode, status)}
}

func (b *bindGateway) serve(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	b.requests = append(b.requests, r.Method+" "+r.URL.Path)
	sign, nulls := b.sign, b.nullPayloads
	b.mu.Unlock()
	if prefix := "/payments/" + artRail0ID; len(r.URL.Path) >= len(prefix) && strings.EqualFold(r.URL.Path[:len(prefix)], prefix) {
		r.URL.Path = "/payments/" + artPayment + r.URL.Path[len(prefix):] // ids are hex: any case
	}
	switch {
	case r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/sign") && sign != nil:
		status, body := sign(b)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(body)
		return
	case r.Method == http.MethodPost && r.URL.Path == "/payments" || r.Method == http.MethodGet && r.URL.Path == "/payments/"+artPayment:
		rec := httptest.NewRecorder()
		b.artGateway.serve(rec, r)
		var m map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &m)
		b.mu.Lock()
		if r.Method == http.MethodPost {
			if b.creates++; b.numberCreates && b.creates > 1 {
				m["id"] = fmt.Sprintf("%s-%d", artPayment, b.creates)
			}
		} else if nulls > 0 {
			b.nullPayloads--
			m["signing_payload"] = nil
		}
		b.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rec.Code)
		_ = json.NewEncoder(w).Encode(m)
		return
	}
	b.artGateway.serve(w, r)
}

// client is artGateway.client for the wrapped gateway; extra options come
// after the gateway's own.
func (b *bindGateway) client(key Signer, opts ...Option) *Client {
	srv := httptest.NewServer(http.HandlerFunc(b.serve))
	b.t.Cleanup(srv.Close)
	return b.clientAt(srv.URL, key, opts...)
}

func (b *bindGateway) clientAt(url string, key Signer, opts ...Option) *Client {
	c, err := NewClient(url, append([]Option{artPins(), WithToken("t"), WithSigner(key), atArtCreation()}, opts...)...)
	if err != nil {
		b.t.Fatal(err)
	}
	return c
}

func (b *bindGateway) sent() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.requests...)
}

// preparedOrSubmitted lists the requests other than reads that reached the
// gateway: prepares and submits.
func (b *bindGateway) preparedOrSubmitted() []string {
	var out []string
	for _, r := range b.sent() {
		if !strings.HasPrefix(r, "GET ") {
			out = append(out, r)
		}
	}
	return out
}

// runWith is the flow of fc on payment id with expectation e, and the
// arguments flowCases gives it.
func runWith(fc flowCase, id string, e Expectation) func(ctx context.Context, c *Client) error {
	switch fc.name {
	case "PayerSign", "PayerSign charge":
		return func(ctx context.Context, c *Client) error {
			return errOf(c.Payments.PayerSign(ctx, id, PaymentPayerSignParams{Expect: e}))
		}
	case "Authorize":
		return func(ctx context.Context, c *Client) error {
			return errOf(c.Payments.Authorize(ctx, id, PaymentAuthorizeParams{Expect: e}))
		}
	case "Charge":
		return func(ctx context.Context, c *Client) error {
			return errOf(c.Payments.Charge(ctx, id, PaymentChargeParams{Expect: e}))
		}
	case "Capture":
		return func(ctx context.Context, c *Client) error {
			return errOf(c.Payments.Capture(ctx, id, PaymentCaptureParams{Amount: "1.00", Expect: e}))
		}
	case "Void":
		return func(ctx context.Context, c *Client) error {
			return errOf(c.Payments.Void(ctx, id, PaymentVoidParams{Expect: e}))
		}
	case "Release":
		return func(ctx context.Context, c *Client) error {
			return errOf(c.Payments.Release(ctx, id, PaymentReleaseParams{Expect: e}))
		}
	case "Refund":
		return func(ctx context.Context, c *Client) error {
			return errOf(c.Payments.Refund(ctx, id, PaymentRefundParams{Amount: "4.00", Expect: e}))
		}
	case "Dispute":
		return func(ctx context.Context, c *Client) error {
			return errOf(c.Payments.Dispute(ctx, id, PaymentDisputeParams{Reason: fixtureReason, Expect: e}))
		}
	case "CloseDispute":
		return func(ctx context.Context, c *Client) error {
			return errOf(c.Payments.CloseDispute(ctx, id, PaymentCloseDisputeParams{Expect: e}))
		}
	}
	panic("no flow " + fc.name)
}

// runBound runs fc named id with expectation e on a fresh bindGateway and
// returns the gateway, the signing key and the error.
func runBound(t *testing.T, fc flowCase, id string, e Expectation, setup func(b *bindGateway)) (*bindGateway, *evmtest.Key, error) {
	t.Helper()
	b := newBindGateway(t, fc.mode, fc.status)
	if setup != nil {
		setup(b)
	}
	key := b.payee
	if fc.payer {
		key = b.payer
	}
	return b, key, runWith(fc, id, e)(context.Background(), b.client(key))
}

// The whole honest order of a flow case, with the payer for the payee's
// flows.
func fullOrder(fc flowCase) Expectation {
	e := artOrder(fc.mode)
	e.Payer, e.Rail0ID = artPayer, artRail0ID
	return e
}

// Issue 19, item 2: every flow takes an expectation, and a payment that
// differs from it in any one field is refused before anything is prepared
// or signed, with an *ArtifactError naming the field inside a *FlowError at
// StepVerify.
func TestEveryFlowRefusesAPaymentOtherThanExpected(t *testing.T) {
	t.Parallel()
	other := "0x00000000000000000000000000000000000000bb"
	fields := []struct {
		field  string
		change func(e *Expectation)
	}{
		{"rail0_id", func(e *Expectation) { e.Rail0ID = fixtureReason }},
		{"chain_id", func(e *Expectation) { e.ChainID = 8453 }},
		{"mode", func(e *Expectation) {
			e.Mode = map[PaymentMode]PaymentMode{ModeAuthorize: ModeCharge, ModeCharge: ModeAuthorize}[e.Mode]
		}},
		{"token", func(e *Expectation) { e.Token = other }},
		{"payer", func(e *Expectation) { e.Payer = other }},
		{"payee", func(e *Expectation) { e.Payee = other }},
		{"amount", func(e *Expectation) { e.Amount = "250.00" }},
	}
	for _, fc := range flowCases {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			// The whole order, honest: the flow runs.
			if b, key, err := runBound(t, fc, artPayment, fullOrder(fc), nil); err != nil || key.Signed.Load() == 0 || len(b.submitted()) != 1 {
				t.Fatalf("the honest order: %v (signed %d, submitted %v)", err, key.Signed.Load(), b.submitted())
			}
			for _, f := range fields {
				e := fullOrder(fc)
				f.change(&e)
				b, key, err := runBound(t, fc, artPayment, e, nil)
				var ae *ArtifactError
				var fe *FlowError
				if !errors.As(err, &fe) || fe.Step != StepVerify || !errors.As(err, &ae) || ae.Artifact != "payment" || ae.Field != f.field {
					t.Errorf("expected %s differs: %v, want an *ArtifactError on the payment's %s at StepVerify", f.field, err, f.field)
					continue
				}
				if ae.Operation != fc.submitOp() {
					t.Errorf("%s: the error names operation %q", f.field, ae.Operation)
				}
				if key.Signed.Load() != 0 || len(b.preparedOrSubmitted()) != 0 {
					t.Errorf("%s: signed %d, sent %v after the refusal", f.field, key.Signed.Load(), b.preparedOrSubmitted())
				}
			}
		})
	}
}

// submitOp is the operation a flow case's errors name.
func (fc flowCase) submitOp() Operation {
	switch fc.name {
	case "PayerSign", "PayerSign charge":
		return ""
	case "CloseDispute":
		return OpCloseDispute
	}
	return Operation(strings.ToLower(fc.name))
}

// Issue 19, item 2: a flow accepts the rail0_id wherever the gateway does,
// addresses every request of the flow by it, and refuses a read that does
// not carry it.
func TestEveryFlowAcceptsTheRail0ID(t *testing.T) {
	t.Parallel()
	for _, fc := range flowCases {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			e := Expectation{}
			if fc.payer && fc.status == StatusUnsigned {
				e = artOrder(fc.mode)
			}
			b, key, err := runBound(t, fc, artRail0ID, e, nil)
			if err != nil || key.Signed.Load() == 0 || len(b.submitted()) != 1 {
				t.Fatalf("named by its rail0_id: %v (signed %d, submitted %v)", err, key.Signed.Load(), b.submitted())
			}
			for _, r := range b.sent() {
				if strings.Contains(r, "/payments/") && !strings.Contains(r, "/payments/"+artRail0ID) {
					t.Errorf("%s does not address the payment the caller named", r)
				}
			}
			// Upper-case hex names the same payment.
			upper := "0x" + strings.ToUpper(artRail0ID[2:])
			if _, _, err := runBound(t, fc, upper, e, nil); err != nil {
				t.Errorf("named by its rail0_id in upper case: %v", err)
			}
			// A read that carries another rail0_id is another payment.
			_, key, err = runBound(t, fc, artRail0ID, e, func(b *bindGateway) {
				b.rewrite(func(p *PaymentDetail) { p.Rail0ID = fixtureReason })
			})
			var ae *ArtifactError
			if !errors.As(err, &ae) || ae.Field != "rail0_id" || key.Signed.Load() != 0 {
				t.Fatalf("a read with another rail0_id: %v (signed %d)", err, key.Signed.Load())
			}
		})
	}
}

// Issue 19, item 2: the prepared transaction must belong to the payment
// read, whatever the caller named it by.
func TestPreparedTransactionOfAnotherPaymentIsRefused(t *testing.T) {
	t.Parallel()
	fc := flowByName(t, "Capture")
	b := newBindGateway(t, fc.mode, fc.status)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/prepare") {
			b.serve(w, r)
			return
		}
		rec := httptest.NewRecorder()
		b.serve(rec, r)
		var m map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &m)
		m["payment_id"] = "p2"
		w.WriteHeader(rec.Code)
		_ = json.NewEncoder(w).Encode(m)
	}))
	t.Cleanup(srv.Close)
	_, err := b.clientAt(srv.URL, b.payee).Payments.Capture(context.Background(), artRail0ID, PaymentCaptureParams{Amount: "1.00"})
	var ae *ArtifactError
	if !errors.As(err, &ae) || ae.Field != "payment_id" || ae.Expected != artPayment || b.payee.Signed.Load() != 0 {
		t.Fatalf("a prepared transaction of payment p2: %v", err)
	}
}

// Issue 19, item 2: a refund is never signed on the gateway's word alone.
// Without a rail0_id, an expected payer or a record of the Create, Refund
// is refused before any request with ErrUnbound, saying how to bind it.
func TestRefundNeedsABinding(t *testing.T) {
	t.Parallel()
	fc := flowByName(t, "Refund")
	b, key, err := runBound(t, fc, artPayment, Expectation{}, nil)
	var fe *FlowError
	if !errors.Is(err, ErrUnbound) || !errors.As(err, &fe) || fe.Step != StepVerify || fe.Operation != OpRefund {
		t.Fatalf("an unbound refund: %v, want ErrUnbound in a *FlowError at StepVerify", err)
	}
	for _, how := range []string{"PaymentRefundParams.Expect.Payer", "PaymentRefundParams.Expect.Rail0ID", "your own order record",
		"never one read from the gateway", "nothing was read or signed"} {
		if !strings.Contains(err.Error(), how) {
			t.Errorf("the error does not say %q: %v", how, err)
		}
	}
	if len(b.sent()) != 0 || key.Signed.Load() != 0 {
		t.Errorf("an unbound refund sent %v and signed %d", b.sent(), key.Signed.Load())
	}
	// An amount or expectation in the wrong form is a *ValidationError first.
	var ve *ValidationError
	if _, _, err := runBound(t, fc, artPayment, Expectation{Payer: "0x12"}, nil); !errors.As(err, &ve) || ve.Field != "expect.payer" {
		t.Errorf("an expected payer that is no address: %v", err)
	}
	for name, bind := range map[string]struct {
		id string
		e  Expectation
	}{
		"named by its rail0_id": {artRail0ID, Expectation{}},
		"the payer expected":    {artPayment, Expectation{Payer: artPayer}},
		"the rail0_id expected": {artPayment, Expectation{Rail0ID: artRail0ID}},
	} {
		if _, key, err := runBound(t, fc, bind.id, bind.e, nil); err != nil || key.Signed.Load() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A client that created the payment remembers its payer.
	b = newBindGateway(t, fc.mode, fc.status)
	c := b.client(b.payee)
	ctx := context.Background()
	if _, err := c.Payments.Create(ctx, PaymentCreateParams{ChainID: artChain, Mode: ModeAuthorize, Amount: "25.00",
		Token: artToken, Payer: artPayer, Payee: artPayee}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Payments.Refund(ctx, artPayment, PaymentRefundParams{Amount: "4.00"}); err != nil {
		t.Errorf("a refund of a payment this client created: %v", err)
	}
}

// PayerSign on the client that created the payment signs only what Create
// asked for: a gateway that answers Create with the payment asked for and
// PayerSign's read with another one, consistent with its own config_hash
// and payload, gets no signature.
func TestPayerSignSignsOnlyWhatCreateAskedFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(p *PaymentDetail)
		field  string
	}{
		{"honest", nil, ""},
		{"another payee", func(p *PaymentDetail) { p.Payee = artOther }, "payee"},
		{"ten times the amount", func(p *PaymentDetail) { p.Amount = fmt.Sprint(10 * artAmount) }, "amount"},
		{"a charge instead of an escrow", func(p *PaymentDetail) { p.Mode = ModeCharge }, "mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := newArtGateway(t, ModeAuthorize, StatusUnsigned)
			c := g.client(g.payer)
			ctx := context.Background()
			_, err := c.Payments.Create(ctx, PaymentCreateParams{ChainID: artChain, Mode: ModeAuthorize, Amount: "25.00",
				Token: artToken, Payer: g.payer.Address(), Payee: g.payee.Address()})
			if err != nil {
				t.Fatal(err)
			}
			if tt.change != nil {
				g.rewrite(tt.change)
			}
			_, err = c.Payments.PayerSign(ctx, artPayment, PaymentPayerSignParams{})
			if tt.field == "" {
				if err != nil || len(g.submitted()) != 1 {
					t.Fatalf("honest gateway: %v, submitted %v", err, g.submitted())
				}
				return
			}
			var ae *ArtifactError
			if !errors.As(err, &ae) || ae.Field != tt.field || ae.Artifact != "payment" {
				t.Fatalf("err = %v, want an *ArtifactError on the payment's %s", err, tt.field)
			}
			if len(g.submitted()) != 0 || g.payer.Signed.Load() != 0 {
				t.Errorf("signed %d, submitted %v after the refusal", g.payer.Signed.Load(), g.submitted())
			}
		})
	}
}

// Issue 19, item 2: the binding Create gives PayerSign survives a restart
// and a thousand creates, or gives way to the caller's expectation; it
// never silently disappears. After a restart (a new client) and after more
// creates than the record keeps, a gateway that answers PayerSign's read
// with other terms gets no signature.
func TestPayerSignBindingIsNeverLost(t *testing.T) {
	t.Parallel()
	order := PaymentCreateParams{ChainID: artChain, Mode: ModeAuthorize, Amount: "25.00",
		Token: artToken, Payer: artPayer, Payee: artPayee, IdempotencyKey: "order-1042"}
	tenfold := func(p *PaymentDetail) { p.Amount = fmt.Sprint(10 * artAmount) }
	ctx := context.Background()
	refusedUnsigned := func(t *testing.T, b *bindGateway, err error, want error, field string) {
		t.Helper()
		var ae *ArtifactError
		switch {
		case want != nil && !errors.Is(err, want):
			t.Errorf("err = %v, want %v", err, want)
		case want == nil && (!errors.As(err, &ae) || ae.Field != field):
			t.Errorf("err = %v, want an *ArtifactError on %s", err, field)
		}
		if n := b.payer.Signed.Load(); n != 0 || len(b.submitted()) != 0 {
			t.Errorf("signed %d, submitted %v", n, b.submitted())
		}
	}

	t.Run("after a restart", func(t *testing.T) {
		t.Parallel()
		b := newBindGateway(t, ModeAuthorize, StatusUnsigned)
		if _, err := b.client(b.payer).Payments.Create(ctx, order); err != nil {
			t.Fatal(err)
		}
		b.rewrite(tenfold)
		restarted := b.client(b.payer)
		before := len(b.sent())
		_, err := restarted.Payments.PayerSign(ctx, artPayment, PaymentPayerSignParams{})
		refusedUnsigned(t, b, err, ErrUnbound, "")
		if len(b.sent()) != before {
			t.Errorf("an unbound PayerSign sent %v", b.sent()[before:])
		}
		for _, how := range []string{"PaymentPayerSignParams.Expect", "IdempotencyKey"} {
			if !strings.Contains(fmt.Sprint(err), how) {
				t.Errorf("the refusal does not say %q: %v", how, err)
			}
		}
		// The caller's expectation takes the record's place.
		_, err = restarted.Payments.PayerSign(ctx, artPayment, PaymentPayerSignParams{Expect: artOrder(ModeAuthorize)})
		refusedUnsigned(t, b, err, nil, "amount")
		// A partial expectation is no binding: the terms the signature commits to are all needed.
		partial := artOrder(ModeAuthorize)
		partial.Mode = ""
		_, err = restarted.Payments.PayerSign(ctx, artPayment, PaymentPayerSignParams{Expect: partial})
		refusedUnsigned(t, b, err, ErrUnbound, "")
		// Create again with the order's key: the gateway answers with the
		// same payment, and the record of what was asked is back.
		if _, err := restarted.Payments.Create(ctx, order); err != nil {
			t.Fatal(err)
		}
		_, err = restarted.Payments.PayerSign(ctx, artPayment, PaymentPayerSignParams{})
		refusedUnsigned(t, b, err, nil, "amount")
	})

	t.Run("after more creates than the record keeps", func(t *testing.T) {
		t.Parallel()
		b := newBindGateway(t, ModeAuthorize, StatusUnsigned)
		b.numberCreates = true
		c := b.client(b.payer)
		if _, err := c.Payments.Create(ctx, order); err != nil {
			t.Fatal(err)
		}
		more := order
		more.IdempotencyKey = ""
		creates := make(chan struct{}, max(1001, maxCreated))
		for range cap(creates) {
			creates <- struct{}{}
		}
		close(creates)
		var wg sync.WaitGroup
		for range 4 { // the order among the newer payments does not matter
			wg.Go(func() {
				for range creates {
					if _, err := c.Payments.Create(ctx, more); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		b.rewrite(tenfold)
		_, err := c.Payments.PayerSign(ctx, artPayment, PaymentPayerSignParams{})
		refusedUnsigned(t, b, err, ErrUnbound, "")
		_, err = c.Payments.PayerSign(ctx, artPayment, PaymentPayerSignParams{Expect: artOrder(ModeAuthorize)})
		refusedUnsigned(t, b, err, nil, "amount")
	})

	t.Run("an honest gateway, with the expectation alone", func(t *testing.T) {
		t.Parallel()
		b := newBindGateway(t, ModeAuthorize, StatusUnsigned)
		if _, err := b.client(b.payer).Payments.PayerSign(ctx, artPayment, PaymentPayerSignParams{Expect: artOrder(ModeAuthorize)}); err != nil {
			t.Fatal(err)
		}
	})
}

// Issue 19, item 4: PUT .../sign repeated after a lost answer is refused
// with 422 already_signed; PayerSign reads the payment and reports it
// signed when it is the payment it checked, signed. Anything else keeps
// the refusal.
func TestPayerSignReconcilesASignatureOnFile(t *testing.T) {
	t.Parallel()
	alreadySigned := map[string]string{"code": "already_signed", "title": "Already signed", "status": "invalid_state"}
	signAndRefuse := func(change func(p *PaymentDetail)) func(b *bindGateway) (int, any) {
		return func(b *bindGateway) (int, any) {
			b.mu.Lock()
			b.payment.Status = StatusSigned
			now := time.Now()
			b.payment.SignedAt = &now
			b.mu.Unlock()
			if change != nil {
				b.rewrite(change)
			}
			return http.StatusUnprocessableEntity, alreadySigned
		}
	}
	tests := []struct {
		name string
		sign func(b *bindGateway) (int, any)
		ok   bool
	}{
		{"signed, the same payment", signAndRefuse(nil), true},
		{"signed, other terms", signAndRefuse(func(p *PaymentDetail) { p.RefundExpiry++ }), false},
		{"signed, as a charge", signAndRefuse(func(p *PaymentDetail) { p.Mode = ModeCharge }), false},
		{"refused, still unsigned", func(_ *bindGateway) (int, any) { return http.StatusUnprocessableEntity, alreadySigned }, false},
		{"another refusal", func(b *bindGateway) (int, any) {
			signAndRefuse(nil)(b)
			return http.StatusUnprocessableEntity, map[string]string{"code": "signer_mismatch"}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newBindGateway(t, ModeAuthorize, StatusUnsigned)
			b.sign = tt.sign
			p, err := b.client(b.payer).Payments.PayerSign(context.Background(), artPayment, PaymentPayerSignParams{Expect: artOrder(ModeAuthorize)})
			if tt.ok {
				if err != nil || p.Status != StatusSigned || p.SignedAt == nil {
					t.Fatalf("PayerSign = %+v, %v; want the signed payment", p, err)
				}
				return
			}
			var fe *FlowError
			var apiErr *APIError
			if err == nil || !errors.As(err, &fe) {
				t.Fatalf("PayerSign = %v, want a *FlowError", err)
			}
			if fe.Step == StepSubmit && (!errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnprocessableEntity) {
				t.Errorf("the refusal was lost: %v", err)
			}
		})
	}

	// A later call finds the payment signed: the same report.
	b := newBindGateway(t, ModeAuthorize, StatusSigned)
	now := time.Now()
	b.payment.SignedAt = &now
	p, err := b.client(b.payer).Payments.PayerSign(context.Background(), artPayment, PaymentPayerSignParams{Expect: artOrder(ModeAuthorize)})
	if err != nil || p.Status != StatusSigned || b.payer.Signed.Load() != 0 || len(b.preparedOrSubmitted()) != 0 {
		t.Fatalf("PayerSign of a signed payment = %v (signed %d, sent %v)", err, b.payer.Signed.Load(), b.preparedOrSubmitted())
	}
	b.payment.SignedAt = nil
	if _, err := b.client(b.payer).Payments.PayerSign(context.Background(), artPayment, PaymentPayerSignParams{Expect: artOrder(ModeAuthorize)}); !errors.Is(err, ErrNotSignable) {
		t.Fatalf("PayerSign of a payment past unsigned without signed_at: %v", err)
	}
}

// PayerSign folds its polling settings into its params: a null
// signing_payload is read again after PollInterval, growing to
// MaxPollInterval, at most five reads.
func TestPayerSignPollSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		params PaymentPayerSignParams
		nulls  int
		waited time.Duration
		err    error
	}{
		{"defaults", PaymentPayerSignParams{}, 2, time.Second + 1500*time.Millisecond, nil},
		{"own pace", PaymentPayerSignParams{PollInterval: 300 * time.Millisecond, MaxPollInterval: 400 * time.Millisecond}, 3, 300*time.Millisecond + 400*time.Millisecond + 400*time.Millisecond, nil},
		{"below the floor", PaymentPayerSignParams{PollInterval: time.Millisecond}, 1, MinPollInterval, nil},
		{"five reads at most", PaymentPayerSignParams{PollInterval: time.Second, MaxPollInterval: time.Second}, 5, 4 * time.Second, ErrSigningPayloadUnavailable},
	}
	for _, tt := range tests {
		synctest.Test(t, func(t *testing.T) {
			b := newBindGateway(t, ModeAuthorize, StatusUnsigned)
			b.nullPayloads = tt.nulls
			srv, opt := pipeServer(t, http.HandlerFunc(b.serve))
			c := b.clientAt(srv.URL, b.payer, opt)
			tt.params.Expect = artOrder(ModeAuthorize)
			start := time.Now()
			_, err := c.Payments.PayerSign(context.Background(), artPayment, tt.params)
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("%s: %v, want %v", tt.name, err, tt.err)
			}
			if got := time.Since(start); got != tt.waited {
				t.Errorf("%s: waited %v, want %v", tt.name, got, tt.waited)
			}
		})
	}
	b := newBindGateway(t, ModeAuthorize, StatusUnsigned)
	_, err := b.client(b.payer).Payments.PayerSign(context.Background(), artPayment,
		PaymentPayerSignParams{Expect: artOrder(ModeAuthorize), PollInterval: 5 * time.Second, MaxPollInterval: time.Second})
	var ve *ValidationError
	if !errors.As(err, &ve) || len(b.sent()) != 0 {
		t.Fatalf("a last interval below the first: %v, sent %v", err, b.sent())
	}
}

// Issue 19, item 4: a submit repeated after a lost answer and refused with
// 422 because the transaction is known is reported as the transaction that
// carries the hash this client signed. A refusal that leaves no such
// transaction stands.
func TestSubmitReconcilesAKnownTransaction(t *testing.T) {
	t.Parallel()
	ours := fixtureSignedHash().String()
	withHash := func(hash string, op Operation, status TransactionStatus) string {
		return strings.Replace(txJSON("tx9", op, status, ""), `"transaction_hash": null`, `"transaction_hash": "`+hash+`"`, 1)
	}
	refused := func(code string) muxReply {
		if code == "" { // the report-by-hash refusal has no body
			return muxReply{status: http.StatusUnprocessableEntity}
		}
		return muxReply{status: http.StatusUnprocessableEntity, body: `{"code": "` + code + `"}`}
	}
	tests := []struct {
		name   string
		byHash bool
		answer muxReply
		read   string // the transaction the payment carries; "" for no read expected
		ok     bool
	}{
		{"already known, ours", false, refused("already_known"), withHash(strings.ToUpper(ours[:2])+ours[2:], OpVoid, TxSubmitted), true},
		{"nonce too low, ours confirmed", false, refused("nonce_too_low"), withHash(ours, OpVoid, TxConfirmed), true},
		{"not overwritable, ours", false, refused("transaction_not_overwritable"), withHash(ours, OpVoid, TxSubmitted), true},
		{"already known, another hash", false, refused("already_known"), withHash(fixtureHash, OpVoid, TxSubmitted), false},
		{"our hash on another step", false, refused("already_known"), withHash(ours, OpCapture, TxSubmitted), false},
		{"a report of a confirmed row", true, refused(""), withHash(fixtureHash, OpVoid, TxConfirmed), true},
		{"a report refused as foreign", true, refused("foreign_transaction_hash"), withHash(ours, OpVoid, TxConfirmed), false},
		{"a 400 is not reconciled", false, muxReply{status: http.StatusBadRequest}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, c := newMuxServer(t)
			route := "POST /payments/p/void"
			if tt.byHash {
				route += "/submitted"
			}
			srv.on(route, tt.answer)
			if tt.read != "" {
				srv.on("GET /payments/p", muxOK(strings.Replace(paymentDetailJSON(StatusAuthorized, "", tt.read), `"id": "`+fixturePaymentID+`"`, `"id": "p"`, 1)))
			}
			var tx *Transaction
			var err error
			if tt.byHash {
				tx, err = c.Payments.SubmitByHash(context.Background(), "p", OpVoid, PaymentSubmitByHashParams{TransactionHash: fixtureHash})
			} else {
				tx, err = c.Payments.Submit(context.Background(), "p", OpVoid, PaymentSubmitParams{SignedTransaction: fixtureSignedTx})
			}
			if tt.ok {
				if err != nil || tx.ID != "tx9" || tx.Response == nil {
					t.Fatalf("reconciled submit = %+v, %v; want the transaction carrying our hash", tx, err)
				}
				return
			}
			var apiErr *APIError
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tt.answer.status {
				t.Fatalf("err = %v, want the refusal (%d)", err, tt.answer.status)
			}
			if got := srv.routes(); tt.read == "" && len(got) != 1 {
				t.Errorf("a refusal that cannot mean done read the payment: %v", got)
			}
		})
	}
}

// checkExpected runs the rows of verify.ArtOrder on p with one
// expectation, as a flow's bind does, with toBase given.
func checkExpected(p *PaymentDetail, id string, e Expectation, toBase func(string) (string, error)) error {
	return fromVerify(verify.CheckOrder(paymentOf(p), id, "", false, toBase, e.forCheck()))
}

func TestCheckExpected(t *testing.T) {
	e := Expectation{Rail0ID: strings.ToUpper(artRail0ID), ChainID: artChain, Mode: ModeAuthorize, Amount: "25.00",
		Token: artToken, Payer: fixturePayer, Payee: fixturePayee}
	base := func() *PaymentDetail {
		return &PaymentDetail{Payment: Payment{ID: "p1", Rail0ID: artRail0ID, Mode: ModeAuthorize, Amount: "25000000",
			Token: "0x" + strings.ToUpper(artToken[2:]), Payer: strings.ToLower(fixturePayer), Payee: fixturePayee}, ChainID: artChain}
	}
	toBase := func(amount string) (string, error) { return ToBaseUnits(amount, 6) }
	tests := []struct {
		name   string
		change func(p *PaymentDetail)
		field  string
	}{
		{"the same terms, whatever the case of the addresses and ids", nil, ""},
		{"rail0_id", func(p *PaymentDetail) { p.Rail0ID = fixtureReason }, "rail0_id"},
		{"rail0_id not hex", func(p *PaymentDetail) { p.Rail0ID = "nope" }, "rail0_id"},
		{"chain", func(p *PaymentDetail) { p.ChainID = 1 }, "chain_id"},
		{"mode", func(p *PaymentDetail) { p.Mode = ModeCharge }, "mode"},
		{"token", func(p *PaymentDetail) { p.Token = artOther }, "token"},
		{"payer", func(p *PaymentDetail) { p.Payer = artOther }, "payer"},
		{"payee", func(p *PaymentDetail) { p.Payee = "not an address" }, "payee"},
		{"amount", func(p *PaymentDetail) { p.Amount = "250000000" }, "amount"},
		{"amount not an integer", func(p *PaymentDetail) { p.Amount = "25.00" }, "amount"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := base()
			if tt.change != nil {
				tt.change(p)
			}
			err := checkExpected(p, "p1", e, toBase)
			var ae *ArtifactError
			switch {
			case tt.field == "" && err != nil:
				t.Errorf("checkExpected = %v, want no error", err)
			case tt.field != "" && (!errors.As(err, &ae) || ae.Field != tt.field || ae.PaymentID != "p1"):
				t.Errorf("checkExpected = %v, want an *ArtifactError on %s", err, tt.field)
			}
			// Only the fields set are compared.
			if err := checkExpected(p, "p1", Expectation{}, toBase); err != nil {
				t.Errorf("the empty expectation: %v", err)
			}
		})
	}
	// The amount is converted only once the token is known to match.
	p := base()
	p.Token = artOther
	called := false
	_ = checkExpected(p, "p1", e, func(string) (string, error) { called = true; return "", nil })
	if called {
		t.Error("the amount was converted with another token's decimals")
	}
}

// An expectation in the wrong form is a *ValidationError naming its field,
// before any request: a typo must not pass for an attack or for a check.
func TestExpectationIsValidated(t *testing.T) {
	t.Parallel()
	tests := []struct {
		field string
		e     Expectation
	}{
		{"expect.rail0_id", Expectation{Rail0ID: "0x1234"}},
		{"expect.chain_id", Expectation{ChainID: -1}},
		{"expect.mode", Expectation{Mode: "escrow"}},
		{"expect.token", Expectation{Token: "usdc"}},
		{"expect.payer", Expectation{Payer: "0xzz"}},
		{"expect.payee", Expectation{Payee: artPayee + "00"}},
		{"expect.amount", Expectation{Amount: "1,000.00"}},
		{"expect.amount", Expectation{Amount: "0"}},
	}
	b := newBindGateway(t, ModeAuthorize, StatusUnsigned)
	c := b.client(b.payer)
	for _, fc := range flowCases {
		for _, tt := range tests {
			err := runWith(fc, artPayment, tt.e)(context.Background(), c)
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Field != tt.field {
				t.Errorf("%s with %+v: %v, want a *ValidationError on %s", fc.name, tt.e, err, tt.field)
			}
		}
	}
	if len(b.sent()) != 0 {
		t.Errorf("sent %v", b.sent())
	}
}

func TestCreatedLogIsBounded(t *testing.T) {
	var l createdLog
	for i := range maxCreated + 10 {
		l.remember(fmt.Sprint(i), Expectation{ChainID: int64(i)})
	}
	l.remember("20", Expectation{ChainID: 99, Rail0ID: artRail0ID}) // an update keeps its place
	if _, _, ok := l.lookup("9"); ok {
		t.Error("the oldest entries were kept beyond the bound")
	}
	if a, key, ok := l.lookup("20"); !ok || a.ChainID != 99 || key != "20" {
		t.Errorf("lookup(20) = %+v, %q, %v", a, key, ok)
	}
	if a, key, ok := l.lookup(strings.ToUpper(artRail0ID)); !ok || a.ChainID != 99 || key != "20" {
		t.Errorf("lookup by rail0_id = %+v, %q, %v", a, key, ok)
	}
	if _, _, ok := l.lookup(fixtureReason); ok {
		t.Error("another rail0_id found a record")
	}
	// A gateway that answered two Creates with one rail0_id: the rail0_id
	// names neither record (a flow given it needs Expect), not a random one.
	var twins createdLog
	twins.remember("a", Expectation{ChainID: 98, Rail0ID: artRail0ID})
	twins.remember("b", Expectation{ChainID: 99, Rail0ID: artRail0ID})
	if a, key, ok := twins.lookup(artRail0ID); ok {
		t.Errorf("a rail0_id of two records found %+v under %q", a, key)
	}
	if a, key, ok := twins.lookup("b"); !ok || a.ChainID != 99 || key != "b" {
		t.Errorf("lookup(b) = %+v, %q, %v", a, key, ok)
	}
	l.forget("20")
	if _, _, ok := l.lookup("20"); ok || len(l.order) != maxCreated-1 || len(l.m) != maxCreated-1 {
		t.Errorf("after forget: %d ids in order, %d remembered", len(l.order), len(l.m))
	}
	l.remember("new", Expectation{})
	if _, _, ok := l.lookup("10"); !ok {
		t.Error("an entry was evicted while there was room")
	}
}

func TestUnboundRule(t *testing.T) {
	order := Expectation{ChainID: 84532, Mode: ModeAuthorize, Token: artToken, Payee: "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2", Amount: "25.00"}
	partial := order
	partial.Amount = ""
	rail0ID := "0x" + strings.Repeat("9f", 32)
	for _, tt := range []struct {
		name      string
		op        Operation
		asked     bool
		byRail0ID bool
		e         Expectation
		unbound   bool
	}{
		{"payer signature, nothing", "", false, false, Expectation{}, true},
		{"payer signature, the Create's record", "", true, false, Expectation{}, false},
		{"payer signature, the whole order", "", false, false, order, false},
		{"payer signature, the order but its amount", "", false, false, partial, true},
		{"payer signature, a payer alone", "", false, false, Expectation{Payer: order.Payee}, true},
		{"payer signature, named by rail0_id: the chain does not bind a signature", "", false, true, Expectation{}, true},
		{"refund, nothing", OpRefund, false, false, Expectation{}, true},
		{"refund, the payer", OpRefund, false, false, Expectation{Payer: order.Payee}, false},
		{"refund, the rail0_id", OpRefund, false, false, Expectation{Rail0ID: rail0ID}, false},
		{"refund, named by rail0_id", OpRefund, false, true, Expectation{}, false},
		{"refund, the Create's record", OpRefund, true, false, Expectation{}, false},
		{"refund, an amount alone", OpRefund, false, false, Expectation{Amount: "25.00"}, true},
		{"capture, nothing: a capture pays the caller", OpCapture, false, false, Expectation{}, false},
		{"void, nothing", OpVoid, false, false, Expectation{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.unbound, unbound(tt.op, tt.asked, tt.byRail0ID, tt.e))
		})
	}
}

// The low-level path binds as the flows do: the caller's Intent.Expect and
// this client's record of the Create are checked against the payment, the
// payer's signature and a refund need one of them (ErrUnbound), and an
// Intent field the operation does not use is refused rather than ignored.
// Nothing is sent either way.
func TestVerifyBindsLikeTheFlows(t *testing.T) {
	ctx := context.Background()
	g := newArtGateway(t, ModeAuthorize, StatusPartiallyCaptured)
	p := g.payment
	c := g.client(g.payee)
	stranger := evmtest.NewKey("stranger").Address()
	payerPayload := g.payloadJSON(Intent{})
	refundPayload := g.payloadJSON(Intent{Operation: OpRefund, Amount: "4000000"})
	capture := mustJSON(t, g.txFields(OpCapture, PaymentPrepareParams{Amount: "1.00"}))
	sig := "0x" + strings.Repeat("11", 64) + "1b"
	payload := func(in Intent, doc []byte) func() error {
		return func() error { _, err := c.Payments.VerifyPayload(ctx, p, in, doc); return err }
	}
	tx := func(in Intent, unsigned string) func() error {
		return func() error { _, err := c.Payments.VerifyTransaction(ctx, p, in, unsigned); return err }
	}
	wrongAmount := artOrder(p.Mode)
	wrongAmount.Amount = "250.00"
	for _, tt := range []struct {
		name string
		call func() error
		// want is ErrUnbound, ErrArtifactMismatch (field names the
		// payment's field), a *ValidationError on field, or nil.
		want  error
		field string
	}{
		{"payer signature, nothing binds it", payload(Intent{}, payerPayload), ErrUnbound, ""},
		{"payer signature, the order stated", payload(Intent{Expect: artOrder(p.Mode)}, payerPayload), nil, ""},
		{"payer signature, another amount ordered", payload(Intent{Expect: wrongAmount}, payerPayload), ErrArtifactMismatch, "amount"},
		{"payer signature, an Amount in the Intent", payload(Intent{Amount: "25.00", Expect: artOrder(p.Mode)}, payerPayload), &ValidationError{}, "amount"},
		{"refund, nothing binds it", payload(Intent{Operation: OpRefund, Amount: "4.00"}, refundPayload), ErrUnbound, ""},
		{"refund, the payer", payload(Intent{Operation: OpRefund, Amount: "4.00", Expect: Expectation{Payer: g.payer.Address()}}, refundPayload), nil, ""},
		{"refund, another payer", payload(Intent{Operation: OpRefund, Amount: "4.00", Expect: Expectation{Payer: stranger}}, refundPayload), ErrArtifactMismatch, "payer"},
		{"refund, another rail0_id", payload(Intent{Operation: OpRefund, Amount: "4.00", Expect: Expectation{Rail0ID: "0x" + strings.Repeat("ab", 32)}}, refundPayload), ErrArtifactMismatch, "rail0_id"},
		{"refund, a Signature in the Intent of the payload", payload(Intent{Operation: OpRefund, Amount: "4.00", Signature: sig, Expect: Expectation{Payer: g.payer.Address()}}, refundPayload), &ValidationError{}, "signature"},
		{"refund transaction, nothing binds it", tx(Intent{Operation: OpRefund, Amount: "4.00", Signature: sig}, "{}"), ErrUnbound, ""},
		{"refund transaction, another payer", tx(Intent{Operation: OpRefund, Amount: "4.00", Signature: sig, Expect: Expectation{Payer: stranger}}, "{}"), ErrArtifactMismatch, "payer"},
		{"capture, no expectation", tx(Intent{Operation: OpCapture, Amount: "1.00"}, capture), nil, ""},
		{"capture, the order stated", tx(Intent{Operation: OpCapture, Amount: "1.00", Expect: artOrder(p.Mode)}, capture), nil, ""},
		{"capture, another payee", tx(Intent{Operation: OpCapture, Amount: "1.00", Expect: Expectation{Payee: stranger}}, capture), ErrArtifactMismatch, "payee"},
		{"capture, a Reason", tx(Intent{Operation: OpCapture, Amount: "1.00", Reason: "0x" + strings.Repeat("00", 32)}, capture), &ValidationError{}, "reason"},
		{"capture, a Signature", tx(Intent{Operation: OpCapture, Amount: "1.00", Signature: sig}, capture), &ValidationError{}, "signature"},
		{"void, an Amount", tx(Intent{Operation: OpVoid, Amount: "1.00"}, capture), &ValidationError{}, "amount"},
		{"dispute, an Amount", tx(Intent{Operation: OpDispute, Amount: "1.00"}, capture), &ValidationError{}, "amount"},
		{"a malformed expectation", tx(Intent{Operation: OpCapture, Amount: "1.00", Expect: Expectation{Payer: "me"}}, capture), &ValidationError{}, "expect.payer"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := g.payee.Signed.Load()
			err := tt.call()
			var ve *ValidationError
			var ae *ArtifactError
			switch want := tt.want.(type) {
			case nil:
				assert.NoError(t, err)
			case *ValidationError:
				if assert.ErrorAs(t, err, &ve) {
					assert.Equal(t, tt.field, ve.Field, err.Error())
				}
			default:
				assert.ErrorIs(t, err, want)
				if errors.Is(want, ErrArtifactMismatch) && assert.ErrorAs(t, err, &ae) {
					assert.Equal(t, "payment", ae.Artifact)
					assert.Equal(t, tt.field, ae.Field, err.Error())
				}
			}
			assert.Equal(t, before, g.payee.Signed.Load(), "nothing is signed")
		})
	}
	assert.Zero(t, g.paymentReads+g.prepares, "the checks send nothing")
}
