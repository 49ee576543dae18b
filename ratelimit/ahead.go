package ratelimit

import (
	"slices"
	"time"
)

// This file is the interactive reservation (Reservation.Interactive): a
// handler's call goes ahead of a job's backlog. The log's held slots are
// the backlog. The interactive slot counts only what was sent and what
// other interactive calls hold. The held slots it passes move behind it
// when their holders confirm them. confirmAligned and confirmAt count
// every slot at or before theirs, the interactive one included.

// reserveAhead is reserve for an interactive reservation. It finds the
// first time at which the budget has room among the committed slots (see
// committed). It searches from now, or, when confirming, from its slot. It
// holds that slot in the log, and in ahead while it is still to come. A
// closed partition makes it wait for the reopening, holding nothing, as a
// fresh call does.
func (s *partitionState) reserveAhead(r Reservation, b Budget, now int64) Admission {
	s.touched = now
	confirming := r.Ticket != 0 && s.index(r.Ticket) >= 0
	if confirming {
		s.remove(r.Ticket)
		if i, found := slices.BinarySearch(s.ahead, r.Ticket); found {
			s.ahead = slices.Delete(s.ahead, i, i+1)
		}
	}
	if reopen := s.reopensFor(r); reopen > now {
		wait := time.Duration(reopen - now)
		return Admission{Wait: wait, OK: wait <= r.MaxWait, Cooldown: true, Budget: b}
	}
	from := now + int64(max(r.After, 0)) // a retry's slot is not held before its Retry-After
	var own int64                        // the slot being confirmed: the slots held at its time are not sent yet
	if confirming {
		from, own = max(r.Ticket, now), r.Ticket
	}
	period := b.Period + max(r.Margin, 0)
	var t int64
	if r.FixedWindows && b.enabled() && !s.sliding {
		w := s.probeWindows(windowsOf(b, r.Margin), r.Budget, r.Margin, r.Step)
		counted, _ := slices.BinarySearch(s.log, w.first(now)*w.period-w.late)
		s.prune(now, max(b.Limit, len(s.log)-counted), b.Period)
		log := s.committed(now, own)
		if confirming {
			t = confirmAligned(log, s.fullUntil, w, from)
		} else {
			t = alignedAt(log, s.fullUntil, w, from)
		}
	} else {
		s.prune(now, b.Limit, period)
		t = confirmAt(s.committed(now, own), from, b, period)
	}
	wait := time.Duration(t - now)
	if wait > r.MaxWait {
		return Admission{Wait: wait, Budget: b}
	}
	s.insert(t)
	if t > now {
		j, _ := slices.BinarySearch(s.ahead, t+1)
		s.ahead = slices.Insert(s.ahead, j, t)
	}
	return Admission{Wait: max(wait, 0), OK: true, Ticket: t, Budget: b}
}

// committed is the log as an interactive reservation sees it, ascending.
// It holds the slots sent by now and those interactive reservations hold.
// It leaves out the slots waiting calls hold for later. When confirming
// the slot own, it also leaves out the others held at its very time, but
// for interactive ones. They are the backlog it goes ahead of, not yet
// sent: a whole window's budget is held at its opening. committed drops
// from ahead what was sent by now. It keeps no more slots at a time than
// the log holds there. A holder at that time gave one back, and slots at
// one time are interchangeable.
func (s *partitionState) committed(now, own int64) []int64 {
	sent, _ := slices.BinarySearch(s.log, now+1)
	out := make([]int64, 0, sent+len(s.ahead))
	for _, t := range s.log[:sent] {
		if t != own {
			out = append(out, t)
		}
	}
	kept := s.ahead[:0]
	for _, t := range s.ahead {
		if (t <= now && t != own) || countEqual(kept, t) >= countEqual(s.log, t) {
			continue
		}
		kept = append(kept, t)
	}
	s.ahead = kept
	out = append(out, kept...)
	slices.Sort(out)
	return out
}

// countEqual counts the entries of the ascending xs equal to t.
func countEqual(xs []int64, t int64) int {
	lo, _ := slices.BinarySearch(xs, t)
	hi, _ := slices.BinarySearch(xs, t+1)
	return hi - lo
}
