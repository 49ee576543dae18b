package rail0

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rail0/rail0-go/internal/secret"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Session hands out a deep copy: writing through its pointer fields does
// not change what the next call returns.
func TestTokenSourceSessionIsADeepCopy(t *testing.T) {
	_, _, _, ts := newTokenSourceSetup(t)
	ctx := context.Background()
	s, err := ts.Session(ctx)
	require.NoError(t, err)
	require.NotNil(t, s.AccountID)
	require.NotNil(t, s.Name)
	require.NotNil(t, s.Response)
	account, name := *s.AccountID, *s.Name
	*s.AccountID, *s.Name, s.token = "tampered", "tampered", secret.New("tampered")
	s.Response.RequestID = "tampered"
	s.Response.Header.Set("X-Tampered", "1")

	again, err := ts.Session(ctx)
	require.NoError(t, err)
	assert.Equal(t, account, *again.AccountID)
	assert.Equal(t, name, *again.Name)
	assert.NotEqual(t, "tampered", again.Token())
	assert.NotEqual(t, "tampered", again.Response.RequestID)
	assert.Empty(t, again.Response.Header.Get("X-Tampered"))
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

// siweGateway is a gateway whose clock is offset from the local one: it
// dates its answers (Date) by its clock, refuses a SIWE message whose
// Issued At is more than five minutes from it (invalid_siwe, "Issued At is
// too far"), issues sessions that expire on it, and serves GET
// /payments/{id} to a session it has not seen expire. It runs on the
// in-memory network of pipeServer, for synctest bubbles.
type siweGateway struct {
	t        *testing.T
	offset   time.Duration
	lifetime time.Duration
	url      string
	opt      Option
	// beforeNonce, when set, may answer POST /auth/nonces itself.
	beforeNonce func(w http.ResponseWriter) bool

	mu      sync.Mutex
	seen    []string
	logins  int
	tokens  map[string]time.Time
	expired int // requests made with a token expired on the gateway's clock
}

func newSIWEGateway(t *testing.T, offset time.Duration) *siweGateway {
	g := &siweGateway{t: t, offset: offset, lifetime: 30 * time.Minute, tokens: map[string]time.Time{}}
	srv, opt := pipeServer(t, g)
	g.url, g.opt = srv.URL, opt
	return g
}

func (g *siweGateway) now() time.Time { return time.Now().Add(g.offset) }

func (g *siweGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	g.seen = append(g.seen, r.Method+" "+r.URL.Path)
	n := len(g.seen) // read under the lock: requests arrive concurrently
	g.mu.Unlock()
	w.Header().Set("Date", g.now().UTC().Format(http.TimeFormat))
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/auth/nonces":
		if g.beforeNonce != nil && g.beforeNonce(w) {
			return
		}
		authWriteJSON(w, http.StatusCreated, `{"nonce":"n`+fmt.Sprint(n)+`","expires_at":"`+g.now().Add(5*time.Minute).Format(time.RFC3339)+`"}`)
	case r.Method == http.MethodPost && r.URL.Path == "/auth":
		var body struct{ Message, Signature string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		m := siweLayout.FindStringSubmatch(body.Message)
		if m == nil {
			authWriteJSON(w, http.StatusUnprocessableEntity, `{"code":"invalid_siwe","title":"Invalid SIWE","detail":"Malformed message.","status":"invalid_siwe"}`)
			return
		}
		at, err := time.Parse(time.RFC3339, m[7])
		if err != nil || at.Sub(g.now()).Abs() > 5*time.Minute {
			authWriteJSON(w, http.StatusUnprocessableEntity, `{"code":"invalid_siwe","title":"Invalid SIWE","detail":"Issued At is too far from the current time.","status":"invalid_siwe"}`)
			return
		}
		if !siweRecovers(m[2], body.Message, body.Signature) {
			authWriteJSON(w, http.StatusUnprocessableEntity, `{"code":"signer_mismatch","title":"Refused","detail":"Wrong signer.","status":"signer_mismatch"}`)
			return
		}
		g.mu.Lock()
		g.logins++
		tok := fmt.Sprintf("jwt-%d", g.logins)
		exp := g.now().Add(g.lifetime).Truncate(time.Second)
		g.tokens[tok] = exp
		g.mu.Unlock()
		authWriteJSON(w, http.StatusCreated, fmt.Sprintf(`{"token":%q,"address":%q,"account_id":null,"name":null,"expires_at":%q}`,
			tok, m[2], exp.Format(time.RFC3339)))
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/payments/"):
		g.mu.Lock()
		exp, ok := g.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if ok && !g.now().Before(exp) {
			g.expired++
			ok = false
		}
		g.mu.Unlock()
		if !ok {
			authWriteJSON(w, http.StatusUnauthorized, `{"code":"unauthorized","title":"Unauthorized","detail":"Token expired.","status":"unauthorized"}`)
			return
		}
		authWriteJSON(w, http.StatusOK, paymentBody)
	default:
		g.t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
	}
}

func (g *siweGateway) requests() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.seen)
}

