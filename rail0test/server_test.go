package rail0test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRequestIDOnEveryResponse(t *testing.T) {
	h := newHarness(t, WithRateLimits(Limit{Requests: 1}, Limit{Requests: 1}))
	a := h.call("GET", "/tokens", "", nil)
	b := h.call("GET", "/tokens", "", nil) // throttled
	expect(t, b, http.StatusTooManyRequests, "rate_limited")
	if a.header.Get("X-Request-Id") == b.header.Get("X-Request-Id") {
		t.Fatal("two responses share a request id")
	}
	// A well-formed client id is echoed, as Rails does; a malformed one is replaced.
	h.srv.limiter.on.Store(false)
	if got := h.call("GET", "/tokens", "", nil, withHeader("X-Request-Id", "client-42")).header.Get("X-Request-Id"); got != "client-42" {
		t.Fatalf("echoed id = %q", got)
	}
	if got := h.call("GET", "/tokens", "", nil, withHeader("X-Request-Id", "bad id!")).header.Get("X-Request-Id"); got == "bad id!" || got == "" {
		t.Fatalf("malformed id = %q", got)
	}
	res, _ := h.send("GET", "/no/such/route", "", nil)
	if res.status != http.StatusNotFound || res.header.Get("X-Request-Id") == "" || res.json(t)["code"] != "not_found" {
		t.Fatalf("unknown route: %d %v %s", res.status, res.header, res.body)
	}
	ex := h.srv.Ledger.Executions()
	last := ex[len(ex)-1]
	if last.Route != "/" || last.Status != http.StatusNotFound || last.RequestID != res.header.Get("X-Request-Id") || last.Path != "/no/such/route" {
		t.Fatalf("last execution = %+v", last)
	}
}

func TestFaultsRemoveClearAndNames(t *testing.T) {
	h := newHarness(t)
	id := h.srv.Faults.Add(Fault{Kind: FaultStatus, Status: 500})
	h.srv.Faults.Add(Fault{Method: "POST", Kind: FaultStatus, Status: 500})
	if res, _ := h.send("GET", "/tokens", "", nil); res.status != 500 {
		t.Fatalf("catch-all fault: %d", res.status)
	}
	h.srv.Faults.Remove(id)
	expect(t, h.call("GET", "/tokens", "", nil), http.StatusOK, "") // the POST-only fault stays
	if h.srv.Faults.Pending() != 1 {
		t.Fatalf("pending = %d", h.srv.Faults.Pending())
	}
	h.srv.Faults.Clear()
	expect(t, h.call("POST", "/auth/nonces", "", nil), http.StatusCreated, "")
	names := map[FaultKind]string{FaultStatus: "status", FaultStatusAfter: "status_after", FaultStall: "stall",
		FaultDropBefore: "drop_before", FaultDropAfter: "drop_after", FaultTruncate: "truncate", FaultGzipLie: "gzip_lie", 0: "FaultKind(0)"}
	for k, want := range names {
		if k.String() != want {
			t.Errorf("%d.String() = %q, want %q", k, k.String(), want)
		}
	}
}

