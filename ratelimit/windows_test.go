package ratelimit

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// epoch is 12:00:00 UTC, a boundary of every window of whole seconds that
// divide an hour, as the gateway numbers them (⌊Unix time / period⌋).

// times turns offsets from epoch into the limiter's Unix nanoseconds.
func times(ds []time.Duration) []int64 {
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = ns(d)
	}
	return out
}

// fullUntil is the limiter's fullUntil for an offset from epoch, zero for
// none.
func fullUntil(d time.Duration) int64 {
	if d == 0 {
		return 0
	}
	return ns(d)
}

// The fixed-window admission rule, as a pure function. Budget 2 per 10 s,
// margin 5 ms: a request may be counted from 20 ms before its sending time
// (the clock allowance, 10 s / 500) to 25 ms after it.
func TestAlignedAt(t *testing.T) {
	const s, ms = time.Second, time.Millisecond
	w := windowsOf(Budget{Limit: 2, Period: 10 * s}, 5*ms)
	tests := []struct {
		name      string
		log       []time.Duration // after epoch
		fullUntil time.Duration   // after epoch; zero for none
		from      time.Duration
		want      time.Duration
	}{
		{"empty: goes at once", nil, 0, s, s},
		{"room in the window", []time.Duration{20 * ms}, 0, s, s},
		{"window full: the next one's opening plus the allowance", []time.Duration{20 * ms, 30 * ms}, 0, s, 10*s + 20*ms},
		{"a late slot does not push the next window", []time.Duration{20 * ms, 3 * s}, 0, 4 * s, 10*s + 20*ms},
		{"not at the boundary itself: the gateway's clock may be behind", []time.Duration{20 * ms, 30 * ms}, 0, 10 * s, 10*s + 20*ms},
		{"near the end, a request may be counted in the next window", []time.Duration{10*s + 20*ms, 10*s + 30*ms}, 0, 9*s + 990*ms, 20*s + 20*ms},
		{"slots near a boundary count on both sides", []time.Duration{9*s + 990*ms, 9*s + 995*ms}, 0, 10*s + 500*ms, 20*s + 20*ms},
		{"held slots later in the window count", []time.Duration{7 * s, 8 * s}, 0, s, 10*s + 20*ms},
		{"a window a 429 showed full is skipped", nil, 10 * s, s, 10*s + 20*ms},
		{"fullUntil in the past changes nothing", nil, 10 * s, 12 * s, 12 * s},
		{"several full windows", []time.Duration{20 * ms, 30 * ms, 10*s + 20*ms, 10*s + 30*ms}, 0, 0, 20*s + 20*ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, full := times(tt.log), fullUntil(tt.fullUntil)
			got := alignedAt(log, full, w, ns(tt.from))
			assert.Equal(t, tt.want, time.Duration(got-ns(0)))
		})
	}
}

// Confirming a held slot after its sleep: it keeps its rank in its window,
// so that when the budget falls while slots are held, the first ones stand
// and the others move on in their order.
func TestConfirmAligned(t *testing.T) {
	const s, ms = time.Second, time.Millisecond
	w := windowsOf(Budget{Limit: 2, Period: 10 * s}, 5*ms)
	tests := []struct {
		name      string
		others    []time.Duration // the log without the slot itself
		fullUntil time.Duration
		t         time.Duration
		want      time.Duration
	}{
		{"stands: one before it", []time.Duration{20 * ms}, 0, s, s},
		{"stands: later slots queue behind it", []time.Duration{2 * s, 3 * s}, 0, s, s},
		{"moves: the budget went to earlier slots", []time.Duration{20 * ms, 30 * ms}, 0, s, 10*s + 20*ms},
		{"moves to the first window with room", []time.Duration{20 * ms, 30 * ms, 10*s + 20*ms, 10 * s * 3 / 2}, 0, s, 20*s + 20*ms},
		{"moves: a 429 showed its window full", nil, 10 * s, s, 10*s + 20*ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, full := times(tt.others), fullUntil(tt.fullUntil)
			got := confirmAligned(log, full, w, ns(tt.t))
			assert.Equal(t, tt.want, time.Duration(got-ns(0)))
		})
	}
}