func (g *siweGateway) paths() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.seen...)
}

func (g *siweGateway) counts() (logins, expired int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.logins, g.expired
}

// writeThrottled answers as the gateway's throttle does: 429 with
// Retry-After and the rate_limited envelope.
func writeThrottled(w http.ResponseWriter, retryAfter string) {
	w.Header().Set("Retry-After", retryAfter)
	authWriteJSON(w, http.StatusTooManyRequests, rateLimitedBody)
}

// The sign-in a client created WithSigner makes is shared by every caller
// that needs a session meanwhile, whatever view it calls through. These
// tests pin what each of them gets while and after it runs.

// newSIWEGatewayThrottlingFirstNonce is a siweGateway that answers the
// first POST /auth/nonces 429 with retryAfter, and counts them.
func newSIWEGatewayThrottlingFirstNonce(t *testing.T, retryAfter string) (*siweGateway, *atomic.Int32) {
	var nonces atomic.Int32
	gw := newSIWEGateway(t, 0)
	gw.beforeNonce = func(w http.ResponseWriter) bool {
		if nonces.Add(1) == 1 {
			writeThrottled(w, retryAfter)
			return true
		}
		return false
	}
	return gw, &nonces
}

// A handler's call (its view does not retry 429s: every 429 comes back at
// once) that needs a session while a job's sign-in waits out a 429 does
// not sleep through that wait: it gets the 429 at once, not sent, with the
// wait that is left. The job's sign-in goes on.
func TestHandlerDoesNotSleepOnAJobsSignIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gw, nonces := newSIWEGatewayThrottlingFirstNonce(t, "30")
		c := newTestClient(t, gw.url, gw.opt, WithSigner(newSIWESigner()), withRand(half))
		ctx := context.Background()
		jobDone := make(chan error, 1)
		go func() {
			_, err := c.With(WithRetryOn429(true)).Payments.Get(ctx, "p")
			jobDone <- err
		}()
		synctest.Wait() // the job's sign-in is waiting out the nonce's 429
		start := time.Now()
		_, err := c.With(WithRetryOn429(false)).Payments.Get(ctx, "p")
		assert.Zero(t, time.Since(start), "the handler's call slept through the job's 429")
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.ErrorIs(t, err, ErrRateLimited)
		assert.True(t, apiErr.NotSent)
		assert.Equal(t, "/auth/nonces", apiErr.Path, "the request whose wait it did not take")
		assert.Positive(t, apiErr.RetryAfter)
		assert.LessOrEqual(t, apiErr.RetryAfter, 33*time.Second, "the job's wait left: the instruction plus its jitter, a tenth at most")
		require.NoError(t, <-jobDone)
		assert.Equal(t, int32(2), nonces.Load(), "the handler's call asked for no nonce of its own")
	})
}

// A caller whose context ends while the sign-in it waits for waits out a
// 429 gets that 429, matching its context's error too.
func TestCallerCancelledWhileTheSignInWaitsOutA429(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gw, _ := newSIWEGatewayThrottlingFirstNonce(t, "30")
		c := newTestClient(t, gw.url, gw.opt, WithSigner(newSIWESigner()), withRand(half))
		job := c.With(WithRetryOn429(true))
		jobDone := make(chan error, 1)
		go func() {
			_, err := job.Payments.Get(context.Background(), "p")
			jobDone <- err
		}()
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(5*time.Second, cancel)
		_, err := job.Payments.Get(ctx, "q")
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, ErrRateLimited)
		require.NoError(t, <-jobDone)
	})
}

