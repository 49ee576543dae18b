package rail0

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-retryablehttp"
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

// Calls with RetryOn429 off keep the request/response behaviour: they never
// wait. While the gateway's instruction runs they get its rest at once,
// not sent (issue 27 item 3); then they go at once.
func TestCooldownIgnoredWithRetryOn429Off(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, viaPipe := newPipeArrivals(t, firstThrottled("30"))
		c := newTestClient(t, srv.URL, viaPipe)
		_, err := c.Payments.Get(context.Background(), "a")
		require.ErrorIs(t, err, ErrRateLimited)
		start := time.Now()
		_, err = c.Payments.Get(context.Background(), "b")
		require.ErrorIs(t, err, ErrRateLimited)
		assert.Zero(t, time.Since(start))
		assert.Empty(t, srv.at("/payments/b"))
		time.Sleep(30 * time.Second)
		start = time.Now()
		_, err = c.Payments.Get(context.Background(), "b")
		require.NoError(t, err)
		assert.Zero(t, time.Since(start))
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
		srv, viaPipe := newPipeArrivals(t, func(w http.ResponseWriter, _ *http.Request, _ int) {
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
		srv, viaPipe := newPipeArrivals(t, func(w http.ResponseWriter, _ *http.Request, _ int) { io.WriteString(w, paymentBody) })
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
	srv := newArrivals(t, func(w http.ResponseWriter, _ *http.Request, _ int) { io.WriteString(w, paymentBody) })
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

// Issue 21, item 1: several processes behind one budget, nothing shared.
// Each simulated process is a Client of its own (its own limiter and
// connections) with only WithRetryOn429(true); all of them call one
// Rack::Attack-style gateway (windows ⌊t/P⌋ since the epoch, every request
// counted, 429 with Retry-After = the whole period) inside a synctest
// bubble, whose clock starts on a window boundary.

// lockedRand is a seeded uniform source safe for a process's workers.
type lockedRand struct {
	mu  sync.Mutex
	rng *rand.Rand
}

func (r *lockedRand) Float64() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rng.Float64()
}

// fleet runs processes against one gateway: each gets its share of the
// workers and of the calls.
type fleet struct {
	g         *fixedWindow
	h         http.Handler // what the processes call; g when nil
	processes int
	workers   int // all processes together
	calls     int // all processes together
}

// handler is what the processes call.
func (f fleet) handler() http.Handler {
	if f.h != nil {
		return f.h
	}
	return f.g
}

// share splits n among the processes, the first ones taking the remainder.
func (f fleet) share(n, i int) int {
	s := n / f.processes
	if i < n%f.processes {
		s++
	}
	return s
}

// runSDK runs the fleet with one SDK client per process and returns the
// makespan and every call's error.
func (f fleet) runSDK(t *testing.T, seed uint64, extra ...func(i int) Option) (time.Duration, []error) {
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([][]error, f.processes)
	for i := range f.processes {
		rng := &lockedRand{rng: rand.New(rand.NewPCG(seed, uint64(i)))}
		opts := []Option{WithHTTPClient(pipeClient(t, f.handler())), WithRetryOn429(true), withRand(rng.Float64)}
		for _, e := range extra {
			opts = append(opts, e(i))
		}
		c := newTestClient(t, "https://gateway.test", opts...)
		wg.Go(func() {
			errs[i] = runCallsNamed(c, fmt.Sprintf("p%d-", i), max(f.share(f.workers, i), 1), f.share(f.calls, i))
		})
	}
	wg.Wait()
	var all []error
	for _, e := range errs {
		all = append(all, e...)
	}
	return time.Since(start), all
}

// runRetryablehttp runs the fleet with go-retryablehttp's NewClient()
// defaults in every process (its logger silenced), the baseline of issue
// 21: it honours Retry-After and otherwise retries blindly.
func (f fleet) runRetryablehttp(t *testing.T) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	for i := range f.processes {
		rc := retryablehttp.NewClient()
		rc.Logger = nil
		rc.HTTPClient = pipeClient(t, f.handler())
		wg.Go(func() {
			eachCall(max(f.share(f.workers, i), 1), f.share(f.calls, i), func(n int) {
				resp, err := rc.Get(fmt.Sprintf("http://gateway.test/payments/r%d-%03d", i, n))
				if err == nil {
					resp.Body.Close()
				}
			})
		})
	}
	wg.Wait()
	return time.Since(start)
}

// refusedAfter counts the 429s the gateway sent after its first window.
func (g *fixedWindow) refusedAfter(first int) int {
	n := 0
	for _, a := range g.arrivals() {
		if a.status == http.StatusTooManyRequests && g.window(a) > first {
			n++
		}
	}
	return n
}

// fleetSlack bounds the makespan of processes behind one budget, as a
// multiple of the floor. Issue 21 asked for 1.02, which the engine met
// (1.0005 to 1.008) while a 429's retry went at its learned window's
// reopening, before its Retry-After. Issue 27 forbids that: a retry waits
// the instruction plus its additive jitter, up to a tenth of the period
// (200 ms here), and so lands late in the next window, where other
// processes' shares and probes may have filled it; refused again, its next
// retry lands later still. Measured over five runs of every cell (synctest,
// instant and loaded round trips, nothing shared): 1.009 to 1.100, and
// 1.019 to 1.108 with heavy-tailed round trips (runs differ by goroutine
// order). The rule wins; this bound is what it costs, with a margin.
const fleetSlack = 1.12

// reachesTheFloor runs the fleet newFleet makes with go-retryablehttp's
// defaults and then with the SDK, each in a bubble of its own, and checks
// issue 21's targets for processes behind one budget, nothing shared: the
// SDK's makespan within fleetSlack × the floor, and no more 429s after the
// first window than go-retryablehttp's.
func reachesTheFloor(t *testing.T, newFleet func() fleet, seed uint64) {
	var base int
	synctest.Test(t, func(t *testing.T) {
		f := newFleet()
		f.runRetryablehttp(t)
		base = f.g.refusedAfter(0)
	})
	synctest.Test(t, func(t *testing.T) {
		f := newFleet()
		floor := time.Duration(f.calls/f.g.limit-1) * f.g.period
		makespan, errs := f.runSDK(t, seed)
		for _, err := range errs {
			require.NoError(t, err)
		}
		refused := f.g.refusedAfter(0)
		t.Logf("makespan %v (%.4f × floor), %d 429s after the first window (go-retryablehttp: %d)",
			makespan, float64(makespan)/float64(floor), refused, base)
		assert.LessOrEqual(t, float64(makespan)/float64(floor), fleetSlack)
		if f.workers > f.processes {
			assert.LessOrEqual(t, refused, base)
		} else {
			// One worker per process: each process's probe and each
			// go-retryablehttp worker are refused once a window, so the
			// counts tie.
			assert.LessOrEqual(t, refused, f.processes*(f.calls/f.g.limit-1))
		}
	})
}

func TestProcessesSharingABudgetReachTheFloor(t *testing.T) {
	const limit, period, calls = 20, 2 * time.Second, 100
	for _, processes := range []int{2, 4, 8} {
		for _, workers := range []int{8, 32, 128, 512} {
			t.Run(fmt.Sprintf("P=%d W=%d", processes, workers), func(t *testing.T) {
				reachesTheFloor(t, func() fleet {
					return fleet{g: newFixedWindow(limit, period), processes: processes, workers: workers, calls: calls}
				}, uint64(processes*1000+workers))
			})
		}
	}
}

// runUntil has workers call GETs of distinct payments on c until ctx ends.
func runUntil(ctx context.Context, c *Client, process, workers int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := next.Add(1)
				_, _ = c.Payments.Get(ctx, fmt.Sprintf("s%d-%05d", process, i))
			}
		})
	}
	wg.Wait()
}

