package rail0

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 22 item 5: a request to an endpoint the SDK does not know keeps
// what a method's request has: the bearer token, the User-Agent, the JSON
// body, ids escaped into one segment each, the decoded answer, the
// transcript.
func TestRawRequest(t *testing.T) {
	s := newScriptServer(t, step{status: 201, body: `{"id":"r1","total":"4.00"}`})
	c := newTestClient(t, s.URL+"/api/v1", WithToken("tok"), WithUserAgent("shop/2.1"))
	var out struct{ ID, Total string }
	resp, err := c.Raw(context.Background(), RawRequest{
		Method: http.MethodPost,
		Path:   []string{"orders", "a/b?c", "receipts"},
		Query:  url.Values{"lang": {"en"}},
		Body:   map[string]string{"email": "a@example.com"},
		Class:  Idempotent,
	}, &out)
	require.NoError(t, err)
	assert.Equal(t, "r1", out.ID)
	assert.Equal(t, "4.00", out.Total)

	require.Len(t, s.requests(), 1)
	r := s.requests()[0]
	assert.Equal(t, "POST", r.method)
	assert.Equal(t, "/api/v1/orders/a/b?c/receipts", r.path, "the decoded path")
	assert.Equal(t, "lang=en", r.query)
	assert.Equal(t, `{"email":"a@example.com"}`, r.body)
	assert.Equal(t, "Bearer tok", r.header.Get("Authorization"))
	assert.Equal(t, "application/json", r.header.Get("Content-Type"))
	assert.Equal(t, "rail0-go/"+Version+" shop/2.1", r.header.Get("User-Agent"))
	assert.Empty(t, r.header.Get("Idempotency-Key"))

	require.NotNil(t, resp)
	assert.Equal(t, 201, resp.StatusCode)
	require.NotNil(t, resp.Call)
	assert.Equal(t, "/orders/a%2Fb%3Fc/receipts", resp.Call.Path, "the id is one segment")
	assert.Equal(t, "/orders/a%2Fb%3Fc/receipts", resp.Call.Route, "a route the contract does not name")
	assert.Empty(t, resp.Call.Operation)
	assert.Equal(t, OutcomeOK, resp.Call.Outcome)
	assert.Len(t, resp.Call.Attempts, 1)

	// The body is what encoding/json writes, encoded once: a caller's
	// json.RawMessage is compacted, a string's <, > and & escaped.
	for _, body := range []any{json.RawMessage(` {"note" : "<b>&</b>"} `), map[string]string{"note": "<b>&</b>"}} {
		_, err := c.Raw(context.Background(), RawRequest{Method: http.MethodPost, Path: []string{"notes"}, Body: body, Class: Idempotent}, nil)
		require.NoError(t, err)
		assert.Equal(t, `{"note":"\u003cb\u003e\u0026\u003c/b\u003e"}`, s.requests()[len(s.requests())-1].body)
	}

	// A *json.RawMessage keeps the answer as it is; a nil out discards it.
	var raw json.RawMessage
	_, err = c.Raw(context.Background(), RawRequest{Method: http.MethodGet, Path: []string{"receipts"}}, &raw)
	require.NoError(t, err)
	assert.JSONEq(t, `{"id":"r1","total":"4.00"}`, string(raw))
	_, err = c.Raw(context.Background(), RawRequest{Method: http.MethodDelete, Path: []string{"receipts", "r1"}}, nil)
	require.NoError(t, err)
}