// A sign-in's error is shared by every caller that waited for it: each
// caller's own transcript must not be written into it (a data race under
// -race, and each caller would read another's GET as the nonce's call).
func TestSharedSignInErrorKeepsItsOwnTranscript(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		gw := newSIWEGateway(t, 0)
		var first atomic.Bool
		gw.beforeNonce = func(w http.ResponseWriter) bool {
			if !first.Swap(true) {
				<-release
			}
			authWriteJSON(w, http.StatusForbidden, `{"code":"forbidden","title":"Forbidden","detail":"no sign-in today","status":"forbidden"}`)
			return true
		}
		c := newTestClient(t, gw.url, gw.opt, WithSigner(newSIWESigner()))
		const n = 6
		errs := make(chan error, n)
		for i := range n {
			go func() {
				_, err := c.Payments.Get(context.Background(), "p"+strconv.Itoa(i))
				errs <- err
			}()
		}
		synctest.Wait() // one leads the sign-in, the others wait for it
		close(release)
		for range n {
			err := <-errs
			var apiErr *APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, http.StatusForbidden, apiErr.StatusCode)
			require.NotNil(t, apiErr.Call)
			assert.Equal(t, "/auth/nonces", apiErr.Call.Path, "the nonce's 403 carries another call's transcript: %s", apiErr.Call)
		}
	})
}

// A read whose sign-in lost its answer (the connection broke after POST
// /auth was written) is not a write of unknown outcome: the sign-in spent
// a nonce at most, and the read was never sent.
func TestReadWhoseSignInBrokeIsNotOutcomeUnknown(t *testing.T) {
	gw := newSIWEGateway(t, 0)
	var broke atomic.Bool
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/auth" && !broke.Swap(true) {
			conn, _, err := w.(http.Hijacker).Hijack()
			require.NoError(t, err)
			conn.Close()
			return
		}
		gw.ServeHTTP(w, r)
	})
	_, opt := pipeServer(t, h)
	c := newTestClient(t, gw.url, opt, WithSigner(newSIWESigner()))
	_, err := c.Payments.Get(context.Background(), "p1")
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrOutcomeUnknown, "a GET reported as a write of unknown outcome")
	var te *TransportError
	assert.ErrorAs(t, err, &te, "the broken connection")
	assert.Equal(t, 1, strings.Count(err.Error(), "sign-in"), "the sign-in is named once: %v", err)
	_, err = c.Payments.Get(context.Background(), "p1")
	assert.NoError(t, err, "the next call signs in again")
}

// A 401 a client's write got reaches its token source in the context; a
// WithTokenSource function that asks another rail0 client for its token
// with that context must not make that client take the refusal for its
// own (and send its call without a token).
func TestSessionRefusalStaysWithItsClient(t *testing.T) {
	gw := newSIWEGateway(t, 0)
	var bare atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.Header.Get("Authorization") == "" {
			bare.Add(1)
		}
		gw.ServeHTTP(w, r)
	})
	_, opt := pipeServer(t, h)
	vault := newTestClient(t, gw.url, opt, WithSigner(newSIWESigner()))
	shop := newScriptServer(t, step{status: http.StatusUnauthorized,
		body: `{"code":"unauthorized","title":"Unauthorized","detail":"Token expired.","status":"unauthorized"}`})
	var asked atomic.Int32
	c := newTestClient(t, shop.URL, WithTokenSource(func(ctx context.Context) (string, error) {
		asked.Add(1)
		if _, err := vault.Payments.Get(ctx, "p1"); err != nil {
			return "", err
		}
		return "tok", nil
	}))
	_, err := c.Raw(context.Background(), RawRequest{Method: http.MethodPost, Path: []string{"orders"}, Body: map[string]string{"a": "b"}}, nil)
	require.ErrorIs(t, err, ErrUnauthorized)
	require.Equal(t, int32(2), asked.Load(), "the source is told of the 401")
	assert.Zero(t, bare.Load(), "the vault's call went without its token")
	logins, _ := gw.counts()
	assert.Equal(t, 1, logins)
}