// The band around a boundary: the clock allowance before, the allowance and
// the margin after, never more than a quarter of the period.
func TestWindowsOf(t *testing.T) {
	const s, ms = time.Second, time.Millisecond
	tests := []struct {
		b           Budget
		margin      time.Duration
		early, late time.Duration
	}{
		{Budget{Limit: 20, Period: 2 * s}, ms, 4 * ms, 5 * ms},
		{Budget{Limit: 100, Period: 60 * s}, 30 * ms, 100 * ms, 130 * ms},
		{Budget{Limit: 1, Period: 100 * ms}, time.Second, 200 * time.Microsecond, 25 * ms},
		{Budget{Limit: 1, Period: time.Hour}, 0, 100 * ms, 100 * ms},
	}
	for _, tt := range tests {
		w := windowsOf(tt.b, tt.margin)
		assert.Equal(t, int64(tt.early), w.early, "%v", tt.b)
		assert.Equal(t, int64(tt.late), w.late, "%v", tt.b)
	}
}

// Through the Memory: in fixed windows the whole budget goes at each
// window's opening; the sliding rule, for the same calls, waits a period
// after each of the first slots, so one late slot delays a slot in every
// window after it.
func TestMemoryFixedWindows(t *testing.T) {
	const s = time.Second
	b := Budget{Limit: 3, Period: 10 * s}
	slots := func(fixed bool) []time.Duration {
		clk := &fakeClock{t: epoch.Add(s)}
		m := newMemory(clk.Now)
		var got []time.Duration
		for i := range 7 {
			if i == 2 {
				clk.Advance(4 * s) // the third call comes late in the window
			}
			adm := reserve(t, m, Reservation{Partition: "public", Budget: b, Margin: time.Millisecond, MaxWait: time.Minute, FixedWindows: fixed})
			got = append(got, clk.Now().Add(adm.Wait).Sub(epoch))
		}
		return got
	}
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{s, s, 5 * s, 10*s + 20*ms, 10*s + 20*ms, 10*s + 20*ms, 20*s + 20*ms}, slots(true))
	assert.Equal(t, []time.Duration{s, s, 5 * s, 11*s + ms, 11*s + ms, 15*s + ms, 21*s + 2*ms}, slots(false))
}

// A 429 for a slot the windows had room for, by the client's count, is a
// contradiction: the budget or the windows are wrong. On a partition that
// does not probe (its budget stated by RateLimit fields and configured
// alike, so that there is nothing to probe up to), the first lowers the
// budget; the second ends the hypothesis, and the partition keeps to the
// sliding rule. A partition that probes (its budget learned from 429s, or
// stated by RateLimit fields alone: issue 27, item 5) takes such refusals
// for others' requests and keeps the windows.
func TestContradictedWindowsFallBackToTheSlidingRule(t *testing.T) {
	const s = time.Second
	for _, kind := range []string{"stated and configured", "stated", "learned"} {
		advertised := kind == "stated and configured"
		clk := &fakeClock{t: epoch.Add(s)}
		m := newMemory(clk.Now)
		b := Budget{Limit: 4, Period: 10 * s}
		o := Observation{Throttled: true, RetryAfter: 10 * s, Margin: time.Millisecond, FixedWindows: true}
		var configured Budget
		if kind != "learned" {
			o.Advertised = b // the gateway states its quota on every answer
		}
		if advertised {
			configured = b
			o.Budget = b
		}
		if kind == "learned" {
			// Learned: the first window's 429 taught 4.
			for range 4 {
				reserve(t, m, Reservation{Partition: "public", Margin: time.Millisecond, MaxWait: time.Minute, FixedWindows: true})
			}
			_, err := m.Observe(t.Context(), "public", o)
			require.NoError(t, err)
			require.Equal(t, b, m.ps["public"].learned)
			clk.t = epoch.Add(21 * s)
		}
		r := Reservation{Partition: "public", Budget: configured, Margin: time.Millisecond, MaxWait: time.Minute, FixedWindows: true}
		refuse := func() {
			t.Helper()
			adm := reserve(t, m, r)
			assert.Zero(t, adm.Wait)
			o := o
			o.Ticket, o.Admitted = adm.Ticket, adm.Budget
			_, err := m.Observe(t.Context(), "public", o)
			assert.NoError(t, err)
		}
		if kind != "learned" {
			_, err := m.Observe(t.Context(), "public", Observation{Advertised: b})
			require.NoError(t, err)
		}
		// One admitted, one refused: a contradiction (one admission
		// against a budget of 4).
		reserve(t, m, r)
		refuse()
		assert.False(t, m.ps["public"].sliding)
		// The first request of a later window refused.
		clk.t = clk.t.Add(24 * s)
		refuse()
		assert.Equal(t, advertised, m.ps["public"].sliding, kind)
		assert.True(t, m.ps["public"].shared, kind)
		if !advertised {
			continue
		}
		// In fixed windows the slot after four at 56 s would open the
		// next window (60 s); in the sliding rule it waits a whole period.
		clk.t = epoch.Add(56 * s)
		for range 4 {
			assert.Zero(t, reserve(t, m, r).Wait)
		}
		assert.Equal(t, 10*s+time.Millisecond, reserve(t, m, r).Wait)
	}
}

