package rail0

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rail0/rail0-go/internal/leaktest"
)

// The redaction rule of the wire log, one body at a time: strings are shown
// only under a field that names or counts something; numbers, booleans and
// null are shown; the order of the fields is kept.
func TestRedactJSON(t *testing.T) {
	for _, tt := range []struct{ name, body, want string }{
		{"a payment: ids, status, amounts, parties shown; its token redacted",
			`{"id":"p1","rail0_id":"0xabc","status":"authorized","amount":"25000000","capturable_amount":"1","payer":"0x5B","payee":"0xAb","token":"0x036C","chain_id":84532,"disputed":false,"created_at":"2026-09-14T10:15:00Z"}`,
			`{"id":"p1","rail0_id":"0xabc","status":"authorized","amount":"25000000","capturable_amount":"1","payer":"0x5B","payee":"0xAb","token":"[redacted]","chain_id":84532,"disputed":false,"created_at":"2026-09-14T10:15:00Z"}`},
		{"sign-in: the SIWE message and its signature",
			`{"message":"example.com wants you to sign in","signature":"0x1b2c"}`,
			`{"message":"[redacted]","signature":"[redacted]"}`},
		{"a session: its bearer token",
			`{"token":"eyJhbGciOiJIUzI1NiJ9.e30.sig","expires_at":"2026-09-14T11:15:00Z","address":"0x5B","account_id":"acc_1"}`,
			`{"token":"[redacted]","expires_at":"2026-09-14T11:15:00Z","address":"0x5B","account_id":"acc_1"}`},
		{"a webhook: its shared secret and a callback URL that may hold a key",
			`{"id":"wh_1","name":"n","callback_url":"https://shop.example/hook?key=k","topic":"payments.captured","shared_secret":"whsec_x"}`,
			`{"id":"wh_1","name":"n","callback_url":"[redacted]","topic":"payments.captured","shared_secret":"[redacted]"}`},
		{"a submit: the signed transaction",
			`{"signed_transaction":"0x02f8b1"}`,
			`{"signed_transaction":"[redacted]"}`},
		{"a field the SDK does not know, and free text",
			`{"id":"x","api_key":"k","metadata":{"order":"o-1","email":"a@b.c"},"description":"d"}`,
			`{"id":"x","api_key":"[redacted]","metadata":{"order":"[redacted]","email":"[redacted]"},"description":"[redacted]"}`},
		{"arrays take their field's rule; objects in them their own",
			`{"rpc_urls":["https://rpc.example/v3/KEY"],"transactions":[{"id":"t1","status":"confirmed","raw":"0xf8"},{"id":"t2"}],"tokens":[]}`,
			`{"rpc_urls":["[redacted]"],"transactions":[{"id":"t1","status":"confirmed","raw":"[redacted]"},{"id":"t2"}],"tokens":[]}`},
		{"a signing payload: what is signed is shown, the nonce is not",
			`{"signing_payload":{"primaryType":"TransferWithAuthorization","domain":{"name":"USDC","chainId":84532,"verifyingContract":"0x036C"},"message":{"from":"0x5B","to":"0xAb","value":"25000000","nonce":"0x9f"}}}`,
			`{"signing_payload":{"primaryType":"TransferWithAuthorization","domain":{"name":"USDC","chainId":84532,"verifyingContract":"[redacted]"},"message":{"from":"0x5B","to":"0xAb","value":"25000000","nonce":"[redacted]"}}}`},
		{"a top-level array of objects", `[{"id":"a","status":"s"},{"id":"b"}]`, `[{"id":"a","status":"s"},{"id":"b"}]`},
		{"a top-level string is no field", `"eyJhbGciOiJIUzI1NiJ9"`, `"[redacted]"`},
		{"the gateway's error envelope", `{"code":"rate_limited","title":"Too many requests","detail":"slow down","status":"rate_limited"}`,
			`{"code":"rate_limited","title":"Too many requests","detail":"slow down","status":"rate_limited"}`},
		{"big numbers kept as they are", `{"amount":123456789012345678901234567890,"n":null}`, `{"amount":123456789012345678901234567890,"n":null}`},
		{"a shown string is escaped as JSON", `{"detail":"line\nbreak \"quoted\""}`, `{"detail":"line\nbreak \"quoted\""}`},
		{"only the first value is read", `{"id":"a"} {"token":"secret"}`, `{"id":"a"}`},
		{"a body that breaks off is shown up to there", `{"id":"a","signature":"0x1b","status":`, `{"id":"a","signature":"[redacted]","status"…(not JSON after this)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := redactJSON([]byte(tt.body), maxWireBody)
			require.True(t, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

// A body that is not JSON is not shown at all, only its size and type; a
// long body is cut.
func TestWireBodyBounds(t *testing.T) {
	html := `<html><body>Authorization: Bearer tok-SECRET</body></html>`
	assert.Equal(t, "[not shown: 58 bytes, text/html, not JSON]", wireBody([]byte(html), "text/html; charset=utf-8"))
	assert.Equal(t, "[not shown: 58 bytes, application/json, not JSON]", wireBody([]byte(html), "application/json"))
	assert.Equal(t, "[not shown: 3 bytes, no content type, not JSON]", wireBody([]byte("abc"), ""))
	assert.Equal(t, `{"id":"a"}`, wireBody([]byte(`{"id":"a"}`), "application/problem+json"))

	long := `[` + strings.Repeat(`{"id":"0123456789"},`, 2000) + `{"id":"x"}]`
	got := wireBody([]byte(long), "application/json")
	assert.LessOrEqual(t, len(got), maxWireBody+64)
	assert.True(t, strings.HasSuffix(got, "…(40012 bytes in all)"), got[len(got)-40:])

	huge := `{"id":"` + strings.Repeat("é", 1000) + `"}`
	got = wireBody([]byte(huge), "application/json")
	assert.Less(t, len(got), 300, "one shown string is cut")
	assert.True(t, strings.HasSuffix(got, `…"}`))
}

// Headers: a short list is shown as it is, every other value redacted,
// the Authorization header first of all.
func TestWireHeader(t *testing.T) {
	h := http.Header{
		"Authorization":   {"Bearer tok-SECRET"},
		"Cookie":          {"session=s"},
		"X-Api-Key":       {"k"},
		"Content-Type":    {"application/json"},
		"Idempotency-Key": {"key-1"},
		"Retry-After":     {"60"},
		"X-Request-Id":    {"req-1"},
	}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("h", wireHeader(h, defaultSafeQuery))
	out := buf.String()
	for _, want := range []string{"header.Authorization=[redacted]", "header.Cookie=[redacted]", "header.X-Api-Key=[redacted]",
		"header.Content-Type=application/json", "header.Idempotency-Key=key-1", "header.Retry-After=60", "header.X-Request-Id=req-1"} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "tok-SECRET")
}

// End to end: with WithWireLog, each attempt's request and answer are
// logged at debug, through slog's JSON and text handlers, with the useful
// fields shown and no credential; without it, or above debug, nothing of
// the wire is logged; and it needs a logger.
func TestWireLogEndToEnd(t *testing.T) {
	const token = "tok-SECRET-wire-7c1d"
	signature := "0x" + strings.Repeat("ab", 65)
	srv := newScriptServer(t, step{status: 503, header: map[string]string{"Set-Cookie": "lb=secret-cookie"}},
		step{status: 201, body: paymentBody}, step{status: 200, body: `{"id":"0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a4b","status":"unsigned"}`})
	var jsonOut, textOut bytes.Buffer
	logger := leaktest.Logger(&jsonOut, &textOut, slog.LevelDebug)
	c := newTestClient(t, srv.URL, WithToken(token), WithLogger(logger), WithWireLog(true), withRand(func() float64 { return 0 }))

	p, err := c.Payments.Create(context.Background(), PaymentCreateParams{ChainID: 84532, Mode: ModeAuthorize, Amount: "25.00",
		Token: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", Payer: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
		Payee: "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2", IdempotencyKey: "key-1"})
	require.NoError(t, err)
	_, err = c.Payments.SubmitSignature(context.Background(), p.ID, PaymentSubmitSignatureParams{Signature: signature})
	require.NoError(t, err)

	var wire []map[string]any
	for _, l := range logLines(t, &jsonOut) {
		if strings.HasPrefix(l["msg"].(string), "rail0: wire") {
			wire = append(wire, l)
		}
	}
	require.Len(t, wire, 6, jsonOut.String()) // two attempts of the create, one of the sign, each way
	req, resp := wire[2], wire[3]
	assert.Equal(t, "rail0: wire request", req["msg"])
	assert.Equal(t, "DEBUG", req["level"])
	assert.Equal(t, 2.0, req["attempt"])
	assert.Equal(t, 1.0, req["call_id"])
	assert.Equal(t, srv.URL+"/payments", req["url"])
	reqHeader := req["header"].(map[string]any)
	assert.Equal(t, redacted, reqHeader["Authorization"])
	assert.Equal(t, "key-1", reqHeader["Idempotency-Key"])
	assert.Contains(t, req["body"], `"amount":"25.00"`)
	assert.Contains(t, req["body"], `"payer":"0x5B38Da6a701c568545dCfcB03FcB875f56beddC4"`)
	assert.Contains(t, req["body"], `"token":"[redacted]"`)
	assert.Equal(t, "rail0: wire response", resp["msg"])
	assert.Equal(t, 201.0, resp["status"])
	assert.Contains(t, resp["body"], `"id":"0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a4b"`)
	assert.Contains(t, resp["body"], `"status":"unsigned"`)
	assert.Contains(t, resp["body"], `"amount":"25000000"`)
	assert.Equal(t, redacted, wire[1]["header"].(map[string]any)["Set-Cookie"])
	assert.Equal(t, `{"signature":"[redacted]"}`, wire[4]["body"])
	assert.Contains(t, textOut.String(), `msg="rail0: wire request"`)
	assert.Contains(t, textOut.String(), "header.Authorization=[redacted]")

	secrets := []string{token, signature, strings.TrimPrefix(signature, "0x"), "secret-cookie"}
	leaktest.NoSecret(t, map[string]any{"the JSON log": jsonOut.String(), "the text log": textOut.String()}, leaktest.Forms(secrets...))

	// Off by default, and debug only.
	for _, opts := range [][]Option{
		{WithLogger(slog.New(slog.NewJSONHandler(&jsonOut, &slog.HandlerOptions{Level: slog.LevelDebug})))},
		{WithLogger(slog.New(slog.NewJSONHandler(&jsonOut, &slog.HandlerOptions{Level: slog.LevelInfo}))), WithWireLog(true)},
	} {
		jsonOut.Reset()
		srv := newScriptServer(t, step{status: 200, body: paymentBody})
		c := newTestClient(t, srv.URL, append([]Option{WithToken(token)}, opts...)...)
		_, err := c.Payments.Get(context.Background(), "p1")
		require.NoError(t, err)
		assert.NotContains(t, jsonOut.String(), "rail0: wire")
	}
	_, err = NewClient(srv.URL, WithWireLog(true))
	assert.ErrorContains(t, err, "WithWireLog needs WithLogger")
}

// A query's values are redacted unless their key is safe: a Raw call's
// access_token never appears in the transcript (Call.URL), the wire log
// (its URL, and the Link header that echoes it), or a transport error's
// text, while the contract's own page does, and the gateway still gets the
// token. WithSafeQueryKeys shows a key's values.
func TestQueryValuesAreRedacted(t *testing.T) {
	const secret = "sk_live_query_secret_0123456789"
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.Query().Get("access_token"))
		mu.Unlock()
		if r.URL.Path == "/hang-up" {
			panic(http.ErrAbortHandler)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Link", "<"+"http://"+r.Host+r.URL.Path+"?"+r.URL.RawQuery+"&page=3>; rel=\"next\"")
		io.WriteString(w, `{"items":[]}`)
	}))
	defer srv.Close()
	query := url.Values{"access_token": {secret}, "page": {"2"}, "Page": {"x"}}

	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := newTestClient(t, srv.URL, WithToken("tok"), WithLogger(logger), WithWireLog(true), WithMaxRetries(0))
	resp, err := c.Raw(context.Background(), RawRequest{Method: http.MethodGet, Path: []string{"things"}, Query: query, Class: Idempotent}, nil)
	require.NoError(t, err)
	assert.Equal(t, srv.URL+"/things?Page=REDACTED&access_token=REDACTED&page=2", resp.Call.URL)
	_, err = c.Raw(context.Background(), RawRequest{Method: http.MethodGet, Path: []string{"hang-up"}, Query: query, Class: Idempotent}, nil)
	var te *TransportError
	require.ErrorAs(t, err, &te)
	assert.Contains(t, err.Error(), "access_token=REDACTED")

	mu.Lock()
	seen := append([]string(nil), got...)
	mu.Unlock()
	require.GreaterOrEqual(t, len(seen), 2)
	for _, v := range seen {
		assert.Equal(t, secret, v, "the gateway gets the query as given")
	}
	out := logs.String()
	assert.NotContains(t, out, secret)
	assert.NotContains(t, err.Error(), secret)
	assert.NotContains(t, CallOf(err).String(), secret)
	assert.Contains(t, out, `"url":"`+srv.URL+`/things?Page=REDACTED&access_token=REDACTED&page=2"`, "the wire request's URL")
	assert.Contains(t, out, `/things?Page=REDACTED&access_token=REDACTED&page=2&page=3>; rel=\"next\"`, "the Link header's URL")

	// Named safe, a key's values are shown.
	logs.Reset()
	c = newTestClient(t, srv.URL, WithToken("tok"), WithLogger(logger), WithWireLog(true), WithSafeQueryKeys("access_token"))
	resp, err = c.Raw(context.Background(), RawRequest{Method: http.MethodGet, Path: []string{"things"}, Query: query, Class: Idempotent}, nil)
	require.NoError(t, err)
	assert.Contains(t, resp.Call.URL, "access_token="+secret)
	assert.Contains(t, resp.Call.URL, "Page=REDACTED", "keys match exactly")
	assert.Contains(t, logs.String(), secret)
}