// accepted counts, per gateway window, the requests of one process (by its
// path prefix) that went through.
func (g *fixedWindow) accepted(prefix string) map[int]int {
	n := map[int]int{}
	for _, a := range g.arrivals() {
		if a.status == http.StatusOK && strings.HasPrefix(a.path, prefix) {
			n[g.window(a)]++
		}
	}
	return n
}

func TestSurvivorRecoversTheFullBudget(t *testing.T) {
	const limit, period, shared, alone = 20, 2 * time.Second, 20, 6
	for _, processes := range []int{2, 4, 8} {
		t.Run(fmt.Sprintf("P=%d", processes), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newFixedWindow(limit, period)
				// Requests sent at one instant reach the gateway in a
				// random order, as over a network.
				h := &delayed{h: g, rng: rand.New(rand.NewPCG(uint64(processes), 7)), max: 2 * time.Millisecond}
				var wg sync.WaitGroup
				survivor, cancelSurvivor := context.WithCancel(context.Background())
				others, stopOthers := context.WithCancel(context.Background())
				for i := range processes {
					rng := &lockedRand{rng: rand.New(rand.NewPCG(uint64(processes), uint64(i)))}
					c := newTestClient(t, "https://gateway.test", WithHTTPClient(pipeClient(t, h)), WithRetryOn429(true),
						withRand(rng.Float64))
					ctx := others
					if i == 0 {
						ctx = survivor
					}
					wg.Go(func() { runUntil(ctx, c, i, 4) })
				}
				time.Sleep(shared * period)
				stopOthers()
				time.Sleep(alone * period)
				cancelSurvivor()
				wg.Wait()

				total := map[int]int{}
				for _, a := range g.arrivals() {
					if a.status == http.StatusOK {
						total[g.window(a)]++
					}
				}
				for w := 1; w < shared+alone; w++ {
					assert.Equal(t, limit, total[w], "window %d is used in full", w)
				}
				for i := range processes {
					got := g.accepted(fmt.Sprintf("/payments/s%d-", i))
					sum := 0
					for w := 2; w < shared; w++ {
						sum += got[w]
					}
					t.Logf("process %d: %v", i, got)
					assert.GreaterOrEqual(t, sum, (shared-2)*limit/processes/3, "process %d kept less than a third of its fair part", i)
				}
				solo := g.accepted("/payments/s0-")
				for w := shared + 2; w < shared+alone; w++ {
					assert.Equal(t, limit, solo[w], "window %d: the survivor is back at the full budget within three periods", w)
				}
			})
		})
	}
}

