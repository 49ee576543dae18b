package rail0

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rail0/rail0-go/ratelimit"
)

// These tests run a real http.Server and the client's real transport over
// in-memory connections (net.Pipe) inside a synctest bubble, so that a
// gateway's fixed windows of seconds pass in no real time and every
// schedule is exact.

// allowance is the limiter's clock allowance for a period (a
// five-hundredth, at most 100 ms): a window's calls go this long after it
// opens.
func allowance(period time.Duration) time.Duration {
	return min(period/500, 100*time.Millisecond)
}

// rampWait is how much later than its Retry-After the retry of a
// partition's first 429 goes when nothing of the partition's went through
// before it: others' requests filled the window, so the retry waits for
// the probes of the window that follows, which start a step (at least a
// millisecond, the round trips being instant here) after it opens.
func rampWait(period time.Duration) time.Duration { return allowance(period) + time.Millisecond }

// pipeClient serves h over in-memory connections and returns an HTTP
// client that reaches it at http://gateway.test. Call it inside a bubble.
func pipeClient(t *testing.T, h http.Handler) *http.Client {
	l := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	hc := &http.Client{Transport: &http.Transport{DialContext: l.dial, MaxIdleConnsPerHost: 1000}}
	t.Cleanup(func() {
		hc.CloseIdleConnections()
		srv.Close()
	})
	return hc
}

// arrival is one request a fixedWindow gateway saw.
type arrival struct {
	at     time.Duration // since the bubble's start
	path   string
	status int
}

// fixedWindow is Rack::Attack's throttle: windows numbered floor(t/period),
// every request counted, the ones over limit refused with Retry-After.
type fixedWindow struct {
	limit      int
	period     time.Duration
	retryAfter string        // what the 429 says; the whole period unless set
	advertise  bool          // send RateLimit-Policy on every answer
	offset     time.Duration // the gateway's clock runs this far behind ours
	start      time.Time

	mu     sync.Mutex
	counts map[int64]int
	seen   []arrival
}

func newFixedWindow(limit int, period time.Duration) *fixedWindow {
	return &fixedWindow{limit: limit, period: period, start: time.Now(), counts: map[int64]int{}}
}

func (g *fixedWindow) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	g.mu.Lock()
	win := now.Add(-g.offset).UnixNano() / int64(g.period)
	g.counts[win]++
	refused := g.counts[win] > g.limit
	status := http.StatusOK
	if refused {
		status = http.StatusTooManyRequests
	}
	g.seen = append(g.seen, arrival{at: now.Sub(g.start), path: r.URL.Path, status: status})
	g.mu.Unlock()
	if g.advertise {
		w.Header().Set("RateLimit-Policy", fmt.Sprintf(`"default";q=%d;w=%d`, g.limit, int(g.period/time.Second)))
	}
	if refused {
		ra := g.retryAfter
		if ra == "" {
			ra = strconv.Itoa(int(g.period / time.Second))
		}
		w.Header().Set("Retry-After", ra)
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, rateLimitedBody)
		return
	}
	io.WriteString(w, paymentBody)
}

func (g *fixedWindow) arrivals() []arrival {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]arrival(nil), g.seen...)
}

// window is the index of the gateway window holding a, from the start.
func (g *fixedWindow) window(a arrival) int { return int((a.at-g.offset+g.period)/g.period) - 1 }

// earlyRetries counts retries sent before the end of the window that
// refused the previous attempt of the same call (one call per path).
func (g *fixedWindow) earlyRetries(after int) int {
	last := map[string]arrival{}
	n := 0
	for _, a := range g.arrivals() {
		if p, ok := last[a.path]; ok && p.status == http.StatusTooManyRequests && g.window(a) == g.window(p) && g.window(p) >= after {
			n++
		}
		last[a.path] = a
	}
	return n
}

// runCalls has workers share calls GETs of distinct payments on c.
func runCalls(c *Client, workers, calls int) []error {
	return runCallsNamed(c, "p", workers, calls)
}

// runCallsNamed is runCalls with the payment ids prefixed by prefix.
func runCallsNamed(c *Client, prefix string, workers, calls int) []error {
	errs := make([]error, calls)
	eachCall(workers, calls, func(i int) {
		_, errs[i] = c.Payments.Get(context.Background(), fmt.Sprintf("%s%03d", prefix, i))
	})
	return errs
}