// A 429 the client's own count explains (the first window, sent before any
// budget was known, or with the window already full by our count) is no
// contradiction.
func TestExplainedRefusalsKeepTheWindows(t *testing.T) {
	const s = time.Second
	clk := &fakeClock{t: epoch.Add(s)}
	m := newMemory(clk.Now)
	r := Reservation{Partition: "public", Margin: time.Millisecond, MaxWait: time.Minute, FixedWindows: true}
	var tickets []Admission
	for range 6 {
		tickets = append(tickets, reserve(t, m, r)) // no budget yet: all go
	}
	for _, adm := range tickets[3:] {
		_, err := m.Observe(t.Context(), "public", Observation{Ticket: adm.Ticket, Throttled: true, RetryAfter: 10 * s,
			Margin: time.Millisecond, FixedWindows: true, Admitted: adm.Budget})
		assert.NoError(t, err)
	}
	st := m.ps["public"]
	assert.Equal(t, Budget{Limit: 3, Period: 10 * s}, st.learned)
	assert.Zero(t, st.contradicts)
	assert.Equal(t, ns(10*s), st.fullUntil)
}

// Refusals of requests that were in flight when the partition closed are
// one streak, one lesson: only the first counts as a contradiction, so a
// burst refused together does not end the fixed windows on its own.
func TestOneStreakIsOneContradiction(t *testing.T) {
	const s = time.Second
	clk := &fakeClock{t: epoch.Add(s)}
	m := newMemory(clk.Now)
	b := Budget{Limit: 4, Period: 10 * s}
	r := Reservation{Partition: "public", Budget: b, Margin: time.Millisecond, MaxWait: time.Minute, FixedWindows: true}
	first, second := reserve(t, m, r), reserve(t, m, r)
	clk.Advance(10 * time.Millisecond)
	for _, adm := range []Admission{first, second} {
		_, err := m.Observe(t.Context(), "public", Observation{Ticket: adm.Ticket, Throttled: true, RetryAfter: 10 * s,
			Budget: b, Margin: time.Millisecond, FixedWindows: true, Admitted: adm.Budget})
		assert.NoError(t, err)
	}
	assert.Equal(t, 1, m.ps["public"].contradicts)
	assert.False(t, m.ps["public"].sliding)
}

// A 429 that comes within the clock allowance before a boundary may have
// been counted in the window after it, if the gateway's clock is ahead of
// ours: that window is full too. Otherwise a retry would go at its opening
// into a full window, and its 429 would count as a contradiction of the
// windows when only the clocks differ, within the allowance.
func TestRefusalNearABoundaryFillsTheNextWindow(t *testing.T) {
	const s, ms = time.Second, time.Millisecond
	b := Budget{Limit: 4, Period: 10 * s} // clock allowance 20 ms
	tests := []struct {
		at, fullUntil time.Duration
	}{
		{5 * s, 10 * s},
		{10*s - 21*ms, 10 * s},
		{10*s - 20*ms, 20 * s},
		{10*s - ms, 20 * s},
		{10 * s, 20 * s},
	}
	for _, tt := range tests {
		clk := &fakeClock{t: epoch.Add(tt.at)}
		m := newMemory(clk.Now)
		_, err := m.Observe(t.Context(), "public", Observation{Throttled: true, RetryAfter: s, Budget: b, FixedWindows: true})
		assert.NoError(t, err)
		assert.Equal(t, ns(tt.fullUntil), m.ps["public"].fullUntil, "429 at %v", tt.at)
	}
}

// The log's bound (maxLog admissions) keeps every admission the windows
// still count: with more slots held than that, the current window stays
// full instead of reopening when its admissions are dropped.
func TestHeldSlotsBeyondTheLogBound(t *testing.T) {
	const s, ms = time.Second, time.Millisecond
	clk := &fakeClock{t: epoch.Add(s)}
	m := newMemory(clk.Now)
	r := Reservation{Partition: "public", Budget: Budget{Limit: 1000, Period: 10 * s}, MaxWait: time.Hour, FixedWindows: true}
	var at []time.Duration
	for range maxLog + 200 {
		at = append(at, clk.Now().Add(reserve(t, m, r).Wait).Sub(epoch))
	}
	for i, got := range at {
		want := s
		if k := i / 1000; k > 0 {
			want = time.Duration(k)*10*s + 20*ms
		}
		if got != want {
			t.Fatalf("slot %d at %v, want %v", i, got, want)
		}
	}
	// Admissions before the current window are bounded as before.
	clk.Advance(time.Minute)
	reserve(t, m, r)
	assert.Len(t, m.ps["public"].log, maxLog+1)
}

