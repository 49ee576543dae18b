package rail0

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/rail0/rail0-go/ratelimit"
)

// This file connects a call to the client's Limiter: takeTurn waits for the
// call's slot before each attempt, observe tells the limiter what each
// answer said, and distrust carries a short Retry-After's lesson into the
// retry decision.

// releaseTimeout bounds giving a slot back after the caller gave up: the
// caller's own context is over by then.
const releaseTimeout = 100 * time.Millisecond

// closureMemory bounds, in RetryAfterCaps, how long a partition stays
// closed by a Retry-After beyond the cap (ratelimit.Observation.Closed):
// ten minutes at the default cap, which covers a ban of that length, while
// an absurd or hostile header (a year) costs the client one request per ten
// minutes on the partition instead of parking every call that retries 429s
// for as long as it says.
const closureMemory = 10

// turn is the standing of a call's attempt with the limiter.
type turn struct {
	ticket int64              // the slot the attempt was sent in; zero when none
	budget Budget             // the budget in force when it was admitted
	sentAt time.Time          // when it was admitted; zero when it was not gated
	fb     ratelimit.Feedback // what the limiter concluded from the attempt's answer
	// advertised: the budget in force was one RateLimit fields stated
	// (ratelimit.Admission.Advertised).
	advertised bool
}

// configuredBudget is the WithPacing budget of the call's partition.
func (c *Client) configuredBudget(st *callState) Budget {
	if !c.pacingOn {
		return Budget{}
	}
	if st.anonymous {
		return c.pacing.Public
	}
	return c.pacing.Session
}

// margin is the period stretch: the configured one, else measured.
func (c *Client) margin(b Budget) time.Duration {
	if c.pacing.Margin > 0 {
		return c.pacing.Margin
	}
	return c.delays.margin(b.Period)
}

// timing is a reservation's margin (see margin) and step, the median round
// trip (see delayLog.timing), read from the round trips once.
func (c *Client) timing(b Budget) (margin, step time.Duration) {
	margin, step = c.delays.timing(b.Period)
	if c.pacing.Margin > 0 {
		margin = c.pacing.Margin
	}
	return margin, step
}

// bounded returns ctx bounded by room, what the call can still spend on rate
// limiting (at least a millisecond, so that a limiter in memory still
// answers): a stalled shared store must not hold the call longer.
func bounded(ctx context.Context, room time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, max(room, time.Millisecond))
}

// takeTurn waits for the call's slot on its partition: after a cooldown
// (retries before fresh calls) and within the budget in force, configured
// or learned. When the client heard anything new about rate limits during
// the sleep (a 429, RateLimit fields), the slot is confirmed with the
// limiter, so that a cooldown or a lower budget that arrived meanwhile is
// obeyed; otherwise it stands. A caller that gives up releases its slot. It returns the final admission; OK false means the
// wait does not fit the call's room. An error other than the context's
// means the limiter failed (or exceeded the room): the caller fails open.
func (c *Client) takeTurn(ctx context.Context, st *callState) (ratelimit.Admission, error) {
	b := c.configuredBudget(st)
	r := ratelimit.Reservation{Partition: st.partitionKey(), Budget: b, Retry: st.attempts > 0, Jitter: st.jitter, FixedWindows: true,
		Ticket: st.held, Clamped: st.clamped && st.attempts > 0, Guessed: st.guessed && st.attempts > 0}
	st.held = 0
	st.turn = turn{}
	var planned time.Time // when the slot slept for was due
	for {
		now := c.now()
		room := max(min(c.policy.maxRetryWait-st.waited, timeLeft(ctx, now)), 0)
		r.Margin, r.Step = c.timing(inForce(b, st.turn.budget))
		r.MaxWait = room
		// Read before the limiter decides: news that arrives after it
		// did makes the slot confirmed again.
		gen := c.limitGen.Load()
		lctx, cancel := bounded(ctx, room)
		adm, err := c.limiter.Reserve(lctx, r)
		cancel()
		if err != nil || !adm.OK {
			return adm, err
		}
		st.turn = turn{ticket: adm.Ticket, budget: adm.Budget, advertised: adm.Advertised}
		if adm.Wait <= 0 {
			// The round trip is measured from when the slot was due, so
			// that a late wake-up counts in the margin too.
			st.turn.sentAt = c.now()
			if !planned.IsZero() && planned.Before(st.turn.sentAt) {
				st.turn.sentAt = planned
			}
			return adm, nil
		}
		planned = now.Add(adm.Wait)
		st.waited += adm.Wait
		c.noteAdmission(ctx, st, adm) // the transcript, the debug log, the observer
		if !sleepCtx(ctx, adm.Wait) {
			c.release(ctx, st, adm.Ticket)
			return adm, ctx.Err()
		}
		if adm.Ticket != 0 && c.limitGen.Load() == gen && !c.othersLearn(b, adm.Budget) {
			// Nothing this client heard about rate limits changed during
			// the sleep: the slot stands, and a shared limiter is spared a
			// round trip.
			adm.Wait = 0
			st.turn.sentAt = planned
			return adm, nil
		}
		r.Ticket = adm.Ticket
	}
}