// eachCall runs do for the calls 0 to calls-1 on workers goroutines, each
// taking the next call as it finishes one, and returns when all are done:
// the worker pool of every multi-process scenario.
func eachCall(workers, calls int, do func(call int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				n := int(next.Add(1)) - 1
				if n >= calls {
					return
				}
				do(n)
			}
		})
	}
	wg.Wait()
}

// Issue 13, items 1, 2 and 5, with issue 21, item 1: with only
// RetryOn429, the client learns the gateway's budget from the first
// window's 429s; every later window is used in full with the retried calls
// first, whatever the jitter draw (a retry's place in a fixed window is held
// by count, at its own wait: its Retry-After plus its jitter, issue 27).
// Each window after the
// first is refused one request at most: the probe beyond the learned budget
// that finds room when others behind the budget fall silent (a lone client
// cannot tell them from none), and none in the last window, where no call
// waits beyond the budget. The makespan is the floor plus the clock
// allowance and the probes' drift: each window's probe goes a step (a
// millisecond, the round trips being instant here) after the window's
// latest slot, the retry of the previous window's probe among them, so the
// window's last calls drift a step or two per window; and the last
// window's retry goes at its own wait, its jitter (the draw times a tenth
// of the Retry-After) after the window's opening.
func TestLearnedBudgetEndToEnd(t *testing.T) {
	for _, draw := range []float64{0, 0.5, 0.99} {
		t.Run(fmt.Sprint("jitter draw ", draw), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const limit, period, calls = 5, 2 * time.Second, 30
				g := newFixedWindow(limit, period)
				c := newTestClient(t, "http://gateway.test", WithHTTPClient(pipeClient(t, g)), WithRetryOn429(true),
					withRand(func() float64 { return draw }))
				start := time.Now()

				errs := runCalls(c, 8, calls)
				makespan := time.Since(start)

				for _, err := range errs {
					require.NoError(t, err)
				}
				windows := calls / limit
				perWindow, refused := map[int]int{}, map[int]int{}
				retried := map[string]bool{}
				firstFresh, lastRetry := time.Duration(-1), time.Duration(0)
				for _, a := range g.arrivals() {
					if a.status == http.StatusTooManyRequests {
						refused[g.window(a)]++
						if g.window(a) == 0 {
							retried[a.path] = true
						}
						continue
					}
					perWindow[g.window(a)]++
				}
				require.NotEmpty(t, retried)
				for w := 1; w < windows; w++ {
					assert.Equal(t, limit, perWindow[w], "window %d is used in full", w)
					assert.LessOrEqual(t, refused[w], 1, "window %d: more refused than the probe", w)
				}
				assert.Zero(t, refused[windows-1], "the last window probes: no call waits beyond its budget")
				for _, a := range g.arrivals() {
					if g.window(a) == 0 || a.status != http.StatusOK {
						continue
					}
					if retried[a.path] {
						lastRetry = max(lastRetry, a.at)
					} else if firstFresh < 0 {
						firstFresh = a.at
					}
				}
				assert.Less(t, lastRetry, firstFresh+period, "retried calls go no later than the first fresh call's window")
				assert.Zero(t, g.earlyRetries(0))
				floor := time.Duration(windows-1) * period
				drift := time.Duration(2*windows) * time.Millisecond
				jitter := time.Duration(draw * float64(period) / 10)
				assert.LessOrEqual(t, makespan, floor+allowance(period)+drift+jitter, "makespan %v, floor %v", makespan, floor)
			})
		})
	}
}

// delayed holds each request and each answer up to max, as a long network
// path does.
type delayed struct {
	h   http.Handler
	max time.Duration

	mu  sync.Mutex
	rng *rand.Rand
}

func (d *delayed) delay() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return time.Duration(d.rng.Int64N(int64(d.max)))
}

func (d *delayed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	time.Sleep(d.delay())
	d.h.ServeHTTP(w, r)
	time.Sleep(d.delay())
}

