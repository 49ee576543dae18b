package ratelimit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Issue 22, items 2 and 3: what the gateway's own instructions do to a
// reservation, as table rows over a partition's state at now = 1 s after
// epoch. The state: a cooldown that a short Retry-After lengthened to
// 3 s (coolUntil), while the gateway's latest instruction ends at 2 s
// (told); rows that set closed add a Retry-After beyond the cap, which
// the gateway says keeps the partition closed until then.
func TestReserveWithinInstructions(t *testing.T) {
	const s, ms = time.Second, time.Millisecond
	budget := Budget{Limit: 1, Period: 2 * s}
	retry := Reservation{Partition: "p", Retry: true, MaxWait: 1500 * ms}
	clamped := retry
	clamped.Clamped, clamped.After = true, 1500*ms
	fixed := func(r Reservation) Reservation {
		r.FixedWindows, r.Budget = true, budget
		return r
	}
	with := func(r Reservation, f func(*Reservation)) Reservation { f(&r); return r }
	tests := []struct {
		name   string
		log    []time.Duration // after epoch
		told   time.Duration
		closed time.Duration // after epoch; zero for none
		r      Reservation
		want   Admission     // without its Ticket
		at     time.Duration // the ticket, after epoch; zero for none
	}{
		// Item 3: a clamped retry.
		{"sliding: a clamped retry goes at its clamped wait, not the cooldown", nil, 2 * s, 0, clamped,
			Admission{OK: true, Wait: 1500 * ms, Cooldown: true}, 2500 * ms},
		{"sliding: never before its clamped wait (issue 27)", nil, 2 * s, 0, with(clamped, func(r *Reservation) { r.After = 1200 * ms }),
			Admission{OK: true, Wait: 1200 * ms, Cooldown: true}, 2200 * ms},
		{"sliding: a retry that is not clamped waits for the cooldown", nil, 2 * s, 0, retry,
			Admission{Wait: 2 * s, Cooldown: true}, 0},
		{"sliding: a fresh call is never clamped", nil, 2 * s, 0, with(clamped, func(r *Reservation) { r.Retry = false }),
			Admission{Wait: 2*s + 200*ms, Cooldown: true}, 0},
		{"sliding: not before a later instruction", nil, 2800 * ms, 0, clamped,
			Admission{Wait: 1800 * ms, Cooldown: true}, 0},
		{"sliding: first in, first out", []time.Duration{2600 * ms}, 2 * s, 0, with(clamped, func(r *Reservation) { r.MaxWait = 2 * s }),
			Admission{OK: true, Wait: 1600 * ms, Cooldown: true}, 2600 * ms},
		{"fixed windows: at its clamped wait, where the window has room", nil, 2 * s, 0, fixed(clamped),
			Admission{OK: true, Wait: 1500 * ms, Cooldown: true, Budget: budget}, 2500 * ms},
		{"fixed windows: not into a full window", []time.Duration{2100 * ms}, 2 * s, 0, fixed(clamped),
			Admission{Wait: 3004 * ms, Cooldown: true, Budget: budget}, 0},
		{"fixed windows: a retry that is not clamped waits for the cooldown", nil, 2 * s, 0, fixed(retry),
			Admission{Wait: 2 * s, Cooldown: true, Budget: budget}, 0},
		{"fixed windows: never later than the cooldown", nil, 5 * s, 0, fixed(with(clamped, func(r *Reservation) { r.MaxWait = time.Hour })),
			Admission{OK: true, Wait: 2 * s, Cooldown: true, Budget: budget}, 3 * s},

		// Item 2: a Retry-After beyond the cap.
		{"closed: a call that cannot wait the rest is refused at once", nil, 2 * s, 10 * s, Reservation{Partition: "p", MaxWait: 3 * s},
			Admission{Wait: 9 * s, Cooldown: true}, 0},
		{"closed: a retry too", nil, 2 * s, 10 * s, fixed(clamped),
			Admission{Wait: 9 * s, Cooldown: true, Budget: budget}, 0},
		{"closed: a call that can wait the rest waits for the cooldown", nil, 2 * s, 10 * s, Reservation{Partition: "p", MaxWait: 9 * s},
			Admission{OK: true, Wait: 2*s + 200*ms, Cooldown: true}, 0},
		{"closed: over", nil, 2 * s, 500 * ms, Reservation{Partition: "p", MaxWait: 0},
			Admission{Wait: 2*s + 200*ms, Cooldown: true}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &partitionState{log: times(tt.log), coolStart: ns(s), coolUntil: ns(3 * s), told: ns(tt.told)}
			if tt.closed > 0 {
				st.closed = ns(tt.closed)
			}
			got := st.reserve(tt.r, ns(s))
			var at time.Duration
			if got.Ticket != 0 {
				at = time.Duration(got.Ticket - ns(0))
			}
			got.Ticket = 0
			assert.Equal(t, tt.at, at)
			want := tt.want
			assert.Equal(t, want, got)
		})
	}
}

// A held slot being confirmed while the gateway's uncapped instruction
// runs is given up when the caller cannot wait the rest of it: the slot is
// free for others.
func TestClosedPartitionGivesHeldSlotsUp(t *testing.T) {
	const s = time.Second
	st := &partitionState{log: times([]time.Duration{0, 5 * s}), closed: ns(20 * s)}
	got := st.reserve(Reservation{Partition: "p", Ticket: ns(5 * s), MaxWait: s}, ns(5*s))
	assert.Equal(t, Admission{Wait: 15 * s, Cooldown: true}, got)
	assert.Equal(t, times([]time.Duration{0}), st.log)
}
