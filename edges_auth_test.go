package rail0

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// revocationGateway is the sign-in routes of authGateway plus
// GET /payments/{id}, which answers 401 to revoked tokens. Requests with a
// revoked token are held until holdFor of them have arrived, so that all
// were sent with the old session; then one 401 goes out, and the others
// only once that call comes back with a new session: they are late 401s,
// arriving after the token source has signed in again.
type revocationGateway struct {
	*authGateway
	holdFor   int
	refuseAll bool // answer 401 to every token, at once

	mu       sync.Mutex
	revoked  map[string]bool
	held     int
	allIn    chan struct{} // closed when holdFor revoked requests arrived
	late     chan struct{} // closed when a new session is first used
	lateOnce sync.Once
	refused  int
	answered int
	logouts  int
}

func newRevocationGateway(t *testing.T, holdFor int) (*revocationGateway, *httptest.Server, *authClock) {
	clock := newAuthClock()
	g := &revocationGateway{
		authGateway: &authGateway{t: t, clock: clock, lifetime: 10 * time.Minute,
			nonces: map[string]bool{}, tokens: map[string]time.Time{}, verifyBegan: make(chan struct{}, 16)},
		holdFor: holdFor, revoked: map[string]bool{}, allIn: make(chan struct{}), late: make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+muxBasePath+"/auth/nonces", g.nonce)
	mux.HandleFunc("POST "+muxBasePath+"/auth", g.verify)
	mux.HandleFunc("GET "+muxBasePath+"/payments/{id}", g.payment)
	mux.HandleFunc("POST "+muxBasePath+"/payments/{id}/capture", g.payment) // the same 401 rules
	mux.HandleFunc("POST "+muxBasePath+"/auth/logout", func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.logouts++
		g.mu.Unlock()
		g.payment(w, r) // the same 401 rules
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return g, srv, clock
}

func (g *revocationGateway) payment(w http.ResponseWriter, r *http.Request) {
	refuse := func() {
		authWriteJSON(w, http.StatusUnauthorized, `{"code":"unauthorized","title":"Unauthorized","detail":"Token revoked.","status":"unauthorized"}`)
	}
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	g.mu.Lock()
	if g.refuseAll {
		g.refused++
		g.mu.Unlock()
		refuse()
		return
	}
	if !g.revoked[tok] {
		if len(g.revoked) > 0 {
			g.lateOnce.Do(func() { close(g.late) })
		}
		g.answered++
		g.mu.Unlock()
		authWriteJSON(w, http.StatusOK, paymentBody)
		return
	}
	g.held++
	n := g.held
	if n == g.holdFor {
		close(g.allIn)
	}
	g.mu.Unlock()
	for _, wait := range []chan struct{}{g.allIn, g.late} {
		if wait == g.late && n == 1 {
			break // the first 401 goes out at once
		}
		select {
		case <-wait:
		case <-r.Context().Done():
			return
		}
	}
	g.mu.Lock()
	g.refused++
	g.mu.Unlock()
	refuse()
}

func (g *revocationGateway) revoke(tok string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.revoked[tok] = true
}

// After a revocation, 40 concurrent calls that all carried the revoked
// session cost exactly one sign-in: each 401 drops only the session it was
// sent with (the late ones find a newer session and keep it), the sign-in
// is shared, and every call is sent once more and succeeds.
func TestRevokedSessionCostsOneSignIn(t *testing.T) {
	const workers = 40
	g, srv, clock := newRevocationGateway(t, workers)
	anon := newAuthClient(t, srv, clock)
	ts, err := loginTokenSource(anon.Auth, newSIWESigner(), SignIn{}, withSessionClock(clock.Now))
	require.NoError(t, err)
	c := newAuthClient(t, srv, clock, WithTokenSource(ts.Token))
	ctx := context.Background()
	_, err = c.Payments.Get(ctx, "p1")
	require.NoError(t, err)
	first, err := ts.Token(ctx)
	require.NoError(t, err)
	g.revoke(first)

	errs := make(chan error, workers)
	for range workers {
		go func() {
			_, err := c.Payments.Get(ctx, "p1")
			errs <- err
		}()
	}
	for range workers {
		assert.NoError(t, <-errs)
	}
	_, _, logins := g.counts()
	assert.Equal(t, 2, logins, "sign-ins: the first one and one after the revocation")
	g.mu.Lock()
	defer g.mu.Unlock()
	assert.Equal(t, workers, g.refused)
	assert.Equal(t, 1+workers, g.answered)
	now, err := ts.Token(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, first, now)
}

// A call refused 401 again after signing in again returns that 401: the
// call is sent once more, not more. A fixed token (WithToken) has no one to
// sign in again, so its 401 comes back after one attempt.
func TestUnauthorizedSentOnceMoreOnly(t *testing.T) {
	g, srv, clock := newRevocationGateway(t, 1)
	g.refuseAll = true
	anon := newAuthClient(t, srv, clock)
	ts, err := loginTokenSource(anon.Auth, newSIWESigner(), SignIn{}, withSessionClock(clock.Now))
	require.NoError(t, err)
	var logs bytes.Buffer // written by the calling goroutine only
	c := newAuthClient(t, srv, clock, WithTokenSource(ts.Token), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))

	_, err = c.Payments.Get(context.Background(), "p1")

	require.ErrorIs(t, err, ErrUnauthorized)
	// One call, one transcript: the 401 that made it sign in, then the
	// second 401 returned.
	call := CallOf(err)
	require.NotNil(t, call)
	require.Len(t, call.Attempts, 2)
	assert.True(t, call.Attempts[0].Retry)
	assert.Equal(t, ReasonSessionRefused, call.Attempts[0].Reason)
	assert.False(t, call.Attempts[1].Retry)
	_, _, logins := g.counts()
	assert.Equal(t, 2, logins)
	assert.Equal(t, 1, strings.Count(logs.String(), "reason=session_refused"), logs.String())
	assert.Equal(t, 1, strings.Count(call.String(), "-> sent again at once with a new token (session_refused)"), "the send after signing in again is a retry")
	assert.NotContains(t, logs.String(), "jwt-")
	g.mu.Lock()
	assert.Equal(t, 2, g.refused)
	g.mu.Unlock()

	// A write that must not run twice is not sent again after a 401: a
	// proxy might have answered 401 after the gateway ran it. The session is
	// dropped; the next call signs in.
	_, err = c.Payments.Submit(context.Background(), "p1", OpCapture, PaymentSubmitParams{SignedTransaction: "0x02f8"})
	require.ErrorIs(t, err, ErrUnauthorized)
	require.Len(t, CallOf(err).Attempts, 1)
	g.mu.Lock()
	assert.Equal(t, 3, g.refused)
	g.mu.Unlock()
	_, _, logins = g.counts()
	assert.Equal(t, 2, logins)

	fixed := newAuthClient(t, srv, clock, WithToken("tok-fixed"))
	_, err = fixed.Payments.Get(context.Background(), "p1")
	require.ErrorIs(t, err, ErrUnauthorized)
	g.mu.Lock()
	assert.Equal(t, 4, g.refused)
	g.mu.Unlock()

	// Logging out a session the gateway refuses does not sign in again.
	_, err = c.Auth.Logout(context.Background())
	require.ErrorIs(t, err, ErrUnauthorized)
	g.mu.Lock()
	assert.Equal(t, 1, g.logouts)
	assert.Equal(t, 5, g.refused)
	g.mu.Unlock()
	_, _, logins = g.counts()
	assert.Equal(t, 3, logins) // the session the submit's 401 dropped
}