// Issue 13, item 4: delivery delays of up to 150 ms each way move no
// request into a full window (the band at a window's end widens with the
// measured round trips) but the probe (issue 21, item 1): one refusal per
// window after the first at most. The delays cost the makespan about one
// round trip per window, the probes' drift (each goes with the retry of the
// previous window's probe, which came a round trip after that one went),
// not one margin per window as under the sliding rule (which stretches each
// period by the longest round trip: 0.2 s a window here), and not a whole
// window.
func TestDeliveryDelaysDoNotCrossWindows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit, period, calls, maxDelay = 20, 2 * time.Second, 100, 150 * time.Millisecond
		g := newFixedWindow(limit, period)
		h := &delayed{h: g, rng: rand.New(rand.NewPCG(1, 2)), max: maxDelay}
		c := newTestClient(t, "http://gateway.test", WithHTTPClient(pipeClient(t, h)), WithRetryOn429(true))
		start := time.Now()

		errs := runCalls(c, 32, calls)

		for _, err := range errs {
			require.NoError(t, err)
		}
		refused := map[int]int{}
		for _, a := range g.arrivals() {
			if a.status == http.StatusTooManyRequests {
				refused[g.window(a)]++
			}
		}
		for w, n := range refused {
			if w > 0 {
				assert.LessOrEqual(t, n, 1, "window %d: more refused than the probe", w)
			}
		}
		windows := calls / limit
		floor := time.Duration(windows-1) * period
		assert.LessOrEqual(t, time.Since(start), floor+time.Duration(windows)*2*maxDelay+allowance(period))
	})
}

// Issue 13, item 1, the estimator's failure mode: a gateway whose windows
// are not where the client's clock puts them (its clock is off by more than
// the allowance). Slots near the client's window boundaries then land in
// the gateway's full windows and are refused. A partition that probes (its
// budget learned from 429s) takes such a refusal for others' requests in
// its windows (a client cannot tell the two apart) and keeps the windows,
// learning what goes through; every call is done (the fallback to the
// sliding rule is left to budgets that do not probe:
// TestContradictedWindowsFallBackToTheSlidingRule).
//
// While a 429's retry went at the learned window's reopening, with the
// window's burst, it cost one refusal per window (the probe) and nothing
// of the floor. Since issue 27 a retry waits its Retry-After plus its
// additive jitter (100 ms here), so with the gateway 30 or 50 ms behind,
// it lands in the gateway's next window, which the client's next burst
// (30 or 50 ms early by the gateway's clock) fills too: up to 5 refused
// per window (the budget), and the makespan the floor plus one window in
// some runs (24.1 s against 22 s). A gateway 700 ms off keeps one refusal
// per window and the floor, plus the last retry's jitter.
func TestMisalignedGatewayKeepsTheFloor(t *testing.T) {
	for _, offset := range []time.Duration{30 * time.Millisecond, 50 * time.Millisecond, 700 * time.Millisecond} {
		t.Run(offset.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const limit, period, calls = 5, 2 * time.Second, 60
				g := newFixedWindow(limit, period)
				g.offset = offset
				c := newTestClient(t, "http://gateway.test", WithHTTPClient(pipeClient(t, g)), WithRetryOn429(true),
					withRand(func() float64 { return 0.5 }))
				start := time.Now()

				errs := runCalls(c, 8, calls)
				makespan := time.Since(start)

				for _, err := range errs {
					require.NoError(t, err)
				}
				refused := map[int]int{}
				for _, a := range g.arrivals() {
					if a.status == http.StatusTooManyRequests {
						refused[g.window(a)]++
					}
				}
				t.Logf("refused per window %v, makespan %v", refused, makespan)
				perWindow := 1
				windows := calls / limit
				floor := time.Duration(windows-1) * period
				if offset < 100*time.Millisecond {
					perWindow, floor = limit, floor+period
				}
				for w, n := range refused {
					if w > 1 {
						assert.LessOrEqual(t, n, perWindow, "window %d: more refused than the probe", w)
					}
				}
				assert.Zero(t, g.earlyRetries(-1))
				jitter := period / 20 // the last retry's: half a tenth of the Retry-After
				assert.LessOrEqual(t, makespan, floor+allowance(period)+jitter+time.Duration(2*windows)*time.Millisecond)
			})
		})
	}
}

