package rail0test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// eventually polls cond for at most a second.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWebhookRetriesCircuitAndRedeliver(t *testing.T) {
	h := newHarness(t, WithWebhookRetry(3, time.Millisecond), WithCircuitThreshold(3))
	buyer, merchant := h.login(h.srv.Buyer), h.login(h.srv.Merchant)
	var status atomic.Int32
	status.Store(500)
	got := make(chan received, 16)
	rs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- received{header: r.Header.Clone(), body: b}
		w.WriteHeader(int(status.Load()))
	}))
	defer rs.Close()

	expect(t, h.call("POST", "/webhooks", merchant, map[string]string{"name": "x", "callback_url": "http://example.com/hook",
		"topic": "payments.created"}), http.StatusUnprocessableEntity, "invalid_param")
	expect(t, h.call("POST", "/webhooks", merchant, map[string]string{"name": "x", "callback_url": rs.URL,
		"topic": "payments.nope"}), http.StatusUnprocessableEntity, "invalid_param")
	expect(t, h.call("POST", "/webhooks", buyer, map[string]string{"name": "x", "callback_url": rs.URL,
		"topic": "payments.created"}), http.StatusForbidden, "account_required")
	hook := h.call("POST", "/webhooks", merchant, map[string]string{"name": "created", "callback_url": rs.URL, "topic": "payments.created"}).json(t)
	id, secret := hook["id"].(string), hook["shared_secret"].(string)

	pid := h.createPayment(buyer, "charge", "1", false)
	var first received
	for i := 0; i < 3; i++ { // three attempts, each signed
		first = waitDelivery(t, got)
		verifyDelivery(t, first, secret, "payments.created")
	}
	var event map[string]any
	if err := json.Unmarshal(first.body, &event); err != nil || event["topic"] != "payments.created" ||
		event["payment"].(map[string]any)["id"] != pid || event["transaction"] != nil {
		t.Fatalf("event = %s (%v)", first.body, err)
	}
	eventually(t, "three failed callbacks", func() bool {
		return len(h.call("GET", "/webhooks/"+id+"/event_callbacks?status=failed", merchant, nil).list(t)) == 3
	})
	wh := h.call("GET", "/webhooks/"+id, merchant, nil).json(t)
	if wh["circuit_state"] != "open" || wh["circuit_failure_count"] != float64(3) {
		t.Fatalf("webhook after failures = %v", wh)
	}
	if l := h.call("GET", "/webhooks?circuit_state=open", merchant, nil).list(t); len(l) != 1 {
		t.Fatalf("open webhooks = %v", l)
	}

	// An open circuit pauses deliveries: a new event is not sent, and a redeliver
	// is dropped silently.
	h.createPayment(buyer, "charge", "2", false)
	cbs := h.call("GET", "/webhooks/"+id+"/event_callbacks", merchant, nil).list(t)
	cbID := cbs[0]["id"].(string)
	expect(t, h.call("POST", "/webhooks/"+id+"/event_callbacks/"+cbID+"/redeliver", merchant, nil), http.StatusAccepted, "")
	select {
	case d := <-got:
		t.Fatalf("delivery through an open circuit: %s", d.body)
	case <-time.After(50 * time.Millisecond):
	}

	// Reset the circuit, fix the receiver, redeliver: same event id, fresh signature.
	status.Store(200)
	if wh := h.call("PUT", "/webhooks/"+id+"/reset_circuit", merchant, nil).json(t); wh["circuit_state"] != "closed" || wh["circuit_failure_count"] != float64(0) {
		t.Fatalf("after reset = %v", wh)
	}
	h.clock.Advance(time.Minute)
	expect(t, h.call("POST", "/webhooks/"+id+"/event_callbacks/"+cbID+"/redeliver", merchant, nil), http.StatusAccepted, "")
	re := waitDelivery(t, got)
	verifyDelivery(t, re, secret, "payments.created")
	if string(re.body) != string(first.body) || re.header.Get("X-Rail0-Timestamp") == first.header.Get("X-Rail0-Timestamp") {
		t.Fatalf("redelivery body or timestamp: %s / %s", re.body, re.header.Get("X-Rail0-Timestamp"))
	}
	eventually(t, "a delivered callback", func() bool {
		return len(h.call("GET", "/webhooks/"+id+"/event_callbacks?status=delivered", merchant, nil).list(t)) == 1
	})

	// Rotation returns a new secret once; deliveries use it.
	rot := h.call("PUT", "/webhooks/"+id+"/rotate_secret", merchant, nil).json(t)
	if rot["shared_secret"] == secret || rot["shared_secret"] == nil {
		t.Fatal("rotate_secret kept the secret")
	}
	h.createPayment(buyer, "charge", "3", false)
	verifyDelivery(t, waitDelivery(t, got), rot["shared_secret"].(string), "payments.created")

	// Disable, update, delete.
	if wh := h.call("PUT", "/webhooks/"+id+"/disable", merchant, nil).json(t); wh["active"] != false {
		t.Fatalf("disable = %v", wh)
	}
	if wh := h.call("PUT", "/webhooks/"+id+"/enable", merchant, nil).json(t); wh["active"] != true {
		t.Fatalf("enable = %v", wh)
	}
	if l := h.call("GET", "/webhooks?active=true&topic=payments.created", merchant, nil).list(t); len(l) != 1 {
		t.Fatalf("active webhooks = %v", l)
	}
	if wh := h.call("PATCH", "/webhooks/"+id, merchant, map[string]string{"name": "renamed"}).json(t); wh["name"] != "renamed" {
		t.Fatalf("patch = %v", wh)
	}
	other := h.login(stranger(t))
	expect(t, h.call("GET", "/webhooks/"+id, other, nil), http.StatusForbidden, "account_required")
	expect(t, h.call("DELETE", "/webhooks/"+id, merchant, nil), http.StatusNoContent, "")
	expect(t, h.call("GET", "/webhooks/"+id, merchant, nil), http.StatusNotFound, "not_found")
}

func TestCloseStopsDeliveriesInFlight(t *testing.T) {
	block := make(chan struct{})
	rs := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer rs.Close()
	defer close(block)
	clock := NewManualClock(epoch)
	srv := NewServer(WithClock(clock), WithoutRateLimits())
	h := &harness{t: t, srv: srv, clock: clock}
	merchant, buyer := h.login(srv.Merchant), h.login(srv.Buyer)
	res, _ := h.send("POST", "/webhooks", merchant, map[string]string{"name": "slow", "callback_url": rs.URL, "topic": "payments.created"})
	expect(t, res, http.StatusCreated, "")
	res, _ = h.send("POST", "/payments", buyer, map[string]any{"chain_id": srv.ChainID, "mode": "charge", "amount": "1",
		"token": srv.Token, "payer": srv.Buyer.Address, "payee": srv.Merchant.Address})
	expect(t, res, http.StatusCreated, "")
	done := make(chan struct{})
	go func() { srv.Close(); close(done) }()
	select {
	case <-done: // TestMain's goleak check proves nothing is left running
	case <-time.After(time.Second):
		t.Fatal("Close blocked on a delivery in flight")
	}
}
