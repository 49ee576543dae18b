package rail0

import (
	"context"
	"net/http"

	"github.com/rail0/rail0-go/ratelimit"
)

// This file is what the client tells its Limiter after each answer
// (observe). A 429 or an exhausted quota closes the partition. An
// advertised quota teaches a budget. The limiter's verdict comes back in
// the call's turn, for the retry rules (retry_rules.go's distrust).

// closureMemory bounds how long a partition stays closed by a Retry-After
// beyond the cap (ratelimit.Observation.Closed). It counts in
// RetryAfterCaps: ten minutes at the default cap. That covers a ban of
// that length. An absurd or hostile header (a year) then costs the client
// one request per ten minutes on the partition. It does not park every
// call that retries 429s for as long as it says.
const closureMemory = 10

// observe records the answer's round trip, for the margin. It tells the
// limiter what the answer says about its partition:
//   - a 429 closes it for min(Retry-After, cap) and teaches the budget;
//   - advertised exhaustion closes it until the advertised reset
//     (Retry-After wins on a 429);
//   - an advertised quota that differs from the budget in force replaces
//     the learned one.
//
// Answers that say nothing new cost the limiter nothing.
//
// An answer that closes the partition (a 429, advertised exhaustion) is
// always told, even while no view of the client waits for the limiter. A
// view that does may be made later (one per call, say). Its first call
// must not go into a window the gateway said is closed.
func (c *Client) observe(ctx context.Context, st *callState, o outcome) {
	st.turn.fb = ratelimit.Feedback{}
	now := c.now()
	if !st.turn.sentAt.IsZero() {
		c.delays.add(now.Sub(st.turn.sentAt))
	}
	c.hear(st, o, now) // what the client itself knows (limiter_known.go)
	closes := o.status == http.StatusTooManyRequests || (st.rateLimit != nil && st.rateLimit.Exhausted())
	if !closes && !st.gated && !c.waiters.Load() {
		return // no view of this client waits for the limiter: only closings matter
	}
	ob := ratelimit.Observation{Ticket: st.turn.ticket, Budget: c.configuredBudget(st), MaxCooldown: c.policy.retryAfterCap,
		FixedWindows: true, Admitted: st.turn.budget}
	ob.Margin = c.margin(inForce(ob.Budget, st.turn.budget))
	tell := false
	if o.status == http.StatusTooManyRequests {
		ob.Throttled, tell = true, true
		if o.hasRetryAfter {
			ob.RetryAfter = min(o.retryAfter, c.policy.retryAfterCap)
			ob.Capped = o.retryAfter > c.policy.retryAfterCap
			if ob.Capped {
				// Calls that cannot wait the rest of it are refused at
				// once. It is remembered for closureMemory caps at most.
				ob.Closed = c.boundClosure(o.retryAfter)
			}
		}
	}
	if rl := st.rateLimit; rl != nil {
		if rl.Exhausted() {
			ob.Reset, tell = min(rl.Reset, c.policy.retryAfterCap), true
		}
		if adv := c.advertised(rl); paced(adv) && adv != st.turn.budget {
			ob.Advertised, tell = adv, true
		}
	}
	if st.turn.advertised && !paced(c.advertised(st.rateLimit)) {
		// Answers stopped carrying the budget they stated: it is
		// forgotten.
		ob.Unadvertised, tell = true, true
	}
	if !tell {
		return
	}
	room := max(min(c.policy.maxRetryWait-st.waited, timeLeft(ctx, c.now())), 0)
	lctx, cancel := bounded(ctx, room)
	fb, err := c.limiter.Observe(lctx, st.partitionKey(), ob)
	cancel()
	// Sleepers confirm their slots, once the limiter knows. One that
	// confirmed meanwhile read the count before this.
	c.limitGen.Add(1)
	if err != nil {
		st.report(ctx, event{kind: limiterDown, msg: "rail0: rate limiter unavailable; answer not recorded", err: err})
		return
	}
	st.turn.fb = fb
	c.heardBudget(st, effectiveBudget(ob.Budget, fb.Budget))
	if n := len(st.call.Attempts); n > 0 {
		// The transcript keeps what the answer told the limiter. Observers
		// read it there (EndAttempt).
		ps := &PartitionState{Partition: st.partitionKey(), Budget: fb.Budget, Distrusted: fb.Distrusted}
		if fb.Cooldown > 0 {
			ps.CooldownUntil = c.now().Add(fb.Cooldown)
		}
		st.call.Attempts[n-1].PartitionState = ps
	}
}

// advertised is the budget rl states, bounded as a Retry-After is. It is
// zero when rl states no budget.
//   - A window longer than RetryAfterCap teaches nothing. One absurd header
//     must not pace the partition for years, and the client would not wait
//     that long.
//   - A quota above maxAdvertisedLimit is clamped. A higher one only paces
//     less, and the limiter's log must count it.
//   - A low quota is no proof of a lie, so it is taken. The limiter probes
//     beyond it, and forgets it when answers stop stating it.
func (c *Client) advertised(rl *RateLimitInfo) Budget {
	if rl == nil || rl.Window > c.policy.retryAfterCap {
		return Budget{}
	}
	return Budget{Limit: int(min(rl.Limit, int64(maxAdvertisedLimit))), Period: rl.Window}
}
