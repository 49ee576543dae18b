package rail0

import (
	"slices"
	"sync"
	"time"
)

// This file holds what the client measures for its rate limiting: the
// pacing margin from observed round trips (marginFrom). Every Reservation
// carries it. What a 429 teaches about the gateway's budget is package
// ratelimit's (learnFrom there).

// marginFrom is the pacing margin: the longest of the recent round trips.
// That is an upper bound on how much delivery delays can differ. It is at
// least 1 ms and at most a tenth of the period, so that one stalled
// request cannot halve the throughput. With nothing observed yet it is
// max(period/50, 20ms).
func marginFrom(rtts []time.Duration, period time.Duration) time.Duration {
	if len(rtts) == 0 {
		return max(period/50, 20*time.Millisecond)
	}
	m := max(slices.Max(rtts), time.Millisecond)
	if period > 0 {
		m = min(m, max(period/10, time.Millisecond))
	}
	return m
}

// delayLog keeps the round trips of the client's last requests. The zero
// value is ready to use.
type delayLog struct {
	mu   sync.Mutex
	ring [32]time.Duration
	n    int
}

// add records one round trip.
func (d *delayLog) add(rtt time.Duration) {
	if rtt < 0 {
		return
	}
	d.mu.Lock()
	d.ring[d.n%len(d.ring)] = rtt
	d.n++
	d.mu.Unlock()
}

// timing returns the margin and the median, from one copy of the recorded
// round trips. The margin is marginFrom, the longest. The median is the
// upper one of an even count, or zero when none.
//
// The median paces the rounds of probes beyond a learned budget after the
// first (Reservation.Step). The longest round trip, which the margin is,
// grows with a heavy tail. The typical round trip of a probe round does
// not have it. timing sorts a copy on the stack, once per admission. It
// takes the lock once for both.
func (d *delayLog) timing(period time.Duration) (margin, median time.Duration) {
	var ring [len(d.ring)]time.Duration
	d.mu.Lock()
	n := min(d.n, len(d.ring))
	copy(ring[:], d.ring[:n])
	d.mu.Unlock()
	rtts := ring[:n]
	slices.Sort(rtts)
	if n > 0 {
		median = rtts[n/2]
	}
	return marginFrom(rtts, period), median
}

// margin returns marginFrom over the recorded round trips.
func (d *delayLog) margin(period time.Duration) time.Duration {
	d.mu.Lock()
	rtts := d.ring[:min(d.n, len(d.ring))]
	m := marginFrom(rtts, period)
	d.mu.Unlock()
	return m
}

// margin is the period stretch: the configured one, else the measured one.
func (c *Client) margin(b Budget) time.Duration {
	if c.pacing.Margin > 0 {
		return c.pacing.Margin
	}
	return c.delays.margin(b.Period)
}

// timing is a reservation's margin (see margin) and step, read from the
// round trips once. The step is the median round trip (see
// delayLog.timing).
func (c *Client) timing(b Budget) (margin, step time.Duration) {
	margin, step = c.delays.timing(b.Period)
	if c.pacing.Margin > 0 {
		margin = c.pacing.Margin
	}
	return margin, step
}
