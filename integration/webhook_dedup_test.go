package integration_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0test"
	"github.com/rail0/rail0-go/signing"
	"github.com/rail0/rail0-go/webhook"
)

// statusRecorder passes a delivery to a Handler and sends the status it
// answered on codes.
type statusRecorder struct {
	h     http.Handler
	codes chan int
}

func (s statusRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &statusWriter{ResponseWriter: w, code: http.StatusOK}
	s.h.ServeHTTP(rec, r)
	s.codes <- rec.code
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// Issue 29 item 10, end to end against rail0test: a Handler with a
// MemoryDeduplicator. The first delivery of an event fails in Handle
// (500), so the gateway retries it and the retry runs Handle; then the
// merchant redelivers the event (same id, new timestamp and signature),
// which is answered 204 without reaching Handle. Without the
// deduplicator, Handle saw the event once per delivery.
func TestWebhookRedeliveryReachesHandleOnce(t *testing.T) {
	ctx := context.Background()
	gw := rail0test.NewServer(rail0test.WithoutRateLimits())
	defer gw.Close()
	payer, err := signing.NewPrivateKeySigner(gw.Buyer.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	merchant, buyer := signedIn(ctx, gw, gw.Merchant), signedIn(ctx, gw, gw.Buyer, rail0.WithSigner(payer))

	var mu sync.Mutex
	runs := map[string]int{} // Handle's runs per event id
	codes := make(chan int, 16)
	receiver := &lockedHandler{}
	hookSrv := httptest.NewServer(statusRecorder{receiver, codes})
	defer hookSrv.Close()
	hook, err := merchant.Webhooks.Create(ctx, rail0.WebhookCreateParams{Name: "orders", CallbackURL: hookSrv.URL + "/hooks", Topic: rail0.TopicPaymentsCreated})
	if err != nil {
		t.Fatal(err)
	}
	receiver.set(&webhook.Handler{Verifier: webhook.NewVerifier(hook.SharedSecret()),
		Deduplicator: webhook.NewMemoryDeduplicator(time.Hour, 1000),
		Handle: func(_ context.Context, e webhook.Event) error {
			mu.Lock()
			defer mu.Unlock()
			runs[e.ID]++
			if runs[e.ID] == 1 {
				return errors.New("database unavailable")
			}
			return nil
		}})
	answered := func(want int) {
		t.Helper()
		select {
		case code := <-codes:
			if code != want {
				t.Fatalf("a delivery answered %d, want %d", code, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no delivery answered within 5 s, want %d", want)
		}
	}

	p, err := buyer.Payments.Create(ctx, rail0.PaymentCreateParams{ChainID: gw.ChainID, Mode: rail0.ModeAuthorize,
		Amount: "1.00", Token: gw.Token, Payer: gw.Buyer.Address, Payee: gw.Merchant.Address})
	if err != nil {
		t.Fatal(err)
	}
	answered(http.StatusInternalServerError) // Handle failed: the claim is released
	answered(http.StatusNoContent)           // the gateway's retry ran Handle

	// The gateway logs the attempt after its answer arrived.
	var delivered *rail0.EventCallback
	for deadline := time.Now().Add(5 * time.Second); delivered == nil; time.Sleep(5 * time.Millisecond) {
		page, err := merchant.Webhooks.ListEventCallbacks(ctx, hook.ID, rail0.WebhookListEventCallbacksParams{
			Status: rail0.CallbackDelivered, PaymentID: p.ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) > 0 {
			delivered = &page.Items[0]
		} else if time.Now().After(deadline) {
			t.Fatal("the gateway logged no delivered callback within 5 s")
		}
	}
	if _, err := merchant.Webhooks.Redeliver(ctx, hook.ID, delivered.ID); err != nil {
		t.Fatal(err)
	}
	answered(http.StatusNoContent) // the redelivery, dropped

	mu.Lock()
	defer mu.Unlock()
	if len(runs) != 1 {
		t.Fatalf("Handle saw events %v, want one", runs)
	}
	for id, n := range runs {
		if n != 2 {
			t.Fatalf("Handle ran %d times for %s, want 2 (the failure and its retry), not the redelivery", n, id)
		}
	}
}