// A retry holds its slot from the moment its 429 comes back; a call whose
// context ends during the backoff gives that slot back, and a fresh call
// then takes it in the window that reopens.
func TestHeldRetrySlotIsReleasedWhenTheCallEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const period = 2 * time.Second
		g := newFixedWindow(1, period)
		c := newTestClient(t, "http://gateway.test", WithHTTPClient(pipeClient(t, g)), WithRetryOn429(true),
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

// Issue 13, item 3: a gateway whose Retry-After is half its window. The
// first reopening is refused; the client then doubles the wait, says so,
// and no retry is early again.
func TestShortRetryAfterIsDistrusted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit, period, calls = 4, 2 * time.Second, 20
		g := newFixedWindow(limit, period)
		g.retryAfter = "1"
		ev := &eventLog{}
		c := newTestClient(t, "http://gateway.test", WithHTTPClient(pipeClient(t, g)), WithRetryOn429(true),
			WithObserver(ev), withRand(func() float64 { return 0.5 }))

		// One worker: with several, the calls sent at the learned
		// reopening go at one instant, and the goroutines' order decides
		// whether that burst is refused whole (the proof) or one of them
		// is moved unsent by the 429s before it, and so counted as gone
		// through when the last is refused (no proof: the client still
		// sends nothing early, but does not say why).
		errs := runCalls(c, 1, calls)

		for _, err := range errs {
			require.NoError(t, err)
		}
		assert.Zero(t, g.earlyRetries(1), "early retries after the first window")
		var distrusted []retryEvent
		for _, e := range ev.all() {
			if e.Reason == ReasonRetryAfterDistrusted {
				distrusted = append(distrusted, e)
			}
		}
		require.NotEmpty(t, distrusted)
		assert.Equal(t, time.Second, distrusted[0].RetryAfter)
		assert.GreaterOrEqual(t, distrusted[0].Wait, 2*time.Second, "at least double the short header")
		assert.True(t, distrusted[0].Retry)
	})
}

// Issue 13, item 1: RateLimit fields set the budget the client paces at.
// Since issue 27 (item 5) it probes beyond a stated budget as beyond a
// learned one, so that one answer cannot throttle it for good: a gateway
// that means its quota refuses one request a window at most (the probe),
// whose retry waits its Retry-After plus its jitter.
func TestAdvertisedQuotaPaces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newFixedWindow(3, 2*time.Second)
		g.advertise = true
		c := newTestClient(t, "http://gateway.test", WithHTTPClient(pipeClient(t, g)), WithRetryOn429(true))
		start := time.Now()

		errs := runCalls(c, 1, 9)

		for _, err := range errs {
			require.NoError(t, err)
		}
		refused := map[int]int{}
		for _, a := range g.arrivals() {
			if a.status != http.StatusOK {
				refused[g.window(a)]++
			}
		}
		for w, n := range refused {
			assert.LessOrEqual(t, n, 1, "window %d: more refused than the probe", w)
		}
		// Three windows; the last holds the retry of the clean window's
		// probe (a step after its retries' jitter band), at its own wait.
		assert.Less(t, time.Since(start), 4*time.Second+400*time.Millisecond+10*time.Millisecond)
	})
}

// Issue 13, item 1: a configured budget (PublishedLimits, say) seeds the
// pacing; a 429 while paced lowers it to what the gateway let through. The
// configured budget stays the ceiling the partition probes up to (issue 21,
// item 1): one refusal per window at most after the first, and every window
// used at the gateway's 3.
func TestConfiguredBudgetLoweredByA429(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newFixedWindow(3, 2*time.Second)
		c := newTestClient(t, "http://gateway.test", WithHTTPClient(pipeClient(t, g)), WithRetryOn429(true),
			WithPacing(Pacing{Public: Budget{Limit: 5, Period: 2 * time.Second}}))

		errs := runCalls(c, 1, 12)

		for _, err := range errs {
			require.NoError(t, err)
		}
		accepted, refused := map[int]int{}, map[int]int{}
		for _, a := range g.arrivals() {
			if a.status == http.StatusTooManyRequests {
				refused[g.window(a)]++
			} else {
				accepted[g.window(a)]++
			}
		}
		assert.Equal(t, 1, refused[0], "the configured 5 met the gateway's 3 once")
		for w := range 4 {
			assert.Equal(t, 3, accepted[w], "window %d", w)
			assert.LessOrEqual(t, refused[w], 1, "window %d: more refused than the probe", w)
		}
	})
}