// pipeListener is an in-memory network for an httptest.Server inside a
// synctest bubble: real sockets are not durably blocking, so the bubble's
// clock would never advance while a request is in flight.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// In a shared sign-in, the leader with 300 ms left is refused a 2 s
// Retry-After at once (RetryRefused); a follower with 15 s left does not
// inherit that refusal: it signs in itself, waiting the 2 s under its own
// budget, and gets a session.
func TestSignInFollowerDoesNotInheritLeaderRefusal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := &authClock{now: time.Now()}
		g := &authGateway{t: t, clock: clock, lifetime: 10 * time.Minute,
			nonces: map[string]bool{}, tokens: map[string]time.Time{}, verifyBegan: make(chan struct{}, 16)}
		release := make(chan struct{})
		var nonceCalls int
		var mu sync.Mutex
		mux := http.NewServeMux()
		mux.HandleFunc("POST "+muxBasePath+"/auth/nonces", func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			nonceCalls++
			first := nonceCalls == 1
			mu.Unlock()
			if first {
				<-release
				w.Header().Set("Retry-After", "2")
				authWriteJSON(w, http.StatusTooManyRequests, rateLimitedBody)
				return
			}
			g.nonce(w, r)
		})
		mux.HandleFunc("POST "+muxBasePath+"/auth", g.verify)
		ln := newPipeListener()
		srv := httptest.NewUnstartedServer(mux)
		srv.Listener.Close()
		srv.Listener = ln
		srv.Start()
		transport := &http.Transport{DialContext: ln.dial}
		defer func() {
			srv.Close()
			transport.CloseIdleConnections()
		}()
		anon, err := NewClient(srv.URL+muxBasePath, WithHTTPClient(&http.Client{Transport: transport}), WithRetryOn429(true))
		require.NoError(t, err)
		ts, err := loginTokenSource(anon.Auth, newSIWESigner(), SignIn{})
		require.NoError(t, err)

		leaderCtx, cancelLeader := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancelLeader()
		leaderErr := make(chan error, 1)
		go func() {
			_, err := ts.Token(leaderCtx)
			leaderErr <- err
		}()
		synctest.Wait() // the leader's nonce request is held by the gateway
		followerCtx, cancelFollower := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancelFollower()
		type result struct {
			tok string
			err error
		}
		follower := make(chan result, 1)
		go func() {
			tok, err := ts.Token(followerCtx)
			follower <- result{tok, err}
		}()
		synctest.Wait() // the follower waits for the leader's sign-in
		start := time.Now()
		close(release)

		var apiErr *APIError
		err = <-leaderErr
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, ReasonDeadline, apiErr.Call.NotRetried(), "the leader's 429: %v", err)
		got := <-follower
		require.NoError(t, got.err)
		assert.Equal(t, "jwt-1", got.tok)
		assert.GreaterOrEqual(t, time.Since(start), 2*time.Second, "the follower sent before the Retry-After")
		mu.Lock()
		assert.Equal(t, 2, nonceCalls)
		mu.Unlock()
		_, _, logins := g.counts()
		assert.Equal(t, 1, logins)
		assert.False(t, errors.Is(got.err, ErrRateLimited))
	})
}

