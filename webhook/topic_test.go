package webhook

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rail0/rail0-go"
)

// The X-Rail0-Topic header is not covered by the signature: a delivery
// whose signed body says payments.created is never routed or decoded as a
// refund, whatever the header says, through a real server with a receiver
// that routes on Event.Topic.
func TestTopicComesOnlyFromTheSignedBody(t *testing.T) {
	const ts = int64(1789381370)
	var mu sync.Mutex
	routed := map[rail0.WebhookTopic][]string{}
	h := NewHandler(readmeSecret, func(_ context.Context, e Event) error {
		mu.Lock()
		defer mu.Unlock()
		routed[e.Topic] = append(routed[e.Topic], e.ID)
		return nil
	})
	h.Verifier.Now = clockAt(ts)
	srv := httptest.NewServer(h)
	defer srv.Close()

	post := func(body, header string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Rail0-Topic", header)
		req.Header.Set(TimestampHeader, strconv.FormatInt(ts, 10))
		req.Header.Set(SignatureHeader, Sign([]byte(body), ts, readmeSecret))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct{ body, header string }{
		{`{"id":"e1","topic":"payments.created","payment":{"id":"p1"}}`, "payments.refunded"},
		{`{"id":"e2","topic":"payments.created"}`, "payments.created"},
		{`{"id":"e3","topic":"payments.created"}`, ""},
		{`{"id":"e4"}`, "payments.refunded"},              // no topic in the body: none from the header either
		{`{"id":"e5","topic":7}`, "payments.refunded"},    // a topic of the wrong shape is dropped, not replaced
		{`{"id":"e6","topic":null}`, "payments.refunded"}, //
	} {
		if code := post(c.body, c.header); code != http.StatusNoContent {
			t.Fatalf("%s with header %q answered %d", c.body, c.header, code)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if got := routed[rail0.TopicPaymentsRefunded]; len(got) != 0 {
		t.Errorf("routed as refunds: %v", got)
	}
	if got := routed[rail0.TopicPaymentsCreated]; strings.Join(got, ",") != "e1,e2,e3" {
		t.Errorf("routed as created: %v, want e1,e2,e3", got)
	}
	if got := routed[""]; strings.Join(got, ",") != "e4,e5,e6" {
		t.Errorf("without a topic: %v, want e4,e5,e6", got)
	}
}

// VerifyEvent, the path for frameworks other than net/http, takes no
// header at all, so it has nothing to fall back to.
func TestVerifyEventReadsTheTopicFromTheBody(t *testing.T) {
	body := readmeBody(t)
	v := withClock(NewVerifier(readmeSecret), clockAt(1789381370))
	e, err := v.VerifyEvent(body, readmeSignature, readmeTimestamp)
	if err != nil {
		t.Fatal(err)
	}
	if e.Topic != rail0.TopicPaymentsCaptured || e.ID != "0191f0aa-7c8d-7e9f-8a0b-1c2d3e4f5a6b" || e.Subscription != (Subscription{}) {
		t.Errorf("event = %s %s %+v", e.ID, e.Topic, e.Subscription)
	}
}

// An event with two readings is refused, not decoded one way: whoever holds
// the secret of the payments.created subscription (what WithSubscription
// exists for) signs a body whose "topic" says payments.refunded beside a
// "Topic" that says payments.created. encoding/json would take the second
// and route it as created, while every exact-key reader of Event.Raw
// (JSON.parse, Python's json) reads a refund. Through a Handler on a real
// server, the delivery is refused with 400 and the receiver never runs.
func TestEventWithTwoReadingsIsRefused(t *testing.T) {
	const ts = int64(1789381370)
	const createdSecret, refundedSecret = "secret-of-created", "secret-of-refunded"
	v := Verifier{Now: clockAt(ts)}.
		WithSubscription(Subscription{ID: "w1", Topic: "payments.created"}, createdSecret).
		WithSubscription(Subscription{ID: "w2", Topic: "payments.refunded"}, refundedSecret)
	body := []byte(`{"id":"evt-1","topic":"payments.refunded","payment":{"id":"p1","status":"refunded"},"Topic":"payments.created"}`)
	sig := Sign(body, ts, createdSecret)
	if ev, err := v.VerifyEvent(body, sig, strconv.FormatInt(ts, 10)); !errors.Is(err, ErrMalformedEvent) {
		t.Fatalf("VerifyEvent = %q for %q, %v; want ErrMalformedEvent", ev.Topic, ev.Subscription.ID, err)
	}

	received := 0
	h := &Handler{Verifier: v, Handle: func(context.Context, Event) error { received++; return nil }}
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(TimestampHeader, strconv.FormatInt(ts, 10))
	req.Header.Set(SignatureHeader, sig)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || received != 0 {
		t.Fatalf("the handler answered %d and received %d events, want 400 and none", resp.StatusCode, received)
	}
}
