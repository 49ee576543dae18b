package ratelimit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeClock is a manual clock for limiter tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}

var epoch = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// ns is a time after epoch, in the limiter's Unix nanoseconds.
func ns(d time.Duration) int64 { return epoch.Add(d).UnixNano() }

// The admission order, as a pure function: first in, first out; retries
// before fresh calls while a partition is closed; the sliding log.
func TestAdmitAt(t *testing.T) {
	const s = time.Second
	b := Budget{Limit: 2, Period: 10 * s}
	now := ns(0)
	tests := []struct {
		name              string
		log               []int64
		coolStart, cUntil int64
		b                 Budget
		period            time.Duration
		r                 Reservation
		want              time.Duration // after epoch
		hold, cooled      bool
	}{
		{"empty partition", nil, 0, 0, b, 10 * s, Reservation{}, 0, true, false},
		{"no budget: goes now", []int64{ns(-s), ns(-s / 2)}, 0, 0, Budget{}, 0, Reservation{}, 0, true, false},
		{"log not full", []int64{ns(-s)}, 0, 0, b, 10 * s, Reservation{}, 0, true, false},
		{"log full: oldest + period", []int64{ns(-4 * s), ns(-s)}, 0, 0, b, 10 * s, Reservation{}, 6 * s, true, false},
		{"margin stretches the period", []int64{ns(-4 * s), ns(-s)}, 0, 0, b, 11 * s, Reservation{}, 7 * s, true, false},
		{"old admissions do not count", []int64{ns(-40 * s), ns(-20 * s)}, 0, 0, b, 10 * s, Reservation{}, 0, true, false},
		{"first in, first out: after the last hold", []int64{ns(3 * s)}, 0, 0, Budget{}, 0, Reservation{}, 3 * s, true, false},
		{"retry: reopening plus own jitter", nil, ns(-10 * s), ns(50 * s), Budget{}, 0, Reservation{Retry: true, Jitter: 0.5}, 53 * s, true, true},
		{"fresh: the whole jitter window, nothing held", nil, ns(-10 * s), ns(50 * s), Budget{}, 0, Reservation{Jitter: 0}, 56 * s, false, true},
		{"fresh never before a retry whatever the draws", nil, ns(-10 * s), ns(50 * s), Budget{}, 0, Reservation{Jitter: 0}, 56 * s, false, true},
		{"retry queues behind an earlier retry", []int64{ns(55 * s)}, ns(-10 * s), ns(50 * s), Budget{}, 0, Reservation{Retry: true, Jitter: 0.1}, 55 * s, true, true},
		{"cooldown and its jitter window over", nil, ns(-3 * s), ns(-s), Budget{}, 0, Reservation{Jitter: 0.5}, 0, true, false},
		{"fresh: not before the last retry's jitter has run out", nil, ns(-10 * s), ns(-s / 2), Budget{}, 0, Reservation{}, 450 * time.Millisecond, false, true},
		{"retry: goes once the cooldown is over", nil, ns(-10 * s), ns(-s / 2), Budget{}, 0, Reservation{Retry: true}, 0, true, false},
		{"reopens for at most the budget", []int64{ns(-s), ns(0)}, ns(0), ns(s), b, 10 * s, Reservation{Retry: true}, 9 * s, true, true},
		{"retry: never before its own wait (issue 27)", nil, ns(-10 * s), ns(50 * s), Budget{}, 0, Reservation{Retry: true, Jitter: 0.5, After: 58 * s}, 58 * s, true, true},
		{"retry: its wait past an open partition", nil, 0, 0, b, 10 * s, Reservation{Retry: true, After: 2 * s}, 2 * s, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at, hold, cooled := admitAt(tt.log, tt.coolStart, tt.cUntil, tt.b, tt.period, tt.r, now)
			assert.Equal(t, tt.want, time.Duration(at-now))
			assert.Equal(t, tt.hold, hold)
			assert.Equal(t, tt.cooled, cooled)
		})
	}
}

