package integration_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0test"
	"github.com/rail0/rail0-go/signing"
	"github.com/rail0/rail0-go/webhook"
)

// Issue 29 item 2, as an attack: a proxy in front of rail0test writes a
// lying Date on a few answers to the merchant's client, which moves its
// ClockOffset by 20 h. The receiver's Handler is configured as the README
// says, with Verifier.ClockOffset set to the client's. A delivery captured
// 20 h earlier (the same event, signed then with the webhook's secret) is
// refused, and the gateway's fresh deliveries still verify, whether the
// lie is 20 h in the past or in the future. With the offset added to
// Verifier.Now, as the README advised, the old delivery was accepted (a
// past Date) or every fresh one refused (a future Date).
func TestLyingDateCannotReopenTheWebhookReplayWindow(t *testing.T) {
	ctx := context.Background()
	gw := rail0test.NewServer(rail0test.WithoutRateLimits())
	defer gw.Close()

	var lie atomic.Int64 // the shift the proxy writes into Date; 0: honest
	proxy := newProxy(t, gw, proxyHooks{out: func(resp *http.Response) error {
		if d := time.Duration(lie.Load()); d != 0 {
			resp.Header.Set("Date", time.Now().Add(d).UTC().Format(http.TimeFormat))
		}
		return nil
	}})
	key, err := signing.NewPrivateKeySigner(gw.Merchant.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	merchant, err := rail0.NewClient(proxy.URL, gw.Pins(), rail0.WithSigner(key))
	if err != nil {
		t.Fatal(err)
	}
	payer, err := signing.NewPrivateKeySigner(gw.Buyer.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	buyer := signedIn(ctx, gw, gw.Buyer, rail0.WithSigner(payer))

	// The receiver, as the README configures it.
	events := make(chan webhook.Event, 8)
	var mu sync.Mutex
	var refused []error
	receiver := &lockedHandler{}
	hookSrv := httptest.NewServer(receiver)
	defer hookSrv.Close()
	hook, err := merchant.Webhooks.Create(ctx, rail0.WebhookCreateParams{Name: "orders", CallbackURL: hookSrv.URL + "/hooks", Topic: rail0.TopicPaymentsCreated})
	if err != nil {
		t.Fatal(err)
	}
	v := webhook.NewVerifier(hook.SharedSecret())
	v.ClockOffset = merchant.ClockOffset
	receiver.set(&webhook.Handler{Verifier: v,
		Handle: func(_ context.Context, e webhook.Event) error { events <- e; return nil },
		OnError: func(_ *http.Request, err error) {
			mu.Lock()
			refused = append(refused, err)
			mu.Unlock()
		}})

	// fresh has the buyer create a payment and waits for its delivery,
	// verified and handled.
	fresh := func(t *testing.T) webhook.Event {
		t.Helper()
		p, err := buyer.Payments.Create(ctx, rail0.PaymentCreateParams{ChainID: gw.ChainID, Mode: rail0.ModeAuthorize,
			Amount: "1.00", Token: gw.Token, Payer: gw.Buyer.Address, Payee: gw.Merchant.Address})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case e := <-events:
			if e.Payment == nil || e.Payment.ID != p.ID {
				t.Fatalf("handled %+v, want the delivery of %s", e, p.ID)
			}
			return e
		case <-time.After(5 * time.Second):
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("the fresh delivery was not handled within 5 s; refused: %v", refused)
		}
		return webhook.Event{}
	}
	// replay posts event's body signed 20 h ago, as captured then.
	replay := func(t *testing.T, e webhook.Event) int {
		t.Helper()
		then := time.Now().Add(-20 * time.Hour).Unix()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, hookSrv.URL+"/hooks", strings.NewReader(string(e.Raw)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(webhook.TimestampHeader, fmt.Sprint(then))
		req.Header.Set(webhook.SignatureHeader, webhook.Sign(e.Raw, then, hook.SharedSecret()))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}

	captured := fresh(t)
	for _, shift := range []time.Duration{-20 * time.Hour, 20 * time.Hour} {
		t.Run(fmt.Sprint("Date ", shift), func(t *testing.T) {
			lie.Store(int64(shift))
			for range 3 {
				if _, err := merchant.Health.Get(ctx); err != nil {
					t.Fatal(err)
				}
			}
			lie.Store(0)
			if got := merchant.ClockOffset(); (got - shift).Abs() > time.Minute {
				t.Fatalf("the lying Date moved ClockOffset to %v, want about %v: the attack did not take", got, shift)
			}
			mu.Lock()
			refused = nil
			mu.Unlock()
			if code := replay(t, captured); code != http.StatusUnauthorized {
				t.Fatalf("the delivery captured 20 h ago answered %d, want 401", code)
			}
			mu.Lock()
			if len(refused) != 1 || !errors.Is(refused[0], webhook.ErrStale) {
				t.Errorf("OnError got %v, want ErrStale", refused)
			}
			mu.Unlock()
			select {
			case e := <-events:
				t.Fatalf("the replay reached Handle: %s", e.ID)
			default:
			}
			fresh(t)
		})
	}
}
