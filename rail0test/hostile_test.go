package rail0test

import (
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// listRoutes returns every route that reads query parameters, with a token that
// may call it, after creating one of each listed record.
func listRoutes(h *harness) (paginated, plain map[string]string) {
	buyer, merchant := h.login(h.srv.Buyer), h.login(h.srv.Merchant)
	pay := h.createPayment(buyer, "charge", "1", false)
	res := h.call("POST", "/webhooks", merchant, map[string]any{"name": "n", "callback_url": "https://hooks.example/x", "topic": "payments.created"})
	expect(h.t, res, http.StatusCreated, "")
	hook := res.json(h.t)["id"].(string)
	paginated = map[string]string{
		"/payments":                          buyer,
		"/payments/" + pay + "/transactions": buyer,
		"/payments/" + pay + "/disputes":     buyer,
		"/disputes":                          merchant,
		"/accounts/" + h.srv.Merchant.AccountID + "/wallets": merchant,
		"/webhooks":                              merchant,
		"/webhooks/" + hook + "/event_callbacks": merchant,
	}
	plain = map[string]string{
		"/blockchains": "", "/tokens": "", "/payment_methods": "",
		"/analytics/summary": merchant, "/analytics/timeseries": merchant, "/analytics/breakdown": merchant,
	}
	return paginated, plain
}

// TestListPageBeyondInt64Range pins the answer to the query that made a list
// handler panic with "slice bounds out of range [:-100]": a page past the end is
// an empty page (README section 8), whatever its number.
func TestListPageBeyondInt64Range(t *testing.T) {
	h := newHarness(t)
	paginated, _ := listRoutes(h)
	for path, tok := range paginated {
		for _, q := range []string{"page=9223372036854775807&per_page=100", "page=9223372036854775807", "page=92233720368547758&per_page=100"} {
			res := h.call("GET", path+"?"+q, tok, nil)
			expect(t, res, http.StatusOK, "")
			if l := res.list(t); len(l) != 0 || res.header.Get("X-Total-Count") == "" || res.header.Get("X-Page") == "" {
				t.Fatalf("GET %s?%s = %d items, headers %v", path, q, len(l), res.header)
			}
		}
		res := h.call("GET", path+"?page=9223372036854775808", tok, nil) // past int64
		expect(t, res, http.StatusBadRequest, "invalid_param")
	}
}

// TestListQueryParamsNeverBreakTheServer is a property test over the query
// parameters of every route that reads them: whatever the values, the answer is
// a 200 that matches the contract or a 4xx error envelope, never a panic or a
// dropped connection (harness.call fails the test on either).
func TestListQueryParamsNeverBreakTheServer(t *testing.T) {
	h := newHarness(t)
	paginated, plain := listRoutes(h)
	keys := []string{"page", "per_page", "sort", "status", "mode", "chain_id", "token", "created_from", "created_to",
		"operation", "active", "from", "to", "interval", "by", "since", "until", "topic", "payment_id", "disputed",
		"network_type", "symbol", "token_symbol", "token_active", "default", "circuit_state", "address", "account_id"}
	values := []string{"9223372036854775807", "-9223372036854775808", "9223372036854775808", "0", "-1", "1", "2", "100",
		"101", "1e3", "0x10", "", " ", "%", "\x00", "ü", "true", "false", "yes", "-created_at", "created_at,-status", ",", "-",
		"--amount", "2026-13-45", "2026-01-02", "2026-01-02T03:04:05Z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z",
		"day", "week", "month", "year", "token", "chain", "confirmed", "charge", "USDC", TestTokenAddress,
		strings.Repeat("9", 400), strings.Repeat("-x,", 200)}
	rng := rand.New(rand.NewPCG(14, 14))
	routes := make([]string, 0, len(paginated)+len(plain))
	tokens := map[string]string{}
	for p, tok := range paginated {
		routes, tokens[p] = append(routes, p), tok
	}
	for p, tok := range plain {
		routes, tokens[p] = append(routes, p), tok
	}
	for i := range 600 {
		path := routes[i%len(routes)]
		q := url.Values{}
		for range 1 + rng.IntN(4) {
			q.Add(keys[rng.IntN(len(keys))], values[rng.IntN(len(values))])
		}
		res := h.call("GET", path+"?"+q.Encode(), tokens[path], nil)
		if res.status != http.StatusOK && (res.status < 400 || res.status > 499) {
			t.Fatalf("GET %s?%s = %d %s", path, q.Encode(), res.status, res.body)
		}
		if res.status >= 400 {
			if code, _ := res.json(t)["code"].(string); code == "" {
				t.Fatalf("GET %s?%s = %d without a code: %s", path, q.Encode(), res.status, res.body)
			}
		}
		if t.Failed() {
			t.Fatalf("GET %s?%s broke the contract", path, q.Encode())
		}
	}
}
