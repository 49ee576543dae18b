package rail0test

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// ctl sends a control request; control routes are not in the contract, so the
// response is not validated against it.
func (h *harness) ctl(method, path string, body string) *result {
	h.t.Helper()
	req, err := http.NewRequestWithContext(h.t.Context(), method, h.srv.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	resp, err := h.srv.HTTPClient().Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return &result{status: resp.StatusCode, header: resp.Header, body: b}
}

func TestControlIsOffByDefault(t *testing.T) {
	h := newHarness(t)
	for _, p := range []string{"/_rail0test/clock", "/_rail0test/ledger"} {
		expect(t, h.ctl("GET", p, ""), http.StatusNotFound, "not_found")
	}
	expect(t, h.ctl("POST", "/_rail0test/reset", ""), http.StatusNotFound, "not_found")
}

func TestControlAdvancesTheClockForARelease(t *testing.T) {
	h := newHarness(t, WithControl(), WithPaymentWindows(time.Hour, 2*time.Hour))
	buyer, merchant := h.login(h.srv.Buyer), h.login(h.srv.Merchant)
	escrow := h.createPayment(buyer, "authorize", "10", true)
	h.step(merchant, h.srv.Merchant.Key(), escrow, "authorize", nil)
	expect(t, h.call("POST", "/payments/"+escrow+"/release/prepare", buyer, map[string]any{}), http.StatusUnprocessableEntity, "authorization_not_expired")

	before := h.srv.Clock.Now()
	res := h.ctl("POST", "/_rail0test/clock/advance?by=1h", "")
	expect(t, res, http.StatusOK, "")
	if got := h.srv.Clock.Now().Sub(before); got != time.Hour {
		t.Fatalf("the clock moved %v, want 1h", got)
	}
	now, err := time.Parse(time.RFC3339Nano, res.json(t)["now"].(string))
	if err != nil || !now.Equal(h.srv.Clock.Now()) {
		t.Fatalf("advance answered %s", res.body)
	}
	h.step(buyer, h.srv.Buyer.Key(), escrow, "release", map[string]any{})
	if p := h.call("GET", "/payments/"+escrow, buyer, nil).json(t); p["status"] != "released" {
		t.Fatalf("after release: %v", p["status"])
	}
	// A JSON body works too, and the clock reads back.
	expect(t, h.ctl("POST", "/_rail0test/clock/advance", `{"by":"90s"}`), http.StatusOK, "")
	got := h.ctl("GET", "/_rail0test/clock", "").json(t)["now"]
	if want := h.srv.Clock.Now().UTC().Format(time.RFC3339Nano); got != want {
		t.Fatalf("clock = %v, want %s", got, want)
	}
	for _, bad := range []string{"?by=-1h", "?by=soon", ""} {
		res := h.ctl("POST", "/_rail0test/clock/advance"+bad, "")
		if res.status != http.StatusBadRequest {
			t.Fatalf("advance%s: %d %s", bad, res.status, res.body)
		}
	}
}

func TestControlOffsetsASystemClock(t *testing.T) {
	srv := NewServer(WithControl(), WithoutRateLimits())
	defer srv.Close()
	h := &harness{t: t, srv: srv}
	expect(t, h.ctl("POST", "/_rail0test/clock/advance?by=240h", ""), http.StatusOK, "")
	if d := time.Until(srv.Clock.Now()); d < 239*time.Hour || d > 241*time.Hour {
		t.Fatalf("the server's clock is %v ahead, want 240h", d)
	}
	expect(t, h.ctl("POST", "/_rail0test/reset", ""), http.StatusOK, "")
	if d := time.Until(srv.Clock.Now()); d < -time.Minute || d > time.Minute {
		t.Fatalf("after reset the server's clock is %v off", d)
	}
}

func TestControlResetReturnsToTheInitialState(t *testing.T) {
	h := newHarness(t, WithControl(), WithFaults(Fault{Route: "GET /blockchains", Kind: FaultStatus, Status: 502, Every: 2}))
	chains := h.call("GET", "/blockchains", "", nil).body
	buyer := h.login(h.srv.Buyer)
	h.createPayment(buyer, "charge", "1", false)
	h.srv.Faults.Add(Fault{Route: "GET /tokens", Kind: FaultStatus})
	h.srv.SetHealth("error")
	h.clock.Advance(time.Hour)

	expect(t, h.ctl("POST", "/_rail0test/reset", ""), http.StatusOK, "")
	if !h.clock.Now().Equal(epoch) {
		t.Fatalf("clock after reset = %v, want %v", h.clock.Now(), epoch)
	}
	if n := len(h.srv.Ledger.Executions()); n != 0 {
		t.Fatalf("ledger after reset has %d executions", n)
	}
	expect(t, h.call("GET", "/payments", buyer, nil), http.StatusUnauthorized, "unauthorized") // a new JWT key
	expect(t, h.call("GET", "/tokens", "", nil), http.StatusOK, "")                            // the added fault is gone
	expect(t, h.call("GET", "/health", "", nil), http.StatusOK, "")
	// The WithFaults fault is back with its count at zero: the 1st call passes, the 2nd fails.
	if got := h.call("GET", "/blockchains", "", nil).body; string(got) != string(chains) {
		t.Fatalf("catalog changed across reset:\n%s\n%s", chains, got)
	}
	expect(t, h.call("GET", "/blockchains", "", nil), http.StatusBadGateway, "injected_fault")

	buyer = h.login(h.srv.Buyer)
	if l := h.call("GET", "/payments", buyer, nil).list(t); len(l) != 0 {
		t.Fatalf("payments after reset: %d", len(l))
	}
	// The demo account keeps its id, so the start-up record stays true.
	merchant := h.login(h.srv.Merchant)
	if l := h.call("GET", "/accounts/"+h.srv.Merchant.AccountID+"/wallets", merchant, nil).list(t); len(l) != 1 {
		t.Fatalf("the demo account lost its wallet: %d", len(l))
	}
}

func TestControlResetKeepsAFixedJWTSecret(t *testing.T) {
	h := newHarness(t, WithControl(), WithJWTSecret([]byte("fixed for the test")))
	buyer := h.login(h.srv.Buyer)
	h.srv.Reset()
	expect(t, h.call("GET", "/payments", buyer, nil), http.StatusOK, "")
}

func TestControlLedger(t *testing.T) {
	h := newHarness(t, WithControl())
	buyer := h.login(h.srv.Buyer)
	body := map[string]any{"chain_id": h.srv.ChainID, "mode": "charge", "amount": "1.00", "token": h.srv.Token,
		"payer": h.srv.Buyer.Address, "payee": h.srv.Merchant.Address}
	expect(t, h.call("POST", "/payments", buyer, body, withHeader("Idempotency-Key", "once")), http.StatusCreated, "")
	expect(t, h.call("POST", "/payments", buyer, body, withHeader("Idempotency-Key", "once")), http.StatusOK, "") // a replay
	h.ctl("GET", "/_rail0test/clock", "")                                                                         // control requests are not executions
	var list []map[string]any
	res := h.ctl("GET", "/_rail0test/ledger?route=POST+/payments&idempotency_key=once", "")
	if err := json.Unmarshal(res.body, &list); err != nil || res.status != http.StatusOK {
		t.Fatalf("ledger: %d %s", res.status, res.body)
	}
	if len(list) != 2 || list[0]["route"] != "POST /payments" || list[0]["status"] != float64(201) ||
		list[0]["idempotency_key"] != "once" || list[0]["request_id"] == "" || list[0]["payment_id"] != list[1]["payment_id"] {
		t.Fatalf("ledger = %s", res.body)
	}
	all := h.ctl("GET", "/_rail0test/ledger", "")
	if err := json.Unmarshal(all.body, &list); err != nil || len(list) != len(h.srv.Ledger.Executions()) {
		t.Fatalf("whole ledger: %s", all.body)
	}
	for _, e := range list {
		if strings.HasPrefix(e["path"].(string), "/_rail0test/") {
			t.Fatalf("a control request is in the ledger: %v", e)
		}
	}
	expect(t, h.ctl("GET", "/_rail0test/ledger?status=x", ""), http.StatusBadRequest, "invalid_param")
	if res := h.ctl("DELETE", "/_rail0test/ledger", ""); res.status != http.StatusNoContent || len(h.srv.Ledger.Executions()) != 0 {
		t.Fatalf("clear ledger: %d", res.status)
	}
	expect(t, h.ctl("GET", "/_rail0test/nothing", ""), http.StatusNotFound, "not_found")
}

func TestControlFaults(t *testing.T) {
	h := newHarness(t, WithControl())
	res := h.ctl("POST", "/_rail0test/faults", "path=/tokens,status=502,every=2\n")
	expect(t, res, http.StatusCreated, "")
	id := res.json(t)["id"].(float64)
	expect(t, h.call("GET", "/tokens", "", nil), http.StatusOK, "")
	expect(t, h.call("GET", "/tokens", "", nil), http.StatusBadGateway, "injected_fault")
	expect(t, h.call("GET", "/tokens", "", nil), http.StatusOK, "")
	if got := h.ctl("GET", "/_rail0test/faults/1", "").json(t); id != 1 || got["hits"] != float64(1) || got["installed"] != true {
		t.Fatalf("fault 1 = %v", got)
	}
	if res := h.ctl("DELETE", "/_rail0test/faults/1", ""); res.status != http.StatusNoContent || h.srv.Faults.Pending() != 0 {
		t.Fatalf("remove: %d, %d pending", res.status, h.srv.Faults.Pending())
	}
	if got := h.ctl("GET", "/_rail0test/faults/1", "").json(t); got["hits"] != float64(1) || got["installed"] != false {
		t.Fatalf("removed fault 1 = %v", got)
	}
	expect(t, h.ctl("DELETE", "/_rail0test/faults/x", ""), http.StatusBadRequest, "invalid_param")
	expect(t, h.ctl("GET", "/_rail0test/faults/x", ""), http.StatusBadRequest, "invalid_param")
	expect(t, h.ctl("POST", "/_rail0test/faults", "path=/tokens,kind=explode"), http.StatusBadRequest, "invalid_param")
	h.ctl("POST", "/_rail0test/faults", "status=500")
	h.ctl("POST", "/_rail0test/faults", "status=501")
	if res := h.ctl("DELETE", "/_rail0test/faults", ""); res.status != http.StatusNoContent || h.srv.Faults.Pending() != 0 {
		t.Fatalf("clear: %d, %d pending", res.status, h.srv.Faults.Pending())
	}
	// A fault on every route leaves the control surface alone.
	h.srv.Faults.Add(Fault{Kind: FaultDropBefore})
	expect(t, h.ctl("GET", "/_rail0test/clock", ""), http.StatusOK, "")
}

func TestControlAnswersLoopbackOnly(t *testing.T) {
	srv := NewServer(WithControl(), WithRateLimits(Limit{Requests: 1}, Limit{Requests: 1}))
	defer srv.Close()
	for _, c := range []struct {
		remote, host string
		want         int
	}{
		{"127.0.0.1:5000", "127.0.0.1:8080", http.StatusOK},
		{"[::1]:5000", "[::1]:8080", http.StatusOK},
		{"127.0.0.1:5000", "localhost:8080", http.StatusOK},
		{"10.1.2.3:5000", "127.0.0.1:8080", http.StatusForbidden},
		{"192.168.1.9:5000", "localhost", http.StatusForbidden},
		{"127.0.0.1:5000", "rebound.example:8080", http.StatusForbidden}, // DNS rebinding
		{"garbage", "127.0.0.1", http.StatusForbidden},
	} {
		req := httptest.NewRequest("GET", "http://"+c.host+"/_rail0test/clock", nil)
		req.RemoteAddr, req.Host = c.remote, c.host
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s -> %s: %d, want %d", c.remote, c.host, rec.Code, c.want)
		}
	}
	// The control surface spends no rate-limit budget.
	for range 3 {
		req := httptest.NewRequest("GET", "http://127.0.0.1/_rail0test/clock", nil)
		req.RemoteAddr = "127.0.0.1:5000"
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("control request throttled: %d", rec.Code)
		}
	}
}