// A held slot that has to move on at its confirmation (the budget fell
// while it was held) is given up when the new time is beyond what the
// caller can still wait: the call's allowance bounds its waiting, whatever
// the slot it held.
func TestConfirmationBeyondTheRoomGivesTheSlotUp(t *testing.T) {
	const s = time.Second
	for _, fixed := range []bool{true, false} {
		clk := &fakeClock{t: epoch.Add(s)}
		m := newMemory(clk.Now)
		r := Reservation{Partition: "public", Budget: Budget{Limit: 2, Period: 10 * s}, Margin: time.Millisecond,
			MaxWait: time.Minute, FixedWindows: fixed}
		reserve(t, m, r)
		reserve(t, m, r)
		reserve(t, m, r)
		held := reserve(t, m, r)
		require.NotZero(t, held.Ticket)
		before := len(m.ps["public"].log)

		// The budget is now 1: the slot would move a window later, beyond
		// the 12 s the caller has left.
		r.Budget, r.Ticket, r.MaxWait = Budget{Limit: 1, Period: 10 * s}, held.Ticket, 12*s
		adm := reserve(t, m, r)

		assert.False(t, adm.OK, "fixed %v", fixed)
		assert.Zero(t, adm.Ticket, "fixed %v", fixed)
		assert.Greater(t, adm.Wait, 12*s, "fixed %v", fixed)
		assert.Len(t, m.ps["public"].log, before-1, "fixed %v: the slot is given up", fixed)
	}
}

// Issue 21, item 1: where a window admits beyond the budget, as a pure
// function. Budget 2 per 10 s, a step of 5 ms, probes from the window that
// opens at 20 s; the window before it (10 s) is the clean one, whose last
// retry of the streak goes at 10.3 s.
func TestProbeAt(t *testing.T) {
	const s, ms = time.Second, time.Millisecond
	w := windowsOf(Budget{Limit: 2, Period: 10 * s}, 5*ms) // allowance 20 ms
	w.step, w.from, w.clean, w.ceiling = int64(5*ms), ns(20*s), ns(10*s+300*ms), 4
	w.pace = w.step // unpaced: probeWindows sets the pace to the step
	tests := []struct {
		name  string
		log   []time.Duration // after epoch
		k     int64           // window, after epoch's
		ok    bool
		want  time.Duration
		steps bool // step zero: the partition does not probe
	}{
		{"before the clean window: the budget only", []time.Duration{20 * ms, 20 * ms}, 0, false, 0, false},
		{"clean window: after the streak's last retry", []time.Duration{10*s + 20*ms, 10*s + 20*ms}, 1, true, 10*s + 305*ms, false},
		{"clean window: after its own latest slot", []time.Duration{10*s + 20*ms, 10*s + 400*ms}, 1, true, 10*s + 405*ms, false},
		{"probed window: the first probe races the burst at the opening", []time.Duration{20*s + 20*ms, 20*s + 20*ms}, 2, true, 20*s + 20*ms, false},
		{"probed window: the first probe goes with a retry held later", []time.Duration{20*s + 20*ms, 20*s + 90*ms}, 2, true, 20*s + 90*ms, false},
		{"probed window: each further probe a step after the latest slot", []time.Duration{20*s + 20*ms, 20*s + 20*ms, 20*s + 20*ms}, 2, true, 20*s + 25*ms, false},
		{"probed window: not beyond the ceiling", []time.Duration{20*s + 20*ms, 20*s + 20*ms, 20*s + 20*ms, 20*s + 25*ms}, 2, false, 0, false},
		{"probed window: not in the band at the window's end", []time.Duration{20*s + 20*ms, 29*s + 990*ms}, 2, false, 0, false},
		{"a partition that does not probe", []time.Duration{20*s + 20*ms, 20*s + 20*ms}, 2, false, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := w
			if tt.steps {
				w.step = 0
			}
			log := times(tt.log)
			k := floorDiv(ns(0), w.period) + tt.k
			got, ok := w.probeAt(log, k, len(log), math.MaxInt64)
			require.Equal(t, tt.ok, ok)
			if ok {
				assert.Equal(t, tt.want, time.Duration(got-ns(0)))
			}
		})
	}
}

