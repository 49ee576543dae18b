package rail0

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// This file is what the client knows about each rate-limit partition from
// the answers it read and the admissions it was given. It is kept in the
// client, not in the Limiter, which may be a store other processes share.
// So reading it costs no round trip. It serves two questions with one piece
// of state. A call that does not retry 429s asks whether the door is known
// shut (shutFor). If so, it gets the 429 at once, not sent, as go-github's
// checkRateLimitBeforeDo answers while it knows the limit is spent. A
// program asks what the client knows (Client.RateLimits), to plan a batch.

// BudgetSource says where the budget a partition is paced at comes from.
type BudgetSource string

// Sources of a budget (RateLimitState.Source).
const (
	// BudgetConfigured: WithPacing gave it.
	BudgetConfigured BudgetSource = "configured"
	// BudgetLearned: the limiter learned it from 429s.
	BudgetLearned BudgetSource = "learned"
	// BudgetAdvertised: an answer's RateLimit fields stated it.
	BudgetAdvertised BudgetSource = "advertised"
)

// RateLimitState is what a client knows about one rate-limit partition,
// without a request (Client.RateLimits).
type RateLimitState struct {
	// Partition is "public", or "session:" followed by a hash of the
	// token (never the token).
	Partition string
	// Budget is the budget the client knows for the partition. It is the
	// one its limiter last admitted or paced a call at, or one an answer
	// advertised. It is zero when none is known.
	Budget Budget
	// Source says where Budget comes from. It is empty when Budget is zero.
	Source BudgetSource
	// Remaining is what the last RateLimit fields said is left, until
	// Reset. HasRemaining is false when no answer said, or Reset passed.
	Remaining    int64
	HasRemaining bool
	Reset        time.Time
	// ClosedUntil is when the gateway's last instruction ends: a 429's
	// Retry-After (uncapped, at most ten RetryAfterCaps) or an exhausted
	// quota's reset. Until then a call with RetryOn429 off gets its 429 at
	// once, not sent. It is zero when the partition is not known to be
	// closed.
	ClosedUntil time.Time
	// Updated is when the client last heard of the partition.
	Updated time.Time
}

// RateLimits returns what the client knows about each rate-limit
// partition, sorted by name, without a request. It lists the partitions it
// paced or heard about from an answer. It lists the public one too when
// WithPacing gives it a budget. It is the client's own knowledge. Processes
// sharing a limiter (WithLimiter) each see the budgets their admissions
// came with, not every answer the others read. Views share it with their
// client.
func (c *Client) RateLimits() []RateLimitState {
	now := c.now()
	k := &c.limits
	k.mu.Lock()
	out := make([]RateLimitState, 0, len(k.ps)+1)
	for name, e := range k.ps {
		out = append(out, e.state(name, now))
	}
	k.mu.Unlock()
	if b := c.pacing.Public; c.pacingOn && paced(b) && !slices.ContainsFunc(out, func(s RateLimitState) bool { return s.Partition == publicPartition }) {
		out = append(out, RateLimitState{Partition: publicPartition, Budget: b, Source: BudgetConfigured})
	}
	slices.SortFunc(out, func(a, b RateLimitState) int { return strings.Compare(a.Partition, b.Partition) })
	return out
}

// publicPartition names the partition of anonymous calls (partitionFor).
const publicPartition = "public"

// knownLimits is the client's record, one entry per partition it heard of.
type knownLimits struct {
	// shutUntil is the latest end of any partition's closure, in Unix
	// nanoseconds. Before it, a call that does not retry 429s looks its
	// partition up. After it, the call hashes no token and takes no lock.
	shutUntil atomic.Int64
	// stated counts the partitions whose RateLimit fields stated a budget.
	// While it is zero, an answer without the fields takes no lock.
	stated atomic.Int64
	mu     sync.Mutex
	ps     map[string]*partitionKnown
}

// partitionKnown is what the client knows about one partition.
type partitionKnown struct {
	// closedFrom and closedUntil bound the gateway's last instruction. An
	// answer to a request sent after closedFrom proves it reopened.
	closedFrom, closedUntil time.Time
	budget                  Budget
	source                  BudgetSource
	advertised              Budget // the last budget RateLimit fields stated
	remaining               int64
	hasRemaining            bool
	reset                   time.Time
	updated                 time.Time
}

// knownIdle is how long an open partition the client heard nothing of is
// kept. knownKeep is how many partitions are kept before idle ones go.
const (
	knownIdle = 10 * time.Minute
	knownKeep = 64
)

// entry returns the record of partition, creating it. It is called with
// k.mu held. Partitions idle for knownIdle go when the record grows past
// knownKeep. So a client whose sessions rotate does not grow.
func (k *knownLimits) entry(partition string, now time.Time) *partitionKnown {
	if e := k.ps[partition]; e != nil {
		e.updated = now
		return e
	}
	if k.ps == nil {
		k.ps = map[string]*partitionKnown{}
	}
	if len(k.ps) >= knownKeep {
		for name, e := range k.ps {
			if now.Sub(e.updated) >= knownIdle && !e.closedUntil.After(now) {
				if paced(e.advertised) {
					k.stated.Add(-1)
				}
				delete(k.ps, name)
			}
		}
	}
	e := &partitionKnown{updated: now}
	k.ps[partition] = e
	return e
}