// othersLearn reports whether news this client does not hear may have
// moved a slot held under the budget in force: when the limiter was given
// by WithLimiter, which other processes (or other clients) may share, and
// the budget is learned rather than the configured one. Processes sharing
// a limiter are one client to the gateway: the 429 one of them gets for a
// probe shows the window full for all, and the slots the others hold later
// in that window must move to the next one, which only a confirmation
// tells them. Without it they send those slots into a full window (5 to 34
// 429s after the first window for 2 to 8 processes, where one process
// alone gets 3). A configured budget is not probed, so a slot paced by it
// stands, and a paced process asks the store once per call.
func (c *Client) othersLearn(configured, inForce Budget) bool {
	return c.sharedLimiter && inForce != configured
}

// holdRetrySlot takes the slot of a 429's retry as soon as the answer
// comes, rather than when the backoff is over: a fresh call that asks at
// the reopening then finds every retry of the streak in the queue before
// it, whatever jitter each retry drew. wait is the backoff decided, already
// counted in st.waited, and the limiter places the slot no sooner (After):
// the slot must fit what was left before it. When it
// does not, or the limiter fails, nothing is held and the retry's turn is
// decided after the backoff as for any attempt.
func (c *Client) holdRetrySlot(ctx context.Context, st *callState, wait time.Duration) {
	b := c.configuredBudget(st)
	now := c.now()
	room := max(min(c.policy.maxRetryWait-(st.waited-wait), timeLeft(ctx, now)), 0)
	r := ratelimit.Reservation{Partition: st.partitionKey(), Budget: b, Retry: true, Jitter: st.jitter, FixedWindows: true,
		MaxWait: room, After: wait, Clamped: st.clamped, Guessed: st.guessed}
	r.Margin, r.Step = c.timing(inForce(b, st.turn.budget))
	lctx, cancel := bounded(ctx, room)
	adm, err := c.limiter.Reserve(lctx, r)
	cancel()
	if err == nil && adm.OK {
		st.held = adm.Ticket
	}
}

