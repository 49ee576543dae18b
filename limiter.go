package rail0

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"
)

// Budget is a pacing budget: at most Limit requests in any interval of
// Period. Zero means no pacing.
type Budget struct {
	Limit  int
	Period time.Duration
}

func (b Budget) enabled() bool { return b.Limit > 0 && b.Period > 0 }

func (b Budget) validate(name string) error {
	if b == (Budget{}) {
		return nil
	}
	if b.Limit <= 0 || b.Period <= 0 {
		return fmt.Errorf("rail0: %s budget needs a positive limit and period, got %d per %v", name, b.Limit, b.Period)
	}
	return nil
}

// Pacing holds one budget per rate-limit surface of the gateway, which
// throttles public requests per client IP and authenticated ones per
// session, independently.
type Pacing struct {
	Public  Budget
	Session Budget
	// Margin stretches each period to absorb jitter in how long requests
	// take to reach the gateway. Zero picks max(Period/50, 20ms).
	Margin time.Duration
}

// PublishedLimits returns the hosted gateway's published limits: 100 public
// requests per 60 s per IP and 300 per 60 s per session.
func PublishedLimits() Pacing {
	return Pacing{
		Public:  Budget{Limit: 100, Period: 60 * time.Second},
		Session: Budget{Limit: 300, Period: 60 * time.Second},
	}
}

// margin returns the period stretch for b.
func (p Pacing) margin(b Budget) time.Duration {
	if p.Margin > 0 {
		return p.Margin
	}
	return max(b.Period/50, 20*time.Millisecond)
}

// Limiter holds the client's rate-limit state per partition: the pacing log
// and the cooldowns. The default lives in memory; an implementation backed by
// a shared store (package redislimit) lets many processes behind one egress
// IP, or sharing one session, respect one budget. Implementations must be
// safe for concurrent use. Durations are relative, so the processes sharing a
// limiter need not agree on the wall clock.
type Limiter interface {
	// Reserve returns how long to wait before sending one request on
	// r.Partition, and records that request as sent then. When the wait
	// would exceed r.MaxWait it records nothing and reports OK false.
	Reserve(ctx context.Context, r Reservation) (Admission, error)
	// Cooldown closes a partition for d from now: the gateway refused a
	// request there and told the client to wait d. It never shortens a
	// cooldown already in force.
	Cooldown(ctx context.Context, partition string, d time.Duration) error
}

// Reservation asks a Limiter for a sending slot.
type Reservation struct {
	// Partition is "public" or "session:" followed by a hash of the token;
	// never the token itself.
	Partition string
	// Budget paces the partition; the zero Budget does not.
	Budget Budget
	// Period is the budget's period stretched by the pacing margin.
	Period time.Duration
	// Jitter is a uniform draw from [0, 1): a request admitted after a
	// cooldown waits an extra Jitter × 10% of the cooldown, its own additive
	// jitter, so that waiters do not wake together.
	Jitter float64
	// MaxWait is the longest acceptable wait.
	MaxWait time.Duration
}

// Admission is a Limiter's answer.
type Admission struct {
	// Wait is how long to wait before sending.
	Wait time.Duration
	// OK is false when Wait exceeds the reservation's MaxWait: nothing was
	// recorded and the request must not be sent.
	OK bool
	// Cooldown is true when a cooldown set the wait.
	Cooldown bool
}

// partitionFor names the rate-limit partition of a call: the gateway counts
// anonymous requests per IP and authenticated ones per session token. The
// token is hashed so that the limiter (possibly a shared store) never holds
// it in clear.
func partitionFor(token string) string {
	if token == "" {
		return "public"
	}
	sum := sha256.Sum256([]byte(token))
	return "session:" + hex.EncodeToString(sum[:12])
}

// MemoryLimiter is the in-process Limiter: a sliding log of send times per
// partition for pacing, and a cooldown deadline per partition.
//
// Why a sliding log rather than golang.org/x/time/rate: a token bucket of
// rate L/P and burst b lets b + L requests through in some interval of
// length P, so it either overruns the gateway's fixed window (b > 0 lets
// L+1 through) or never uses a full window at once. A log of the last L
// send times admits a request only when the L-th previous one is at least P
// old, which is exactly "at most L in any interval of P", and therefore no
// fixed window of P can see more than L, while a fresh client may still
// send L at once.
type MemoryLimiter struct {
	now func() time.Time
	mu  sync.Mutex
	ps  map[string]*partitionState
}

type partitionState struct {
	sends     []time.Time // ring of the last Limit send times, oldest first
	coolStart time.Time
	coolUntil time.Time
	lastAdmit time.Time // admissions are first-in-first-out
}

// NewMemoryLimiter returns an empty in-memory limiter. now is the clock; nil
// means time.Now.
func NewMemoryLimiter(now func() time.Time) *MemoryLimiter {
	if now == nil {
		now = time.Now
	}
	return &MemoryLimiter{now: now, ps: map[string]*partitionState{}}
}

func (m *MemoryLimiter) state(p string) *partitionState {
	s := m.ps[p]
	if s == nil {
		s = &partitionState{}
		m.ps[p] = s
	}
	return s
}

// Reserve implements Limiter.
func (m *MemoryLimiter) Reserve(ctx context.Context, r Reservation) (Admission, error) {
	if err := ctx.Err(); err != nil {
		return Admission{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	s := m.state(r.Partition)
	at, cooled := admitTime(s, r, now)
	wait := at.Sub(now)
	if wait > r.MaxWait {
		return Admission{Wait: wait, Cooldown: cooled}, nil
	}
	if at.After(s.lastAdmit) {
		s.lastAdmit = at
	}
	if r.Budget.enabled() {
		s.sends = append(s.sends, at)
		if len(s.sends) > r.Budget.Limit {
			s.sends = s.sends[len(s.sends)-r.Budget.Limit:]
		}
	}
	return Admission{Wait: max(wait, 0), OK: true, Cooldown: cooled}, nil
}

// admitTime is the pure admission rule: the earliest time at or after now
// when every earlier admission has gone (first in, first out), the cooldown
// is over plus the request's own jitter, and the pacing log has room.
func admitTime(s *partitionState, r Reservation, now time.Time) (time.Time, bool) {
	at := now
	if s.lastAdmit.After(at) {
		at = s.lastAdmit
	}
	cooled := false
	if s.coolUntil.After(now) {
		jitter := time.Duration(float64(s.coolUntil.Sub(s.coolStart)) * serverJitter * clampUnit(r.Jitter))
		if t := s.coolUntil.Add(jitter); t.After(at) {
			at = t
		}
		cooled = true
	}
	if r.Budget.enabled() && len(s.sends) >= r.Budget.Limit {
		period := max(r.Period, r.Budget.Period)
		if t := s.sends[len(s.sends)-r.Budget.Limit].Add(period); t.After(at) {
			at = t
		}
	}
	return at, cooled
}

// Cooldown implements Limiter.
func (m *MemoryLimiter) Cooldown(ctx context.Context, partition string, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	s := m.state(partition)
	if until := now.Add(d); until.After(s.coolUntil) {
		s.coolStart, s.coolUntil = now, until
	}
	return nil
}