// congested delays each request and each answer by base plus per for every
// request in flight, as a gateway and a network under load do: a burst's
// round trips are longer than a window's last few.
type congested struct {
	h         http.Handler
	base, per time.Duration

	mu       sync.Mutex
	inflight int
}

func (c *congested) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.inflight++
	d := c.base + time.Duration(c.inflight)*c.per
	c.mu.Unlock()
	time.Sleep(d)
	c.h.ServeHTTP(w, r)
	time.Sleep(d)
	c.mu.Lock()
	c.inflight--
	c.mu.Unlock()
}

// Issue 21's target "one process: no regression": a process alone behind
// the budget, which probes it, reaches the floor at every concurrency,
// with the round trips of a loaded gateway (0.3 ms plus 50 or 100 µs per
// request in flight, each way). Its refused probe's retry waits the whole
// Retry-After and lands late in the next window; that window's probes do
// not wait for it (see behindIn in package ratelimit), so the phase of the
// refusals cannot drift.
//
// It met 1.003 × (1.0008 to 1.0012, 3 429s after the first window) while
// a 429's retry went at its window's reopening. Since issue 27 the retry
// waits its Retry-After plus its additive jitter (up to 200 ms here), so
// the last window's retry of the refused probe before it sets the
// makespan: 1.0035 to 1.026 measured, 3 to 9 429s after the first window
// (a retry late in a window is refused with the round of probes that
// found the window full). aloneSlack is the floor plus the allowance, a
// whole tenth of the period and a margin.
const aloneSlack = 1.03

func TestOneProcessReachesTheFloor(t *testing.T) {
	const limit, period, calls = 20, 2 * time.Second, 100
	floor := time.Duration(calls/limit-1) * period
	for _, per := range []time.Duration{50 * time.Microsecond, 100 * time.Microsecond} {
		for _, workers := range []int{8, 32, 128, 512} {
			t.Run(fmt.Sprintf("%v per request W=%d", per, workers), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					g := newFixedWindow(limit, period)
					h := &congested{h: g, base: 300 * time.Microsecond, per: per}
					rng := &lockedRand{rng: rand.New(rand.NewPCG(uint64(workers), uint64(per)))}
					c := newTestClient(t, "https://gateway.test", WithHTTPClient(pipeClient(t, h)), WithRetryOn429(true),
						withRand(rng.Float64))
					start := time.Now()
					errs := runCalls(c, workers, calls)
					makespan := time.Since(start)
					for _, err := range errs {
						require.NoError(t, err)
					}
					refused := g.refusedAfter(0)
					t.Logf("makespan %v (%.4f × floor), %d 429s after the first window", makespan, float64(makespan)/float64(floor), refused)
					assert.LessOrEqual(t, float64(makespan)/float64(floor), aloneSlack)
					assert.LessOrEqual(t, refused, 2*(calls/limit)) // measured 3 to 9
				})
			})
		}
	}
}

// Issue 21's target for processes behind one budget, nothing shared, with
// the round trips of a loaded gateway (0.3 ms plus 50 or 100 µs per request
// in flight, each way), as TestOneProcessReachesTheFloor has them: the
// makespan stays within 1.02 × the floor, and the 429s after the first
// window are no more than go-retryablehttp's defaults get in the same
// processes. Once the processes have learned their shares, each later
// window opens with fewer than the budget's requests all processes
// together; the rest is found by probes, and how fast they fill the window
// decides how late the last window's last calls go.
func TestProcessesUnderLoadReachTheFloor(t *testing.T) {
	const limit, period, calls = 20, 2 * time.Second, 100
	for _, per := range []time.Duration{50 * time.Microsecond, 100 * time.Microsecond} {
		for _, processes := range []int{2, 4, 8} {
			for _, workers := range []int{8, 32, 128, 512} {
				t.Run(fmt.Sprintf("%v per request P=%d W=%d", per, processes, workers), func(t *testing.T) {
					reachesTheFloor(t, func() fleet {
						g := newFixedWindow(limit, period)
						return fleet{g: g, h: &congested{h: g, base: 300 * time.Microsecond, per: per},
							processes: processes, workers: workers, calls: calls}
					}, uint64(processes*1000+workers)+uint64(per))
				})
			}
		}
	}
}

// Issue 21's targets for processes sharing one limiter (package redislimit)
// that learn the budget: each simulated process is a Client of its own
// with only WithRetryOn429(true) and WithLimiter, all of them using one
// store, which every Limiter call reaches in a round trip, as Redis is
// reached over a socket. The store is a ratelimit.Memory, the rules
// redislimit's Lua runs (TestDifferentialFakeClock keeps them equal).

// errStoreDown is what a store that stopped answering returns.
var errStoreDown = errors.New("store down")

// store is the shared limiter state behind a round trip: every call waits
// half of rtt before the store decides and half after, so that two
// processes' decisions are ordered by when they reach the store. From
// failAt on (when set) the store fails every call, after stall (a dead
// master that does not answer until the caller's timeout).
type store struct {
	m      *ratelimit.Memory
	rtt    time.Duration
	failAt time.Time // zero: never fails
	stall  time.Duration
	ops    atomic.Int64
}