// Issue 21, item 1, through Memory: the window a 429 taught paces at what
// went through; the window after it (the clean one) takes only that at its
// opening and probes once every retry of the streak has gone; later windows
// take one more at their opening; a refusal closes the partition until its
// window ends (Rack::Attack's Retry-After is the whole period, not the time
// left), and its retry waits until then (no longer than the Retry-After,
// without jitter), its slot held for then.
func TestMemoryProbesBeyondTheLearnedBudget(t *testing.T) {
	const s, ms = time.Second, time.Millisecond
	clk := &fakeClock{t: epoch}
	m := newMemory(clk.Now)
	r := Reservation{Partition: "public", Margin: ms, MaxWait: time.Minute, FixedWindows: true}
	var tickets []int64
	for range 5 {
		tickets = append(tickets, reserve(t, m, r).Ticket) // no budget yet: all go
	}
	clk.Advance(10 * ms)
	o := Observation{Throttled: true, RetryAfter: 2 * s, Margin: ms, FixedWindows: true}
	var fb Feedback
	for _, tk := range tickets[3:] {
		o.Ticket = tk
		var err error
		fb, err = m.Observe(t.Context(), "public", o)
		require.NoError(t, err)
	}
	assert.Equal(t, Budget{3, 2 * s}, fb.Budget)
	assert.Equal(t, 2*s+4*ms-10*ms, fb.Cooldown, "closed until its window ends, plus the clock allowance")
	// The two retries hold their slots when their 429s come: at their
	// Retry-After, not at the reopening before it.
	retry := r
	retry.Retry, retry.After = true, 2*s
	for range 2 {
		adm := reserve(t, m, retry)
		assert.Equal(t, 2*s, adm.Wait)
	}
	// The clean window: one fresh call at its opening, then a probe a
	// step after the streak's last retry.
	clk.Advance(2*s + 4*ms - 10*ms)
	assert.Zero(t, reserve(t, m, r).Wait)
	assert.Equal(t, 10*ms+200*ms+ms-4*ms, reserve(t, m, r).Wait, "the probe: a step after the retries' jitter band (a tenth of the period)")
	// A refusal (the probe's) closes the window; the next one takes the
	// budget and one more at its opening.
	clk.Advance(8 * ms)
	fb, err := m.Observe(t.Context(), "public", Observation{Throttled: true, RetryAfter: 2 * s, Margin: ms, FixedWindows: true,
		Admitted: Budget{3, 2 * s}})
	require.NoError(t, err)
	clk.t = epoch.Add(4*s + 4*ms)
	var waits []time.Duration
	for range fb.Budget.Limit + 2 {
		waits = append(waits, reserve(t, m, r).Wait)
	}
	for _, w := range waits[:fb.Budget.Limit+1] {
		assert.Zero(t, w, "budget %v", fb.Budget)
	}
	assert.Equal(t, ms, waits[fb.Budget.Limit+1], "further probes go a step apart")
}

// Issue 21's multi-process target: the probes beyond the budget come in
// rounds of 1, 1, 2, 4, ... a step apart, as a pure function.
func TestStartsRound(t *testing.T) {
	for probes, want := range map[int]bool{1: true, 2: true, 3: false, 4: true, 5: false, 6: false, 7: false, 8: true, 9: false, 16: true} {
		assert.Equal(t, want, startsRound(probes), "after %d probes", probes)
	}
}

// probeRow is a row of TestProbeRounds: the window's log (after epoch) and
// when its next probe goes.
type probeRow struct {
	name string
	log  []time.Duration
	want time.Duration
}

