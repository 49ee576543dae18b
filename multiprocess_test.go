package rail0

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
		c := newTestClient(t, "http://gateway.test", opts...)
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
				c.Payments.Get(ctx, fmt.Sprintf("s%d-%05d", process, i))
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
					c := newTestClient(t, "http://gateway.test", WithHTTPClient(pipeClient(t, h)), WithRetryOn429(true),
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
					c := newTestClient(t, "http://gateway.test", WithHTTPClient(pipeClient(t, h)), WithRetryOn429(true),
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
