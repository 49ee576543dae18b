package rail0test

import (
	"context"
	"errors"
	"testing"
	"time"

	rail0 "github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/signing"
)

func TestClientHelperTalksToTheServer(t *testing.T) {
	clock := NewManualClock(epoch)
	srv := NewServer(WithClock(clock), WithRateLimits(Limit{Requests: 100}, Limit{Requests: 2}))
	defer srv.Close()
	ctx := context.Background()
	tok, err := srv.Login(ctx, srv.Buyer.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := srv.Client(rail0.WithToken(tok))
	if err != nil {
		t.Fatal(err)
	}
	params := rail0.PaymentCreateParams{ChainID: srv.ChainID, Mode: "authorize", Amount: "25.00", Token: srv.Token,
		Payer: srv.Buyer.Address, Payee: srv.Merchant.Address, IdempotencyKey: "sdk-1"}
	p, err := c.Payments.Create(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != "unsigned" || p.Amount != "25000000" || len(p.SigningPayload) == 0 || p.Replayed {
		t.Fatalf("created = %+v", p)
	}
	again, err := c.Payments.Create(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || again.ID != p.ID {
		t.Fatalf("replay = %+v", again)
	}
	// The third session request in the window is throttled: the SDK sees a typed
	// 429 carrying the whole period.
	_, err = c.Payments.Get(ctx, p.ID)
	var apiErr *rail0.APIError
	if !errors.Is(err, rail0.ErrRateLimited) || !errors.As(err, &apiErr) || apiErr.RetryAfter != 60*time.Second || apiErr.RequestID == "" {
		t.Fatalf("third request: %v", err)
	}
	if n := srv.Ledger.Count(routeCreatePayment, "sdk-1"); n != 2 {
		t.Fatalf("create ran %d times, want 2", n)
	}
	clock.Advance(time.Minute)
	got, err := c.Payments.Get(ctx, p.ID)
	if err != nil || got.ID != p.ID {
		t.Fatalf("Get after the window: %+v, %v", got, err)
	}
}

// TestSDKLoginAgainstServer signs in through the SDK's own SIWE code: its
// message layout, domain and URI defaults must be the ones this server accepts.
func TestSDKLoginAgainstServer(t *testing.T) {
	srv := NewServer(WithoutRateLimits())
	defer srv.Close()
	ctx := context.Background()
	c, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	for _, party := range []Party{srv.Merchant, srv.Buyer} {
		acc, err := signing.NewPrivateKeySigner(party.PrivateKey)
		if err != nil {
			t.Fatal(err)
		}
		sess, err := c.Auth.Login(ctx, acc, rail0.LoginParams{})
		if err != nil {
			t.Fatalf("%s: Login: %v", party.Name, err)
		}
		if sess.Address != party.Address || (sess.AccountID != nil) != (party.AccountID != "") {
			t.Fatalf("%s: session = %+v", party.Name, sess)
		}
	}
}