func TestControlClockExpiresSessionsAndNonces(t *testing.T) {
	h := newHarness(t, WithControl(), WithSessionTTL(time.Hour))
	buyer := h.login(h.srv.Buyer)
	n := h.call("POST", "/auth/nonces", "", nil).json(t)["nonce"].(string)
	expect(t, h.ctl("POST", "/_rail0test/clock/advance?by=1h", ""), http.StatusOK, "")
	expect(t, h.call("GET", "/payments", buyer, nil), http.StatusUnauthorized, "unauthorized")
	msg := h.srv.SIWEMessage(h.srv.Buyer.Address, n, loginStatement)
	expect(t, h.call("POST", "/auth", "", map[string]string{"message": msg, "signature": personalSign(t, h.srv.Buyer.Key(), msg)}),
		http.StatusUnprocessableEntity, "invalid_nonce")
}

func TestOffsetClockSaturates(t *testing.T) {
	c := &offsetClock{base: NewManualClock(epoch)}
	for range 3 {
		c.Advance(time.Duration(math.MaxInt64 / 2))
	}
	if got := c.Now(); got.Before(epoch) {
		t.Fatalf("the offset wrapped around: %v", got)
	}
	c.Advance(-time.Hour)
	if got, want := c.Now(), epoch.Add(time.Duration(math.MaxInt64)-time.Hour); !got.Equal(want) {
		t.Fatalf("now = %v, want %v", got, want)
	}
}
