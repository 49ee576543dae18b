package ratelimit

import (
	"math"
	"slices"
	"time"
)

// This file holds what the limiter learns about the gateway's throttle from
// a 429, as a pure function: the budget estimate and the distrust of a short
// Retry-After (learnFrom). Memory applies it to a partition's state, and
// package redislimit runs the same rule in Lua.

// learning is what one 429 teaches.
type learning struct {
	budget     Budget        // the new learned budget; zero when nothing was learned
	cooldown   time.Duration // how long to close the partition from now
	distrusted bool          // the Retry-After proved short
}

// learnFrom is the estimator. log holds the partition's admissions (Unix
// nanoseconds, ascending) without the refused one, which was sent at sent;
// coolStart and coolUntil are the cooldown before this 429; cur is the budget
// in force (configured or learned, zero when none). A Retry-After beyond
// the cap teaches nothing: the period is unknown.
//
//   - Distrust: when the refused request was sent after the previous
//     cooldown ended, within one cooldown length of it, and fewer requests
//     than the budget had been admitted since the reopening, the window had
//     not reopened when the header said: the header was short. The cooldown
//     becomes at least twice the previous one (bounded by o.MaxCooldown, and
//     never below the new instruction), the learned period at least that,
//     and the budget is left alone: the refusal says nothing about it.
//   - Period: the learned one, else this Retry-After (the gateway sends the
//     whole period).
//   - Budget: the requests admitted in [sent − period − margin, sent +
//     margin] that have not been refused. Every request the gateway let
//     through in the refused request's window is in that interval (margin
//     covers the spread of delivery delays and the order in which
//     concurrent requests arrive), so the count never falls below the
//     gateway's limit; requests refused but not reported yet, or let through
//     in the window before, can only make it larger, and each later 429 of
//     the streak takes the smaller count. A 429 for a request sent after the
//     last cooldown (so paced at the budget in force) lowers the budget by
//     at least one. A first 429 with nothing let through before it teaches
//     no budget.
//   - Fixed windows (fixed true: the partition paces in the gateway's
//     windows): the count is only of the requests that may have been
//     counted in the refused request's window, and for distrust, "since the
//     reopening" becomes since the reopening or the opening of that window,
//     whichever is later.
func learnFrom(log []int64, coolStart, coolUntil int64, cur Budget, o Observation, sent int64, fixed bool) learning {
	ra := o.RetryAfter
	l := learning{cooldown: ra}
	if o.Capped {
		return l // the period is longer than the client will wait: unknown
	}
	margin := int64(max(o.Margin, 0))
	prevLen := coolUntil - coolStart
	// In fixed windows, what counts is what went since the reopening or
	// since the refused request's window opened, whichever is later: a
	// refusal in a window we had not used proves the windows too short.
	since := coolUntil
	if p := int64(max(cur.Period, ra)); fixed && p > 0 {
		since = max(since, floorDiv(sent, p)*p)
	}
	if ra > 0 && coolUntil > 0 && sent >= coolUntil && sent < coolUntil+prevLen &&
		countIn(log, since, sent) < max(cur.Limit, 1) {
		d := max(ra, 2*time.Duration(prevLen))
		if o.MaxCooldown > 0 {
			d = min(d, max(o.MaxCooldown, ra))
		}
		l.cooldown, l.distrusted = d, true
		if cur.Limit > 0 {
			l.budget = Budget{Limit: cur.Limit, Period: max(cur.Period, d)}
		}
		return l
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
		// Only the refused request's window counts (with the requests
		// that may have been counted in it): a tighter bound than the
		// sliding interval, which may take in the window before.
		win := windowsOf(Budget{Limit: 1, Period: period}, o.Margin)
		n = min(n, win.count(log, floorDiv(sent, win.period), math.MaxInt64))
	}
	limit := n
	switch {
	case cur.Limit == 0 && n == 0:
		// Nothing went through before it: the budget was spent by others
		// (another process behind the IP), or the refusal is not about a
		// budget at all. Only the period is known; nothing is paced.
		return l
	case cur.Limit == 0:
	case sent >= coolUntil:
		limit = min(cur.Limit-1, n)
	default:
		limit = min(cur.Limit, n)
	}
	l.budget = Budget{Limit: max(limit, 1), Period: period}
	return l
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
