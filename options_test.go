package rail0

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewClientValidates(t *testing.T) {
	tests := []struct {
		name string
		url  string
		opts []Option
	}{
		{"empty URL", "", nil},
		{"no scheme", "api.rail0.xyz", nil},
		{"ftp scheme", "ftp://api.rail0.xyz", nil},
		{"no host", "https://", nil},
		{"query", "https://api.rail0.xyz/?a=b", nil},
		{"user info", "https://u:p@api.rail0.xyz", nil},
		{"unparseable", "http://[::1", nil},
		{"empty token", "https://api.rail0.xyz", []Option{WithToken(" ")}},
		{"token with newline", "https://api.rail0.xyz", []Option{WithToken("a\nb")}},
		{"nil token source", "https://api.rail0.xyz", []Option{WithTokenSource(nil)}},
		{"token and source", "https://api.rail0.xyz", []Option{WithToken("t"), WithTokenSource(func(context.Context) (string, error) { return "", nil })}},
		{"nil http client", "https://api.rail0.xyz", []Option{WithHTTPClient(nil)}},
		{"empty user agent", "https://api.rail0.xyz", []Option{WithUserAgent("")}},
		{"zero cap", "https://api.rail0.xyz", []Option{WithRetryAfterCap(0)}},
		{"negative allowance", "https://api.rail0.xyz", []Option{WithMaxRetryWait(-time.Second)}},
		{"negative retries", "https://api.rail0.xyz", []Option{WithMaxRetries(-1)}},
		{"nil option", "https://api.rail0.xyz", []Option{nil}},
		{"sign-in domain with a port", "https://api.rail0.xyz", []Option{WithSignIn(SignIn{Domain: "api.rail0.xyz:443"})}},
		{"sign-in URI on another host", "https://api.rail0.xyz", []Option{WithSigner(newSIWESigner()), WithSignIn(SignIn{URI: "https://evil.example"})}},
		{"negative sign-in chain", "https://api.rail0.xyz", []Option{WithSignIn(SignIn{ChainID: -1})}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewClient(tt.url, tt.opts...)
			assert.Error(t, err)
			assert.Nil(t, c)
		})
	}
}

func TestNewClientDefaults(t *testing.T) {
	c, err := NewClient("https://api.rail0.xyz")
	require.NoError(t, err)
	assert.Equal(t, "https://api.rail0.xyz/", c.baseStr)
	assert.Equal(t, policy{retryOn429: false, retryAfterCap: 60 * time.Second, maxRetryWait: 3 * time.Minute, maxRetries: 2, base: 500 * time.Millisecond}, c.policy)
	assert.Nil(t, c.logger)
	assert.NotSame(t, http.DefaultClient, c.hc, "no shared global client")
	inner := c.hc.Transport.(timeoutClient).hc
	assert.NotSame(t, http.DefaultTransport, inner.Transport)
	assert.Equal(t, 30*time.Second, inner.Timeout)
}

// Paths resolve under a base path, whatever its trailing slash.
func TestBasePathIsKept(t *testing.T) {
	srv := newScriptServer(t, step{status: 200, body: paymentBody})
	for _, base := range []string{srv.URL + "/api/v1", srv.URL + "/api/v1/"} {
		c := newTestClient(t, base)
		_, err := c.Payments.Get(context.Background(), "a/b c")
		require.NoError(t, err)
	}
	reqs := srv.requests()
	require.Len(t, reqs, 2)
	for _, r := range reqs {
		assert.Equal(t, "/api/v1/payments/a/b c", r.path)
	}
}

func TestHeadersSent(t *testing.T) {
	srv := newScriptServer(t, step{status: 200, body: paymentBody})
	c := newTestClient(t, srv.URL, WithUserAgent("shop/1.2"), WithToken("t1"))
	_, err := c.Payments.Get(context.Background(), "p1")
	require.NoError(t, err)
	h := srv.requests()[0].header
	assert.Equal(t, "rail0-go/"+Version+" shop/1.2", h.Get("User-Agent"), "the application is added to the SDK, never in its place")
	assert.Equal(t, "Bearer t1", h.Get("Authorization"))
	assert.Equal(t, "application/json", h.Get("Accept"))
	assert.Empty(t, h.Get("Content-Type"), "no body, no Content-Type")
	assert.Empty(t, h.Get("Idempotency-Key"))

	c2 := newTestClient(t, srv.URL)
	_, err = c2.Health.Get(context.Background())
	require.NoError(t, err)
	h = srv.requests()[1].header
	assert.Empty(t, h.Get("Authorization"), "no token, no header")
	assert.Equal(t, "rail0-go/"+Version, h.Get("User-Agent"))
}

