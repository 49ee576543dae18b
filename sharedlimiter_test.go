package rail0

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rail0/rail0-go/ratelimit"
)

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
			c.result(err)
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
// away), no call fails and the run stays within 1.1 × the floor: each
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
// filled them first. Measured over three runs: 1.035 to 1.108 with the
// dead store answering at once, 1.110 to 1.175 with it stalling; the bound
// is that cost with a margin.
func TestProcessesSharingALimiterSurviveTheStore(t *testing.T) {
	for _, stall := range []time.Duration{0, 500 * time.Millisecond} {
		for _, processes := range []int{2, 4, 8} {
			for _, workers := range []int{8, 32, 128, 512} {
				t.Run(fmt.Sprintf("stall %v P=%d W=%d", stall, processes, workers), func(t *testing.T) {
					r := runShared(t, processes, workers, 500*time.Microsecond, 3*time.Second, stall)
					t.Logf("makespan %v (%.4f × floor), %d 429s after the first window", r.makespan, r.ratio(), r.refused)
					assert.LessOrEqual(t, r.ratio(), 1.2)
				})
			}
		}
	}
}
