package rail0

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"
)

// The expiries the payer signs are bounded from the local clock, by default
// and by the caller's option and expectation, in PayerSign and in
// VerifyPayload alike: a gateway that set authorization_expiry to 2^48-1
// (the escrow never releasable) or refund_expiry to the creation (no refund
// ever), config_hash and payload consistent, got them signed. A gateway's
// Date header, which the client learns its clock from, moves no bound.
func TestPayerSignsBoundedExpiries(t *testing.T) {
	created := time.Date(2026, 9, 14, 10, 15, 0, 0, time.UTC) // the local clock (atArtCreation)
	at := func(d time.Duration) UnixTime { return UnixTime(created.Add(d).Unix()) }
	const day = 24 * time.Hour
	for _, tt := range []struct {
		name         string
		auth, refund UnixTime
		opts         []Option
		expect       func(e *Expectation)
		dateAhead    time.Duration // the gateway's Date, ahead of the local clock
		field        string        // of the *ArtifactError on the payment; "" when signed
	}{
		{"rail0test's windows: 7 and 30 days", at(7 * day), at(30 * day), nil, nil, 0, ""},
		{"at the default bounds", at(30 * day), at(365 * day), nil, nil, 0, ""},
		{"an authorization that never expires", 1<<48 - 1, 1<<48 - 1, nil, nil, 0, "authorization_expiry"},
		{"an authorization of 31 days", at(31 * day), at(60 * day), nil, nil, 0, "authorization_expiry"},
		{"a refund window closed at creation", at(0), at(0), nil, nil, 0, "refund_expiry"},
		{"a refund window of 12 hours", at(0), at(12 * time.Hour), nil, nil, 0, "refund_expiry"},
		{"a refund window of two years", at(7 * day), at(730 * day), nil, nil, 0, "refund_expiry"},
		{"wider bounds by option", at(60 * day), at(730 * day),
			[]Option{WithExpiryBounds(ExpiryBounds{MaxAuthorization: 90 * day, MaxRefund: 3 * 365 * day})}, nil, 0, ""},
		{"a tighter bound by option", at(7 * day), at(30 * day),
			[]Option{WithExpiryBounds(ExpiryBounds{MaxAuthorization: 3 * day})}, nil, 0, "authorization_expiry"},
		{"the order's latest authorization expiry", at(7 * day), at(30 * day), nil,
			func(e *Expectation) { e.LatestAuthorizationExpiry = created.Add(3 * day) }, 0, "authorization_expiry"},
		{"the order's earliest refund expiry", at(7 * day), at(30 * day), nil,
			func(e *Expectation) { e.EarliestRefundExpiry = created.Add(60 * day) }, 0, "refund_expiry"},
		{"the order's windows met", at(7 * day), at(30 * day), nil, func(e *Expectation) {
			e.LatestAuthorizationExpiry, e.EarliestRefundExpiry = created.Add(7*day), created.Add(30*day)
		}, 0, ""},
		{"a gateway's Date 23 hours ahead moves no bound", at(30*day + 12*time.Hour), at(60 * day), nil, nil, 23 * time.Hour, "authorization_expiry"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			g := newArtGateway(t, ModeAuthorize, StatusUnsigned)
			g.rewrite(func(p *PaymentDetail) { p.AuthorizationExpiry, p.RefundExpiry = tt.auth, tt.refund })
			payload := g.payloadJSON(Intent{})
			g.mu.Lock()
			g.payment.SigningPayload = payload
			g.mu.Unlock()
			var local func() time.Time
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.dateAhead != 0 {
					w.Header().Set("Date", local().Add(tt.dateAhead).UTC().Format(http.TimeFormat))
				}
				g.serve(w, r)
			}))
			t.Cleanup(srv.Close)
			c, err := NewClient(srv.URL, append([]Option{WithToken("t"), WithSigner(g.payer), artPins(), atArtCreation()}, tt.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			local = c.now
			if tt.dateAhead != 0 {
				// Two answers that agree: the client believes the Date.
				for range 2 {
					if _, err := c.Payments.Get(ctx, artPayment); err != nil {
						t.Fatal(err)
					}
				}
				if off := c.clock.offset(); off < 22*time.Hour {
					t.Fatalf("the client did not learn the gateway's clock: offset %v", off)
				}
			}
			expect := artOrder(ModeAuthorize)
			if tt.expect != nil {
				tt.expect(&expect)
			}
			refused := func(what string, err error) {
				t.Helper()
				var ae *ArtifactError
				switch {
				case tt.field == "" && err != nil:
					t.Fatalf("%s: %v", what, err)
				case tt.field != "" && (!errors.As(err, &ae) || ae.Artifact != "payment" || ae.Field != tt.field):
					t.Fatalf("%s: %v, want an *ArtifactError on the payment's %s", what, err, tt.field)
				}
			}
			p, err := c.Payments.Get(ctx, artPayment)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Payments.VerifyPayload(ctx, p, Intent{Expect: expect}, p.SigningPayload)
			refused("VerifyPayload", err)
			_, err = c.Payments.PayerSign(ctx, artPayment, PaymentPayerSignParams{Expect: expect})
			refused("PayerSign", err)
			if signed := g.payer.Signed.Load(); (signed == 0) != (tt.field != "") {
				t.Fatalf("the payer signed %d digests", signed)
			}
		})
	}
}