func (s *store) down() bool { return !s.failAt.IsZero() && !time.Now().Before(s.failAt) }

// do runs f in the store, a round trip away.
func (s *store) do(f func() error) error {
	s.ops.Add(1)
	time.Sleep(s.rtt / 2)
	if s.down() {
		time.Sleep(s.stall)
		return errStoreDown
	}
	err := f()
	time.Sleep(s.rtt - s.rtt/2)
	return err
}

// storeClient is one process's limiter on the store: what redislimit.Limiter
// does, with the store modelled. From a failure of the store on it answers
// from a ratelimit.Memory of its own, and once a backoff (1 s doubling to
// 30 s) has passed it checks the store in the background, its callers
// keeping the fallback until the store answers, as redislimit does.
type storeClient struct {
	s     *store
	local *ratelimit.Memory

	mu       sync.Mutex
	wait     time.Duration
	back     time.Time // the store is not checked before this
	checking bool      // a check of the store runs
}

var _ ratelimit.Limiter = (*storeClient)(nil)

// useLocal is redislimit's rule: the fallback from a failure until a check
// of the store succeeds.
func (c *storeClient) useLocal() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wait == 0 {
		return false
	}
	if !time.Now().Before(c.back) && !c.checking {
		c.checking = true
		go func() {
			err := c.s.do(func() error { return nil })
			c.mu.Lock()
			c.checking = false
			c.mu.Unlock()
			_ = c.result(err)
		}()
	}
	return true
}

// result notes a store failure or success.
func (c *storeClient) result(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.wait = min(max(2*c.wait, time.Second), 30*time.Second)
		c.back = time.Now().Add(c.wait)
		return err
	}
	c.wait, c.back = 0, time.Time{}
	return nil
}

func (c *storeClient) Reserve(ctx context.Context, r ratelimit.Reservation) (ratelimit.Admission, error) {
	if c.useLocal() {
		return c.local.Reserve(ctx, r)
	}
	var a ratelimit.Admission
	err := c.s.do(func() (err error) { a, err = c.s.m.Reserve(ctx, r); return err })
	return a, c.result(err)
}

func (c *storeClient) Release(ctx context.Context, partition string, ticket int64) error {
	if c.useLocal() {
		return c.local.Release(ctx, partition, ticket)
	}
	return c.result(c.s.do(func() error { return c.s.m.Release(ctx, partition, ticket) }))
}

func (c *storeClient) Observe(ctx context.Context, partition string, o ratelimit.Observation) (ratelimit.Feedback, error) {
	if c.useLocal() {
		return c.local.Observe(ctx, partition, o)
	}
	var fb ratelimit.Feedback
	err := c.s.do(func() (err error) { fb, err = c.s.m.Observe(ctx, partition, o); return err })
	return fb, c.result(err)
}

// sharedRun is one run of processes sharing a store.
type sharedRun struct {
	makespan, floor time.Duration
	refused         int     // 429s after the first window
	perCall         float64 // store round trips per call
}

func (r sharedRun) ratio() float64 { return float64(r.makespan) / float64(r.floor) }

// runShared runs P processes (W workers and 100 calls among them) sharing
// one store rtt away, against a fixed-window gateway (20 per 2 s) with the
// round trips of a loaded gateway (0.3 ms plus 50 µs per request in
// flight, each way). The store fails failAfter into the run when that is
// positive, each of its answers then taking stall.
func runShared(t *testing.T, processes, workers int, rtt, failAfter, stall time.Duration) sharedRun {
	const limit, period, calls = 20, 2 * time.Second, 100
	var run sharedRun
	synctest.Test(t, func(t *testing.T) {
		g := newFixedWindow(limit, period)
		f := fleet{g: g, h: &congested{h: g, base: 300 * time.Microsecond, per: 50 * time.Microsecond},
			processes: processes, workers: workers, calls: calls}
		s := &store{m: ratelimit.NewMemory(), rtt: rtt, stall: stall}
		if failAfter > 0 {
			s.failAt = time.Now().Add(failAfter)
		}
		makespan, errs := f.runSDK(t, uint64(processes*1000+workers), func(int) Option {
			return WithLimiter(&storeClient{s: s, local: ratelimit.NewMemory()})
		})
		for _, err := range errs {
			require.NoError(t, err)
		}
		run = sharedRun{makespan: makespan, floor: time.Duration(calls/limit-1) * period,
			refused: g.refusedAfter(0), perCall: float64(s.ops.Load()) / calls}
	})
	return run
}