// The retry class is the caller's word: a 429 is retried in every class
// (with RetryOn429), a 5xx only on an operation safe to repeat, and a
// write that must not run twice (the zero class) comes back as an
// *OutcomeUnknownError after one attempt.
func TestRawRequestRetryClass(t *testing.T) {
	for _, tc := range []struct {
		name     string
		req      RawRequest
		steps    []step
		attempts int
		unknown  bool
	}{
		{"a 429 on a write that must not run twice is retried",
			RawRequest{Method: http.MethodPost, Path: []string{"refunds"}, Body: map[string]int{"n": 1}},
			[]step{throttled("1"), {status: 201, body: `{}`}}, 2, false},
		{"a 502 on a write that must not run twice is not",
			RawRequest{Method: http.MethodPost, Path: []string{"refunds"}, Body: map[string]int{"n": 1}},
			[]step{{status: 502}, {status: 201, body: `{}`}}, 1, true},
		{"nor on a GET the caller did not call idempotent",
			RawRequest{Method: http.MethodGet, Path: []string{"receipts"}},
			[]step{{status: 502}, {status: 200, body: `{}`}}, 1, true},
		{"a 502 on an idempotent operation is retried",
			RawRequest{Method: http.MethodGet, Path: []string{"receipts"}, Class: Idempotent},
			[]step{{status: 502}, {status: 200, body: `{}`}}, 2, false},
		{"a 502 on an idempotent write is retried",
			RawRequest{Method: http.MethodPost, Path: []string{"settings"}, Body: map[string]int{"n": 1}, Class: Idempotent},
			[]step{{status: 502}, {status: 200, body: `{}`}}, 2, false},
		{"a 502 on a contract write that must not run twice is not, whatever the caller says",
			RawRequest{Method: http.MethodPost, Path: []string{"payments", "p1", "capture"}, Body: map[string]string{}, Class: Idempotent},
			[]step{{status: 502}, {status: 202, body: `{}`}}, 1, true},
		{"a 502 on a contract write the caller says must not run twice is not",
			RawRequest{Method: http.MethodPut, Path: []string{"webhooks", "w1", "enable"}},
			[]step{{status: 502}, {status: 200, body: `{}`}}, 1, true},
		{"a 502 on a keyed write is retried with its key",
			RawRequest{Method: http.MethodPost, Path: []string{"refunds"}, Class: IdempotentWithKey, IdempotencyKey: "order-7"},
			[]step{{status: 502}, {status: 201, body: `{}`}}, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, opt := newPipeScript(t, tc.steps...)
				c := newTestClient(t, s.URL, opt, WithToken("tok"), WithRetryOn429(true))
				_, err := c.Raw(context.Background(), tc.req, nil)
				assert.Len(t, s.requests(), tc.attempts)
				if tc.unknown {
					var unknown *OutcomeUnknownError
					require.ErrorAs(t, err, &unknown)
					var apiErr *APIError
					require.ErrorAs(t, err, &apiErr)
					assert.Equal(t, 502, apiErr.StatusCode)
					return
				}
				require.NoError(t, err)
				for _, r := range s.requests() {
					assert.Equal(t, tc.req.IdempotencyKey, r.header.Get("Idempotency-Key"))
				}
			})
		})
	}
}

// A keyed write without a key gets a random one, the same on every
// attempt, and an unknown outcome names it, so the caller can repeat it.
func TestRawRequestGeneratesItsKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, opt := newPipeScript(t, step{status: 503}, step{status: 502}, step{status: 520})
		c := newTestClient(t, s.URL, opt, WithToken("tok"))
		_, err := c.Raw(context.Background(), RawRequest{Method: http.MethodPost, Path: []string{"refunds"}, Class: IdempotentWithKey}, nil)
		var unknown *OutcomeUnknownError
		require.ErrorAs(t, err, &unknown)
		require.NotEmpty(t, unknown.IdempotencyKey)
		require.Len(t, s.requests(), 3)
		for _, r := range s.requests() {
			assert.Equal(t, unknown.IdempotencyKey, r.header.Get("Idempotency-Key"))
		}
	})
}