// Sessions revoked under the calls' feet, views made per call and kept,
// Session and ClockOffset read meanwhile: under -race, every sign-in,
// re-sign-in after a 401 and shared wait is free of data races, the test
// gateway's included, and every call that fails fails with the gateway's
// 401 (a session revoked twice within one call), never anything else.
func TestSignInsSharedAcrossViewsUnderRevocation(t *testing.T) {
	gw := newSIWEGateway(t, 10*time.Minute)
	c := newTestClient(t, gw.url, gw.opt, WithSigner(newSIWESigner()))
	ctx := context.Background()
	stop := make(chan struct{})
	revoked := make(chan struct{})
	go func() {
		defer close(revoked)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			gw.mu.Lock()
			clear(gw.tokens)
			gw.mu.Unlock()
		}
	}()
	const goroutines, calls = 8, 30
	errs := make(chan error, goroutines*calls)
	done := make(chan struct{})
	for g := range goroutines {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range calls {
				v := c
				if (g+i)%2 == 0 {
					v = c.With(WithRetryOn429(i%3 == 0), WithMaxRetries(i%3))
				}
				if _, err := v.Payments.Get(ctx, "p"); err != nil {
					errs <- err
				}
				if i%7 == 0 {
					_, err := v.Session(ctx)
					assert.NoError(t, err)
					_ = v.ClockOffset()
				}
			}
		}()
	}
	for range goroutines {
		<-done
	}
	close(stop)
	<-revoked
	close(errs)
	for err := range errs {
		assert.ErrorIs(t, err, ErrUnauthorized)
	}
	logins, _ := gw.counts()
	assert.Positive(t, logins)
}

// A failed sign-in's error names the sign-in once, then what failed; the
// attempts its text counts are those of the transcript CallOf returns (the
// sign-in's own call), through a call that needed the session and through
// Client.Session alike.
func TestSignInErrorText(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gw := newSIWEGateway(t, 0)
		gw.beforeNonce = func(w http.ResponseWriter) bool { writeThrottled(w, "1"); return true }
		c := newTestClient(t, gw.url, gw.opt, WithSigner(newSIWESigner()), WithRetryOn429(true), WithMaxRetryWait(3500*time.Millisecond), withRand(half))
		_, err := c.Payments.Get(context.Background(), "p")
		require.ErrorIs(t, err, ErrRateLimited)
		call := CallOf(err)
		require.NotNil(t, call)
		assert.Equal(t, "/auth/nonces", call.Path)
		assert.Equal(t, gw.requests(), len(call.Attempts))
		assert.Equal(t, "rail0: sign-in: POST /auth/nonces: 429 rate_limited: "+
			"Request limit reached for this period; retry after the Retry-After delay. (retry after 1s) after "+
			strconv.Itoa(len(call.Attempts))+" attempts", err.Error())

		gw.beforeNonce = func(w http.ResponseWriter) bool {
			authWriteJSON(w, http.StatusForbidden, `{"code":"forbidden","title":"Forbidden","detail":"no sign-in today","status":"forbidden"}`)
			return true
		}
		_, err = c.Payments.Get(context.Background(), "p")
		assert.EqualError(t, err, "rail0: sign-in: POST /auth/nonces: 403 forbidden: no sign-in today")
		_, err = c.Session(context.Background())
		assert.EqualError(t, err, "rail0: sign-in: POST /auth/nonces: 403 forbidden: no sign-in today")
	})
}