// Issue 12, item 20: callers who give up while queued give their turn
// back. Pacing at 5 per second, 50 callers queue and cancel; a new call
// with a 3 s deadline goes within the next period.
func TestCancelledTurnsAreReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newFixedWindow(1000, time.Second)
		c := newTestClient(t, "http://gateway.test", WithHTTPClient(pipeClient(t, g)),
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
		c := newTestClient(t, "http://gateway.test", WithHTTPClient(pipeClient(t, h)), WithRetryOn429(true),
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

// One answer advertising an absurd window (a billion seconds) must not close
// the partition: a window longer than RetryAfterCap teaches nothing, like
// such a Retry-After, and the next call goes out.
func TestAbsurdAdvertisedWindowTeachesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMemScript(
			step{status: 200, body: paymentBody, header: map[string]string{"RateLimit-Policy": `"p";q=1;w=1000000000`}},
			step{status: 200, body: paymentBody})
		c := newTestClient(t, memURL, memClient(srv), WithToken("t"), WithRetryOn429(true))
		_, err := c.Payments.Get(context.Background(), "p1")
		require.NoError(t, err)
		_, err = c.Payments.Get(context.Background(), "p1")
		require.NoError(t, err)
		assert.Len(t, srv.requests(), 2)
	})
}

// Issue 27, item 5: one answer carrying RateLimit-Policy: "session";q=1;w=60
// (a proxy's, a forged one) must not throttle a job for good. With the
// gateway unthrottled, three calls of a RetryOn429 job 70 s later all go
// within milliseconds: the stated budget is probed beyond as a learned one
// is, and forgotten at the first answer to a request admitted under it
// that does not carry it. A liar that sends the policy on every answer is
// probed beyond too. On main the budget stood for good: two of the three
// came back as NotSent 429s (each would have waited about 50 s, beyond
// the job's 10 s allowance).
func TestForgedPolicyDoesNotThrottleForGood(t *testing.T) {
	for _, every := range []bool{false, true} {
		t.Run(fmt.Sprint("on every answer ", every), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				forged := map[string]string{"RateLimit-Policy": `"session";q=1;w=60`}
				srv := newScripted(func(path string, _ int) (int, map[string]string) {
					if every || path == "/payments/first" {
						return http.StatusOK, forged
					}
					return http.StatusOK, nil
				})
				c := newTestClient(t, "http://gateway.test", WithHTTPClient(pipeClient(t, srv)), WithToken("t"))
				job := c.With(WithRetryOn429(true), WithMaxRetryWait(10*time.Second))
				p, err := job.Payments.Get(context.Background(), "first")
				require.NoError(t, err)
				require.NotNil(t, p.Response.Call.Attempts[0].PartitionState)
				require.Equal(t, Budget{Limit: 1, Period: time.Minute}, p.Response.Call.Attempts[0].PartitionState.Budget, "the stated budget is taken")

				time.Sleep(70 * time.Second)
				start := time.Now()
				var wg sync.WaitGroup
				calls := make([]*Call, 3)
				for i := range calls {
					wg.Go(func() {
						p, err := job.Payments.Get(context.Background(), fmt.Sprint("p", i))
						require.NoError(t, err, "call %d", i)
						calls[i] = p.Response.Call
					})
				}
				wg.Wait()
				assert.Less(t, time.Since(start), 10*time.Millisecond, "the three calls went within a few probe rounds")
				if every {
					return
				}
				forgotten := false
				for _, call := range calls {
					if ps := call.Attempts[0].PartitionState; ps != nil && ps.Budget == (Budget{}) {
						forgotten = true
					}
				}
				assert.True(t, forgotten, "an answer without the fields forgets the stated budget")
			})
		})
	}
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
		c := newTestClient(t, "http://gateway.test", WithHTTPClient(pipeClient(t, g)), WithLimiter(l),
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