// reserve is a test helper: Reserve on a Memory that cannot fail.
func reserve(t *testing.T, m *Memory, r Reservation) Admission {
	t.Helper()
	adm, err := m.Reserve(context.Background(), r)
	require.NoError(t, err)
	return adm
}

// The guarantee: whatever the arrival pattern (fresh calls and retries,
// confirmations after the wait, callers who give up, 429s that close the
// partition), no window of the gateway sees more than the budget. Under the
// sliding rule, in any interval of one period at most the budget is sent;
// in fixed windows, at most the budget is sent that may be counted in any
// one window (sent from its opening minus the margin and the clock
// allowance to its end plus the allowance), whatever the clocks' offset
// within the allowance and the delivery delays within the margin.
func TestMemoryNeverExceedsBudgetInAnyInterval(t *testing.T) {
	for seed := range uint64(40) {
		fixed := seed%2 == 1
		clock := &fakeClock{t: epoch}
		m := newMemory(clock.Now)
		b := Budget{Limit: 5, Period: time.Second}
		margin := time.Duration(0) // the sliding rule as such
		if fixed {
			margin = 3 * time.Millisecond
		}
		rng := rand.New(rand.NewPCG(seed, 2))
		type pending struct {
			r    Reservation
			wake time.Time
		}
		var sent []time.Time
		var waiting []pending
		// ask reserves for r and either sends, or queues the caller.
		ask := func(r Reservation) {
			adm := reserve(t, m, r)
			require.True(t, adm.OK)
			if adm.Wait == 0 {
				sent = append(sent, clock.Now())
				return
			}
			r.Ticket = adm.Ticket
			waiting = append(waiting, pending{r, clock.Now().Add(adm.Wait)})
		}
		for i := 0; i < 600; i++ {
			clock.Advance(time.Duration(rng.IntN(150)) * time.Millisecond)
			// Waiters whose time has come confirm their slot, or give up.
			due := waiting
			waiting = nil
			for _, w := range due {
				switch {
				case clock.Now().Before(w.wake):
					waiting = append(waiting, w)
				case rng.IntN(10) == 0:
					require.NoError(t, m.Release(context.Background(), "p", w.r.Ticket))
				default:
					ask(w.r)
				}
			}
			ask(Reservation{Partition: "p", Budget: b, Retry: rng.IntN(3) == 0, Jitter: rng.Float64(), MaxWait: time.Hour,
				Margin: margin, FixedWindows: fixed})
			if i%50 == 0 {
				// A 429 that closes the partition; the advertised quota
				// keeps the budget where it is.
				_, err := m.Observe(context.Background(), "p", Observation{Throttled: true, RetryAfter: 700 * time.Millisecond, Advertised: b,
					Margin: margin, FixedWindows: fixed})
				require.NoError(t, err)
			}
		}
		sort.Slice(sent, func(i, j int) bool { return sent[i].Before(sent[j]) })
		require.Greater(t, len(sent), 100)
		if !fixed {
			for i := b.Limit; i < len(sent); i++ {
				require.GreaterOrEqual(t, sent[i].Sub(sent[i-b.Limit]), b.Period, "seed %d: sends %d and %d are in one period", seed, i-b.Limit, i)
			}
			continue
		}
		w := windowsOf(b, margin)
		counted := map[int64]int{}
		for _, at := range sent {
			for k := w.first(at.UnixNano()); k <= w.last(at.UnixNano()); k++ {
				counted[k]++
				require.LessOrEqual(t, counted[k], b.Limit, "seed %d: window %d may count more than the budget", seed, k)
			}
		}
	}
}

// A fresh partition may send its whole budget at once (no token-bucket
// ramp), then waits exactly one period.
func TestMemoryFullBurstThenPeriod(t *testing.T) {
	clock := &fakeClock{t: epoch}
	m := newMemory(clock.Now)
	b := Budget{Limit: 3, Period: 2 * time.Second}
	var waits []time.Duration
	for range 7 {
		waits = append(waits, reserve(t, m, Reservation{Partition: "p", Budget: b, MaxWait: time.Hour}).Wait)
	}
	s := time.Second
	assert.Equal(t, []time.Duration{0, 0, 0, 2 * s, 2 * s, 2 * s, 4 * s}, waits)
}