// Issue 21: processes sharing one limiter that learn the budget through it
// stay near the floor, with a store 0.2 or 1 ms away: to the gateway they
// are one client, and the store shares what each learns, provided each
// process confirms its held slots with the store (see Client.othersLearn).
// With the store on loopback (0.2 ms) they are refused about as often as
// one process alone is (see TestOneProcessReachesTheFloor).
//
// They met 1.01 × (1.0009 to 1.0022, 3 or 4 429s) while a 429's retry went
// at its window's reopening. Since issue 27 it waits its Retry-After plus
// its additive jitter and lands late in the next window: 1.001 to 1.099
// measured over five runs (worst with one or two workers a process, whose
// late retry is refused again when the window filled before it), 3 to 6
// 429s after the first window with the store 0.2 ms away.
func TestProcessesSharingALimiterReachTheFloor(t *testing.T) {
	const windows = 5 // 100 calls at 20 per window
	for _, processes := range []int{2, 4, 8} {
		for _, workers := range []int{8, 32, 128, 512} {
			t.Run(fmt.Sprintf("P=%d W=%d", processes, workers), func(t *testing.T) {
				for _, rtt := range []time.Duration{200 * time.Microsecond, time.Millisecond} {
					r := runShared(t, processes, workers, rtt, 0, 0)
					t.Logf("store %v away: makespan %v (%.4f × floor), %d 429s after the first window, %.2f store round trips per call",
						rtt, r.makespan, r.ratio(), r.refused, r.perCall)
					assert.LessOrEqual(t, r.ratio(), fleetSlack, "store %v away", rtt)
					if rtt < time.Millisecond {
						assert.LessOrEqual(t, r.refused, 2*(windows-1), "store %v away", rtt)
					}
				}
			})
		}
	}
}

// Issue 21: when the shared store fails mid-run (3 s in, the store 0.5 ms
// away), no call fails and the run stays near the floor: each
// process falls back to a limiter of its own, as redislimit does, whether
// the dead store answers at once or only at redislimit's default timeout
// (half a second, a killed master until the failover). A stalled store
// costs the calls in flight when it fails that stall once; the callers do
// not ask it again until a background check finds it back (1.13-1.19 × for
// 4 and 8 processes at W = 8 when they did).
//
// That was 1.001 to 1.004 while a 429's retry went at its learned window's
// reopening. Since issue 27 it waits its Retry-After plus its additive
// jitter: each process's fallback learns its share from its own 429s, whose
// retries land late in the next windows and are refused again when others
// filled them first. Measured over fifteen runs: 1.035 to 1.18 in all
// but one cell of one run, which lost a window (1.31, the dead store
// answering at once, P = 4, W = 8). A later run on a loaded machine lost a
// little more (1.39, the store stalling, P = 4, W = 8): goroutine order
// moves which process's retry is refused again. The bound lets up to two
// windows go, so the test says whether calls survive, not how the cores
// were shared.
func TestProcessesSharingALimiterSurviveTheStore(t *testing.T) {
	for _, stall := range []time.Duration{0, 500 * time.Millisecond} {
		for _, processes := range []int{2, 4, 8} {
			for _, workers := range []int{8, 32, 128, 512} {
				t.Run(fmt.Sprintf("stall %v P=%d W=%d", stall, processes, workers), func(t *testing.T) {
					r := runShared(t, processes, workers, 500*time.Microsecond, 3*time.Second, stall)
					t.Logf("makespan %v (%.4f × floor), %d 429s after the first window", r.makespan, r.ratio(), r.refused)
					assert.LessOrEqual(t, r.ratio(), 1.5)
				})
			}
		}
	}
}

// Issue 21's targets for processes behind one budget, nothing shared, in
// the conditions of real processes on a loaded machine, which the
// congested gateway of TestProcessesUnderLoadReachTheFloor does not have:
// round trips that vary from request to request with a heavy tail (a few
// in a hundred take ten times the median), and processes that are late to
// send what their limiter admitted (goroutines waiting for one of two
// busy cores). The longest recent round trip, which paces the probes,
// is then many times the typical one.

// heavyTail draws delays whose tail falls off as a Pareto distribution of
// index alpha: at least min, at most max, from a seeded source, so that a
// run is repeatable.
type heavyTail struct {
	min, max time.Duration
	alpha    float64

	mu  sync.Mutex
	rng *rand.Rand
}

func (h *heavyTail) draw() time.Duration {
	h.mu.Lock()
	u := h.rng.Float64()
	h.mu.Unlock()
	d := time.Duration(float64(h.min) * math.Pow(1/(1-u), 1/h.alpha))
	return min(d, h.max)
}

// jittery delays each request and each answer by base, plus per for every
// request in flight, plus a heavy-tailed draw: a gateway and a network
// under load, where one round trip is not like the next.
type jittery struct {
	h         http.Handler
	base, per time.Duration
	tail      *heavyTail

	mu       sync.Mutex
	inflight int
}

func (j *jittery) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	j.mu.Lock()
	j.inflight++
	d := j.base + time.Duration(j.inflight)*j.per
	j.mu.Unlock()
	time.Sleep(d + j.tail.draw())
	j.h.ServeHTTP(w, r)
	time.Sleep(d + j.tail.draw())
	j.mu.Lock()
	j.inflight--
	j.mu.Unlock()
}

// stalled is a process's transport on a loaded machine: each request
// leaves a scheduling delay after the caller sent it.
type stalled struct {
	rt    http.RoundTripper
	delay *heavyTail
}

func (s stalled) RoundTrip(r *http.Request) (*http.Response, error) {
	time.Sleep(s.delay.draw())
	return s.rt.RoundTrip(r)
}

// tailFleet is one cell of the scenario: the gateway, and each process's
// HTTP client with its own scheduling delays.
type tailFleet struct {
	g                         *fixedWindow
	processes, workers, calls int
	clients                   []*http.Client
}

