package ratelimit

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// burst returns n admissions at t (after epoch), in the limiter's units.
func burst(n int, t time.Duration) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = ns(t)
	}
	return out
}

func TestLearnFrom(t *testing.T) {
	const s = time.Second
	ms := time.Millisecond
	tests := []struct {
		name              string
		log               []int64 // without the refused request
		coolStart, cUntil int64
		cur               Budget
		o                 Observation
		sent              time.Duration
		want              learning
		fixed             bool // the partition paces in fixed windows
		probing           bool // it probes beyond a learned budget
		shared            bool // others' requests filled its windows before
		trusted           bool // past the window after the streak that taught the windows
	}{
		{
			name: "first 429: the period is Retry-After, the budget what went through before",
			log:  burst(20, 0), cur: Budget{},
			o: Observation{Throttled: true, RetryAfter: 2 * s, Margin: 5 * ms}, sent: 10 * ms,
			want: learning{budget: Budget{20, 2 * s}, cooldown: 2 * s},
		},
		{
			name: "requests sent before the period do not count",
			log:  append(burst(7, -3*s), burst(20, 0)...), cur: Budget{},
			o: Observation{Throttled: true, RetryAfter: 2 * s, Margin: 5 * ms}, sent: 10 * ms,
			want: learning{budget: Budget{20, 2 * s}, cooldown: 2 * s},
		},
		{
			name: "concurrent requests sent just after the refused one count (arrival order)",
			log:  append(burst(15, 0), burst(5, 12*ms)...), cur: Budget{},
			o: Observation{Throttled: true, RetryAfter: 2 * s, Margin: 5 * ms}, sent: 10 * ms,
			want: learning{budget: Budget{20, 2 * s}, cooldown: 2 * s},
		},
		{
			name: "later 429 of the same burst: the smaller count wins",
			log:  burst(25, 0), coolStart: ns(20 * ms), cUntil: ns(2*s + 20*ms), cur: Budget{30, 2 * s},
			o: Observation{Throttled: true, RetryAfter: 2 * s, Margin: 5 * ms}, sent: 0,
			want: learning{budget: Budget{25, 2 * s}, cooldown: 2 * s},
		},
		{
			name: "a count above the budget in force does not raise it",
			log:  burst(40, 0), coolStart: ns(20 * ms), cUntil: ns(2*s + 20*ms), cur: Budget{30, 2 * s},
			o: Observation{Throttled: true, RetryAfter: 2 * s, Margin: 5 * ms}, sent: 0,
			want: learning{budget: Budget{30, 2 * s}, cooldown: 2 * s},
		},
		{
			name: "a 429 while paced lowers the budget by at least one",
			log:  burst(30, 10*s), coolStart: ns(0), cUntil: ns(2 * s), cur: Budget{30, 2 * s},
			o: Observation{Throttled: true, RetryAfter: 2 * s, Margin: 5 * ms}, sent: 10 * s,
			want: learning{budget: Budget{29, 2 * s}, cooldown: 2 * s},
		},
		{
			name: "a 429 while paced at a configured budget",
			log:  burst(3, 0), cur: Budget{5, 2 * s},
			o: Observation{Throttled: true, RetryAfter: 2 * s, Margin: 5 * ms}, sent: 0,
			want: learning{budget: Budget{3, 2 * s}, cooldown: 2 * s},
		},
		{
			name: "nothing let through before the first 429: no budget",
			log:  nil, cur: Budget{},
			o: Observation{Throttled: true, RetryAfter: 2 * s}, sent: 0,
			want: learning{cooldown: 2 * s},
		},
		{
			name: "Retry-After beyond the cap: the period is unknown, nothing learned",
			log:  burst(20, 0), cur: Budget{},
			o: Observation{Throttled: true, RetryAfter: time.Minute, Capped: true, MaxCooldown: time.Minute}, sent: 10 * ms,
			want: learning{cooldown: time.Minute},
		},
		{
			name: "paced, never below one",
			log:  nil, cur: Budget{3, 2 * s},
			o: Observation{Throttled: true, RetryAfter: 2 * s}, sent: 0,
			want: learning{budget: Budget{1, 2 * s}, cooldown: 2 * s},
		},
		{
			name: "no Retry-After and nothing learned: no period to count in",
			log:  burst(5, 0),
			o:    Observation{Throttled: true}, sent: 0,
			want: learning{},
		},
		{
			name: "short Retry-After: honoured, then refused at once: doubled",
			log:  burst(20, 0), coolStart: ns(10 * ms), cUntil: ns(1*s + 10*ms), cur: Budget{20, s},
			o: Observation{Throttled: true, RetryAfter: s, MaxCooldown: time.Minute, Margin: 5 * ms}, sent: 1*s + 50*ms,
			want: learning{budget: Budget{20, 2 * s}, cooldown: 2 * s, distrusted: true},
		},
		{
			name: "doubling is bounded by the cap, never below the instruction",
			log:  burst(20, 0), coolStart: ns(0), cUntil: ns(40 * s), cur: Budget{20, 40 * s},
			o: Observation{Throttled: true, RetryAfter: 40 * s, MaxCooldown: time.Minute}, sent: 40 * s,
			want: learning{budget: Budget{20, time.Minute}, cooldown: time.Minute, distrusted: true},
		},
		{
			name: "the budget went out since the reopening: over budget, not a short header",
			log:  append(burst(20, 0), burst(20, 2*s+30*ms)...), coolStart: ns(10 * ms), cUntil: ns(2*s + 10*ms), cur: Budget{20, 2 * s},
			o: Observation{Throttled: true, RetryAfter: 2 * s, MaxCooldown: time.Minute}, sent: 2*s + 40*ms,
			want: learning{budget: Budget{19, 2 * s}, cooldown: 2 * s},
		},
		{
			name: "sent before the reopening: part of the streak, not proof",
			log:  burst(20, 0), coolStart: ns(10 * ms), cUntil: ns(1*s + 10*ms), cur: Budget{20, s},
			o: Observation{Throttled: true, RetryAfter: s, MaxCooldown: time.Minute}, sent: 5 * ms,
			want: learning{budget: Budget{20, s}, cooldown: s},
		},
		{
			name: "long after the reopening: a new streak",
			log:  nil, coolStart: ns(0), cUntil: ns(s), cur: Budget{20, s},
			o: Observation{Throttled: true, RetryAfter: s, MaxCooldown: time.Minute}, sent: 5 * s,
			want: learning{budget: Budget{1, s}, cooldown: s},
		},
		{
			name: "sliding: the interval takes in the window before",
			log:  append(burst(15, -1500*ms), burst(20, 0)...), cur: Budget{},
			o: Observation{Throttled: true, RetryAfter: 2 * s, Margin: 5 * ms}, sent: 10 * ms,
			want: learning{budget: Budget{35, 2 * s}, cooldown: 2 * s},
		},
		{
			name: "fixed windows: only the refused request's window counts",
			log:  append(burst(15, -1500*ms), burst(20, 0)...), cur: Budget{},
			o: Observation{Throttled: true, RetryAfter: 2 * s, Margin: 5 * ms}, sent: 10 * ms, fixed: true,
			want: learning{budget: Budget{20, 2 * s}, cooldown: 2 * s},
		},
		{
			name: "sliding: refused after the budget went out since the reopening: over budget",
			log:  burst(20, 1500*ms), coolStart: ns(500 * ms), cUntil: ns(1500 * ms), cur: Budget{20, s},
			o: Observation{Throttled: true, RetryAfter: s, MaxCooldown: time.Minute, Margin: 5 * ms}, sent: 2*s + 4*ms,
			want: learning{budget: Budget{19, s}, cooldown: s},
		},
		{
			name: "fixed windows: refused in a window unused since the reopening: the header is short",
			log:  burst(20, 1500*ms), coolStart: ns(500 * ms), cUntil: ns(1500 * ms), cur: Budget{20, s},
			o: Observation{Throttled: true, RetryAfter: s, MaxCooldown: time.Minute, Margin: 5 * ms}, sent: 2*s + 4*ms, fixed: true,
			want: learning{budget: Budget{20, 2 * s}, cooldown: 2 * s, distrusted: true},
		},
		// Issue 21, item 1: learning that cannot starve.
		{
			name: "fixed windows: nothing of ours went through the first 429: one per window, others filled it",
			log:  nil, cur: Budget{},
			o: Observation{Throttled: true, RetryAfter: 2 * s}, sent: 0, fixed: true,
			want: learning{budget: Budget{1, 2 * s}, cooldown: 2 * s, others: true},
		},
		{
			name: "probing: the probe refused with the budget through: a sixteenth given back, at least one",
			log:  burst(20, 0), coolStart: ns(-4 * s), cUntil: ns(-2 * s), cur: Budget{20, 2 * s},
			o: Observation{Throttled: true, RetryAfter: 2 * s, Margin: 5 * ms}, sent: 10 * ms, fixed: true, probing: true,
			want: learning{budget: Budget{19, 2 * s}, cooldown: 2 * s, probed: 20},
		},
		{
			name: "probing: the probes found room: what went through, less the sixteenth",
			log:  burst(40, 0), coolStart: ns(-4 * s), cUntil: ns(-2 * s), cur: Budget{20, 2 * s},
			o: Observation{Throttled: true, RetryAfter: 2 * s, Margin: 5 * ms}, sent: 10 * ms, fixed: true, probing: true,
			want: learning{budget: Budget{38, 2 * s}, cooldown: 2 * s, probed: 40},
		},
		{
			name: "probing: others took part of the budget: what went through, less one",
			log:  burst(7, 0), coolStart: ns(-4 * s), cUntil: ns(-2 * s), cur: Budget{20, 2 * s},
			o: Observation{Throttled: true, RetryAfter: 2 * s, Margin: 5 * ms}, sent: 10 * ms, fixed: true, probing: true,
			want: learning{budget: Budget{6, 2 * s}, cooldown: 2 * s, probed: 7},
		},
		{
			name: "probing: a later 429 of the streak takes the smaller count, no second yield",
			log:  burst(7, 0), coolStart: ns(10 * ms), cUntil: ns(2 * s), cur: Budget{6, 2 * s},
			o: Observation{Throttled: true, RetryAfter: 2 * s, Margin: 5 * ms}, sent: 0, fixed: true, probing: true,
			want: learning{budget: Budget{6, 2 * s}, cooldown: 2 * s},
		},
		{
			name: "fixed windows: a burst at the reopening refused whole (its last 429): the header is short",
			log:  burst(20, 10*ms), coolStart: ns(10 * ms), cUntil: ns(1*s + 10*ms), cur: Budget{20, s},
			o: Observation{Throttled: true, RetryAfter: s, MaxCooldown: time.Minute, Margin: 5 * ms}, sent: 1*s + 50*ms, fixed: true,
			want: learning{budget: Budget{20, 2 * s}, cooldown: 2 * s, distrusted: true},
		},
		{
			name: "fixed windows: part of the burst at the reopening went through: the window did reopen",
			log:  append(burst(20, 10*ms), ns(1*s+50*ms)), coolStart: ns(10 * ms), cUntil: ns(1*s + 10*ms), cur: Budget{20, s},
			o: Observation{Throttled: true, RetryAfter: s, MaxCooldown: time.Minute, Margin: 5 * ms}, sent: 1*s + 50*ms, fixed: true,
			want: learning{budget: Budget{1, s}, cooldown: s},
		},
		{
			name: "fixed windows: others' requests filled our windows before: no proof",
			log:  burst(20, 10*ms), coolStart: ns(10 * ms), cUntil: ns(1*s + 10*ms), cur: Budget{20, s},
			o: Observation{Throttled: true, RetryAfter: s, MaxCooldown: time.Minute, Margin: 5 * ms}, sent: 1*s + 50*ms, fixed: true, shared: true,
			want: learning{budget: Budget{1, s}, cooldown: s, others: true},
		},
		{
			name: "fixed windows: past the window after the streak that taught the windows: no proof",
			log:  burst(20, 10*ms), coolStart: ns(10 * ms), cUntil: ns(1*s + 10*ms), cur: Budget{20, s},
			o: Observation{Throttled: true, RetryAfter: s, MaxCooldown: time.Minute, Margin: 5 * ms}, sent: 1*s + 50*ms, fixed: true, trusted: true,
			want: learning{budget: Budget{1, s}, cooldown: s, others: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := estimate{fixed: tt.fixed, probing: tt.probing, shared: tt.shared, trusted: tt.trusted}
			got := learnFrom(tt.log, tt.coolStart, tt.cUntil, tt.cur, tt.o, ns(tt.sent), e)
			assert.Equal(t, tt.want, got)
		})
	}
}

