package rail0

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
