package rail0test

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Clock tells the server what time it is.
// Token expiry, nonce expiry, SIWE freshness and payment windows read it.
// So do transaction confirmation and rate-limit windows. A ManualClock
// thus makes every one of them deterministic.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// ManualClock is a Clock that only moves when told to.
// It is safe for concurrent use.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewManualClock returns a ManualClock standing at t.
func NewManualClock(t time.Time) *ManualClock {
	return &ManualClock{now: t}
}

// Now returns the clock's current time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d (backward when d is negative).
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// advancer is a Clock the control surface can move forward.
type advancer interface {
	Advance(d time.Duration)
}

// offsetClock is a clock that cannot move itself, plus an offset.
// The control surface moves the offset forward.
type offsetClock struct {
	base   Clock
	offset atomic.Int64 // nanoseconds
}

func (c *offsetClock) Now() time.Time { return c.base.Now().Add(time.Duration(c.offset.Load())) }

// Advance adds d to the offset, saturating instead of wrapping around.
// So no sequence of moves can send the clock back to before 1970.
func (c *offsetClock) Advance(d time.Duration) {
	for {
		old := c.offset.Load()
		next := old + int64(d)
		if d > 0 && next < old {
			next = math.MaxInt64
		} else if d < 0 && next > old {
			next = math.MinInt64
		}
		if c.offset.CompareAndSwap(old, next) {
			return
		}
	}
}