func TestMemoryMaxWaitRecordsNothing(t *testing.T) {
	clock := &fakeClock{t: epoch}
	m := newMemory(clock.Now)
	b := Budget{Limit: 1, Period: 10 * time.Second}
	adm := reserve(t, m, Reservation{Partition: "p", Budget: b, MaxWait: time.Second})
	require.True(t, adm.OK)
	adm = reserve(t, m, Reservation{Partition: "p", Budget: b, MaxWait: time.Second})
	assert.False(t, adm.OK)
	assert.Zero(t, adm.Ticket)
	assert.Equal(t, 10*time.Second, adm.Wait)
	// The refused request took no slot: the next one still waits 10 s, not 20 s.
	adm = reserve(t, m, Reservation{Partition: "p", Budget: b, MaxWait: time.Hour})
	assert.True(t, adm.OK)
	assert.Equal(t, 10*time.Second, adm.Wait)
}

func TestMemoryCooldownNeverShortened(t *testing.T) {
	clock := &fakeClock{t: epoch}
	m := newMemory(clock.Now)
	ctx := context.Background()
	_, err := m.Observe(ctx, "p", Observation{Throttled: true, RetryAfter: 60 * time.Second})
	require.NoError(t, err)
	fb, err := m.Observe(ctx, "p", Observation{Throttled: true, RetryAfter: 5 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, 60*time.Second, fb.Cooldown)
	adm := reserve(t, m, Reservation{Partition: "p", Retry: true, MaxWait: time.Hour})
	assert.Equal(t, 60*time.Second, adm.Wait)
	assert.True(t, adm.Cooldown)
	// Partitions are independent.
	adm = reserve(t, m, Reservation{Partition: "other", MaxWait: time.Hour})
	assert.Zero(t, adm.Wait)
	assert.False(t, adm.Cooldown)
}

// Issue 12, item 20: a slot given back is free again. Fifty callers queued
// at 5 per second and gave up; the next caller goes at once.
func TestMemoryReleaseGivesSlotBack(t *testing.T) {
	clock := &fakeClock{t: epoch}
	m := newMemory(clock.Now)
	b := Budget{Limit: 5, Period: time.Second}
	ctx := context.Background()
	var tickets []int64
	for range 55 {
		adm := reserve(t, m, Reservation{Partition: "p", Budget: b, MaxWait: time.Hour})
		if adm.Wait > 0 {
			tickets = append(tickets, adm.Ticket)
		}
	}
	require.Len(t, tickets, 50)
	for _, tk := range tickets {
		require.NoError(t, m.Release(ctx, "p", tk))
	}
	clock.Advance(time.Second)
	adm := reserve(t, m, Reservation{Partition: "p", Budget: b, MaxWait: 3 * time.Second})
	require.True(t, adm.OK)
	assert.Zero(t, adm.Wait)
}

// Every admission is checked again after its sleep: a 429 that closed the
// partition meanwhile, or a lower budget, takes the slot away.
func TestMemoryRechecksAfterSleep(t *testing.T) {
	clock := &fakeClock{t: epoch}
	m := newMemory(clock.Now)
	b := Budget{Limit: 1, Period: time.Second}
	ctx := context.Background()
	reserve(t, m, Reservation{Partition: "p", Budget: b, MaxWait: time.Hour})
	held := reserve(t, m, Reservation{Partition: "p", Budget: b, MaxWait: time.Hour})
	require.Equal(t, time.Second, held.Wait)

	clock.Advance(time.Second)
	ok := reserve(t, m, Reservation{Partition: "p", Budget: b, MaxWait: time.Hour, Ticket: held.Ticket})
	assert.Equal(t, Admission{OK: true, Ticket: held.Ticket, Budget: b}, ok, "nothing changed: confirmed")
	late := reserve(t, m, Reservation{Partition: "p", Budget: b, MaxWait: time.Hour})
	require.Equal(t, time.Second, late.Wait)
	clock.Advance(1500 * time.Millisecond)
	ok = reserve(t, m, Reservation{Partition: "p", Budget: b, MaxWait: time.Hour, Ticket: late.Ticket})
	assert.Equal(t, Admission{OK: true, Ticket: clock.Now().UnixNano(), Budget: b}, ok, "a late confirmation records the real send time")
	next := reserve(t, m, Reservation{Partition: "p", Budget: b, MaxWait: time.Hour})
	assert.Equal(t, time.Second, next.Wait, "one period after the real send")

	held = next
	clock.Advance(500 * time.Millisecond)
	_, err := m.Observe(ctx, "p", Observation{Throttled: true, RetryAfter: 2 * time.Second, Budget: b})
	require.NoError(t, err)
	clock.Advance(500 * time.Millisecond)
	again := reserve(t, m, Reservation{Partition: "p", Budget: b, MaxWait: time.Hour, Ticket: held.Ticket})
	assert.True(t, again.Cooldown)
	assert.Greater(t, again.Wait, time.Second, "the partition closed during the sleep")
	assert.Zero(t, again.Ticket, "a fresh call holds nothing while the partition is closed")
}

// Issue 12, item 22: one-off partitions are forgotten once idle.
func TestMemoryEvictsIdlePartitions(t *testing.T) {
	clock := &fakeClock{t: epoch}
	m := newMemory(clock.Now)
	for i := range 5000 {
		reserve(t, m, Reservation{Partition: fmt.Sprintf("session:%d", i), MaxWait: time.Hour})
	}
	_, err := m.Observe(context.Background(), "session:0", Observation{Throttled: true, RetryAfter: 30 * time.Minute})
	require.NoError(t, err)
	require.Equal(t, 5000, m.partitions())
	clock.Advance(idleAfter + time.Second)
	for range sweepEvery {
		reserve(t, m, Reservation{Partition: "public", MaxWait: time.Hour})
	}
	assert.Equal(t, 2, m.partitions(), "only the busy partition and the one still cooling down remain")
}

func TestMemoryHonoursContext(t *testing.T) {
	m := NewMemory()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := m.Reserve(ctx, Reservation{Partition: "p"})
	assert.ErrorIs(t, err, context.Canceled)
}

// Issue 27, item 1, as a property of Memory: over random sequences of
// fresh calls, retries, confirmations, releases, 429s with and without a
// Retry-After, advertised quotas and their absence, under configured and
// learned budgets, fixed windows and the sliding rule, no rule places a
// retry's slot before its After, and a confirmation never moves a slot
// earlier. A guessed retry on a partition with no configured budget and no
// instruction still running goes at its guess exactly (item 2). The seed
// of a failure is in its message.
func TestNoSlotBeforeItsWait(t *testing.T) {
	const ms = time.Millisecond
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 27))
		clock := &fakeClock{t: epoch.Add(time.Duration(rng.IntN(4000)) * ms)}
		m := newMemory(clock.Now)
		var configured Budget
		if seed%3 == 0 {
			configured = Budget{Limit: 4, Period: 2 * time.Second}
		}
		fixed := seed%4 != 1
		type held struct {
			r   Reservation
			at  int64 // the slot
			due time.Time
		}
		var waiting []held
		check := func(r Reservation, adm Admission, now time.Time) {
			t.Helper()
			if !adm.OK || adm.Ticket == 0 {
				return
			}
			at := now.Add(adm.Wait).UnixNano()
			require.Equal(t, at, adm.Ticket, "seed %d", seed)
			require.GreaterOrEqual(t, adm.Wait, r.After, "seed %d: %+v placed before its After", seed, r)
			if r.Ticket != 0 {
				require.GreaterOrEqual(t, at, r.Ticket, "seed %d: %+v confirmed earlier than held", seed, r)
			}
		}
		for i := range 800 {
			clock.Advance(time.Duration(rng.IntN(120)) * ms)
			now := clock.Now()
			due := waiting
			waiting = nil
			for _, h := range due {
				switch {
				case now.Before(h.due):
					waiting = append(waiting, h)
				case rng.IntN(8) == 0:
					require.NoError(t, m.Release(context.Background(), "p", h.at))
				default:
					r := h.r
					r.Ticket, r.After = h.at, 0
					adm := reserve(t, m, r)
					check(r, adm, now)
				}
			}
			switch k := rng.IntN(10); {
			case k < 2:
				o := Observation{Throttled: true, Budget: configured, MaxCooldown: 20 * time.Second, Margin: 3 * ms, FixedWindows: fixed}
				switch rng.IntN(4) {
				case 0: // no instruction
				case 1:
					o.RetryAfter = time.Duration(200+rng.IntN(900)) * ms
				default:
					o.RetryAfter = 2 * time.Second
				}
				if len(waiting) > 0 && rng.IntN(2) == 0 {
					o.Ticket = waiting[rng.IntN(len(waiting))].at
				}
				_, err := m.Observe(context.Background(), "p", o)
				require.NoError(t, err)
			case k < 3:
				o := Observation{Unadvertised: rng.IntN(2) == 0}
				if !o.Unadvertised {
					o.Advertised = Budget{Limit: 1 + rng.IntN(5), Period: 2 * time.Second}
				}
				_, err := m.Observe(context.Background(), "p", o)
				require.NoError(t, err)
			default:
				r := Reservation{Partition: "p", Budget: configured, Margin: 3 * ms, Step: ms, MaxWait: time.Hour, FixedWindows: fixed,
					Jitter: rng.Float64(), Retry: rng.IntN(2) == 0}
				if r.Retry {
					r.After = time.Duration(rng.IntN(2500)) * ms
					r.Clamped = rng.IntN(5) == 0
					r.Guessed = !r.Clamped && rng.IntN(3) == 0
				}
				st := m.ps["p"]
				adm := reserve(t, m, r)
				check(r, adm, now)
				if r.Guessed && !configured.enabled() && adm.Ticket != 0 && (st == nil || min(st.coolUntil, st.told) <= now.Add(r.After).UnixNano()) {
					require.Equal(t, r.After, adm.Wait, "seed %d, op %d: a guessed retry goes at its guess", seed, i)
				}
				if adm.OK && adm.Ticket != 0 && adm.Wait > 0 {
					waiting = append(waiting, held{r: r, at: adm.Ticket, due: now.Add(adm.Wait)})
				}
			}
		}
	}
}

