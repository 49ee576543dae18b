package rail0test

import (
	"encoding/json"
	"io"
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

// TestWriteBodiesNeverBreakTheServer is the same property for request bodies:
// every route that reads one answers random objects, wrong types, huge numbers and
// non-JSON with a success or a 4xx error envelope that matches the contract.
func TestWriteBodiesNeverBreakTheServer(t *testing.T) {
	h := newHarness(t)
	buyer, merchant := h.login(h.srv.Buyer), h.login(h.srv.Merchant)
	pay := h.createPayment(buyer, "authorize", "5", true)
	res := h.call("POST", "/webhooks", merchant, map[string]any{"name": "n", "callback_url": "https://hooks.example/x", "topic": "payments.created"})
	expect(t, res, http.StatusCreated, "")
	hook := res.json(t)["id"].(string)
	wallets := "/accounts/" + h.srv.Merchant.AccountID + "/wallets"
	wallet := h.call("GET", wallets, merchant, nil).list(t)[0]["id"].(string)
	type route struct{ method, path, token string }
	var routes []route
	for _, p := range []string{"/auth/nonces", "/auth"} {
		routes = append(routes, route{"POST", p, ""})
	}
	routes = append(routes, route{"POST", "/payments", buyer}, route{"PUT", "/payments/" + pay + "/sign", buyer},
		route{"POST", wallets, merchant}, route{"PATCH", wallets + "/" + wallet, merchant},
		route{"POST", wallets + "/" + wallet + "/tokens", merchant},
		route{"POST", "/webhooks", merchant}, route{"PATCH", "/webhooks/" + hook, merchant})
	for _, op := range []string{"authorize", "charge", "capture", "void", "release", "refund"} {
		for _, tok := range []string{buyer, merchant} {
			routes = append(routes, route{"POST", "/payments/" + pay + "/" + op + "/prepare", tok},
				route{"POST", "/payments/" + pay + "/" + op, tok}, route{"POST", "/payments/" + pay + "/" + op + "/submitted", tok})
		}
	}
	for _, p := range []string{"/dispute", "/dispute/close"} {
		for _, suffix := range []string{"/prepare", "", "/submitted"} {
			routes = append(routes, route{"POST", "/payments/" + pay + p + suffix, buyer})
		}
	}
	keys := []string{"active", "address", "amount", "by", "callback_url", "chain_id", "default", "description", "label",
		"message", "metadata", "mode", "name", "payee", "payer", "reason", "signature", "signed_transaction", "token",
		"topic", "transaction_hash", "signing_payload", "from"}
	values := []any{nil, "", "abc", -1, 0, 1, 1e308, -1e308, 9.5, "0x", "0x00", "0xzz", "-5", "1.0000001", "1e6",
		"99999999999999999999999999999999999999999999999999999999999999999999999999999.99", true, []any{}, map[string]any{},
		[]any{1, "a"}, strings.Repeat("f", 5000), "0x" + strings.Repeat("ab", 600), h.srv.Buyer.Address, h.srv.Merchant.Address,
		h.srv.Token, float64(h.srv.ChainID), "authorize", "charge", "payments.created", "https://hooks.example/y"}
	raw := []string{"", "null", "[]", "\"x\"", "{", "{\"amount\":", "\x00\x01", "{\"a\":1}{\"b\":2}", strings.Repeat("[", 10000)}
	rng := rand.New(rand.NewPCG(14, 15))
	for i := range 900 {
		r := routes[i%len(routes)]
		var body string
		if i%7 == 0 {
			body = raw[rng.IntN(len(raw))]
		} else {
			obj := map[string]any{}
			for range 1 + rng.IntN(5) {
				obj[keys[rng.IntN(len(keys))]] = values[rng.IntN(len(values))]
			}
			b, err := json.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			body = string(b)
		}
		res, req := h.sendRaw(r.method, r.path, r.token, body)
		if res.status >= 500 {
			t.Fatalf("%s %s %s = %d %s", r.method, r.path, body, res.status, res.body)
		}
		h.validate(req, res)
		if t.Failed() {
			t.Fatalf("%s %s %.300s broke the contract", r.method, r.path, body)
		}
	}
}

// sendRaw sends body verbatim as a JSON request.
func (h *harness) sendRaw(method, path, token, body string) (*result, *http.Request) {
	h.t.Helper()
	req, err := http.NewRequestWithContext(h.t.Context(), method, h.srv.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := h.srv.HTTPClient().Do(req)
	if err != nil {
		h.t.Fatalf("%s %s %.300s: %v", method, path, body, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Body = io.NopCloser(strings.NewReader(body))
	return &result{status: resp.StatusCode, header: resp.Header, body: b}, req
}

func TestHostilePathIDsGetContractErrors(t *testing.T) {
	h := newHarness(t)
	buyer, merchant := h.login(h.srv.Buyer), h.login(h.srv.Merchant)
	for _, id := range []string{"x", "0", "-1", "%00", "%2e%2e", "%E2%80%AE", strings.Repeat("a", 5000), "00000000-0000-0000-0000-000000000000",
		"0x" + strings.Repeat("f", 64), "9223372036854775808"} {
		for _, c := range []struct{ method, path, token string }{
			{"GET", "/payments/" + id, buyer},
			{"GET", "/payments/" + id + "/transactions?page=9223372036854775807", buyer},
			{"POST", "/payments/" + id + "/capture/prepare", merchant},
			{"POST", "/payments/" + id + "/" + id, merchant},
			{"GET", "/accounts/" + id + "/wallets", merchant},
			{"GET", "/webhooks/" + id, merchant},
			{"DELETE", "/accounts/" + h.srv.Merchant.AccountID + "/wallets/" + id + "/tokens/" + id, merchant},
		} {
			res, _ := h.sendRaw(c.method, c.path, c.token, "{}")
			if res.status < 400 || res.status > 499 {
				t.Fatalf("%s %.80s = %d %s", c.method, c.path, res.status, res.body)
			}
			if code, _ := res.json(t)["code"].(string); code == "" {
				t.Fatalf("%s %.80s = %d without a code", c.method, c.path, res.status)
			}
		}
	}
}