// scriptedSessionGateway serves sign-ins and answers route with statuses,
// one per request, the last repeated. It returns a client signed in through
// a TokenSource with opts, and the number of requests route received.
func scriptedSessionGateway(t *testing.T, route string, statuses []int, opts ...Option) (*Client, func() int) {
	t.Helper()
	clock := &authClock{now: time.Now()} // the bubble's; the test lasts seconds
	g := &authGateway{t: t, clock: clock, lifetime: 10 * time.Minute,
		nonces: map[string]bool{}, tokens: map[string]time.Time{}, verifyBegan: make(chan struct{}, 16)}
	var mu sync.Mutex
	sent := 0
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+muxBasePath+"/auth/nonces", g.nonce)
	mux.HandleFunc("POST "+muxBasePath+"/auth", g.verify)
	method, path, _ := strings.Cut(route, " ")
	mux.HandleFunc(method+" "+muxBasePath+path, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		status := statuses[min(sent, len(statuses)-1)]
		sent++
		mu.Unlock()
		switch status {
		case http.StatusTooManyRequests:
			w.Header().Set("Retry-After", "2")
			authWriteJSON(w, status, rateLimitedBody)
		case http.StatusUnauthorized:
			authWriteJSON(w, status, `{"code":"unauthorized","title":"Unauthorized","detail":"Token revoked."}`)
		case http.StatusOK, http.StatusCreated:
			authWriteJSON(w, status, paymentBody)
		default:
			authWriteJSON(w, status, `{"code":"error","title":"Error","detail":"scripted"}`)
		}
	})
	hc := pipeClient(t, mux)
	anon, err := NewClient("http://gateway.test"+muxBasePath, WithHTTPClient(hc))
	require.NoError(t, err)
	ts, err := loginTokenSource(anon.Auth, newSIWESigner(), SignIn{})
	require.NoError(t, err)
	c, err := NewClient("http://gateway.test"+muxBasePath, append([]Option{WithHTTPClient(hc), WithTokenSource(ts.Token)}, opts...)...)
	require.NoError(t, err)
	return c, func() int {
		mu.Lock()
		defer mu.Unlock()
		return sent
	}
}

