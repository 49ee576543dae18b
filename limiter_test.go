package rail0

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rail0/rail0-go/ratelimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// arrivals is a server that records when each path's requests arrive and
// answers with a per-request function.
type arrivals struct {
	*httptest.Server
	mu   sync.Mutex
	seen map[string][]time.Time
	all  []time.Time
}

func newArrivals(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, n int)) *arrivals {
	t.Helper()
	a := &arrivals{seen: map[string][]time.Time{}}
	a.Server = httptest.NewServer(a.record(answer))
	t.Cleanup(a.Close)
	return a
}

// newPipeArrivals is newArrivals on the in-memory network of pipeServer,
// for tests in a synctest bubble; the option makes a client reach it.
func newPipeArrivals(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, n int)) (*arrivals, Option) {
	t.Helper()
	a := &arrivals{seen: map[string][]time.Time{}}
	var opt Option
	a.Server, opt = pipeServer(t, a.record(answer))
	return a, opt
}

// record is the handler that notes each arrival and then answers.
func (a *arrivals) record(answer func(w http.ResponseWriter, r *http.Request, n int)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		now := time.Now()
		a.seen[r.URL.Path] = append(a.seen[r.URL.Path], now)
		a.all = append(a.all, now)
		n := len(a.seen[r.URL.Path])
		a.mu.Unlock()
		answer(w, r, n)
	})
}

func (a *arrivals) at(path string) []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]time.Time(nil), a.seen[path]...)
}

func (a *arrivals) everything() []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := append([]time.Time(nil), a.all...)
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// firstThrottled answers the first request to /payments/a with 429 and
// Retry-After, everything else with a payment.
func firstThrottled(retryAfter string) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, r *http.Request, n int) {
		if r.URL.Path == "/payments/a" && n == 1 {
			w.Header().Set("Retry-After", retryAfter)
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, rateLimitedBody)
			return
		}
		io.WriteString(w, paymentBody)
	}
}

// Issue 6, rule 2: after a 429, other calls on the partition wait for it to
// reopen instead of sending a request the gateway would refuse.
func TestCooldownHoldsOtherCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, viaPipe := newPipeArrivals(t, firstThrottled("1"))
		ev := &eventLog{}
		c := newTestClient(t, srv.URL, viaPipe, WithRetryOn429(true), WithObserver(ev))
		done := make(chan error, 1)
		go func() {
			_, err := c.Payments.Get(context.Background(), "a")
			done <- err
		}()
		// Once a waits out its Retry-After, its 429 has closed the partition.
		synctest.Wait()
		require.Len(t, ev.all(), 1)

		_, err := c.Payments.Get(context.Background(), "b")

		require.NoError(t, err)
		require.NoError(t, <-done)
		throttledAt := srv.at("/payments/a")[0]
		b := srv.at("/payments/b")
		require.Len(t, b, 1)
		assert.GreaterOrEqual(t, b[0].Sub(throttledAt), time.Second, "b must not be sent into a closed partition")
		assert.Len(t, srv.at("/payments/a"), 2)
	})
}

// Calls with RetryOn429 off keep the request/response behaviour: they are
// sent at once, cooldown or not.
func TestCooldownIgnoredWithRetryOn429Off(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, viaPipe := newPipeArrivals(t, firstThrottled("30"))
		c := newTestClient(t, srv.URL, viaPipe)
		_, err := c.Payments.Get(context.Background(), "a")
		require.ErrorIs(t, err, ErrRateLimited)
		start := time.Now()
		_, err = c.Payments.Get(context.Background(), "b")
		require.NoError(t, err)
		assert.Less(t, time.Since(start), 5*time.Second)
		assert.Len(t, srv.at("/payments/b"), 1)
	})
}

// countingLimiter counts every call a client makes to its Limiter.
type countingLimiter struct {
	ratelimit.Limiter
	calls atomic.Int32
}

func (l *countingLimiter) Reserve(ctx context.Context, r ratelimit.Reservation) (ratelimit.Admission, error) {
	l.calls.Add(1)
	return l.Limiter.Reserve(ctx, r)
}