// newTokenSourceSetup returns a fake gateway, an anonymous client for
// sign-in, and a token source on the shared fake clock.
func newTokenSourceSetup(t *testing.T, opts ...tokenSourceOption) (*authGateway, *httptest.Server, *authClock, *tokenSource) {
	t.Helper()
	clock := newAuthClock()
	g, srv := newAuthGateway(t, clock)
	anon := newAuthClient(t, srv, clock)
	ts, err := loginTokenSource(anon.Auth, newSIWESigner(), SignIn{}, append([]tokenSourceOption{withSessionClock(clock.Now)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return g, srv, clock, ts
}

// A job making one call a minute for two hours with 10-minute sessions never
// sends an expired token, and signs in again only when the 2-minute margin
// is reached: at minutes 1, 9, 17, ..., 113.
func TestTokenSourceLongRunningJobNeverSendsExpiredToken(t *testing.T) {
	t.Parallel()
	g, srv, clock, ts := newTokenSourceSetup(t)
	c := newAuthClient(t, srv, clock, WithTokenSource(ts.Token))
	ctx := context.Background()
	for minute := 1; minute <= 120; minute++ {
		clock.Advance(time.Minute)
		if _, err := c.Webhooks.Get(ctx, "wh-1"); err != nil {
			t.Fatalf("minute %d: %v", minute, err)
		}
	}
	if _, _, logins := g.counts(); logins != 15 {
		t.Errorf("signed in %d times, want 15 (every 8 minutes)", logins)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.protected != 120 {
		t.Errorf("gateway saw %d calls, want 120", g.protected)
	}
}

func TestTokenSourceRefreshMargin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		margin   time.Duration
		lifetime time.Duration
		freshFor time.Duration // a token is reused until this long after sign-in
	}{
		{"default margin", -1, 10 * time.Minute, 8 * time.Minute},
		{"custom margin", 30 * time.Second, 10 * time.Minute, 9*time.Minute + 30*time.Second},
		{"zero margin uses the token to its expiry", 0, 10 * time.Minute, 10 * time.Minute},
		{"short session: half its lifetime", 2 * time.Minute, 3 * time.Minute, 90 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var opts []tokenSourceOption
			if tt.margin >= 0 {
				opts = append(opts, withRefreshMargin(tt.margin))
			}
			g, _, clock, ts := newTokenSourceSetup(t, opts...)
			g.lifetime = tt.lifetime
			ctx := context.Background()
			first, err := ts.Token(ctx)
			if err != nil {
				t.Fatal(err)
			}
			clock.Advance(tt.freshFor - time.Second)
			if tok, err := ts.Token(ctx); err != nil || tok != first {
				t.Fatalf("1 s before the refresh point: token %q, %v; want the cached %q", tok, err, first)
			}
			clock.Advance(time.Second)
			tok, err := ts.Token(ctx)
			if err != nil || tok == first {
				t.Fatalf("at the refresh point: token %q, %v; want a new one", tok, err)
			}
			if _, _, logins := g.counts(); logins != 2 {
				t.Errorf("logins = %d, want 2", logins)
			}
		})
	}
}

// Concurrent callers with no fresh session share one sign-in.
func TestTokenSourceSingleFlight(t *testing.T) {
	t.Parallel()
	g, _, _, ts := newTokenSourceSetup(t)
	g.blockVerify = make(chan struct{})
	const callers = 16
	tokens := make(chan string, callers)
	errs := make(chan error, callers)
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok, err := ts.Token(context.Background())
			tokens <- tok
			errs <- err
		}()
	}
	<-g.verifyBegan // one sign-in is under way; the others wait or will find its session
	close(g.blockVerify)
	wg.Wait()
	close(tokens)
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for tok := range tokens {
		if tok != "jwt-1" {
			t.Errorf("token %q, want jwt-1 for every caller", tok)
		}
	}
	if nonces, verifies, logins := g.counts(); nonces != 1 || verifies != 1 || logins != 1 {
		t.Errorf("gateway saw %d nonces, %d verifies, %d logins; want one of each", nonces, verifies, logins)
	}
}

// When the caller leading a sign-in gives up, a waiting caller with a live
// context signs in itself instead of inheriting the cancellation.
func TestTokenSourceLeaderCancelled(t *testing.T) {
	t.Parallel()
	g, _, _, ts := newTokenSourceSetup(t)
	g.blockVerify = make(chan struct{})
	leaderCtx, cancelLeader := context.WithCancel(context.Background())
	leaderErr := make(chan error, 1)
	go func() {
		_, err := ts.Token(leaderCtx)
		leaderErr <- err
	}()
	<-g.verifyBegan
	followerTok := make(chan string, 1)
	followerErr := make(chan error, 1)
	go func() {
		tok, err := ts.Token(context.Background())
		followerTok <- tok
		followerErr <- err
	}()
	cancelLeader()
	if err := <-leaderErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("leader: %v, want context.Canceled", err)
	}
	close(g.blockVerify) // the follower's own sign-in goes through
	if err := <-followerErr; err != nil {
		t.Fatalf("follower: %v", err)
	}
	tok := <-followerTok
	if !strings.HasPrefix(tok, "jwt-") {
		t.Fatalf("follower token %q", tok)
	}
	// The abandoned sign-in left nothing behind: the follower's session is
	// the cached one.
	if again, err := ts.Token(context.Background()); err != nil || again != tok {
		t.Errorf("cached token %q, %v; want the follower's %q", again, err, tok)
	}
}

