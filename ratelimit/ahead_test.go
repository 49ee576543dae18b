package ratelimit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holder is a call that holds a slot until its time, then confirms it.
type holder struct {
	r      Reservation
	due    int64 // when its slot is due; 0 once sent
	sentAt int64
}

// runHolders plays the limiter's callers on a fake clock: each sleeps
// until its slot is due and confirms it (in an order rng draws among those
// due at once), sleeping again when the slot moved, until all are sent.
func runHolders(t *testing.T, m *Memory, clk *fakeClock, hs []*holder, rng *rand.Rand) {
	t.Helper()
	ctx := context.Background()
	for range 10000 {
		var next int64
		for _, h := range hs {
			if h.due != 0 && (next == 0 || h.due < next) {
				next = h.due
			}
		}
		if next == 0 {
			return
		}
		if d := time.Duration(next - clk.Now().UnixNano()); d > 0 {
			clk.Advance(d)
		}
		var due []*holder
		for _, h := range hs {
			if h.due == next {
				due = append(due, h)
			}
		}
		rng.Shuffle(len(due), func(i, j int) { due[i], due[j] = due[j], due[i] })
		for _, h := range due {
			a, err := m.Reserve(ctx, h.r)
			require.NoError(t, err)
			require.True(t, a.OK)
			now := clk.Now().UnixNano()
			if a.Wait > 0 {
				h.r.Ticket, h.due = a.Ticket, now+int64(a.Wait)
				continue
			}
			h.due, h.sentAt = 0, now
		}
	}
	t.Fatal("the holders never all went")
}

// reserveAll asks for a slot for each reservation at once; a slot due at
// once is sent.
func reserveAll(t *testing.T, m *Memory, clk *fakeClock, rs ...Reservation) []*holder {
	t.Helper()
	var hs []*holder
	for _, r := range rs {
		a, err := m.Reserve(context.Background(), r)
		require.NoError(t, err)
		require.True(t, a.OK)
		now := clk.Now().UnixNano()
		h := &holder{r: r}
		if a.Wait > 0 {
			h.r.Ticket, h.due = a.Ticket, now+int64(a.Wait)
		} else {
			h.sentAt = now
		}
		hs = append(hs, h)
	}
	return hs
}

// Issue 27 item 3: a handler's call is never queued behind a job's
// backlog. Twenty job calls hold the next windows of a budget of 5 per
// second; an interactive call goes at the next opening (its window being
// full of what was sent), ahead of them, and the job's slot it passed moves
// later on its confirmation: no window counts more than the budget, in
// whatever order the slots due at once are confirmed. Under the sliding
// rule the same: at most 5 in any second.
func TestInteractiveGoesAheadOfHeldSlots(t *testing.T) {
	const limit = 5
	b := Budget{Limit: limit, Period: time.Second}
	for _, fixed := range []bool{true, false} {
		for seed := range uint64(20) {
			t.Run(fmt.Sprintf("fixed=%v/seed%d", fixed, seed), func(t *testing.T) {
				clk := &fakeClock{t: epoch.Add(100 * time.Millisecond)}
				m := newMemory(clk.Now)
				job := Reservation{Partition: "public", Budget: b, MaxWait: time.Hour, FixedWindows: fixed, Margin: 10 * time.Millisecond}
				var rs []Reservation
				for range 20 {
					rs = append(rs, job)
				}
				hs := reserveAll(t, m, clk, rs...)
				last := slices.MaxFunc(hs, func(a, b *holder) int { return int(a.due - b.due) }).due
				clk.Advance(50 * time.Millisecond)
				handler := job
				handler.Interactive = true
				ahead := reserveAll(t, m, clk, handler, handler)
				for _, h := range ahead {
					require.NotZero(t, h.due, "the window was full of what was sent")
					assert.Less(t, h.due, ns(1200*time.Millisecond), "the handler waited behind the backlog")
					assert.Less(t, h.due, last)
				}
				rng := rand.New(rand.NewPCG(seed, 27))
				all := slices.Concat(hs, ahead)
				runHolders(t, m, clk, all, rng)
				for _, h := range ahead {
					assert.Less(t, h.sentAt, ns(1200*time.Millisecond), "the handler's slot moved behind the backlog")
				}
				var sent []int64
				for _, h := range all {
					sent = append(sent, h.sentAt)
				}
				slices.Sort(sent)
				if fixed {
					w := windowsOf(b, 10*time.Millisecond)
					for k := w.first(sent[0]); k <= w.last(sent[len(sent)-1]); k++ {
						assert.LessOrEqual(t, w.count(sent, k, sent[len(sent)-1]+1), limit, "window %d", k)
					}
				} else {
					for i := limit; i < len(sent); i++ {
						assert.GreaterOrEqual(t, sent[i]-sent[i-limit], int64(time.Second), "more than %d in a second", limit)
					}
				}
			})
		}
	}
}

// An interactive call never exceeds the budget: with the window full of
// what was sent and more interactive calls than the next window holds,
// the rest go to the window after.
func TestInteractiveKeepsTheBudget(t *testing.T) {
	clk := &fakeClock{t: epoch.Add(100 * time.Millisecond)}
	m := newMemory(clk.Now)
	b := Budget{Limit: 3, Period: time.Second}
	r := Reservation{Partition: "public", Budget: b, MaxWait: time.Hour, FixedWindows: true, Interactive: true}
	hs := reserveAll(t, m, clk, r, r, r, r, r, r, r)
	var dues []time.Duration
	for _, h := range hs {
		dues = append(dues, time.Duration(max(h.due, h.sentAt)-ns(0)).Round(time.Millisecond))
	}
	a := clockAllowance(time.Second)
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond,
		time.Second + a, time.Second + a, time.Second + a, 2*time.Second + a}, dues)
	// A closed partition: it holds nothing and asks again at the reopening.
	_, err := m.Observe(context.Background(), "public", Observation{Throttled: true, RetryAfter: 5 * time.Second})
	require.NoError(t, err)
	adm, err := m.Reserve(context.Background(), r)
	require.NoError(t, err)
	assert.True(t, adm.OK && adm.Cooldown)
	assert.Zero(t, adm.Ticket)
}
