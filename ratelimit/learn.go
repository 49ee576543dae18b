package ratelimit

import (
	"math"
	"slices"
	"time"

	"github.com/rail0/rail0-go/internal/limitrules"
)

// This file holds what the limiter learns about the gateway's throttle
// from a 429, as a pure function (learnFrom). That is the budget estimate
// and the distrust of a short Retry-After. Memory applies it to a
// partition's state. Package redislimit runs the same rule in Lua.

// yieldShare sets what a probing partition gives up when refused in a
// window. It gives up a yieldShare-th of what went through in it, at least
// one request, for the next window. The probes of every client behind the
// budget share that again (see probeAt). This multiplicative decrease
// brings clients with unequal shares to equal ones.
const yieldShare = limitrules.YieldShare

// estimate is how the partition counts a 429.
type estimate struct {
	fixed   bool // it paces in the gateway's fixed windows
	probing bool // it sends beyond its learned budget to find room (see probes)
	shared  bool // others' requests have filled its windows before
	trusted bool // past the window right after the streak that taught the windows
	now     int64
	// In fixed windows: the cooldown the partition last reopened from,
	// and the budget in force then. Zero means coolStart, coolUntil and
	// cur.
	reopenStart, reopenUntil int64
	reopened                 Budget
}

// learning is what one 429 teaches.
type learning struct {
	budget     Budget        // the new learned budget; zero when nothing was learned
	cooldown   time.Duration // how long to close the partition from now
	distrusted bool          // the Retry-After proved short
	others     bool          // others' requests filled the window
	// probed is what went through in the window of a refused probe. A
	// refused probe is a 429 for a request sent after the last cooldown,
	// on a partition that probes. probed is zero for any other 429.
	probed int
}

// learnFrom is the estimator. Its inputs:
//   - log holds the partition's admissions (Unix nanoseconds, ascending),
//     without the refused one.
//   - sent is when the refused request was sent.
//   - coolStart and coolUntil are the cooldown before this 429.
//   - cur is the budget in force: configured or learned, zero when none.
//
// A Retry-After beyond the cap teaches nothing: the period is unknown.
// The rules:
//   - Distrust. Say the refused request was sent after the previous
//     cooldown ended, within one cooldown length of it. And fewer requests
//     than the budget had been admitted since the reopening. Then the
//     window had not reopened when the header said: the header was short.
//     The cooldown becomes at least twice the previous one. It is bounded
//     by o.MaxCooldown, and never below the new instruction. The learned
//     period becomes at least that. The budget is left alone: the refusal
//     says nothing about it.
//   - Period: the learned one, else this Retry-After (the gateway sends
//     the whole period).
//   - Budget: the requests admitted in [sent − period − margin, sent +
//     margin] that have not been refused. Every request the gateway let
//     through in the refused request's window is in that interval. The
//     margin covers the spread of delivery delays and the order in which
//     concurrent requests arrive. So the count never falls below the
//     gateway's limit. Requests refused but not reported yet can only make
//     it larger, as can those let through in the window before. Each later
//     429 of the streak takes the smaller count. A 429 for a request sent
//     after the last cooldown (so paced at the budget in force) lowers the
//     budget by at least one. Under the sliding rule, a first 429 with
//     nothing let through before it teaches no budget.
//   - Fixed windows (e.fixed: the partition paces in the gateway's
//     windows). The count is only of the requests sent by now (e.now) that
//     may have been counted in the refused request's window. Distrust is
//     distrustWindows'. A first 429 with none of ours through paces the
//     partition at one request per window: others filled it (l.others).
//     The probes raise that.
//   - Probing (e.probing, see probes in memory.go). A 429 for a request
//     sent after the last cooldown is expected: the probe beyond the
//     budget found the window full. The budget becomes what went through
//     in the window, less a yieldShare-th (at least one). A partition alone
//     keeps its limit, less that, and takes it back by the probes.
//     Partitions sharing a budget give back in proportion to their shares
//     and take back alike. So unequal shares even out.
func learnFrom(log []int64, coolStart, coolUntil int64, cur Budget, o Observation, sent int64, e estimate) learning {
	fixed := e.fixed
	until := int64(math.MaxInt64) // the slots held for later are not sent yet
	if e.now > 0 {
		until = e.now + 1
	}
	ra := o.RetryAfter
	l := learning{cooldown: ra}
	if o.Capped {
		return l // the period is longer than the client will wait: unknown
	}
	margin := int64(max(o.Margin, 0))
	prevLen := coolUntil - coolStart
	// Fixed windows have their own proof (distrustWindows). In a sliding
	// window what counts is what went since the reopening. A refusal in
	// the period right after it, with fewer than the budget sent since,
	// proves the Retry-After short.
	if fixed {
		if l, ok := distrustWindows(log, coolStart, coolUntil, cur, o, sent, e, until); ok {
			return l
		}
	} else if ra > 0 && coolUntil > 0 && sent >= coolUntil && sent < coolUntil+prevLen &&
		countIn(log, coolUntil, sent) < max(cur.Limit, 1) {
		return distrusted(ra, prevLen, cur, o)
	}
	period := cur.Period
	if period <= 0 {
		period = ra
	}
	if period <= 0 {
		return l // no period known: nothing to count in
	}
	n := countIn(log, sent-int64(period)-margin, sent+margin+1)
	if fixed {
		// Only the refused request's window counts, with the requests
		// that may have been counted in it. That is a tighter bound than
		// the sliding interval, which may take in the window before.
		win := windowsOf(Budget{Limit: 1, Period: period}, o.Margin)
		n = min(n, win.count(log, floorDiv(sent, win.period), until))
	}
	limit := n
	// In fixed windows, a 429 with none of ours in its window went
	// through means others' requests filled it.
	l.others = fixed && n == 0
	switch {
	case cur.Limit == 0 && n == 0 && fixed:
		// Nothing went through before it. Others spent the budget
		// (another process behind the IP), or the refusal is not about a
		// budget at all. In fixed windows the partition probes for room
		// from one request per window.
		limit = 1
	case cur.Limit == 0 && n == 0:
		// Nothing went through before it, and the sliding rule does not
		// probe: only the period is known; nothing is paced.
		return l
	case cur.Limit == 0:
	case sent >= coolUntil && e.probing:
		limit = n - max(1, n/yieldShare)
		l.probed = n
	case sent >= coolUntil:
		limit = min(cur.Limit-1, n)
	default:
		limit = min(cur.Limit, n)
	}
	l.budget = Budget{Limit: max(limit, 1), Period: period}
	return l
}