// The token source is resolved per call, so a long-lived client follows a
// refresh; its error stops the call before anything is sent.
func TestTokenSourcePerCall(t *testing.T) {
	srv := newScriptServer(t, step{status: 200, body: paymentBody})
	var n atomic.Int32
	c := newTestClient(t, srv.URL, WithTokenSource(func(ctx context.Context) (string, error) {
		switch n.Add(1) {
		case 1:
			return "first", nil
		case 2:
			return "second", nil
		}
		return "", errors.New("signer offline")
	}))
	for range 2 {
		_, err := c.Payments.Get(context.Background(), "p1")
		require.NoError(t, err)
	}
	_, err := c.Payments.Get(context.Background(), "p1")
	assert.ErrorContains(t, err, "signer offline")
	reqs := srv.requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "Bearer first", reqs[0].header.Get("Authorization"))
	assert.Equal(t, "Bearer second", reqs[1].header.Get("Authorization"))
}

// The token source runs once per call, not once per retry.
func TestTokenSourceOncePerCall(t *testing.T) {
	srv := newScriptServer(t, step{status: 503}, step{status: 200, body: paymentBody})
	var n atomic.Int32
	c := newTestClient(t, srv.URL, withRand(func() float64 { return 0 }), WithTokenSource(func(context.Context) (string, error) {
		n.Add(1)
		return "t", nil
	}))
	_, err := c.Payments.Get(context.Background(), "p1")
	require.NoError(t, err)
	assert.Equal(t, int32(1), n.Load())
	assert.Len(t, srv.requests(), 2)
}

// A failed call's error carries its transcript: both attempts, the
// decision on the first, the request id of the last.
func TestErrorCarriesTranscript(t *testing.T) {
	srv := newScriptServer(t, step{status: 503}, step{status: 404, body: `{"code":"not_found","title":"t","detail":"d","status":"not_found"}`})
	c := newTestClient(t, srv.URL, withRand(func() float64 { return 0 }))
	_, err := c.Payments.Get(context.Background(), "p1")
	require.ErrorIs(t, err, ErrNotFound)
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	call := apiErr.Call
	require.NotNil(t, call)
	assert.Same(t, call, CallOf(err))
	assert.Equal(t, OutcomeAPIError, call.Outcome)
	assert.Equal(t, "getPayment", call.Operation)
	assert.Equal(t, "/payments/{id}", call.Route)
	assert.Equal(t, "p1", call.PaymentID)
	require.Len(t, call.Attempts, 2)
	assert.Equal(t, 503, call.Attempts[0].StatusCode)
	assert.True(t, call.Attempts[0].Retry)
	assert.Equal(t, ReasonServerError, call.Attempts[0].Reason)
	assert.False(t, call.Attempts[0].ServerWait)
	assert.Equal(t, 404, call.Attempts[1].StatusCode)
	assert.False(t, call.Attempts[1].Retry)
	assert.Equal(t, "req-xx", call.RequestID())
	assert.Equal(t, 404, call.StatusCode())
}

func TestCanceledContextSendsNothing(t *testing.T) {
	srv := newScriptServer(t, step{status: 200, body: paymentBody})
	c := newTestClient(t, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Payments.Create(ctx, PaymentCreateParams{ChainID: 1, Mode: ModeCharge, Amount: "1", Token: "t", Payer: "a", Payee: "b"})
	assert.ErrorIs(t, err, context.Canceled)
	var te *TransportError
	require.ErrorAs(t, err, &te)
	assert.False(t, te.Sent)
	assert.Empty(t, srv.requests())
}

func TestValidationBeforeAnyRequest(t *testing.T) {
	srv := newScriptServer(t, step{status: 200, body: paymentBody})
	c := newTestClient(t, srv.URL)
	_, err := c.Payments.Get(context.Background(), "")
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "id", ve.Field)
	_, err = c.Payments.Create(context.Background(), PaymentCreateParams{Mode: ModeCharge})
	require.ErrorAs(t, err, &ve)
	assert.Empty(t, srv.requests())
}

func TestHealth503IsAReport(t *testing.T) {
	srv := newScriptServer(t, step{status: 503, body: `{"status":"error","db":"error","timestamp":"2026-09-14T10:00:00Z"}`})
	c := newTestClient(t, srv.URL, WithMaxRetries(0))
	h, err := c.Health.Get(context.Background())
	require.NoError(t, err)
	assert.Equal(t, HealthError, h.Status)
	assert.Equal(t, "error", h.DB)
	assert.Nil(t, h.ActiveChains)
}

// After a 503 and then a broken connection, the transcript's last attempt
// has no answer: no stale status or request id.
func TestTranscriptNotStaleAfterTransportError(t *testing.T) {
	srv := newScriptServer(t, step{status: 503}, step{hangUp: true})
	c := newTestClient(t, srv.URL, withRand(func() float64 { return 0 }), WithMaxRetries(1))
	_, err := c.Payments.Get(context.Background(), "p1")
	var te *TransportError
	require.ErrorAs(t, err, &te)
	assert.Len(t, te.Call.Attempts, 2)
	require.NotNil(t, te.Call)
	assert.Equal(t, OutcomeTransport, te.Call.Outcome)
	require.Len(t, te.Call.Attempts, 2)
	last := te.Call.Attempts[1]
	assert.Zero(t, last.StatusCode)
	assert.Empty(t, last.RequestID)
	assert.NotEmpty(t, last.Err)
	assert.Equal(t, ReasonMaxRetries, last.Reason)
	assert.True(t, last.Refused)
}