func newTailFleet(t *testing.T, processes, workers, calls int, seed uint64) tailFleet {
	const limit, period = 20, 2 * time.Second
	g := newFixedWindow(limit, period)
	h := &jittery{h: g, base: 300 * time.Microsecond, per: 50 * time.Microsecond,
		tail: &heavyTail{min: 500 * time.Microsecond, max: 40 * time.Millisecond, alpha: 1.2, rng: rand.New(rand.NewPCG(seed, 1))}}
	f := tailFleet{g: g, processes: processes, workers: workers, calls: calls}
	for i := range processes {
		hc := pipeClient(t, h)
		hc.Transport = stalled{rt: hc.Transport,
			delay: &heavyTail{min: 200 * time.Microsecond, max: 20 * time.Millisecond, alpha: 1.5, rng: rand.New(rand.NewPCG(seed, uint64(100+i)))}}
		f.clients = append(f.clients, hc)
	}
	return f
}

func (f tailFleet) share(n, i int) int {
	return fleet{processes: f.processes}.share(n, i)
}

// run has each process's workers share its calls through do and returns
// the makespan and every call's latency, from when its worker took it.
func (f tailFleet) run(do func(process, call int) error) (time.Duration, []time.Duration, []error) {
	start := time.Now()
	var mu sync.Mutex
	var lat []time.Duration
	var errs []error
	var wg sync.WaitGroup
	for i := range f.processes {
		wg.Go(func() {
			eachCall(max(f.share(f.workers, i), 1), f.share(f.calls, i), func(n int) {
				t0 := time.Now()
				err := do(i, n)
				mu.Lock()
				lat = append(lat, time.Since(t0))
				errs = append(errs, err)
				mu.Unlock()
			})
		})
	}
	wg.Wait()
	return time.Since(start), lat, errs
}

// p99 is the 99th percentile of d, nearest rank.
func p99(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)*99+99)/100-1]
}

// tailResult is one strategy's run of a cell.
type tailResult struct {
	makespan, p99 time.Duration
	refused       int
}

// runTailCell runs the cell with go-retryablehttp's defaults and with the
// SDK, each in a bubble of its own.
func runTailCell(t *testing.T, processes, workers, calls int, seed uint64) (base, sdk tailResult) {
	synctest.Test(t, func(t *testing.T) {
		f := newTailFleet(t, processes, workers, calls, seed)
		rcs := make([]*retryablehttp.Client, processes)
		for i := range rcs {
			rcs[i] = retryablehttp.NewClient()
			rcs[i].Logger = nil
			rcs[i].HTTPClient = f.clients[i]
		}
		makespan, lat, _ := f.run(func(i, n int) error {
			resp, err := rcs[i].Get(fmt.Sprintf("http://gateway.test/payments/r%d-%03d", i, n))
			if err == nil {
				resp.Body.Close()
			}
			return err
		})
		base = tailResult{makespan: makespan, p99: p99(lat), refused: f.g.refusedAfter(0)}
	})
	synctest.Test(t, func(t *testing.T) {
		f := newTailFleet(t, processes, workers, calls, seed)
		cs := make([]*Client, processes)
		for i := range cs {
			rng := &lockedRand{rng: rand.New(rand.NewPCG(seed, uint64(i)))}
			cs[i] = newTestClient(t, "https://gateway.test", WithHTTPClient(f.clients[i]), WithRetryOn429(true), withRand(rng.Float64))
		}
		makespan, lat, errs := f.run(func(i, n int) error {
			_, err := cs[i].Payments.Get(t.Context(), fmt.Sprintf("p%d-%03d", i, n))
			return err
		})
		for _, err := range errs {
			require.NoError(t, err)
		}
		sdk = tailResult{makespan: makespan, p99: p99(lat), refused: f.g.refusedAfter(0)}
	})
	return base, sdk
}

