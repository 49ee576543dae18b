package rail0

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
			cs[i] = newTestClient(t, "http://gateway.test", WithHTTPClient(f.clients[i]), WithRetryOn429(true), withRand(rng.Float64))
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