// Issue 21's multi-process target, in probeAt: while no 429 shows the
// window full, each round of probes is as large as all the probes before
// it, and goes a step after the previous round (after the first, a pace
// after it when one is set). Budget 2 per 10 s, a step of 5 ms, probes from
// the window that opens at 20 s (allowance 20 ms), no ceiling.
func TestProbeRounds(t *testing.T) {
	const s, ms = time.Second, time.Millisecond
	w := windowsOf(Budget{Limit: 2, Period: 10 * s}, 5*ms)
	w.step, w.from, w.ceiling = int64(5*ms), ns(20*s), math.MaxInt
	w.pace = w.step // unpaced: probeWindows sets the pace to the step
	open := 20*s + 20*ms
	tests := []probeRow{
		{"the first probe: at the opening", []time.Duration{open, open}, open},
		{"the second round (one probe): a step later", []time.Duration{open, open, open}, open + 5*ms},
		{"the third round (two probes): a step after the second", []time.Duration{open, open, open, open + 5*ms}, open + 10*ms},
		{"the third round's second probe: with the first", []time.Duration{open, open, open, open + 5*ms, open + 10*ms}, open + 10*ms},
		{"the fourth round (four probes): a step after the third",
			[]time.Duration{open, open, open, open + 5*ms, open + 10*ms, open + 10*ms}, open + 15*ms},
		{"the fourth round's last probe: with the others",
			[]time.Duration{open, open, open, open + 5*ms, open + 10*ms, open + 10*ms, open + 15*ms, open + 15*ms, open + 15*ms}, open + 15*ms},
		{"a round never before its time from the opening",
			[]time.Duration{open, open, open, open + 5*ms, open + 5*ms}, open + 10*ms},
		{"a round that went late: the next one a step after it",
			[]time.Duration{open, open, open, open + 5*ms, open + 200*ms, open + 200*ms}, open + 205*ms},
	}
	// Paced, in a partition that does not look alone (ahead): the round
	// after the opening probe goes a step (the margin, the longest recent
	// round trip) after it, the later rounds a pace (the typical round
	// trip, 2 ms here) apart; under a heavy tail the margin is many times
	// the typical one.
	paced := w
	paced.pace = int64(2 * ms)
	paced.ahead = true
	pacedTests := []probeRow{
		{"the second round (one probe): a step later", []time.Duration{open, open, open}, open + 5*ms},
		{"the third round (two probes): a pace after the second", []time.Duration{open, open, open, open + 5*ms}, open + 7*ms},
		{"the third round's second probe: with the first", []time.Duration{open, open, open, open + 5*ms, open + 7*ms}, open + 7*ms},
		{"the fourth round (four probes): a pace after the third",
			[]time.Duration{open, open, open, open + 5*ms, open + 7*ms, open + 7*ms}, open + 9*ms},
		{"a round never before its time from the opening",
			[]time.Duration{open, open, open, open + 5*ms, open + 5*ms}, open + 7*ms},
		{"a round that went late: the next one a pace after it",
			[]time.Duration{open, open, open, open + 5*ms, open + 200*ms, open + 200*ms}, open + 202*ms},
	}
	// Paced, in a partition that looks alone: the round after the opening
	// probe goes two paces after it (at most the step), not the margin:
	// the last window's calls beyond the share wait for that round, and
	// the margin is the tail of the round trips, not their typical length.
	alone := paced
	alone.ahead = false
	aloneTests := []probeRow{
		{"the second round (one probe): two paces later", []time.Duration{open, open, open}, open + 4*ms},
		{"the third round (two probes): a pace after the second", []time.Duration{open, open, open, open + 4*ms}, open + 6*ms},
		{"a round never before its time from the opening",
			[]time.Duration{open, open, open, open + 4*ms, open + 4*ms}, open + 6*ms},
		{"a round that went late: the next one a pace after it",
			[]time.Duration{open, open, open, open + 4*ms, open + 200*ms, open + 200*ms}, open + 202*ms},
	}
	slow := alone
	slow.pace = int64(3 * ms)
	slowTests := []probeRow{
		{"alone, the second round: at most the step", []time.Duration{open, open, open}, open + 5*ms},
	}
	for _, set := range []struct {
		w     windows
		tests []probeRow
	}{{w, tests}, {paced, pacedTests}, {alone, aloneTests}, {slow, slowTests}} {
		for _, tt := range set.tests {
			t.Run(fmt.Sprintf("pace %v, ahead %v: %s", time.Duration(set.w.pace), set.w.ahead, tt.name), func(t *testing.T) {
				log := times(tt.log)
				k := floorDiv(ns(0), set.w.period) + 2
				got, ok := set.w.probeAt(log, k, len(log), math.MaxInt64)
				require.True(t, ok)
				assert.Equal(t, tt.want, time.Duration(got-ns(0)))
			})
		}
	}
}