func TestTokenSourceErrorsAndInvalidate(t *testing.T) {
	t.Parallel()
	g, _, _, ts := newTokenSourceSetup(t)
	ctx := context.Background()
	first, err := ts.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ts.Invalidate()
	second, err := ts.Token(ctx)
	if err != nil || second == first {
		t.Fatalf("after Invalidate: %q, %v; want a new token", second, err)
	}
	if _, _, logins := g.counts(); logins != 2 {
		t.Errorf("logins = %d, want 2", logins)
	}
	if strings.Contains(ts.String(), second) {
		t.Errorf("String() leaks the token: %s", ts)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	ts.Invalidate()
	if _, err := ts.Token(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}

	anonSrvClock := newAuthClock()
	_, srv := newAuthGateway(t, anonSrvClock)
	anon := newAuthClient(t, srv, anonSrvClock)
	bad, err := loginTokenSource(anon.Auth, &wrongSigner{newSIWESigner()}, SignIn{}, withSessionClock(anonSrvClock.Now))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Token(ctx); !errors.Is(err, ErrBadSignature) {
		t.Errorf("refused sign-in: %v, want ErrBadSignature", err)
	}
}

func TestTokenSourceValidates(t *testing.T) {
	t.Parallel()
	c, err := NewClient("https://api.rail0.xyz")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		auth   *AuthService
		signer Signer
		params SignIn
		opts   []tokenSourceOption
	}{
		{"nil auth", nil, newSIWESigner(), SignIn{}, nil},
		{"nil signer", c.Auth, nil, SignIn{}, nil},
		{"bad params", c.Auth, newSIWESigner(), SignIn{Domain: "https://api.rail0.xyz"}, nil},
		{"negative margin", c.Auth, newSIWESigner(), SignIn{}, []tokenSourceOption{withRefreshMargin(-time.Second)}},
		{"nil clock", c.Auth, newSIWESigner(), SignIn{}, []tokenSourceOption{withSessionClock(nil)}},
		{"nil option", c.Auth, newSIWESigner(), SignIn{}, []tokenSourceOption{nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if ts, err := loginTokenSource(tt.auth, tt.signer, tt.params, tt.opts...); err == nil || ts != nil {
				t.Fatalf("loginTokenSource = %v, %v; want an error", ts, err)
			}
		})
	}
	if ts, err := loginTokenSource(c.Auth, newSIWESigner(), SignIn{}); err != nil || ts == nil {
		t.Fatalf("valid loginTokenSource = %v, %v", ts, err)
	}
}