func (l *countingLimiter) Release(ctx context.Context, p string, t int64) error {
	l.calls.Add(1)
	return l.Limiter.Release(ctx, p, t)
}

func (l *countingLimiter) Observe(ctx context.Context, p string, o ratelimit.Observation) (ratelimit.Feedback, error) {
	l.calls.Add(1)
	return l.Limiter.Observe(ctx, p, o)
}

// A client that neither paces nor retries 429s never waits for the
// limiter, so it tells it only what closes a partition (a 429, advertised
// exhaustion), for the views of the client that wait, made then or later
// (TestHandlersEarlier429ClosesThePartitionForAJobViewMadeLater): RateLimit
// fields that close nothing cost a shared store no round trip.
func TestUngatedClientTellsTheLimiterOnlyWhatClosesAPartition(t *testing.T) {
	srv := newScriptServer(t,
		step{status: http.StatusTooManyRequests, body: rateLimitedBody, header: map[string]string{"Retry-After": "30"}},
		step{status: http.StatusOK, body: paymentBody, header: map[string]string{"RateLimit-Policy": `"p";q=10;w=60`, "RateLimit": `"p";r=5;t=30`}},
		step{status: http.StatusOK, body: paymentBody, header: map[string]string{"RateLimit-Policy": `"p";q=10;w=60`, "RateLimit": `"p";r=0;t=30`}})
	l := &countingLimiter{Limiter: ratelimit.NewMemory()}
	c := newTestClient(t, srv.URL, WithLimiter(l))
	_, err := c.Payments.Get(context.Background(), "a")
	require.ErrorIs(t, err, ErrRateLimited)
	assert.EqualValues(t, 1, l.calls.Load(), "the 429 is told")
	_, err = c.Payments.Get(context.Background(), "b")
	require.NoError(t, err)
	assert.EqualValues(t, 1, l.calls.Load(), "an answer that closes nothing is not")
	_, err = c.Payments.Get(context.Background(), "c")
	require.NoError(t, err)
	assert.EqualValues(t, 2, l.calls.Load(), "advertised exhaustion is told")
}

// A wait for a closed partition that does not fit the allowance is refused
// at once: a typed 429 marked as not sent, and nothing reaches the server.
func TestCooldownRefusalIsNotSent(t *testing.T) {
	srv := newArrivals(t, firstThrottled("60"))
	ev := &eventLog{}
	c := newTestClient(t, srv.URL, WithRetryOn429(true), WithMaxRetryWait(500*time.Millisecond), WithObserver(ev))
	_, err := c.Payments.Get(context.Background(), "a")
	var first *APIError
	require.ErrorAs(t, err, &first)
	assert.Equal(t, ReasonAllowance, first.Call.NotRetried())
	assert.False(t, first.NotSent, "that 429 came from the server")

	_, err = c.Payments.Get(context.Background(), "b")

	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.True(t, apiErr.NotSent)
	assert.Equal(t, ReasonLimiter, apiErr.Call.NotRetried())
	assert.Empty(t, apiErr.Call.Attempts)
	assert.Equal(t, CodeRateLimited, apiErr.Code)
	assert.ErrorIs(t, err, ErrRateLimited)
	assert.GreaterOrEqual(t, apiErr.RetryAfter, 59*time.Second)
	assert.Empty(t, srv.at("/payments/b"))
	assert.Equal(t, map[RetryReason]int{ReasonAllowance: 1, ReasonLimiter: 1}, ev.refusals())
}

// Public and session requests are throttled separately: a 429 on one does
// not close the other.
func TestCooldownPartitions(t *testing.T) {
	srv := newArrivals(t, firstThrottled("30"))
	var anonymous atomic.Bool
	anonymous.Store(true)
	c := newTestClient(t, srv.URL, WithRetryOn429(true), WithMaxRetryWait(100*time.Millisecond),
		WithTokenSource(func(context.Context) (string, error) {
			if anonymous.Load() {
				return "", nil
			}
			return "session-token", nil
		}))
	_, err := c.Payments.Get(context.Background(), "a") // public partition closes
	require.ErrorIs(t, err, ErrRateLimited)
	anonymous.Store(false)
	_, err = c.Payments.Get(context.Background(), "b") // session partition is open
	require.NoError(t, err)
	anonymous.Store(true)
	_, err = c.Payments.Get(context.Background(), "c") // public still closed
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.True(t, apiErr.NotSent)
}