// Issue 21's multi-process target, in alignedAt: a partition sharing its
// budget sends its probes ahead of a retry held late in the window (the
// retry of a refused probe, a whole Retry-After after it); a partition
// alone waits for it, as for every slot but its one late retry (behindIn).
// Budget 2 per 10 s, a step of 5 ms, probes from 20 s; the window at 30 s
// holds one call at its opening and a retry at 30.5 s.
func TestProbesGoAheadOfHeldRetries(t *testing.T) {
	const s, ms = time.Second, time.Millisecond
	w := windowsOf(Budget{Limit: 2, Period: 10 * s}, 5*ms)
	w.step, w.from, w.ceiling = int64(5*ms), ns(20*s), math.MaxInt
	w.pace = w.step // unpaced: probeWindows sets the pace to the step
	open := 30*s + 20*ms
	for _, tt := range []struct {
		name  string
		ahead bool
		log   []time.Duration
		want  time.Duration
	}{
		{"alone: the first probe goes with the retry", false, []time.Duration{open, 30*s + 500*ms}, 30*s + 500*ms},
		{"alone: the next round a step after it", false, []time.Duration{open, 30*s + 500*ms, 30*s + 500*ms}, 30*s + 505*ms},
		{"sharing: the first probe at the opening", true, []time.Duration{open, 30*s + 500*ms}, open},
		{"sharing: the next round a step after it", true, []time.Duration{open, open, 30*s + 500*ms}, open + 5*ms},
		{"sharing: the third round, still ahead", true, []time.Duration{open, open, open + 5*ms, 30*s + 500*ms}, open + 10*ms},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := w
			w.ahead = tt.ahead
			assert.Equal(t, tt.want, time.Duration(alignedAt(times(tt.log), 0, w, ns(open))-ns(0)))
		})
	}
}

// heldUntil, as a pure function: all the log, or what is at or before t.
func TestHeldUntil(t *testing.T) {
	assert.Equal(t, int64(math.MaxInt64), windows{}.heldUntil(42))
	assert.Equal(t, int64(43), windows{ahead: true}.heldUntil(42))
}

// Issue 27, item 1, through Memory: five calls unpaced, the fifth refused
// 10 ms into the window [0, 2 s) with Retry-After: 2 s (Rack::Attack's
// whole period). Under a budget it learned, the partition reopens for
// fresh calls at 2 s plus the clock allowance, before the instruction
// ends; the retry's slot is held at its own wait (After: the instruction
// plus its jitter) or later, under every rule, and never at the reopening
// before it. It pinned the opposite before (Feedback.RetryWait, the
// reopening, without jitter).
func TestRetrySlotNeverBeforeItsWait(t *testing.T) {
	const s, ms = time.Second, time.Millisecond
	tests := []struct {
		name     string
		fixed    bool
		budget   Budget // configured
		sliding  bool
		distrust bool // a second 429 after the first's Retry-After was honoured
		clamped  bool
	}{
		{"learned fixed windows", true, Budget{}, false, false, false},
		{"a configured budget", true, Budget{3, 2 * s}, false, false, false},
		{"the sliding rule", true, Budget{}, true, false, false},
		{"not fixed windows", false, Budget{}, false, false, false},
		{"distrusted", true, Budget{}, false, true, false},
		{"distrusted, clamped", true, Budget{}, false, true, true},
	}
	for _, tt := range tests {
		for _, u := range []float64{0, 0.5, 0.999} {
			t.Run(fmt.Sprintf("%s, jitter %v", tt.name, u), func(t *testing.T) {
				clk := &fakeClock{t: epoch}
				m := newMemory(clk.Now)
				r := Reservation{Partition: "public", Budget: tt.budget, Margin: 150 * ms, MaxWait: time.Minute, FixedWindows: tt.fixed}
				var tickets []int64
				for range 5 {
					tickets = append(tickets, reserve(t, m, r).Ticket)
				}
				clk.Advance(10 * ms)
				o := Observation{Throttled: true, RetryAfter: 2 * s, Margin: 150 * ms, FixedWindows: tt.fixed, Ticket: tickets[4], Budget: tt.budget}
				if tt.sliding {
					m.ps["public"].sliding = true
				}
				fb, err := m.Observe(t.Context(), "public", o)
				require.NoError(t, err)
				if tt.name == "learned fixed windows" {
					assert.Less(t, fb.Cooldown, o.RetryAfter, "fresh calls may go at the learned reopening")
				}
				if tt.distrust {
					clk.Advance(fb.Cooldown)
					retry := r
					retry.Retry = true
					adm := reserve(t, m, retry)
					clk.Advance(adm.Wait + 5*ms)
					o.Ticket = adm.Ticket
					fb, err = m.Observe(t.Context(), "public", o)
					require.NoError(t, err)
					require.True(t, fb.Distrusted)
				}
				// The client's wait: the instruction plus its jitter, and
				// for a distrusted one at least the lengthened cooldown.
				wait := o.RetryAfter + time.Duration(u*float64(o.RetryAfter)/10)
				if tt.distrust && !tt.clamped {
					wait = max(wait, fb.Cooldown)
				}
				retry := r
				retry.Retry, retry.After, retry.Jitter, retry.Clamped = true, wait, u, tt.clamped
				adm := reserve(t, m, retry)
				require.True(t, adm.OK)
				assert.GreaterOrEqual(t, adm.Wait, wait, "the slot is held at the retry's own wait or later")
				// Its confirmation after the sleep never moves it earlier.
				clk.Advance(wait)
				retry.Ticket = adm.Ticket
				conf := reserve(t, m, retry)
				assert.GreaterOrEqual(t, clk.Now().Add(conf.Wait).UnixNano(), adm.Ticket)
			})
		}
	}
}