func TestSharedJWTSecretAndSIWEDomain(t *testing.T) {
	secret := []byte("rail0test-shared")
	a := NewServer(WithJWTSecret(secret), WithoutRateLimits(), WithSIWEDomain("shop.example"))
	defer a.Close()
	b := NewServer(WithJWTSecret(secret), WithoutRateLimits())
	defer b.Close()
	// a accepts only shop.example, so a message for its own host is refused.
	if _, err := a.Login(context.Background(), a.Buyer.PrivateKey); err != nil {
		t.Fatalf("Login with the configured domain: %v", err)
	}
	h := &harness{t: t, srv: a}
	n := func() string {
		res, _ := h.send("POST", "/auth/nonces", "", nil)
		return res.json(t)["nonce"].(string)
	}
	msg := siweText("127.0.0.1", a.Buyer.Address, loginStatement, a.URL, 1, n(), time.Now())
	res, _ := h.send("POST", "/auth", "", map[string]string{"message": msg, "signature": personalSign(t, a.Buyer.Key(), msg)})
	expect(t, res, http.StatusUnprocessableEntity, "invalid_siwe")
	// The URI host must be the domain.
	msg = siweText("shop.example", a.Buyer.Address, loginStatement, "https://other.example", 1, n(), time.Now())
	res, _ = h.send("POST", "/auth", "", map[string]string{"message": msg, "signature": personalSign(t, a.Buyer.Key(), msg)})
	expect(t, res, http.StatusUnprocessableEntity, "invalid_siwe")

	// With the same secret, b honours a's token.
	tok, err := a.Login(context.Background(), a.Buyer.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	hb := &harness{t: t, srv: b}
	res, _ = hb.send("GET", "/payments", tok, nil)
	expect(t, res, http.StatusOK, "")
}

// lockedBuffer collects log output from the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestLoggerNeverPrintsSecrets(t *testing.T) {
	var buf lockedBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := newHarness(t, WithLogger(log), WithRateLimits(Limit{Requests: 100}, Limit{Requests: 1}))
	tok := h.login(h.srv.Buyer)
	h.call("GET", "/payments", tok, nil)
	h.call("GET", "/payments", tok, nil) // throttled, logged too
	out := buf.String()
	if !strings.Contains(out, "/payments") || !strings.Contains(out, "throttled") {
		t.Fatalf("log = %s", out)
	}
	for _, secret := range []string{tok, h.srv.Buyer.PrivateKey, string(h.srv.jwtKey())} {
		if strings.Contains(out, secret) {
			t.Fatal("the log contains a secret")
		}
	}
}

func TestHealthStates(t *testing.T) {
	h := newHarness(t)
	tok := h.login(h.srv.Merchant)
	h.srv.SetHealth("degraded")
	deg := h.call("GET", "/health", tok, nil)
	expect(t, deg, http.StatusOK, "")
	if j := deg.json(t); j["status"] != "degraded" || j["sidekiq"].(map[string]any)["status"] != "down" {
		t.Fatalf("degraded = %s", deg.body)
	}
	h.srv.SetHealth("error")
	down := h.call("GET", "/health", "", nil) // a 503 whose body is still a Health report
	if down.status != http.StatusServiceUnavailable || down.json(t)["db"] != "error" {
		t.Fatalf("error = %d %s", down.status, down.body)
	}
	h.srv.SetHealth("bogus")
	if h.call("GET", "/health", "", nil).status != http.StatusServiceUnavailable {
		t.Fatal("an unknown health state was applied")
	}
	h.srv.SetHealth("ok")
	expect(t, h.call("GET", "/health", "", nil), http.StatusOK, "")
}