// distrusted is the lesson of a Retry-After proved short. The cooldown
// becomes at least twice the one the partition reopened from. It is
// bounded by o.MaxCooldown, and never below the new instruction. The
// learned period becomes at least that. The budget is left as it was: the
// refusal says nothing about it.
func distrusted(ra time.Duration, prevLen int64, cur Budget, o Observation) learning {
	d := max(ra, 2*time.Duration(prevLen))
	if o.MaxCooldown > 0 {
		d = min(d, max(o.MaxCooldown, ra))
	}
	l := learning{cooldown: d, distrusted: true}
	if cur.Limit > 0 {
		l.budget = Budget{Limit: cur.Limit, Period: max(cur.Period, d)}
	}
	return l
}

// distrustWindows is the proof of a short Retry-After in fixed windows.
// The proof is a refusal of a request sent after the partition reopened,
// within one cooldown length of it, with none of ours through. It counts
// our requests sent since the reopening, or since the refused request's
// window opened, whichever is later. Then the gateway's window had not
// rolled over when the header said.
//
// The proof holds only in the window right after the streak that taught
// the windows. It holds only while no refusal has shown others' requests
// in our windows. Outside those, a refusal at a reopening is others' doing
// as likely as a short header. And a burst of ours refused in part went
// through in part. A burst refused whole is proved by its last refusal,
// once the earlier ones have taken their requests out of the log.
func distrustWindows(log []int64, coolStart, coolUntil int64, cur Budget, o Observation, sent int64, e estimate, until int64) (learning, bool) {
	start, end, before := e.reopenStart, e.reopenUntil, e.reopened
	if end == 0 {
		start, end, before = coolStart, coolUntil, cur
	}
	ra, prevLen := o.RetryAfter, end-start
	if ra <= 0 || end <= 0 || e.shared || e.trusted || sent < end || sent >= end+prevLen {
		return learning{}, false
	}
	since := end
	if p := int64(max(before.Period, ra)); p > 0 {
		since = max(since, floorDiv(sent, p)*p)
	}
	if countIn(log, since, until) > 0 {
		return learning{}, false // some of ours went through: the window did reopen
	}
	// The cooldown ended with the window the period drew, which the header
	// set: twice that period.
	return distrusted(ra, max(prevLen, int64(before.Period)), before, o), true
}

// countIn counts the entries of the ascending log in [from, to).
func countIn(log []int64, from, to int64) int {
	if to <= from {
		return 0
	}
	lo, _ := slices.BinarySearch(log, from)
	hi, _ := slices.BinarySearch(log, to)
	return hi - lo
}