// A non-2xx answer is an *APIError with the gateway's code and hint; the
// retries and the transcript come through the view the call was made on.
func TestRawRequestAPIError(t *testing.T) {
	s := newScriptServer(t, step{status: 404, body: `{"code":"not_found","title":"Not found","detail":"No such receipt.","status":"not_found"}`})
	c := newTestClient(t, s.URL, WithToken("tok"))
	_, err := c.Raw(context.Background(), RawRequest{Method: http.MethodGet, Path: []string{"receipts", "r9"}, Class: Idempotent}, nil)
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.ErrorIs(t, err, ErrNotFound)
	assert.Equal(t, CodeNotFound, apiErr.Code)
	assert.NotEmpty(t, apiErr.Hint())
	require.NotNil(t, apiErr.Call)
	assert.Equal(t, "/receipts/r9", apiErr.Call.Path)
	assert.Equal(t, OutcomeAPIError, apiErr.Call.Outcome)
}

// A request the SDK cannot send as asked is refused before anything goes
// out, with a *ValidationError naming the field: a dot segment or an empty
// one (which would address another resource), no path, an unknown method,
// a body on a GET, a key on an operation the caller did not say the gateway
// deduplicates, a class that does not exist, a header value that cannot be
// sent.
func TestRawRequestRefusesWhatItCannotSend(t *testing.T) {
	s := newScriptServer(t, step{status: 200, body: `{}`})
	c := newTestClient(t, s.URL, WithToken("tok"))
	for _, tc := range []struct {
		field string
		req   RawRequest
	}{
		{"path", RawRequest{Method: http.MethodGet, Path: []string{"payments", ".."}}},
		{"path", RawRequest{Method: http.MethodGet, Path: []string{"payments", ".", "x"}}},
		{"path", RawRequest{Method: http.MethodGet, Path: []string{"payments", ""}}},
		{"path", RawRequest{Method: http.MethodGet}},
		{"method", RawRequest{Method: "get", Path: []string{"x"}}},
		{"method", RawRequest{Method: "CONNECT", Path: []string{"x"}}},
		{"method", RawRequest{Path: []string{"x"}}},
		{"body", RawRequest{Method: http.MethodGet, Path: []string{"x"}, Body: map[string]int{}}},
		{"idempotency_key", RawRequest{Method: http.MethodPost, Path: []string{"x"}, IdempotencyKey: "k"}},
		{"idempotency_key", RawRequest{Method: http.MethodPut, Path: []string{"x"}, Class: Idempotent, IdempotencyKey: "k"}},
		{"idempotency_key", RawRequest{Method: http.MethodPost, Path: []string{"x"}, Class: IdempotentWithKey, IdempotencyKey: "k\r\nX-Evil: 1"}},
		{"class", RawRequest{Method: http.MethodPost, Path: []string{"x"}, Class: RetryClass(7)}},
	} {
		_, err := c.Raw(context.Background(), tc.req, nil)
		var ve *ValidationError
		if assert.ErrorAs(t, err, &ve, "%+v", tc.req) {
			assert.Equal(t, tc.field, ve.Field, "%+v", tc.req)
		}
	}
	assert.Empty(t, s.requests(), "a refused request was sent")
}

// A public operation sends no token and never asks the token source; a
// request with the token whose session the gateway refuses is sent once
// more with a new token only when it is safe to repeat.
func TestRawRequestAuthentication(t *testing.T) {
	var asked atomic.Int32
	source := func(context.Context) (string, error) { return "tok-" + strconv.Itoa(int(asked.Add(1))), nil }
	unauthorized := step{status: 401, body: `{"code":"unauthorized","title":"Unauthorized","detail":"Revoked.","status":"unauthorized"}`}

	s := newScriptServer(t, step{status: 200, body: `{}`})
	c := newTestClient(t, s.URL, WithTokenSource(source))
	_, err := c.Raw(context.Background(), RawRequest{Method: http.MethodGet, Path: []string{"status"}, Public: true}, nil)
	require.NoError(t, err)
	assert.Empty(t, s.requests()[0].header.Get("Authorization"))
	assert.Zero(t, asked.Load(), "a public request asked the token source")

	s = newScriptServer(t, unauthorized, step{status: 200, body: `{}`})
	c = newTestClient(t, s.URL, WithTokenSource(source))
	_, err = c.Raw(context.Background(), RawRequest{Method: http.MethodGet, Path: []string{"receipts"}, Class: Idempotent}, nil)
	require.NoError(t, err)
	require.Len(t, s.requests(), 2)
	assert.NotEqual(t, s.requests()[0].header.Get("Authorization"), s.requests()[1].header.Get("Authorization"))

	s = newScriptServer(t, unauthorized, step{status: 200, body: `{}`})
	c = newTestClient(t, s.URL, WithTokenSource(source))
	_, err = c.Raw(context.Background(), RawRequest{Method: http.MethodPost, Path: []string{"refunds"}}, nil)
	require.ErrorIs(t, err, ErrUnauthorized)
	assert.Len(t, s.requests(), 1, "a write that must not run twice was sent again after a 401")
}