// Issue 27 item 4: a flow exposes every request's record, not only its
// last. The value a flow returns carries the transcript of each call it
// made, in order (Response.Calls, the last being Response.Call), and a
// flow that fails carries them in its FlowError, the failed call last.
func TestFlowResponseCarriesEveryCall(t *testing.T) {
	ctx := context.Background()
	operations := func(calls []*Call) []string {
		var ops []string
		for _, c := range calls {
			ops = append(ops, c.Operation)
		}
		return ops
	}
	g := newArtGateway(t, ModeAuthorize, StatusPartiallyCaptured)
	c := g.client(g.payee)
	job := c.With(WithLabel("job"))
	tx, err := job.Payments.Capture(ctx, artPayment, PaymentCaptureParams{Amount: "1.00"})
	if err != nil {
		t.Fatal(err)
	}
	resp := tx.Response
	if got, want := operations(resp.Calls), []string{"getPayment", "preparePaymentOperation", "submitPaymentOperation"}; !slices.Equal(got, want) {
		t.Fatalf("Capture's calls = %v, want %v", got, want)
	}
	if resp.Calls[len(resp.Calls)-1] != resp.Call {
		t.Error("the last call is not Response.Call")
	}
	for _, call := range resp.Calls {
		if call.Label != "job" || call.Outcome != OutcomeOK {
			t.Errorf("call %d: label %q, outcome %s", call.ID, call.Label, call.Outcome)
		}
	}
	// A second step knows the terms: a prepare and a submit, its own calls
	// only.
	tx, err = job.Payments.Capture(ctx, artPayment, PaymentCaptureParams{Amount: "2.00"})
	if err != nil {
		t.Fatal(err)
	}
	if got := operations(tx.Response.Calls); len(got) != 2 {
		t.Errorf("the second capture's calls = %v", got)
	}
	g.setRefundable("13000000")
	tx, err = job.Payments.Refund(ctx, artPayment, PaymentRefundParams{Amount: "4.00", Expect: Expectation{Payer: artPayer}})
	if err != nil {
		t.Fatal(err)
	}
	if got := operations(tx.Response.Calls); len(got) != 3 {
		t.Errorf("Refund's calls = %v, want both prepares and the submit", got)
	}
	// PayerSign: the read and the signature.
	u := newArtGateway(t, ModeAuthorize, StatusUnsigned)
	signed, err := u.client(u.payer).Payments.PayerSign(ctx, artPayment, PaymentPayerSignParams{Expect: artOrder(ModeAuthorize)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := operations(signed.Response.Calls), []string{"getPayment", "signPayment"}; !slices.Equal(got, want) {
		t.Errorf("PayerSign's calls = %v, want %v", got, want)
	}
	// A single call carries no list.
	p, err := job.Payments.Get(ctx, artPayment)
	if err != nil {
		t.Fatal(err)
	}
	if p.Response.Calls != nil {
		t.Errorf("Get's Calls = %v", p.Response.Calls)
	}

	// A flow that fails: the gateway prepared a transaction to another
	// chain, nothing was signed, and the error holds both calls.
	g2 := newArtGateway(t, ModeAuthorize, StatusPartiallyCaptured)
	tamperTx(func(tx map[string]any) { tx["chain_id"] = 1 })(g2)
	_, err = g2.client(g2.payee).Payments.Capture(ctx, artPayment, PaymentCaptureParams{Amount: "1.00"})
	var fe *FlowError
	if !errors.As(err, &fe) || fe.Step != StepVerify {
		t.Fatalf("err = %v, want a FlowError at verify", err)
	}
	if got, want := operations(fe.Calls), []string{"getPayment", "preparePaymentOperation"}; !slices.Equal(got, want) {
		t.Errorf("FlowError.Calls = %v, want %v", got, want)
	}
}