// Issue 6, rule 3: with pacing, no interval of one period sees more than the
// budget arrive, and a fresh client still sends its whole budget at once.
func TestPacingKeepsEveryIntervalUnderBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, viaPipe := newPipeArrivals(t, func(w http.ResponseWriter, r *http.Request, n int) {
			io.WriteString(w, `{"status":"ok","db":"ok","timestamp":"2026-09-14T10:00:00Z"}`)
		})
		const limit, period = 3, 400 * time.Millisecond
		c := newTestClient(t, srv.URL, viaPipe, WithPacing(Pacing{Public: Budget{Limit: limit, Period: period}, Margin: 100 * time.Millisecond}))
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := c.Health.Get(context.Background())
				assert.NoError(t, err)
			}()
		}
		wg.Wait()
		got := srv.everything()
		require.Len(t, got, 8)
		for i := limit; i < len(got); i++ {
			assert.GreaterOrEqual(t, got[i].Sub(got[i-limit]), period, "arrivals %d..%d fall in one period", i-limit, i)
		}
		assert.Less(t, got[limit-1].Sub(got[0]), period, "the first budget goes at once")
	})
}

// A pacing turn beyond the call's deadline is refused at once, not sent.
// In a bubble the clock starts on a minute's boundary: with the real clock
// the next fixed window of a minute opened within the deadline one run in
// six.
func TestPacingRefusalWithinDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, viaPipe := newPipeArrivals(t, func(w http.ResponseWriter, r *http.Request, n int) { io.WriteString(w, paymentBody) })
		c := newTestClient(t, srv.URL, viaPipe, WithToken("t"), WithPacing(Pacing{Session: Budget{Limit: 1, Period: time.Minute}}))
		_, err := c.Payments.Get(context.Background(), "a")
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		start := time.Now()
		_, err = c.Payments.Get(ctx, "b")
		require.NoError(t, ctx.Err())
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.True(t, apiErr.NotSent)
		assert.Empty(t, srv.at("/payments/b"))
		assert.Zero(t, time.Since(start), "refused at once")
	})
}

// Issue 6, rule 4: advertised exhaustion closes the partition until the
// advertised reset; the parsed fields reach the caller.
func TestRateLimitHeadersPaceAndSurface(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, viaPipe := newPipeArrivals(t, func(w http.ResponseWriter, r *http.Request, n int) {
			if r.URL.Path == "/payments/a" {
				w.Header().Set("RateLimit-Policy", `"default";q=2;w=1`)
				w.Header().Set("RateLimit", `"default";r=0;t=1`)
			}
			io.WriteString(w, paymentBody)
		})
		c := newTestClient(t, srv.URL, viaPipe, WithRetryOn429(true))
		p, err := c.Payments.Get(context.Background(), "a")
		require.NoError(t, err)
		meta := p.Response
		require.NotNil(t, meta.RateLimit)
		assert.Equal(t, RateLimitInfo{Policy: "default", Limit: 2, Window: time.Second, Remaining: 0, Reset: time.Second, HasRemaining: true}, *meta.RateLimit)

		_, err = c.Payments.Get(context.Background(), "b")
		require.NoError(t, err)
		assert.GreaterOrEqual(t, srv.at("/payments/b")[0].Sub(srv.at("/payments/a")[0]), time.Second)
	})
}

