package rail0

import (
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMarginFrom(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name   string
		rtts   []time.Duration
		period time.Duration
		want   time.Duration
	}{
		{"nothing observed: the old default", nil, 60 * time.Second, 1200 * ms},
		{"nothing observed, short period", nil, 500 * ms, 20 * ms},
		{"the longest round trip", []time.Duration{2 * ms, 7 * ms, 3 * ms}, 2 * time.Second, 7 * ms},
		{"at least a millisecond", []time.Duration{50 * time.Microsecond}, 2 * time.Second, ms},
		{"at most a tenth of the period", []time.Duration{900 * ms}, 2 * time.Second, 200 * ms},
		{"period unknown: unbounded", []time.Duration{900 * ms}, 0, 900 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, marginFrom(tt.rtts, tt.period))
		})
	}
	var d delayLog
	for i := range 100 {
		d.add(time.Duration(i) * ms)
	}
	assert.Equal(t, 99*ms, d.margin(10*time.Second))
	d.add(-time.Second)
	assert.Equal(t, 99*ms, d.margin(10*time.Second), "a negative round trip (clock step) is ignored")
}

// The median paces the probe rounds (Reservation.Step): the typical round
// trip, which one slow answer in 32 does not move, where the margin is the
// longest one.
func TestDelayLogMedian(t *testing.T) {
	ms := time.Millisecond
	var d delayLog
	median := func() time.Duration {
		m, med := d.timing(time.Hour)
		assert.Equal(t, d.margin(time.Hour), m, "one reading gives the margin too")
		return med
	}
	assert.Zero(t, median(), "nothing observed: the margin paces")
	for _, rtt := range []time.Duration{9 * ms, 2 * ms, 5 * ms} {
		d.add(rtt)
	}
	assert.Equal(t, 5*ms, median(), "odd count: the middle one")
	d.add(7 * ms)
	assert.Equal(t, 7*ms, median(), "even count: the upper middle one")
	for range 31 {
		d.add(3 * ms)
	}
	d.add(400 * ms)
	assert.Equal(t, 3*ms, median(), "the last 32 only, and a tail draw does not move it")
	assert.Equal(t, 400*ms, d.margin(time.Hour), "where it sets the margin")
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
		c := newTestClient(t, "https://gateway.test", WithHTTPClient(pipeClient(t, h)), WithRetryOn429(true))
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
				c := newTestClient(t, "https://gateway.test", WithHTTPClient(pipeClient(t, g)), WithRetryOn429(true),
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
