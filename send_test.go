package rail0

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The CheckRetry hook decides and never waits, even after a transport
// error, when go-retryablehttp hands Backoff no response: the call's
// Backoff reads the wait from the call's own state, so go-retryablehttp's
// timer is the one wait between an answer and its retry.
func TestCheckRetryNeverWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestClient(t, "http://gateway.test", withRand(func() float64 { return 0.5 }))
		ctx, call := c.startCall(context.Background(), &request{method: http.MethodGet, path: "payments/p1"})
		st := c.newCall(&request{method: http.MethodGet, path: "payments/p1"}, call)
		c.beforeAttempt(&http.Request{Header: http.Header{}}, st)
		reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}

		start := time.Now()
		retry, err := st.rc.CheckRetry(ctx, nil, reset)

		assert.Zero(t, time.Since(start), "CheckRetry waited")
		require.True(t, retry)
		require.NoError(t, err)
		wait := st.rc.Backoff(st.rc.RetryWaitMin, st.rc.RetryWaitMax, 0, nil)
		assert.Equal(t, defaultBackoffBase/2, wait, "the decided wait: half the first window at the draw 0.5")
		assert.Equal(t, wait, call.Attempts[0].Wait, "the wait reported is the wait taken")
		assert.Zero(t, st.rc.Backoff(st.rc.RetryWaitMin, st.rc.RetryWaitMax, 0, nil), "a decided wait paces one retry only")
	})
}

// Each call sends with a go-retryablehttp client of its own, whose hooks
// belong to that call: two calls in flight at once each see only their own
// answers, and the context a call's attempts carry is the caller's.
func TestEachCallHasItsOwnHooks(t *testing.T) {
	type ctxKey struct{}
	var mu sync.Mutex
	var seen []context.Context
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		seen = append(seen, r.Context())
		mu.Unlock()
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
	})
	c := newTestClient(t, "http://gateway.test", WithHTTPClient(&http.Client{Transport: rt}))
	ctx := context.WithValue(context.Background(), ctxKey{}, "caller")
	a := c.newCall(&request{method: http.MethodGet, path: "payments/a"}, &Call{Path: "/payments/a"})
	b := c.newCall(&request{method: http.MethodGet, path: "payments/b"}, &Call{Path: "/payments/b"})
	require.NotSame(t, &a.rc, &b.rc)

	_, err := a.send(ctx, &request{method: http.MethodGet, path: "payments/a"}, nil, "tok")
	require.NoError(t, err)
	assert.Equal(t, 1, a.attempts)
	assert.Zero(t, b.attempts, "one call's hook counted another call's attempt")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, 1)
	assert.Equal(t, ctx, seen[0], "the attempt carries the caller's context, with nothing added")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A token source of the caller's own that hands out a new token when asked
// again after a 401 gets the call sent once more with it, like a
// TokenSource: the client learns which session a call used from the token
// the source returned, not from a note the source leaves in the context. A
// source that returns the refused token again gets the 401 back after one
// request.
func TestAnySourceWithANewTokenGetsTheResend(t *testing.T) {
	srv := newScriptServer(t, step{status: http.StatusUnauthorized, body: `{"code":"unauthorized","title":"Unauthorized","detail":"Token revoked.","status":"unauthorized"}`},
		step{status: http.StatusOK, body: paymentBody})
	var mu sync.Mutex
	var asked []string
	tokens := []string{"tok-1", "tok-2"}
	c := newTestClient(t, srv.URL, WithTokenSource(func(ctx context.Context) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		refused := ""
		if n, ok := ctx.Value(sessionRefusalKey{}).(sessionRefusal); ok {
			refused = n.token
		}
		asked = append(asked, refused)
		return tokens[min(len(asked), len(tokens))-1], nil
	}))

	p, err := c.Payments.Get(context.Background(), "p1")

	require.NoError(t, err)
	assert.Equal(t, 2, p.Response.Attempts)
	assert.Equal(t, ReasonSessionRefused, p.Response.Call.Attempts[0].Reason)
	assert.Equal(t, []string{"", "tok-1"}, asked, "asked once, then once more with the refused token")
	reqs := srv.requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "Bearer tok-1", reqs[0].header.Get("Authorization"))
	assert.Equal(t, "Bearer tok-2", reqs[1].header.Get("Authorization"))

	// A fixed token: asked again, the same token; the 401 comes back.
	same := newScriptServer(t, step{status: http.StatusUnauthorized, body: `{"code":"unauthorized","title":"Unauthorized","detail":"Token revoked.","status":"unauthorized"}`})
	fixed := newTestClient(t, same.URL, WithToken("tok-fixed"))
	_, err = fixed.Payments.Get(context.Background(), "p1")
	require.ErrorIs(t, err, ErrUnauthorized)
	assert.Len(t, same.requests(), 1)
}

// After a 401, a source that fails when asked for a new session fails the
// call with its own error, and nothing more is sent.
func TestSourceFailingAfterARefusal(t *testing.T) {
	srv := newScriptServer(t, step{status: http.StatusUnauthorized, body: `{"code":"unauthorized","title":"Unauthorized","detail":"Token revoked.","status":"unauthorized"}`})
	boom := errors.New("vault sealed")
	c := newTestClient(t, srv.URL, WithTokenSource(func(ctx context.Context) (string, error) {
		if _, ok := ctx.Value(sessionRefusalKey{}).(sessionRefusal); ok {
			return "", boom
		}
		return "tok-1", nil
	}))
	_, err := c.Payments.Get(context.Background(), "p1")
	require.ErrorIs(t, err, boom)
	assert.True(t, strings.HasPrefix(err.Error(), "rail0: token source: "), err.Error())
	assert.Len(t, srv.requests(), 1)
}