// A caller that waited for another's sign-in and leads one itself once
// that failed sends the sign-in's request again: a retry of the 429 the
// leader got, which waits min(Retry-After, RetryAfterCap) after that 429
// arrived, whatever the cooldown. On main the follower sent its nonce
// request at once with WithCooldown(false): when the leader was a handler
// (it returns its 429) and when the leader's context ended during its
// wait.
func TestSignInFollowerWaitsOutTheLeaders429(t *testing.T) {
	for _, tt := range []struct {
		name   string
		leader func(c *Client) (*Client, context.Context, context.CancelFunc)
	}{
		{"a handler's 429", func(c *Client) (*Client, context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			return c.With(WithRetryOn429(false)), ctx, cancel
		}},
		{"a job cut short while waiting", func(c *Client) (*Client, context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			return c.With(WithRetryOn429(true)), ctx, cancel
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gw := newSIWEGateway(t, 0)
				release := make(chan struct{})
				var mu sync.Mutex
				var nonces []time.Time
				var answered time.Time
				gw.beforeNonce = func(w http.ResponseWriter) bool {
					mu.Lock()
					nonces = append(nonces, time.Now())
					first := len(nonces) == 1
					mu.Unlock()
					if !first {
						return false
					}
					<-release
					writeThrottled(w, "30")
					mu.Lock()
					answered = time.Now()
					mu.Unlock()
					return true
				}
				c := newTestClient(t, gw.url, gw.opt, WithSigner(newSIWESigner()), withRand(half), WithCooldown(false))
				leader, leaderCtx, cancel := tt.leader(c)
				defer cancel()
				leaderDone := make(chan error, 1)
				go func() {
					_, err := leader.Payments.Get(leaderCtx, "p")
					leaderDone <- err
				}()
				synctest.Wait() // the leader's nonce request is held by the gateway
				followerDone := make(chan error, 1)
				go func() {
					_, err := c.With(WithRetryOn429(true)).Payments.Get(context.Background(), "p")
					followerDone <- err
				}()
				synctest.Wait() // the follower waits for the leader's sign-in
				close(release)
				time.Sleep(5 * time.Second)
				cancel() // a job leader is 5 s into its wait
				require.ErrorIs(t, <-leaderDone, ErrRateLimited)
				require.NoError(t, <-followerDone)
				mu.Lock()
				defer mu.Unlock()
				require.Len(t, nonces, 2)
				assert.GreaterOrEqual(t, nonces[1].Sub(answered), 30*time.Second, "the sign-in was sent again before its 429's Retry-After")
				assert.Less(t, nonces[1].Sub(answered), 33*time.Second, "the jitter only adds a tenth at most")
			})
		})
	}
}

// A leader's 429 without a usable Retry-After is retried by the follower
// that signs in next no sooner than a guessed wait after it arrived, and
// no sooner than the wait the leader was in when it ended.
func TestSignInFollowerWaitsOutTheLeadersGuessed429(t *testing.T) {
	for _, tt := range []struct {
		name   string
		leader func(c *Client) (*Client, context.Context, context.CancelFunc)
	}{
		{"a handler's 429", func(c *Client) (*Client, context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			return c.With(WithRetryOn429(false)), ctx, cancel
		}},
		{"a job cut short while waiting", func(c *Client) (*Client, context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			return c.With(WithRetryOn429(true)), ctx, cancel
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gw := newSIWEGateway(t, 0)
				release := make(chan struct{})
				var mu sync.Mutex
				var nonces []time.Time
				var answered time.Time
				gw.beforeNonce = func(w http.ResponseWriter) bool {
					mu.Lock()
					nonces = append(nonces, time.Now())
					first := len(nonces) == 1
					mu.Unlock()
					if !first {
						return false
					}
					<-release
					authWriteJSON(w, http.StatusTooManyRequests, rateLimitedBody) // no Retry-After
					mu.Lock()
					answered = time.Now()
					mu.Unlock()
					return true
				}
				c := newTestClient(t, gw.url, gw.opt, WithSigner(newSIWESigner()), withRand(func() float64 { return 0.99 }), WithCooldown(false))
				leader, leaderCtx, cancel := tt.leader(c)
				defer cancel()
				leaderDone := make(chan error, 1)
				go func() {
					_, err := leader.Payments.Get(leaderCtx, "p")
					leaderDone <- err
				}()
				synctest.Wait()
				followerDone := make(chan error, 1)
				go func() {
					_, err := c.With(WithRetryOn429(true)).Payments.Get(context.Background(), "p")
					followerDone <- err
				}()
				synctest.Wait()
				close(release)
				time.Sleep(100 * time.Millisecond)
				cancel() // a job leader is 100 ms into its guessed wait of 495 ms
				require.ErrorIs(t, <-leaderDone, ErrRateLimited)
				require.NoError(t, <-followerDone)
				mu.Lock()
				defer mu.Unlock()
				require.Len(t, nonces, 2)
				assert.GreaterOrEqual(t, nonces[1].Sub(answered), 495*time.Millisecond, "the 429 was retried before its guessed wait")
			})
		})
	}
}