func TestPaymentListFiltersAndAnalytics(t *testing.T) {
	h := newHarness(t, WithSessionTTL(1000*time.Hour))
	buyer, merchant := h.login(h.srv.Buyer), h.login(h.srv.Merchant)
	small := h.createPayment(buyer, "charge", "1", true)
	h.step(merchant, h.srv.Merchant.Key(), small, "charge", nil)
	h.clock.Advance(24 * time.Hour)
	big := h.createPayment(buyer, "authorize", "100", true)
	h.step(merchant, h.srv.Merchant.Key(), big, "authorize", nil) // before the authorization expires
	h.clock.Advance(40 * 24 * time.Hour)
	h.createPayment(buyer, "authorize", "50", false)

	ids := func(path string) []string {
		t.Helper()
		var out []string
		for _, p := range h.call("GET", path, buyer, nil).list(t) {
			out = append(out, p["id"].(string))
		}
		return out
	}
	if got := ids("/payments?sort=-amount&per_page=1"); len(got) != 1 || got[0] != big {
		t.Fatalf("largest first = %v", got)
	}
	if got := ids("/payments?min_amount=2000000&max_amount=99000000"); len(got) != 1 {
		t.Fatalf("amount range = %v", got)
	}
	if got := ids("/payments?mode=charge&status=charged&token=usdc&payee=" + h.srv.Merchant.Address); len(got) != 1 || got[0] != small {
		t.Fatalf("charged = %v", got)
	}
	from := epoch.Add(12 * time.Hour).Format(time.RFC3339)
	if got := ids("/payments?created_from=" + from + "&created_to=" + epoch.Add(48*time.Hour).Format(time.RFC3339)); len(got) != 1 || got[0] != big {
		t.Fatalf("created range = %v", got)
	}
	expect(t, h.call("GET", "/payments?sort=colour", buyer, nil), http.StatusBadRequest, "invalid_param")
	expect(t, h.call("GET", "/payments?disputed=maybe", buyer, nil), http.StatusBadRequest, "invalid_param")
	expect(t, h.call("GET", "/payments?page=0", buyer, nil), http.StatusBadRequest, "invalid_param")
	if got := ids("/payments?page=9"); len(got) != 0 {
		t.Fatalf("page past the end = %v", got)
	}

	sum := h.call("GET", "/analytics/summary", merchant, nil).json(t)
	byStatus := sum["by_status"].(map[string]any)
	if sum["orders"] != float64(3) || byStatus["charged"] != float64(1) || byStatus["authorized"] != float64(1) || byStatus["unsigned"] != float64(1) {
		t.Fatalf("summary = %v", sum)
	}
	vol := sum["volume"].([]any)[0].(map[string]any)
	if vol["gross"] != "151000000" || vol["escrowed"] != "100000000" || vol["settled"] != "1000000" {
		t.Fatalf("volume = %v", vol)
	}
	days := h.call("GET", "/analytics/timeseries", merchant, nil).list(t)
	if len(days) != 42 || days[0]["orders"] != float64(1) || days[1]["orders"] != float64(1) || days[2]["orders"] != float64(0) || days[0]["volume"] != nil {
		t.Fatalf("daily buckets: %d, first %v", len(days), days[:3])
	}
	months := h.call("GET", "/analytics/timeseries?interval=month&chain_id=84532&token="+h.srv.Token, merchant, nil).list(t)
	if len(months) != 2 || months[0]["bucket"] != "2026-09-01T00:00:00Z" || months[0]["volume"] != "101000000" {
		t.Fatalf("monthly buckets = %v", months)
	}
	modes := h.call("GET", "/analytics/breakdown?by=mode", merchant, nil).list(t)
	if len(modes) != 2 || modes[0]["volume"] != nil {
		t.Fatalf("by mode = %v", modes)
	}
	chains := h.call("GET", "/analytics/breakdown?by=chain&status=authorized", merchant, nil).list(t)
	if len(chains) != 1 || chains[0]["key"] != float64(TestChainID) || chains[0]["volume"] != "100000000" {
		t.Fatalf("by chain = %v", chains)
	}
	expect(t, h.call("GET", "/analytics/breakdown", merchant, nil), http.StatusBadRequest, "missing_param")
	expect(t, h.call("GET", "/analytics/breakdown?by=colour", merchant, nil), http.StatusBadRequest, "invalid_param")
}

func TestCatalogFilters(t *testing.T) {
	h := newHarness(t)
	count := func(path string) int {
		t.Helper()
		return len(h.call("GET", path, "", nil).list(t))
	}
	for path, want := range map[string]int{
		"/blockchains":                      2,
		"/blockchains?symbol=usdc":          2,
		"/blockchains?symbol=EURC":          0, // only a retired token
		"/blockchains?symbol=ETH":           2,
		"/blockchains?network_type=mainnet": 1,
		"/tokens?active=false":              1,
		"/tokens?symbol=USDC":               2,
		"/tokens?chain_id=8453":             1,
	} {
		if got := count(path); got != want {
			t.Errorf("%s: %d items, want %d", path, got, want)
		}
	}
	expect(t, h.call("GET", "/tokens?active=perhaps", "", nil), http.StatusBadRequest, "invalid_param")
	expect(t, h.call("GET", "/tokens?chain_id=base", "", nil), http.StatusBadRequest, "invalid_param")
}