// The send after a sign-in is a retry of the same call: the observer hears
// it as one (EndAttempt, once decided), and it spends the call's one
// allowance.
// Here a 429 (Retry-After 2 s) is retried, the retry meets a revoked
// session (401), the client signs in and sends again, and that send gets
// another 429: with 3 s of MaxRetryWait and 2 s already spent, the call
// returns it instead of waiting 2 s more, as it would with a fresh
// allowance.
func TestSessionRefusedResendSharesTheCallsAllowance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev := &eventLog{}
		c, sent := scriptedSessionGateway(t, "GET /payments/{id}",
			[]int{http.StatusTooManyRequests, http.StatusUnauthorized, http.StatusTooManyRequests, http.StatusOK},
			WithRetryOn429(true), WithMaxRetryWait(3*time.Second), WithObserver(ev))

		_, err := c.Payments.Get(context.Background(), "p1")

		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, http.StatusTooManyRequests, apiErr.StatusCode)
		assert.Len(t, apiErr.Call.Attempts, 3)
		assert.Equal(t, 3, sent(), "the last 429 was retried on a fresh allowance")
		assert.Equal(t, 2, ev.retries())
		assert.Equal(t, map[RetryReason]int{ReasonAllowance: 1}, ev.refusals())
		var reasons []RetryReason
		for _, e := range ev.all() {
			reasons = append(reasons, e.Reason)
		}
		assert.Equal(t, []RetryReason{ReasonRateLimited, ReasonSessionRefused, ReasonAllowance}, reasons)
	})
}

// The send after a 401 inherits the retries the policy counted: a 401
// after a 503 buys no fresh 5xx retries (WithMaxRetries bounds the call,
// not each send).
func TestSessionRefusedResendKeepsTheRetriesCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, sent := scriptedSessionGateway(t, "GET /payments/{id}",
			[]int{http.StatusServiceUnavailable, http.StatusUnauthorized, http.StatusServiceUnavailable},
			WithMaxRetries(2))

		_, err := c.Payments.Get(context.Background(), "p1")

		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, http.StatusServiceUnavailable, apiErr.StatusCode)
		assert.Equal(t, 4, sent(), "503, 401, 503, 503: two 5xx retries and the resend, not two more after it")
	})
}

// The send after a 401 inherits what the earlier attempts may have done: a
// write that an earlier attempt may have run ends as outcome unknown,
// whatever the last answer.
func TestSessionRefusedResendKeepsOutcomeUnknown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, sent := scriptedSessionGateway(t, "POST /payments",
			[]int{http.StatusServiceUnavailable, http.StatusUnauthorized, http.StatusConflict})

		_, err := c.Payments.Create(context.Background(), PaymentCreateParams{ChainID: 84532, Mode: ModeAuthorize,
			Amount: "1.00", Token: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
			Payer: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4", Payee: "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2",
			IdempotencyKey: "k1"})

		require.ErrorIs(t, err, ErrOutcomeUnknown, "the first 503 may have created the payment")
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, http.StatusConflict, apiErr.StatusCode)
		assert.Equal(t, 3, sent())
	})
}

// A call made with a token and answered 401 asks the token source once
// more; a source that then answers "" (it has no token any more) does not
// turn the call into a public one: the 401 is returned and nothing more is
// sent. It went out without a token before, on the public partition, where
// a caller who meant to act as itself got the gateway's answer to nobody.
func TestUnauthorizedThenNoTokenSendsNothingMore(t *testing.T) {
	var mu sync.Mutex
	var withToken, without int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Header.Get("Authorization") == "" {
			without++
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"data": [], "pagination": {"total": 0, "limit": 20, "offset": 0}}`))
			return
		}
		withToken++
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"code": "unauthorized", "title": "Unauthorized", "detail": "The session has expired.", "status": "unauthorized"}`))
	}))
	t.Cleanup(srv.Close)
	asked := 0
	source := func(context.Context) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		asked++
		if asked == 1 {
			return "tok-1", nil
		}
		return "", nil
	}
	c := newTestClient(t, srv.URL, WithTokenSource(source))
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"a read", func() error { _, err := c.Payments.Get(context.Background(), "p1"); return err }},
		{"a list", func() error { _, err := c.Payments.List(context.Background(), PaymentListParams{}); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			withToken, without, asked = 0, 0, 0
			mu.Unlock()
			err := tc.call()
			var apiErr *APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, http.StatusUnauthorized, apiErr.StatusCode)
			assert.ErrorIs(t, err, ErrUnauthorized)
			require.NotNil(t, apiErr.Call)
			assert.Len(t, apiErr.Call.Attempts, 1)
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, 1, withToken, "the call went out once, with its token")
			assert.Equal(t, 0, without, "nothing went out without a token")
			assert.Equal(t, 2, asked, "the source was asked for the call and once after the 401")
		})
	}
}