// TestProcessesWithNoisyRoundTrips runs P = 2, 4 and 8 processes sharing
// nothing, with round trips of 0.3 ms plus 50 µs per request in flight
// plus a heavy-tailed draw (0.5 to 40 ms, Pareto index 1.2) each way, and a
// heavy-tailed scheduling delay (0.2 to 20 ms, index 1.5) before each
// request leaves its process. It holds issue 21's targets in every cell,
// with issue 27's cost (see fleetSlack): no call fails; the makespan is
// within fleetSlack × the floor; no more 429s after the first window than
// go-retryablehttp's defaults get in the same scenario (one worker per
// process: one per process and window at most); and at W ≥ 128 the p99
// latency is no worse than go-retryablehttp's but for maxP99Excess.
//
// At W = 8 and 32 the p99 is not compared: with a few workers per process
// the 99th percentile is one call or two, and whether that call waited for
// one more window flips it by a whole period (2 s) either way from seed to
// seed, for both strategies; at W ≥ 128 every call waits for windows
// anyway and the p99 is the last window's tail, which the probe rounds'
// pace sets.
//
// Under the rule before the probe rounds were paced by the typical round
// trip and a retry went at its window's reopening rather than a whole
// Retry-After later (the margin paced them: the longest of 32 round trips,
// many times the typical one under this tail), 4 of these 12 cells missed
// the makespan (1.022 to 1.86 ×) and 5 of the 6 cells at W ≥ 128 the p99
// (by 47 to 189 ms); see "Several processes, nothing shared" in
// docs/ratelimit.md.
func TestProcessesWithNoisyRoundTrips(t *testing.T) {
	const calls = 100
	// maxP99Excess: the p99 is one call's latency, the last window's
	// tail. While a 429's retry went at its window's reopening it was
	// within 10 ms of go-retryablehttp's over seeds 0, 7, 13 and 21, and
	// this bound was 20 ms. Since issue 27 a retry waits its Retry-After
	// plus its additive jitter (up to 200 ms here) and lands late in the
	// last window, and a late retry refused once lands later still:
	// +12 to +556 ms measured over five runs at W ≥ 128. go-retryablehttp
	// retries at the Retry-After exactly, without jitter. The bound is that
	// cost with a margin, well below a whole window (2 s) lost.
	const maxP99Excess = 700 * time.Millisecond
	floor := time.Duration(calls/20-1) * 2 * time.Second
	for _, processes := range []int{2, 4, 8} {
		for _, workers := range []int{8, 32, 128, 512} {
			t.Run(fmt.Sprintf("P=%d W=%d", processes, workers), func(t *testing.T) {
				base, sdk := runTailCell(t, processes, workers, calls, uint64(processes*1000+workers))
				t.Logf("SDK %.4f × floor, p99 %v, %d 429s after the first window; go-retryablehttp %.4f ×, p99 %v, %d",
					float64(sdk.makespan)/float64(floor), sdk.p99, sdk.refused,
					float64(base.makespan)/float64(floor), base.p99, base.refused)
				if workers > processes {
					assert.LessOrEqual(t, sdk.refused, base.refused)
				} else {
					assert.LessOrEqual(t, sdk.refused, processes*(calls/20-1))
				}
				assert.LessOrEqual(t, float64(sdk.makespan)/float64(floor), fleetSlack, "makespan %v, floor %v", sdk.makespan, floor)
				if workers >= 128 {
					assert.LessOrEqual(t, sdk.p99, base.p99+maxP99Excess, "p99 %v, go-retryablehttp's %v", sdk.p99, base.p99)
				}
			})
		}
	}
}

// A retry holds its slot from the moment its 429 comes back; a call whose
// context ends during the backoff gives that slot back, and a fresh call
// then takes it in the window that reopens.
func TestHeldRetrySlotIsReleasedWhenTheCallEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const period = 2 * time.Second
		g := newFixedWindow(1, period)
		c := newTestClient(t, "https://gateway.test", WithHTTPClient(pipeClient(t, g)), WithRetryOn429(true),
			withRand(func() float64 { return 0 }))
		_, err := c.Payments.Get(context.Background(), "first")
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		_, err = c.Payments.Get(ctx, "gives-up")
		require.ErrorIs(t, err, context.Canceled)
		time.Sleep(500 * time.Millisecond)

		_, err = c.Payments.Get(context.Background(), "fresh")

		require.NoError(t, err)
		sent := map[string]int{}
		for _, a := range g.arrivals() {
			sent[a.path]++
			if a.path == "/payments/fresh" {
				assert.Equal(t, 1, g.window(a), "the fresh call did not get the slot the cancelled retry held")
			}
		}
		assert.Equal(t, 1, sent["/payments/gives-up"], "the cancelled call's retry was sent")
	})
}

// Issue 12, item 20: callers who give up while queued give their turn
// back. Pacing at 5 per second, 50 callers queue and cancel; a new call
// with a 3 s deadline goes within the next period.
func TestCancelledTurnsAreReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newFixedWindow(1000, time.Second)
		c := newTestClient(t, "https://gateway.test", WithHTTPClient(pipeClient(t, g)),
			WithPacing(Pacing{Public: Budget{Limit: 5, Period: time.Second}}))
		errs := runCalls(c, 5, 5)
		for _, err := range errs {
			require.NoError(t, err)
		}
		var wg sync.WaitGroup
		for i := range 50 {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			wg.Go(func() {
				_, err := c.Payments.Get(ctx, fmt.Sprintf("q%02d", i))
				assert.ErrorIs(t, err, context.Canceled)
			})
		}
		wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		start := time.Now()

		_, err := c.Payments.Get(ctx, "late")

		require.NoError(t, err)
		assert.LessOrEqual(t, time.Since(start), time.Second+50*time.Millisecond)
		for _, a := range g.arrivals() {
			assert.False(t, strings.HasPrefix(a.path, "/payments/q"), "a cancelled call was sent")
		}
	})
}