// Issue 27, item 2: the retry of an answer without an instruction goes at
// its own guess. The partition learned a budget of 2 per 2 s from a 429
// with Retry-After: 2 and holds its window full; its cooldown (the
// window's end) is over but the instruction is not. A guessed retry is not
// held by the learned budget or by the window a 429 showed full; a
// configured budget and a cooldown whose instruction still runs do hold
// it, and its confirmation keeps its place.
func TestGuessedRetryGoesAtItsGuess(t *testing.T) {
	const s, ms = time.Second, time.Millisecond
	setup := func(t *testing.T) (*fakeClock, *Memory) {
		clk := &fakeClock{t: epoch.Add(1500 * ms)}
		m := newMemory(clk.Now)
		r := Reservation{Partition: "p", Margin: ms, MaxWait: time.Minute, FixedWindows: true}
		var last Admission
		for range 3 {
			last = reserve(t, m, r)
		}
		clk.Advance(10 * ms)
		fb, err := m.Observe(t.Context(), "p", Observation{Throttled: true, RetryAfter: 2 * s, Margin: ms, FixedWindows: true, Ticket: last.Ticket})
		require.NoError(t, err)
		require.Equal(t, Budget{2, 2 * s}, fb.Budget)
		return clk, m
	}
	guess := Reservation{Partition: "p", Retry: true, Guessed: true, After: 300 * ms, Margin: ms, MaxWait: time.Minute, FixedWindows: true}

	t.Run("the instruction still runs: held until the cooldown ends", func(t *testing.T) {
		clk, m := setup(t)
		adm := reserve(t, m, guess)
		assert.Equal(t, 2*s+4*ms-1510*ms, adm.Wait, "the window's end: the cooldown, before the instruction ends")
		assert.True(t, adm.Cooldown)
		_ = clk
	})
	t.Run("the cooldown over: its guess, whatever was learned", func(t *testing.T) {
		clk, m := setup(t)
		clk.Advance(600 * ms) // 2.11 s: the next window; the instruction runs until 3.51 s
		r := Reservation{Partition: "p", Margin: ms, MaxWait: time.Minute, FixedWindows: true}
		reserve(t, m, r)
		reserve(t, m, r) // the window is full by the learned count
		fresh := reserve(t, m, r)
		require.Greater(t, fresh.Wait, 300*ms, "a fresh call waits for the learned budget")
		adm := reserve(t, m, guess)
		assert.Equal(t, 300*ms, adm.Wait, "the guessed retry is not paced by the learned budget")
		assert.Equal(t, Budget{}, adm.Budget)
		clk.Advance(300 * ms)
		conf := guess
		conf.Ticket, conf.After = adm.Ticket, 0
		assert.Equal(t, Admission{OK: true, Ticket: adm.Ticket}, reserve(t, m, conf), "its confirmation keeps its place")
	})
	t.Run("a configured budget holds it", func(t *testing.T) {
		clk, m := setup(t)
		clk.Advance(600 * ms)
		b := Budget{2, 2 * s}
		r := Reservation{Partition: "p", Budget: b, Margin: ms, MaxWait: time.Minute, FixedWindows: true}
		reserve(t, m, r)
		reserve(t, m, r)
		g := guess
		g.Budget = b
		adm := reserve(t, m, g)
		assert.Equal(t, 4*s+4*ms-2110*ms, adm.Wait, "the configured budget's next window")
	})
	t.Run("the sliding rule: not behind slots a learned budget spread out", func(t *testing.T) {
		clk := &fakeClock{t: epoch}
		m := newMemory(clk.Now)
		b := Budget{10, s}
		reserve(t, m, Reservation{Partition: "q", Budget: b, MaxWait: time.Minute})
		now := clk.Now().UnixNano()
		// Fresh calls that a learned budget of 1 in 10 s spread out.
		m.ps["q"].log = []int64{now, now + int64(10*s), now + int64(20*s), now + int64(30*s)}
		g := Reservation{Partition: "q", Budget: b, Retry: true, Guessed: true, After: 300 * ms, MaxWait: time.Minute}
		assert.Equal(t, 300*ms, reserve(t, m, g).Wait, "its guess: the configured budget has room (it queued behind the held slots, 30 s)")
	})
	t.Run("the sliding rule: the configured budget holds it, either side", func(t *testing.T) {
		clk := &fakeClock{t: epoch}
		m := newMemory(clk.Now)
		b := Budget{10, s}
		reserve(t, m, Reservation{Partition: "q", Budget: b, MaxWait: time.Minute})
		now := clk.Now().UnixNano()
		log := make([]int64, 10) // the budget, 100 ms apart from now on
		for i := range log {
			log[i] = now + int64(i)*int64(100*ms)
		}
		m.ps["q"].log = log
		g := Reservation{Partition: "q", Budget: b, Retry: true, Guessed: true, After: 300 * ms, MaxWait: time.Minute}
		assert.Equal(t, s, reserve(t, m, g).Wait, "a second after the first of the ten")
	})
	t.Run("an unguessed retry is held by what was learned", func(t *testing.T) {
		clk, m := setup(t)
		clk.Advance(600 * ms)
		r := Reservation{Partition: "p", Margin: ms, MaxWait: time.Minute, FixedWindows: true}
		reserve(t, m, r)
		reserve(t, m, r)
		g := guess
		g.Guessed = false
		assert.Greater(t, reserve(t, m, g).Wait, 300*ms)
	})
}