// The limiter learns the budget from a burst's 429s and then reopens the
// partition for exactly that budget.
func TestMemoryLearnsBudget(t *testing.T) {
	clock := &fakeClock{t: epoch}
	m := newMemory(clock.Now)
	ctx := context.Background()
	// 30 calls at once; the gateway let 10 through and refused the rest.
	var tickets []int64
	for range 30 {
		tickets = append(tickets, reserve(t, m, Reservation{Partition: "p", MaxWait: time.Hour}).Ticket)
	}
	clock.Advance(5 * time.Millisecond)
	var fb Feedback
	for _, tk := range tickets[10:] {
		var err error
		fb, err = m.Observe(ctx, "p", Observation{Ticket: tk, Throttled: true, RetryAfter: 2 * time.Second, Margin: time.Millisecond})
		require.NoError(t, err)
	}
	assert.Equal(t, Budget{10, 2 * time.Second}, fb.Budget)
	assert.False(t, fb.Distrusted)
	// At the reopening, 10 retries go; the 11th waits a period.
	clock.Advance(2 * time.Second)
	var waits []time.Duration
	for range 11 {
		adm := reserve(t, m, Reservation{Partition: "p", Retry: true, Margin: time.Millisecond, MaxWait: time.Hour})
		waits = append(waits, adm.Wait)
		assert.Equal(t, Budget{10, 2 * time.Second}, adm.Budget)
	}
	for _, w := range waits[:10] {
		assert.Zero(t, w)
	}
	assert.Equal(t, 2*time.Second+time.Millisecond, waits[10])
	// Advertised fields set the budget outright.
	fb, err := m.Observe(ctx, "p", Observation{Advertised: Budget{50, time.Minute}})
	require.NoError(t, err)
	assert.Equal(t, Budget{50, time.Minute}, fb.Budget)
}
