package rail0

import (
	"context"
	"time"

	"github.com/rail0/rail0-go/ratelimit"
)

// This file is a call's admission by the client's Limiter. takeTurn waits
// for the call's slot before each attempt. holdRetrySlot keeps a 429's
// retry its place. release gives back a slot the call will not use. What
// each answer tells the limiter is in limiter_feedback.go. The pacing
// margin is in limiter_margin.go.

// releaseTimeout bounds giving a slot back after the caller gave up. The
// caller's own context is over by then.
const releaseTimeout = 100 * time.Millisecond

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

// bounded returns ctx bounded by room, what the call can still spend on
// rate limiting. A stalled shared store must not hold the call longer. The
// bound is at least a millisecond, so that a limiter in memory still
// answers.
func bounded(ctx context.Context, room time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, max(room, time.Millisecond))
}

// takeTurn waits for the call's slot on its partition. The slot comes after
// a cooldown (retries before fresh calls) and within the budget in force,
// configured or learned.
//
// The client may hear something new about rate limits during the sleep: a
// 429, RateLimit fields. Then the slot is confirmed with the limiter, so
// that a cooldown or a lower budget that arrived meanwhile is obeyed.
// Otherwise the slot stands. A caller that gives up releases its slot.
//
// takeTurn returns the final admission. OK false means the wait does not
// fit the call's room. An error other than the context's means the limiter
// failed, or exceeded the room. The caller then fails open.
func (c *Client) takeTurn(ctx context.Context, st *callState) (ratelimit.Admission, error) {
	b := c.configuredBudget(st)
	r := ratelimit.Reservation{Partition: st.partitionKey(), Budget: b, Retry: st.attempts > 0, Jitter: st.jitter, FixedWindows: true,
		Ticket: st.held, Clamped: st.clamped && st.attempts > 0, Guessed: st.guessed && st.attempts > 0, Interactive: st.interactive()}
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
		c.heardBudget(st, adm.Budget)
		if r.Interactive && adm.Ticket != 0 {
			// The slot may have gone ahead of slots other calls hold.
			// They confirm theirs after their sleep, and move behind it.
			// Its own sleep does not count that news.
			c.limitGen.Add(1)
			gen = c.limitGen.Load()
		}
		if adm.Wait <= 0 {
			// The round trip is measured from when the slot was due. So
			// a late wake-up counts in the margin too.
			st.turn.sentAt = c.now()
			if !planned.IsZero() && planned.Before(st.turn.sentAt) {
				st.turn.sentAt = planned
			}
			return adm, nil
		}
		planned = now.Add(adm.Wait)
		st.waited += adm.Wait
		st.report(ctx, event{kind: admitted, adm: adm}) // the transcript, the debug log, the observer
		if !sleepCtx(ctx, adm.Wait) {
			c.release(ctx, st, adm.Ticket)
			return adm, ctx.Err()
		}
		if adm.Ticket != 0 && c.limitGen.Load() == gen && !c.othersLearn(adm.Budget) {
			// Nothing this client heard about rate limits changed during
			// the sleep. The slot stands, and a shared limiter is spared
			// a round trip.
			adm.Wait = 0
			st.turn.sentAt = planned
			return adm, nil
		}
		r.Ticket = adm.Ticket
	}
}

// othersLearn reports whether news this client does not hear may have
// moved a slot held under the budget in force. That is so whenever the
// limiter was given by WithLimiter, since other processes (or other
// clients) may share it.
//
// Processes sharing a limiter are one client to the gateway. The 429 one
// of them gets for a probe shows the window full for all. The slots the
// others hold later in that window must move to the next one. Only a
// confirmation tells them. Without it, they send those slots into a full
// window: 5 to 34 429s after the first window for 2 to 8 processes, where
// one process alone gets 3.
//
// Under a configured budget, another process's interactive call (a
// handler's) may go ahead of the slot (Reservation.Interactive). Only a
// confirmation tells that too. So a call that waited asks the store twice,
// as package redislimit says. A slot held with no budget in force (a
// cooldown's, or a guessed retry's) has nothing for others to move. It
// stands.
func (c *Client) othersLearn(inForce Budget) bool { return c.sharedLimiter && paced(inForce) }

// interactive reports whether the call answers a caller who waits. Such a
// call does not retry 429s (a request/response handler's). It is no poll,
// which waits out a 429 itself. Its turn goes ahead of the slots the
// waiting calls hold, within the budget (Reservation.Interactive).
func (st *callState) interactive() bool {
	return !st.c.policy.retryOn429 && !st.r.poll
}

// holdRetrySlot takes the slot of a 429's retry as soon as the answer
// comes, not when the backoff is over. A fresh call that asks at the
// reopening then finds every retry of the streak in the queue before it,
// whatever jitter each retry drew. wait is the backoff decided, already
// counted in st.waited. The limiter places the slot no sooner (After). The
// slot must fit what was left before it. When it does not, or the limiter
// fails, nothing is held. The retry's turn is then decided after the
// backoff, as for any attempt.
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
	if err := c.limiter.Release(rctx, st.partitionKey(), ticket); err != nil {
		st.report(ctx, event{kind: limiterDown, msg: "rail0: rate limiter unavailable; slot not released", err: err})
	}
}