// Issue 21, a partition whose windows others' requests have filled
// (burst), in probeAt: while less than a pace has passed since the opening,
// its probes go at the opening, up to its share (twice the budget in all):
// others may have fallen silent, and a window they left fills in a round
// instead of log₂ of the share. Then rounds a pace apart, each a multiple
// of the opening round's size. Budget 2 per 10 s, a step of 5 ms, a pace
// of 2 ms, probes from 20 s; until is the probe's own time plus one, as
// heldUntil gives a partition that does not look alone.
func TestProbeOpeningRound(t *testing.T) {
	const s, ms = time.Second, time.Millisecond
	w := windowsOf(Budget{Limit: 2, Period: 10 * s}, 5*ms)
	w.step, w.pace, w.from, w.ceiling = int64(5*ms), int64(2*ms), ns(20*s), math.MaxInt
	w.ahead, w.burst = true, true
	open := 20*s + 20*ms
	tests := []struct {
		name  string
		burst bool
		log   []time.Duration // after epoch
		at    time.Duration   // when the probe would go (until is at + 1)
		want  time.Duration
	}{
		{"the opening round: a second probe at the opening", true, []time.Duration{open, open, open}, open, open},
		{"the opening round full (the share): the next round a pace later, as large",
			true, []time.Duration{open, open, open, open}, open, open + 2*ms},
		{"the next round's second probe: with the first", true, []time.Duration{open, open, open, open, open + 2*ms}, open + 2*ms, open + 2*ms},
		{"the round after: a pace later, twice the opening round",
			true, []time.Duration{open, open, open, open, open + 2*ms, open + 2*ms}, open + 2*ms, open + 4*ms},
		{"a pace after the opening: the opening round is what went then",
			true, []time.Duration{open, open, open}, open + 3*ms, open + 2*ms},
		{"no burst (alone or varied counts): one probe at the opening, the next round a step later",
			false, []time.Duration{open, open, open}, open, open + 5*ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := w
			w.burst = tt.burst
			log := times(tt.log)
			k := floorDiv(ns(0), w.period) + 2
			got, ok := w.probeAt(log, k, len(log), ns(tt.at)+1)
			require.True(t, ok)
			assert.Equal(t, tt.want, time.Duration(got-ns(0)))
		})
	}
}

// probeWindows sends an opening round (burst) only for a partition whose
// windows others' requests have filled, not for one whose refused probes
// merely found different counts (varied): delivery delays alone vary the
// counts of a client alone, which would then send a whole share of 429s.
// Both probe ahead of held slots; the pace is the step at most.
func TestProbeWindowsBurstOnlyWhenShared(t *testing.T) {
	const s, ms = time.Second, time.Millisecond
	for _, tt := range []struct {
		name               string
		shared, varied     bool
		pace               time.Duration
		ahead, burst       bool
		wantStep, wantPace time.Duration
	}{
		{"alone", false, false, 2 * ms, false, false, 5 * ms, 2 * ms},
		{"varied counts", false, true, 2 * ms, true, false, 5 * ms, 2 * ms},
		{"shared", true, false, 2 * ms, true, true, 5 * ms, 2 * ms},
		{"no pace: the step", true, false, 0, true, true, 5 * ms, 5 * ms},
		{"a pace beyond the margin: the margin", false, false, 9 * ms, false, false, 5 * ms, 5 * ms},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := &partitionState{learned: Budget{Limit: 2, Period: 10 * s}, shared: tt.shared, varied: tt.varied}
			w := st.probeWindows(windowsOf(st.learned, 5*ms), Budget{}, 5*ms, tt.pace)
			assert.Equal(t, tt.ahead, w.ahead)
			assert.Equal(t, tt.burst, w.burst)
			assert.Equal(t, int64(tt.wantStep), w.step)
			assert.Equal(t, int64(tt.wantPace), w.pace)
		})
	}
}