// Retry-After wins over RateLimit fields on a 429; the error carries the
// first, its transcript the second.
func TestRetryAfterWinsOverRateLimit(t *testing.T) {
	srv := newArrivals(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Retry-After", "60")
		w.Header().Set("RateLimit", `"default";r=0;t=1`)
		w.WriteHeader(http.StatusTooManyRequests)
	})
	c := newTestClient(t, srv.URL, WithRetryOn429(true), WithMaxRetryWait(2*time.Second))
	_, err := c.Payments.Get(context.Background(), "a")
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 60*time.Second, apiErr.RetryAfter)
	rl := apiErr.Call.Attempts[0].RateLimit
	require.NotNil(t, rl)
	assert.Equal(t, time.Second, rl.Reset)
	// The partition is closed for the Retry-After (60 s), not the reset (1 s).
	_, err = c.Payments.Get(context.Background(), "b")
	require.ErrorAs(t, err, &apiErr)
	assert.True(t, apiErr.NotSent)
}

type brokenLimiter struct{ calls atomic.Int32 }

func (b *brokenLimiter) Reserve(context.Context, ratelimit.Reservation) (ratelimit.Admission, error) {
	b.calls.Add(1)
	return ratelimit.Admission{}, errors.New("redis: connection refused")
}

func (b *brokenLimiter) Release(context.Context, string, int64) error {
	return errors.New("redis: connection refused")
}

func (b *brokenLimiter) Observe(context.Context, string, ratelimit.Observation) (ratelimit.Feedback, error) {
	return ratelimit.Feedback{}, errors.New("redis: connection refused")
}

// A failing shared limiter does not stop payments: the call goes ahead and
// the failure is logged.
func TestLimiterFailureFailsOpen(t *testing.T) {
	srv := newArrivals(t, func(w http.ResponseWriter, r *http.Request, n int) { io.WriteString(w, paymentBody) })
	var buf bytes.Buffer
	l := &brokenLimiter{}
	c := newTestClient(t, srv.URL, WithLimiter(l), WithPacing(PublishedLimits()),
		WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	_, err := c.Payments.Get(context.Background(), "a")
	require.NoError(t, err)
	assert.Equal(t, int32(1), l.calls.Load())
	assert.Contains(t, buf.String(), "rate limiter unavailable")
}

// A call whose context ends while it waits for the partition another
// call's 429 closed gets that 429, matching the context's error too: the
// same answer as when its deadline cannot cover the wait, or when a retry
// of its own is cut short in the same wait.
func TestCancelledWhileWaitingForTheCooldownKeepsThe429(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMemScript(throttled("30"), step{status: 200, body: paymentBody})
		c := newTestClient(t, memURL, memClient(srv), WithToken("tok"), withRand(half))
		job := c.With(WithRetryOn429(true))
		_, err := c.Payments.Get(context.Background(), "p1") // the handler: the 429 at once, the partition closed
		require.ErrorIs(t, err, ErrRateLimited)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(5*time.Second, cancel)
		_, err = job.Payments.Get(ctx, "p2")
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, ErrRateLimited, "the 429 the call was waiting out is not reported")
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.True(t, apiErr.NotSent)
		assert.Positive(t, apiErr.RetryAfter, "the wait that was left")
		assert.Len(t, srv.requests(), 1)
	})
}

// A view may be made per call: a 429 the handler's call got before any
// view that waits existed still closes the partition for a job's view made
// afterwards, whose first call waits out the window the gateway gave.
func TestHandlersEarlier429ClosesThePartitionForAJobViewMadeLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMemScript(throttled("30"), step{status: 200, body: paymentBody})
		c := newTestClient(t, memURL, memClient(srv), WithToken("tok"), withRand(half))
		_, err := c.With(WithRetryOn429(false)).Payments.Get(context.Background(), "p1") // the handler's view
		require.ErrorIs(t, err, ErrRateLimited)
		start := time.Now()
		_, err = c.With(WithRetryOn429(true)).Payments.Get(context.Background(), "p2") // the job's, made per call
		require.NoError(t, err)
		reqs := srv.requests()
		require.Len(t, reqs, 2)
		assert.GreaterOrEqual(t, reqs[1].at.Sub(start), 30*time.Second, "the job's call went into the closed window")
	})
}