// A redirect is not followed: the token never reaches the other origin,
// and the 3xx comes back as an *APIError with its Location.
func TestRawRequestDoesNotFollowRedirects(t *testing.T) {
	var reached atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, _ *http.Request) { reached.Add(1) }))
	defer other.Close()
	target := "http://127.0.0.1:" + strconv.Itoa(other.Listener.Addr().(*net.TCPAddr).Port) + "/elsewhere"
	s := newScriptServer(t, step{status: http.StatusFound, header: map[string]string{"Location": target}})
	c := newTestClient(t, s.URL, WithToken("tok-SECRET"))
	_, err := c.Raw(context.Background(), RawRequest{Method: http.MethodGet, Path: []string{"receipts"}, Class: Idempotent}, nil)
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusFound, apiErr.StatusCode)
	assert.Equal(t, target, apiErr.Location)
	assert.Zero(t, reached.Load(), "the redirect was followed")
}

// A raw request goes through the view it is made on: retries of 429s on
// for a job's view, off for the client's own calls.
func TestRawRequestHonoursTheView(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, opt := newPipeScript(t, throttled("2"), throttled("2"), step{status: 200, body: `{}`})
		c := newTestClient(t, s.URL, opt, WithToken("tok"))
		req := RawRequest{Method: http.MethodGet, Path: []string{"receipts"}, Class: Idempotent}
		_, err := c.Raw(context.Background(), req, nil)
		require.ErrorIs(t, err, ErrRateLimited)
		resp, err := c.With(WithRetryOn429(true)).Raw(context.Background(), req, nil)
		require.NoError(t, err)
		assert.Equal(t, 2, resp.Attempts)
	})
}

// An out that could never take the answer is refused before anything is
// sent: otherwise a write that must not run twice runs on the gateway and
// its caller is told only that its outcome is unknown.
func TestRawRequestRefusesAnOutThatIsNotAPointer(t *testing.T) {
	for name, out := range map[string]any{
		"a struct":       struct{ ID string }{},
		"a nil pointer":  (*struct{ ID string })(nil),
		"a map":          map[string]any{},
		"a string value": "",
	} {
		t.Run(name, func(t *testing.T) {
			s := newScriptServer(t, step{status: 201, body: `{"id":"r1"}`})
			c := newTestClient(t, s.URL, WithToken("tok"))
			_, err := c.Raw(context.Background(), RawRequest{Method: http.MethodPost, Path: []string{"orders"}, Body: map[string]string{"a": "b"}}, out)
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			assert.Equal(t, "out", ve.Field)
			assert.Empty(t, s.requests(), "the write was sent although its answer could never be decoded")
		})
	}
}

// A body encoding/json cannot encode is the caller's mistake, a
// *ValidationError before anything is sent, like every other malformed
// request.
func TestRawRequestRefusesABodyItCannotEncode(t *testing.T) {
	s := newScriptServer(t, step{status: 200, body: `{}`})
	c := newTestClient(t, s.URL, WithToken("tok"))
	_, err := c.Raw(context.Background(), RawRequest{Method: http.MethodPost, Path: []string{"orders"}, Body: map[string]any{"f": func() {}}}, nil)
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "body", ve.Field)
	assert.Empty(t, s.requests())
}