func TestWithExpiryBoundsRefusesNonsense(t *testing.T) {
	for _, b := range []ExpiryBounds{
		{MaxAuthorization: -time.Hour},
		{MinRefund: -1},
		{MinRefund: 400 * 24 * time.Hour},
		{MinRefund: 2 * time.Hour, MaxRefund: time.Hour},
	} {
		if _, err := NewClient("https://gateway.example", WithExpiryBounds(b)); err == nil {
			t.Errorf("WithExpiryBounds(%+v) accepted", b)
		}
	}
}

// Issue 22 item 7: the application's identity is added to the SDK's in the
// User-Agent, never in its place (stripe-go's AppInfo): the gateway's
// operator sees both.
func TestUserAgentAddsTheApplication(t *testing.T) {
	for _, tc := range []struct {
		opts []Option
		want string
	}{
		{nil, "rail0-go/" + Version},
		{[]Option{WithUserAgent("shop/2.1")}, "rail0-go/" + Version + " shop/2.1"},
		{[]Option{WithUserAgent("shop/2.1 (+https://shop.example/bot)")}, "rail0-go/" + Version + " shop/2.1 (+https://shop.example/bot)"},
		{[]Option{WithUserAgent("first/1"), WithUserAgent("shop/2.1 worker")}, "rail0-go/" + Version + " shop/2.1 worker"},
	} {
		s := newScriptServer(t, step{status: 200, body: `{"status":"ok"}`})
		c := newTestClient(t, s.URL, tc.opts...)
		_, err := c.Health.Get(context.Background())
		require.NoError(t, err)
		_, err = c.With(WithRetryOn429(true)).Health.Get(context.Background())
		require.NoError(t, err)
		for _, r := range s.requests() {
			assert.Equal(t, tc.want, r.header.Get("User-Agent"))
		}
	}
}

// What WithUserAgent accepts is RFC 9110's User-Agent after the SDK's
// product: products and comments, printable ASCII, bounded. Anything else
// is a *ValidationError from NewClient, before any request.
func TestWithUserAgentRefusesNonsense(t *testing.T) {
	for _, ua := range []string{
		"",
		"   ",
		" shop/2.1",
		"(comment first)",
		"shop/",
		"shop/2.1/3",
		"/2.1",
		"shop /2.1",
		"shop/2.1(no space)",
		"shop/2.1 (unbalanced",
		"shop/2.1 (bad \x01 byte)",
		"shop/2.1\r\nX-Evil: 1",
		"shop/2.1\x00",
		"café/1",
		"shop@home/1",
		"rail0-go/9.9",
		"shop/2.1 Rail0-Go/0.1.0",
		"shop/" + strings.Repeat("1", maxUserAgentApp),
	} {
		_, err := NewClient("https://api.rail0.xyz", WithUserAgent(ua))
		var ve *ValidationError
		if assert.ErrorAs(t, err, &ve, "%q", ua) {
			assert.Equal(t, "WithUserAgent", ve.Field)
			assert.NotContains(t, err.Error(), "\n", "%q", ua)
		}
	}
	for _, ua := range []string{
		"shop",
		"shop/2.1",
		"Shop_Bot/2.1-rc.1+build.7",
		"shop/2.1 (linux; +https://shop.example) worker/3",
		"shop/2.1 (nested (comment) \\) quoted)",
		"shop/2.1\tworker/3",
	} {
		_, err := NewClient("https://api.rail0.xyz", WithUserAgent(ua))
		assert.NoError(t, err, "%q", ua)
	}
}

// Formatting the client, its options' results, what the observer hears,
// the transcript and errors never shows the token.
func TestTokenNeverFormatted(t *testing.T) {
	const secret = "tok-SECRET-42"
	srv := newScriptServer(t, throttled("60"), throttled("60"))
	ev := &eventLog{}
	c := newTestClient(t, srv.URL, WithToken(secret), WithRetryOn429(true),
		WithRetryAfterCap(time.Millisecond), WithMaxRetryWait(time.Millisecond), WithObserver(ev))
	_, err := c.Payments.Get(context.Background(), "p1")
	require.Error(t, err)
	require.NotEmpty(t, ev.all())
	for _, v := range []any{c, *c.Payments, err, ev.all(), CallOf(err), *CallOf(err)} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
			assert.NotContains(t, fmt.Sprintf(verb, v), secret, "verb %s on %T", verb, v)
		}
	}
}

// Loopback is localhost and the loopback addresses, IPv6 and mapped ones
// included; no name is resolved.
func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LocalHost": true, "127.0.0.1": true, "127.255.0.9": true, "::1": true,
		"::ffff:127.0.0.1": true, "api.rail0.xyz": false, "localhost.evil.example": false,
		"10.0.0.1": false, "::": false, "2001:db8::1": false, "": false, "127.0.0.1.nip.io": false,
	} {
		assert.Equal(t, want, isLoopback(host), host)
	}
}