// The default safe keys are the contract's query parameters, but token.
func TestDefaultSafeQueryKeysAreTheContracts(t *testing.T) {
	raw, err := os.ReadFile("testdata/openapi.json")
	require.NoError(t, err)
	type param struct {
		Ref      string `json:"$ref"`
		Name, In string
	}
	var doc struct {
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			Parameters map[string]param `json:"parameters"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	contract := map[string]bool{}
	for _, ops := range doc.Paths {
		for _, op := range ops {
			var o struct {
				Parameters []param `json:"parameters"`
			}
			if json.Unmarshal(op, &o) != nil {
				continue
			}
			for _, p := range o.Parameters {
				if p.Ref != "" {
					p = doc.Components.Parameters[strings.TrimPrefix(p.Ref, "#/components/parameters/")]
				}
				if p.In == "query" {
					contract[p.Name] = true
				}
			}
		}
	}
	require.True(t, contract["token"], "the contract filters payments by token")
	delete(contract, "token")
	assert.Equal(t, contract, defaultSafeQuery)
}

// redactURL keeps the path, redacts the query's values and drops a
// fragment; a URL it cannot parse is not shown at all.
func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://g.test/payments?page=2&token=0xabc": "https://g.test/payments?page=2&token=REDACTED",
		"https://g.test/payments":                    "https://g.test/payments",
		"https://g.test/p?x=%zz&y=1":                 "https://g.test/p?y=REDACTED",
		"https://g.test/p?page=1#frag":               "https://g.test/p?page=1",
		"://bad":                                     redacted,
		"https://g.test/p?%zz":                       "https://g.test/p?REDACTED",
	} {
		assert.Equal(t, want, redactURL(in, defaultSafeQuery), in)
	}
	assert.Equal(t, `<https://g.test/p?k=REDACTED&page=2>; rel="next", <https://g.test/p?page=1>; rel="first"`,
		wireLink(`<https://g.test/p?page=2&k=s3cret>; rel="next", <https://g.test/p?page=1>; rel="first"`, defaultSafeQuery))
	assert.Equal(t, "no link", wireLink("no link", defaultSafeQuery))
}