// Issue 27, item 2: a 429 without a Retry-After teaches nothing and closes
// nothing, whatever an earlier header taught: its request leaves the log
// (it used no budget), and the budget, the full windows and the cooldown
// stay as they were. Before, it lowered the budget, marked its window full
// in the period the earlier header had set, and held the call's next
// attempt to that window's end.
func TestHeaderless429TeachesNothing(t *testing.T) {
	const s, ms = time.Second, time.Millisecond
	clk := &fakeClock{t: epoch.Add(1500 * ms)}
	m := newMemory(clk.Now)
	r := Reservation{Partition: "p", Margin: ms, MaxWait: time.Minute, FixedWindows: true}
	var last Admission
	for range 3 {
		last = reserve(t, m, r)
	}
	clk.Advance(10 * ms)
	_, err := m.Observe(t.Context(), "p", Observation{Throttled: true, RetryAfter: 2 * s, Margin: ms, FixedWindows: true, Ticket: last.Ticket})
	require.NoError(t, err)
	clk.Advance(1100 * ms) // 2.61 s: the cooldown is over
	a := reserve(t, m, r)
	b := reserve(t, m, r)
	require.Zero(t, a.Wait)
	require.Zero(t, b.Wait)
	before := *m.ps["p"]
	before.log = append([]int64(nil), before.log...)
	clk.Advance(5 * ms)
	fb, err := m.Observe(t.Context(), "p", Observation{Throttled: true, Margin: ms, FixedWindows: true, Ticket: b.Ticket, Admitted: b.Budget})
	require.NoError(t, err)
	after := m.ps["p"]
	assert.Equal(t, Budget{2, 2 * s}, fb.Budget, "the budget is what the header taught")
	assert.Zero(t, fb.Cooldown, "nothing closed")
	assert.False(t, fb.Distrusted)
	assert.Equal(t, before.fullUntil, after.fullUntil, "no window marked full")
	assert.Equal(t, before.coolUntil, after.coolUntil)
	assert.Equal(t, before.log[:len(before.log)-1], after.log, "the refused request left the log")
}