// state is e as a RateLimitState at now.
func (e *partitionKnown) state(name string, now time.Time) RateLimitState {
	s := RateLimitState{Partition: name, Budget: e.budget, Source: e.source, Updated: e.updated}
	if paced(e.budget) && s.Source == "" {
		s.Source = BudgetLearned
	}
	if e.hasRemaining && (e.reset.IsZero() || e.reset.After(now)) {
		s.Remaining, s.HasRemaining, s.Reset = e.remaining, true, e.reset
	}
	if e.closedUntil.After(now) {
		s.ClosedUntil = e.closedUntil
	}
	return s
}

// sourceOf names where b comes from, for a partition whose configured
// budget is configured.
func (e *partitionKnown) sourceOf(b, configured Budget) BudgetSource {
	switch {
	case !paced(b):
		return ""
	case b == configured:
		return BudgetConfigured
	case b == e.advertised:
		return BudgetAdvertised
	}
	return BudgetLearned
}

// shutFor returns how long the partition of st stays closed by what the
// gateway said, or zero when the client does not know it closed. While no
// partition is closed it costs one atomic load.
func (c *Client) shutFor(st *callState, now time.Time) time.Duration {
	k := &c.limits
	if k.shutUntil.Load() <= now.UnixNano() {
		return 0
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	e := k.ps[st.partitionKey()]
	if e == nil {
		return 0
	}
	return max(e.closedUntil.Sub(now), 0)
}

// boundClosure bounds how long one answer may keep a partition closed. It
// takes the gateway's word, at most closureMemory RetryAfterCaps. So an
// absurd header costs one request per ten minutes rather than years.
func (c *Client) boundClosure(d time.Duration) time.Duration {
	if cp := c.policy.retryAfterCap; cp <= maxDuration/closureMemory {
		d = min(d, closureMemory*cp)
	}
	return d
}

// hear records what an answer on st's partition says. A 429's Retry-After
// and an exhausted quota close the partition until they run out. An answer
// to a request sent after a closure began proves it over. RateLimit fields
// tell what is left. Answers that say none of this cost one atomic load.
func (c *Client) hear(st *callState, o outcome, now time.Time) {
	k := &c.limits
	rl := st.rateLimit
	throttled := o.status == http.StatusTooManyRequests && o.hasRetryAfter && o.retryAfter > 0
	through := !o.failed && o.status < 500 && o.status != http.StatusTooManyRequests
	// An answer without RateLimit fields ends a budget they stated, as the
	// limiter forgets it (issue 27 item 5).
	unstated := through && rl == nil && k.stated.Load() > 0
	if !throttled && rl == nil && !unstated && !(through && k.shutUntil.Load() > now.UnixNano()) {
		return
	}
	var sent time.Time
	if n := len(st.call.Attempts); n > 0 {
		sent = st.call.Attempts[n-1].Sent
	}
	until := time.Time{}
	switch {
	case throttled:
		until = now.Add(c.boundClosure(o.retryAfter))
	case rl.Exhausted():
		// A quota's reset is no refusal: bounded by the cap, as the
		// limiter bounds it, so one header cannot shut a handler out.
		until = now.Add(min(rl.Reset, c.policy.retryAfterCap))
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	e := k.entry(st.partitionKey(), now)
	if through && !e.closedFrom.IsZero() && sent.After(e.closedFrom) {
		// The gateway let a request through that left after it said the
		// partition was closed. The closure is over.
		e.closedFrom, e.closedUntil = time.Time{}, time.Time{}
	}
	if rl != nil {
		if rl.HasRemaining {
			e.remaining, e.hasRemaining, e.reset = rl.Remaining, true, time.Time{}
			if rl.Reset > 0 {
				e.reset = now.Add(rl.Reset)
			}
		}
		if adv := c.advertised(rl); paced(adv) {
			if !paced(e.advertised) {
				k.stated.Add(1)
			}
			e.advertised = adv
			if !paced(e.budget) || e.source == BudgetAdvertised {
				e.budget, e.source = adv, BudgetAdvertised
			}
		}
	}
	if unstated && paced(e.advertised) {
		k.stated.Add(-1)
		e.advertised = Budget{}
		if e.source == BudgetAdvertised {
			e.budget, e.source = Budget{}, ""
		}
	}
	if until.After(e.closedUntil) {
		e.closedFrom, e.closedUntil = now, until
		for old := k.shutUntil.Load(); until.UnixNano() > old; old = k.shutUntil.Load() {
			if k.shutUntil.CompareAndSwap(old, until.UnixNano()) {
				break
			}
		}
	}
}

// effectiveBudget is the budget in force given the configured one and the
// one the limiter learned. It is either, or the stricter of both, as the
// limiter combines them.
func effectiveBudget(configured, learned Budget) Budget {
	switch {
	case !paced(learned):
		return configured
	case !paced(configured):
		return learned
	}
	return Budget{Limit: min(configured.Limit, learned.Limit), Period: max(configured.Period, learned.Period)}
}

// heardBudget records the budget in force on st's partition after the
// limiter's admission or its verdict on an answer. That is b, or the
// configured one when the limiter reports none.
func (c *Client) heardBudget(st *callState, b Budget) {
	configured := c.configuredBudget(st)
	if !paced(b) {
		b = configured
	}
	k := &c.limits
	k.mu.Lock()
	defer k.mu.Unlock()
	e := k.entry(st.partitionKey(), c.now())
	e.budget, e.source = b, e.sourceOf(b, configured)
}
