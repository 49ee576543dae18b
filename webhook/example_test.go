package webhook_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/webhook"
)

// The README's delivery verifies with its shared secret. A fixed clock
// stands in for time.Now so the example is reproducible.
func ExampleVerifier_Verify() {
	body, err := os.ReadFile("testdata/readme_delivery.json") // the raw request body
	if err != nil {
		panic(err)
	}
	v := webhook.NewVerifier("example-shared-secret")
	v.Now = func() time.Time { return time.Unix(1789381370+30, 0) }
	err = v.Verify(body, "d7c3749a9cf1de2cfa67e2e3bd9ad39f0239233614a15de4c93588cb7c190109", "1789381370")
	fmt.Println("authentic:", err == nil)

	// The same delivery replayed an hour later is refused.
	v.Now = func() time.Time { return time.Unix(1789381370+3600, 0) }
	err = v.Verify(body, "d7c3749a9cf1de2cfa67e2e3bd9ad39f0239233614a15de4c93588cb7c190109", "1789381370")
	fmt.Println("replay refused:", errors.Is(err, webhook.ErrStale))
	// Output:
	// authentic: true
	// replay refused: true
}

// A Handler mounted on the callback URL verifies each delivery and passes
// the decoded event on; anything unverified is answered 401.
func ExampleHandler() {
	secret := "example-shared-secret"
	h := webhook.NewHandler(secret, func(ctx context.Context, e webhook.Event) error {
		fmt.Println("event", e.ID, e.Topic, "payment", e.Payment.ID, e.Payment.Status)
		return nil
	})
	mux := http.NewServeMux()
	mux.Handle("POST /hooks/rail0", h)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// Simulate the gateway's delivery, signed now.
	body := `{"id":"evt-1","topic":"payments.authorized","payment":{"id":"pay-1","status":"authorized"},"transaction":null}`
	ts := time.Now().Unix()
	send := func(signature string) {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/hooks/rail0", strings.NewReader(body))
		req.Header.Set(webhook.TimestampHeader, fmt.Sprint(ts))
		req.Header.Set(webhook.SignatureHeader, signature)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println("status", resp.StatusCode)
	}
	send(webhook.Sign([]byte(body), ts, secret))
	send(webhook.Sign([]byte(body), ts, "a guess"))
	// Output:
	// event evt-1 payments.authorized payment pay-1 authorized
	// status 204
	// status 401
}

// One callback URL serves two subscriptions, each with its own secret; the
// refund subscription's secret was just rotated, so both of its secrets are
// accepted for now. A delivery is accepted only for the topic of the
// subscription whose secret signed it, and says which subscription that is.
func ExampleVerifier_WithSubscription() {
	v := webhook.Verifier{}.
		WithSubscription(webhook.Subscription{ID: "wh-orders", Topic: rail0.TopicPaymentsCreated}, "orders-secret").
		WithSubscription(webhook.Subscription{ID: "wh-refunds", Topic: rail0.TopicPaymentsRefunded}, "refunds-secret-new", "refunds-secret-old")
	v.Now = func() time.Time { return time.Unix(1789381370, 0) }

	deliver := func(body, secret string) {
		e, err := v.VerifyEvent([]byte(body), webhook.Sign([]byte(body), 1789381370, secret), "1789381370")
		if err != nil {
			fmt.Println("refused:", errors.Is(err, webhook.ErrTopicMismatch))
			return
		}
		fmt.Println(e.ID, e.Topic, "for", e.Subscription.ID)
	}
	deliver(`{"id":"evt-1","topic":"payments.created"}`, "orders-secret")
	deliver(`{"id":"evt-2","topic":"payments.refunded"}`, "refunds-secret-old")
	deliver(`{"id":"evt-3","topic":"payments.refunded"}`, "orders-secret") // that secret vouches for orders only
	// Output:
	// evt-1 payments.created for wh-orders
	// evt-2 payments.refunded for wh-refunds
	// refused: true
}

// A Handler with a Deduplicator runs Handle once per event id: the
// gateway's redelivery of a handled event (same id, new timestamp and
// signature) is answered 204 without reaching Handle.
func ExampleMemoryDeduplicator() {
	secret := "example-shared-secret"
	h := webhook.NewHandler(secret, func(ctx context.Context, e webhook.Event) error {
		fmt.Println("handling", e.ID)
		return nil
	})
	h.Deduplicator = webhook.NewMemoryDeduplicator(24*time.Hour, 100_000)

	body := `{"id":"evt-1","topic":"payments.captured"}`
	for range 2 {
		ts := time.Now().Unix()
		req := httptest.NewRequest(http.MethodPost, "/hooks/rail0", strings.NewReader(body))
		req.Header.Set(webhook.TimestampHeader, fmt.Sprint(ts))
		req.Header.Set(webhook.SignatureHeader, webhook.Sign([]byte(body), ts, secret))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Println("status", rec.Code)
	}
	// Output:
	// handling evt-1
	// status 204
	// status 204
}