// release gives back a slot the call st will not use.
func (c *Client) release(ctx context.Context, st *callState, ticket int64) {
	if ticket == 0 {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if err := c.limiter.Release(rctx, st.partitionKey(), ticket); err != nil && c.logger != nil {
		c.logger.LogAttrs(ctx, slog.LevelWarn, "rail0: rate limiter unavailable; slot not released",
			callAttrs(st.call.ID, st.method, st.path, slog.String("error", err.Error()))...)
	}
}

// observe records the answer's round trip (for the margin) and tells the
// limiter what the answer says about its partition: a 429 closes it for
// min(Retry-After, cap) and teaches the budget; advertised exhaustion closes
// it until the advertised reset (Retry-After wins on a 429); an advertised
// quota that differs from the budget in force replaces the learned one.
// Answers that say nothing new cost the limiter nothing.
//
// An answer that closes the partition (a 429, advertised exhaustion) is
// always told, even while no view of the client waits for the limiter: a
// view that does may be made later (one per call, say), and its first call
// must not go into a window the gateway said is closed.
func (c *Client) observe(ctx context.Context, st *callState, o outcome) {
	st.turn.fb = ratelimit.Feedback{}
	if !st.turn.sentAt.IsZero() {
		c.delays.add(c.now().Sub(st.turn.sentAt))
	}
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
				// once; remembered for closureMemory caps at most.
				ob.Closed = o.retryAfter
				if cp := c.policy.retryAfterCap; cp <= maxDuration/closureMemory {
					ob.Closed = min(ob.Closed, closureMemory*cp)
				}
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
		// Answers stopped carrying the budget they stated: forgotten.
		ob.Unadvertised, tell = true, true
	}
	if !tell {
		return
	}
	room := max(min(c.policy.maxRetryWait-st.waited, timeLeft(ctx, c.now())), 0)
	lctx, cancel := bounded(ctx, room)
	fb, err := c.limiter.Observe(lctx, st.partitionKey(), ob)
	cancel()
	// Sleepers confirm their slots, once the limiter knows: one that
	// confirmed meanwhile read the count before this.
	c.limitGen.Add(1)
	if err != nil {
		if c.logger != nil {
			c.logger.LogAttrs(ctx, slog.LevelWarn, "rail0: rate limiter unavailable; answer not recorded",
				callAttrs(st.call.ID, st.method, st.path, slog.String("error", err.Error()))...)
		}
		return
	}
	st.turn.fb = fb
	if n := len(st.call.Attempts); n > 0 {
		// The transcript keeps what the answer told the limiter; observers
		// read it there (EndAttempt).
		ps := &PartitionState{Partition: st.partitionKey(), Budget: fb.Budget, Distrusted: fb.Distrusted}
		if fb.Cooldown > 0 {
			ps.CooldownUntil = c.now().Add(fb.Cooldown)
		}
		st.call.Attempts[n-1].PartitionState = ps
	}
}

// advertised is the budget rl states, bounded as a Retry-After is: a window
// longer than RetryAfterCap teaches nothing (one absurd header must not
// pace the partition for years, and the client would not wait that long),
// and a quota above maxAdvertisedLimit is clamped (a higher one only paces
// less, and the limiter's log must count it). A low quota is no proof of
// a lie, so it is taken, and the limiter probes beyond it and forgets it
// when answers stop stating it. Zero when rl states no budget.
func (c *Client) advertised(rl *RateLimitInfo) Budget {
	if rl == nil || rl.Window > c.policy.retryAfterCap {
		return Budget{}
	}
	return Budget{Limit: int(min(rl.Limit, int64(maxAdvertisedLimit))), Period: rl.Window}
}

// distrust applies the limiter's verdict on a short Retry-After to a 429
// retry decision: the wait becomes at least the lengthened cooldown plus
// additive jitter, reported as ReasonRetryAfterDistrusted. When that does
// not fit what is left of the allowance or the deadline, the wait is
// clamped to what is left (of the deadline, less a round trip for the
// retry's answer), never below the wait decided on the server's own
// instruction, which decide found to fit, and reported as
// ReasonRetryAfterDistrustedClamped: the lengthened cooldown is the
// limiter's guess, and a call whose room the instruction fits makes its
// last try rather than giving up with time left. Its retry is admitted
// before the lengthened cooldown ends (ratelimit.Reservation.Clamped).
// Either way it only lengthens the wait: a retry never leaves before the
// server's instruction. A guessed wait is left alone.
func distrust(d decision, fb ratelimit.Feedback, p policy, b budget, u float64) decision {
	if !fb.Distrusted || !d.retry || !d.rateWait || d.guess {
		return d
	}
	room, limit := roomFor(p, b)
	if w, ok := serverWait(fb.Cooldown, maxDuration, room, u); ok {
		d.wait = max(d.wait, w)
		d.reason = ReasonRetryAfterDistrusted
		return d
	}
	if limit == ReasonDeadline {
		room -= max(b.rtt, 0)
	}
	d.wait = max(d.wait, room)
	d.reason = ReasonRetryAfterDistrustedClamped
	return d
}