// Issue 27, item 5: an advertised budget is probed beyond as a learned one
// is, and forgotten when answers stop carrying it. One answer advertising
// 1 per 60 s does not hold the next calls for a minute: beyond the one,
// they go in rounds of probes a step apart; the admissions say the budget
// is advertised, and an answer without the fields forgets it.
func TestAdvertisedBudgetIsProbedAndForgotten(t *testing.T) {
	const ms = time.Millisecond
	clk := &fakeClock{t: epoch.Add(70 * time.Second)}
	m := newMemory(clk.Now)
	r := Reservation{Partition: "p", Margin: 2 * ms, Step: ms, MaxWait: time.Minute, FixedWindows: true}
	first := reserve(t, m, r)
	require.Zero(t, first.Wait)
	clk.Advance(ms)
	fb, err := m.Observe(t.Context(), "p", Observation{Advertised: Budget{1, time.Minute}})
	require.NoError(t, err)
	require.Equal(t, Budget{1, time.Minute}, fb.Budget)
	var waits []time.Duration
	for range 4 {
		adm := reserve(t, m, r)
		require.True(t, adm.OK)
		assert.True(t, adm.Advertised)
		waits = append(waits, adm.Wait)
	}
	assert.Equal(t, []time.Duration{0, 2 * ms, 3 * ms, 3 * ms}, waits, "probes beyond the advertised one: rounds of 1, 1, 2, the first two steps after the last, then a step apart")
	_, err = m.Observe(t.Context(), "p", Observation{Unadvertised: true})
	require.NoError(t, err)
	adm := reserve(t, m, r)
	assert.False(t, adm.Advertised)
	assert.Equal(t, Budget{}, adm.Budget, "forgotten")
	assert.Equal(t, 3*ms, adm.Wait, "unpaced: behind the slots held, first in, first out")
	// A budget 429s taught is not forgotten by answers without fields.
	_, err = m.Observe(t.Context(), "p", Observation{Throttled: true, RetryAfter: time.Minute, Margin: 2 * ms, FixedWindows: true, Ticket: adm.Ticket})
	require.NoError(t, err)
	learned := m.ps["p"].learned
	require.True(t, learned.enabled())
	_, err = m.Observe(t.Context(), "p", Observation{Unadvertised: true})
	require.NoError(t, err)
	assert.Equal(t, learned, m.ps["p"].learned)
}