// Issue 13, item 2: a slot decided before a sleep is checked again after it
// when a 429 arrived meanwhile: the calls queued for the next period do not
// go into a partition that closed while they slept.
func TestQueuedCallsObeyA429ThatArrivedDuringTheirSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		var seen []arrival
		var boomed atomic.Bool
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, arrival{at: time.Since(start), path: r.URL.Path})
			mu.Unlock()
			if r.URL.Path == "/payments/boom" && boomed.CompareAndSwap(false, true) {
				time.Sleep(500 * time.Millisecond) // answered while the queue sleeps
				w.Header().Set("Retry-After", "3")
				w.WriteHeader(http.StatusTooManyRequests)
				io.WriteString(w, rateLimitedBody)
				return
			}
			io.WriteString(w, paymentBody)
		})
		c := newTestClient(t, "https://gateway.test", WithHTTPClient(pipeClient(t, h)), WithRetryOn429(true),
			WithPacing(Pacing{Public: Budget{Limit: 5, Period: time.Second}, Margin: time.Millisecond}))
		var wg sync.WaitGroup
		for _, id := range []string{"boom", "a", "b", "c", "d", "q0", "q1", "q2", "q3", "q4"} {
			wg.Go(func() {
				_, err := c.Payments.Get(context.Background(), id)
				assert.NoError(t, err)
			})
			time.Sleep(time.Millisecond) // in this order
		}
		wg.Wait()

		mu.Lock()
		defer mu.Unlock()
		for _, a := range seen {
			if strings.HasPrefix(a.path, "/payments/q") {
				// The 429 came at 0.5 s and closed the partition for 3 s.
				assert.GreaterOrEqual(t, a.at, 3500*time.Millisecond, "%s sent into the closed partition", a.path)
			}
		}
	})
}

// newsLimiter reports a 429 to the client the way observe does (the limiter
// first, then the client's news counter) right after the limiter admitted a
// slot for later and before its caller starts to sleep: news that arrives
// while a call is being admitted.
type newsLimiter struct {
	ratelimit.Limiter
	c        *Client
	closeFor time.Duration
	once     sync.Once
}

func (l *newsLimiter) Reserve(ctx context.Context, r ratelimit.Reservation) (ratelimit.Admission, error) {
	adm, err := l.Limiter.Reserve(ctx, r)
	if err == nil && adm.Ticket != 0 && adm.Wait > 0 && r.Ticket == 0 {
		l.once.Do(func() {
			_, oerr := l.Limiter.Observe(ctx, r.Partition, ratelimit.Observation{Throttled: true, RetryAfter: l.closeFor,
				FixedWindows: r.FixedWindows, Budget: r.Budget})
			if oerr != nil {
				panic(oerr)
			}
			l.c.limitGen.Add(1)
		})
	}
	return adm, err
}

// A slot held across a sleep is confirmed again when a 429 arrived while its
// caller was being admitted: the call waits for the reopening instead of
// going into the window the 429 showed full.
func TestNewsDuringAdmissionIsHeard(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const period = 2 * time.Second
		g := newFixedWindow(100, period)
		l := &newsLimiter{Limiter: ratelimit.NewMemory(), closeFor: 10 * time.Second}
		c := newTestClient(t, "https://gateway.test", WithHTTPClient(pipeClient(t, g)), WithLimiter(l),
			WithPacing(Pacing{Public: Budget{Limit: 1, Period: period}}))
		l.c = c
		for _, id := range []string{"first", "second"} {
			_, err := c.Payments.Get(context.Background(), id)
			require.NoError(t, err)
		}
		seen := g.arrivals()
		require.Len(t, seen, 2)
		assert.GreaterOrEqual(t, seen[1].at, 10*time.Second, "the second call waited for the reopening")
	})
}

// Issue 27 item 3: a handler's call is never queued behind a job's
// backlog. Under WithPacing at the gateway's budget (5 per second), 20 job
// calls hold the next windows; the handler's call goes at the next
// window's opening, ahead of them (it waited 3.95 s behind 20 queued job
// calls before), and the job's call it passed moves to a later window: no
// window of the gateway sees more than the budget, and no call is refused.
func TestHandlerGoesAheadOfAJobsBacklog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit, period = 5, time.Second
		g := newFixedWindow(limit, period)
		c := newTestClient(t, "https://gateway.test", WithHTTPClient(pipeClient(t, g)), WithToken("tok"),
			WithPacing(Pacing{Session: Budget{Limit: limit, Period: period}}))
		job := c.With(WithRetryOn429(true), WithLabel("job"))
		handler := c.With(WithRetryOn429(false), WithLabel("handler"))
		time.Sleep(100 * time.Millisecond) // into the window
		done := make(chan []error)
		go func() { done <- runCallsNamed(job, "job", 20, 20) }()
		synctest.Wait() // five sent, fifteen hold the next three windows
		start := time.Now()
		_, err := handler.Payments.Get(context.Background(), "handler")
		require.NoError(t, err)
		waited := time.Since(start)
		assert.Less(t, waited, period, "the handler's call waited behind the job's backlog")
		for _, err := range <-done {
			require.NoError(t, err)
		}
		per := map[int]int{}
		handlerWindow := -1
		for _, a := range g.arrivals() {
			assert.Equal(t, http.StatusOK, a.status, "%s refused at %v", a.path, a.at)
			per[g.window(a)]++
			if a.path == "/payments/handler" {
				handlerWindow = g.window(a)
			}
		}
		for w, n := range per {
			assert.LessOrEqual(t, n, limit, "window %d", w)
		}
		assert.Equal(t, 1, handlerWindow, "the handler went in the next window")
		assert.Len(t, per, 5, "21 calls at 5 a window")
	})
}
