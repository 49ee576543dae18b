package ratelimit

import (
	"context"
	"math"
	"math/bits"
	"slices"
	"sync"
	"time"

	"github.com/rail0/rail0-go/internal/jitter"
	"github.com/rail0/rail0-go/internal/limitclock"
	"github.com/rail0/rail0-go/internal/limitrules"
)

const (
	// logHorizon is how long the log keeps an admission for learning, when
	// no longer period is known. A 429 whose Retry-After is within the
	// default cap can still count what was admitted before it.
	logHorizon = limitrules.LogHorizon
	// maxLog bounds a partition's log; a budget larger than this raises it.
	maxLog = limitrules.MaxLog
	// idleAfter is how long a partition must have been unconstrained
	// before Memory forgets it, learned budget included. Unconstrained
	// means no cooldown and no admission within its period.
	idleAfter = limitrules.IdleAfter
	// sweepEvery is how often, in limiter operations, Memory looks for
	// idle partitions.
	sweepEvery = 1024
	// retryJitter is the share of a cooldown over which the retries it
	// held back spread their slots (see Reservation.Jitter). It is the
	// additive jitter a rail0.Client adds to a server-given wait.
	retryJitter = limitrules.RetryJitter
)

// Memory is the in-process Limiter. A rail0.Client uses it unless
// rail0.WithLimiter gives another. Per partition it keeps a log of
// admission times, a cooldown deadline and the learned budget. Partitions
// idle for ten minutes are forgotten.
//
// It paces in two ways:
//   - In the gateway's own windows, with Reservation.FixedWindows (a
//     rail0.Client always sets it). Rack::Attack numbers its windows ⌊t/P⌋
//     since the Unix epoch. So the whole budget may go at each window's
//     opening. A slot sent late in one window costs the next nothing (see
//     alignedAt). This needs the gateway's clock and ours to agree
//     within the clock allowance. That is a five-hundredth of the period,
//     at most 100 ms; NTP does far better.
//   - By the sliding rule, which needs no clock agreement. A log of the
//     last L send times admits a request only when the L-th previous one
//     is at least P old. That is exactly "at most L in any interval of P".
//     So no fixed window of P can see more than L.
//
// A partition falls back from the windows to the sliding rule when two
// things hold. Its budget is stated rather than learned (configured, and
// not probed: see probes). And the windows fail: a second 429 comes in
// windows that by our count had room. A partition that probes a learned
// budget (see probes) takes such refusals for other clients' requests.
// They look the same from here, and it keeps the windows.
//
// Memory keeps the idea of aws-sdk-go-v2's adaptive rate in the gateway's
// own units. The idea is to decrease on a throttle and probe without end.
// Here that is:
//   - one request beyond the learned budget per window;
//   - then rounds a round trip apart that double the probes while the
//     window has room (see startsRound);
//   - a decrease of a sixteenth (at least one request) on a 429.
//
// That evens out unequal shares while costing a client alone one refused
// request per window. docs/ratelimit-design.md ("Why not a token bucket")
// says why neither golang.org/x/time/rate nor aws-sdk-go-v2's adaptive
// rate fits as it is.
type Memory struct {
	now func() time.Time
	mu  sync.Mutex
	ps  map[string]*partitionState
	ops int
}

// partitionState is one partition's state. Times are Unix nanoseconds. An
// admission's time is its ticket: admissions at the same time are
// interchangeable, whichever of their holders releases or confirms.
type partitionState struct {
	log       []int64 // admissions (sent or held), oldest first; refused ones removed
	coolStart int64
	coolUntil int64
	// told is when the latest instruction the gateway gave ends: a 429's
	// Retry-After, capped, or an exhausted quota's reset. A clamped retry
	// goes no earlier (see Reservation.Clamped).
	told int64
	// closed is when the gateway's uncapped instruction ends, when it was
	// longer than the cap (see Observation.Closed).
	closed  int64
	learned Budget
	touched int64 // the last time anything constrained the partition

	// Fixed windows (see alignedAt).
	fullUntil   int64 // the end of the latest window a 429 showed full
	contradicts int   // 429s in fixed windows that by our count had room
	sliding     bool  // the fixed-window hypothesis failed here: the sliding rule only

	// Probing (see probes).
	advertised bool          // the learned budget is what RateLimit fields said (see Admission.Advertised)
	shared     bool          // others' requests have filled our windows
	probeFrom  int64         // probes start with the window opening at or after this
	rampFrom   int64         // the window before probeFrom ramps from then: every retry of the streak has gone
	undoubled  time.Duration // the period before a short Retry-After doubled it
	// Alone behind the budget (see lone and behindIn).
	behind int64 // the slot of the latest retry held after its window's opening
	probed int   // what went through in the window of the latest refused probe
	varied bool  // two refused probes found different counts: others share the budget
	// The cooldown the partition last reopened from, and the budget then.
	// A refusal right after a reopening is judged against them.
	reopenStart, reopenUntil int64
	reopenBudget             Budget

	// ahead holds the slots interactive reservations hold for later,
	// ascending (see reserveAhead); each is in the log too.
	ahead []int64
}

// NewMemory returns an empty in-memory limiter.
func NewMemory() *Memory { return newMemory(time.Now) }

// newMemory returns an empty in-memory limiter reading the time from now.
func newMemory(now func() time.Time) *Memory {
	return &Memory{now: now, ps: map[string]*partitionState{}}
}

var _ Limiter = (*Memory)(nil)

// init lends newMemory to the SDK's own tests in other packages (see
// internal/limitclock). redislimit checks its Lua against Memory under one
// injected clock.
func init() {
	limitclock.NewMemory = func(now func() time.Time) any { return newMemory(now) }
}

// state returns p's state, creating it, and now and then forgets idle
// partitions. Called with m.mu held.
func (m *Memory) state(p string, now int64) *partitionState {
	m.ops++
	if m.ops%sweepEvery == 0 {
		m.sweep(now)
	}
	s := m.ps[p]
	if s == nil {
		s = &partitionState{}
		m.ps[p] = s
	}
	return s
}

// sweep forgets the partitions idle since idleAfter.
func (m *Memory) sweep(now int64) {
	for p, s := range m.ps {
		if s.idle(now) {
			delete(m.ps, p)
		}
	}
}

// idle reports whether s has constrained nothing for idleAfter.
func (s *partitionState) idle(now int64) bool {
	last := max(s.touched, s.coolUntil, s.closed)
	if n := len(s.log); n > 0 {
		last = max(last, s.log[n-1])
	}
	return now-last >= int64(idleAfter)+int64(max(s.learned.Period, 0))
}

// partitions returns how many partitions the limiter holds.
func (m *Memory) partitions() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.ps)
}

// Reserve implements Limiter.
func (m *Memory) Reserve(ctx context.Context, r Reservation) (Admission, error) {
	if err := ctx.Err(); err != nil {
		return Admission{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now().UnixNano()
	s := m.state(r.Partition, now)
	adm := s.reserve(r, now)
	adm.Advertised = s.advertised && s.learned.enabled()
	return adm, nil
}

// Release implements Limiter.
func (m *Memory) Release(_ context.Context, partition string, ticket int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.ps[partition]; s != nil {
		s.remove(ticket)
	}
	return nil
}

// Observe implements Limiter.
func (m *Memory) Observe(_ context.Context, partition string, o Observation) (Feedback, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now().UnixNano()
	s := m.state(partition, now)
	return s.observe(o, now), nil
}

// effective is the budget in force: the configured one, the learned one, or
// the stricter combination of both.
func effective(configured, learned Budget) Budget {
	switch {
	case !learned.enabled():
		return configured
	case !configured.enabled():
		return learned
	}
	return Budget{Limit: min(configured.Limit, learned.Limit), Period: max(configured.Period, learned.Period)}
}

// prune drops admissions too old to matter for pacing or learning.
func (s *partitionState) prune(now int64, keep int, period time.Duration) {
	horizon := int64(max(logHorizon, 2*period))
	i := 0
	for i < len(s.log) && now-s.log[i] > horizon {
		i++
	}
	if extra := len(s.log) - i - max(maxLog, keep); extra > 0 {
		i += extra
	}
	if i > 0 {
		s.log = append(s.log[:0], s.log[i:]...)
	}
}

// index returns the position of ticket in the log, or -1. Admissions at
// the same time are interchangeable. So the last of them stands for the
// ticket: the strictest for the budget check.
func (s *partitionState) index(ticket int64) int {
	if ticket == 0 {
		return -1
	}
	i, _ := slices.BinarySearch(s.log, ticket+1)
	if i == 0 || s.log[i-1] != ticket {
		return -1
	}
	return i - 1
}

// remove takes ticket out of the log, if it is there.
func (s *partitionState) remove(ticket int64) {
	if i := s.index(ticket); i >= 0 {
		s.log = slices.Delete(s.log, i, i+1)
	}
}

// reserve is the admission rule; see admitAt, and alignedAt for fixed
// windows.
func (s *partitionState) reserve(r Reservation, now int64) Admission {
	b := effective(r.Budget, s.learned)
	if wait := time.Duration(s.closed - now); wait > 0 && wait > r.MaxWait {
		// The gateway said the partition stays closed longer than the
		// caller may wait: waiting would end in a refusal. Nothing is
		// held, and a slot being confirmed is given up.
		s.remove(r.Ticket)
		s.touched = now
		return Admission{Wait: wait, Cooldown: true, Budget: b}
	}
	if r.Guessed && r.Retry {
		return s.reserveGuessed(r, now)
	}
	if r.Interactive {
		return s.reserveAhead(r, b, now)
	}
	if r.FixedWindows && b.enabled() && !s.sliding {
		return s.reserveAligned(r, b, now)
	}
	period := b.Period + max(r.Margin, 0)
	s.prune(now, b.Limit, period)
	s.touched = now
	// Earlier slots sent late, or a lower budget, push a held slot to the
	// first time its period has room.
	if adm, ok := s.confirm(r, b, now, func(t int64) int64 { return confirmAt(s.log, t, b, period) }); ok {
		return adm
	}
	coolStart, coolUntil := s.coolStart, s.coolUntil
	if r.Clamped && r.Retry {
		// No jitter window: the clamped wait is the retry's own.
		t := s.reopensFor(r)
		coolStart, coolUntil = t, t
	}
	at, hold, cooled := admitAt(s.log, coolStart, coolUntil, b, period, r, now)
	wait := time.Duration(at - now)
	if wait > r.MaxWait {
		return Admission{Wait: wait, Cooldown: cooled, Budget: b}
	}
	adm := Admission{Wait: max(wait, 0), OK: true, Cooldown: cooled, Budget: b}
	if hold {
		s.log = append(s.log, at)
		adm.Ticket = at
	}
	return adm
}

// reserveGuessed places a guessed retry (see Reservation.Guessed) at its
// own wait. A header informs only the attempt it came with. So neither the
// learned budget nor the windows a 429 showed full hold it. Only two
// things do:
//   - a cooldown whose instruction still runs (reopensFor);
//   - the configured budget, counted in its windows. On a partition that
//     fell back to the sliding rule, it counts the slots either side of
//     its own (roomAround), not those held before it.
//
// A held slot being confirmed is placed again from its own time, never
// earlier.
func (s *partitionState) reserveGuessed(r Reservation, now int64) Admission {
	b := r.Budget
	s.touched = now
	from := now + int64(max(r.After, 0))
	if i := s.index(r.Ticket); i >= 0 {
		from = max(from, r.Ticket)
		s.log = slices.Delete(s.log, i, i+1)
	}
	cooled := false
	if reopen := s.reopensFor(r); reopen > from {
		from, cooled = reopen, true
	}
	t := from
	switch {
	case !b.enabled():
	case r.FixedWindows && !s.sliding:
		t = alignedAt(s.log, 0, windowsOf(b, r.Margin), from)
	default:
		t = roomAround(s.log, from, b.Limit, int64(b.Period+max(r.Margin, 0)))
	}
	wait := time.Duration(t - now)
	if wait > r.MaxWait {
		return Admission{Wait: wait, Cooldown: cooled, Budget: b}
	}
	s.insert(t)
	return Admission{Wait: max(wait, 0), OK: true, Cooldown: cooled, Ticket: t, Budget: b}
}

// roomAround is the first time from t at which the ascending log holds
// fewer than limit entries less than per away, before or after. A slot
// there breaks the budget in no period, whatever the slots held after it.
// So a guessed retry needs no place behind them, which a learned budget
// may have spread far out.
func roomAround(xs []int64, t int64, limit int, per int64) int64 {
	for {
		lo, _ := slices.BinarySearch(xs, t-per+1) // the entries at or before t-per
		hi, _ := slices.BinarySearch(xs, t+per)   // the entries before t+per
		if hi-lo < limit {
			return t
		}
		t = xs[lo] + per
	}
}

// confirm re-checks the slot r.Ticket held since an earlier admission, now
// that its caller has slept. The slot stands, perhaps a little later,
// keeping its place in the queue. Or it is given up when that is beyond
// the caller's room. at gives the first time the rule admits the slot from
// a time, against the log without the slot. ok is false when no slot is
// held. It is false too when the partition closed again while the caller
// slept. The slot is then gone, and the caller queues again.
func (s *partitionState) confirm(r Reservation, b Budget, now int64, at func(from int64) int64) (adm Admission, ok bool) {
	i := s.index(r.Ticket)
	if i < 0 {
		return Admission{}, false
	}
	s.log = slices.Delete(s.log, i, i+1)
	if s.reopensFor(r) > r.Ticket {
		return Admission{}, false
	}
	t := at(max(r.Ticket, now))
	wait := time.Duration(t - now)
	if wait > r.MaxWait {
		return Admission{Wait: wait, Budget: b}, true // moved beyond the caller's room: given up
	}
	s.insert(t)
	return Admission{Wait: wait, OK: true, Ticket: t, Budget: b}, true
}

// reserveAligned is reserve in fixed windows. A held slot being confirmed
// stands if its windows still have room. Else it moves to the first window
// that has. A new slot is the first time its windows have room. It counts
// from now, or, for a retry while the partition is closed, from the
// reopening. It is never before r.After, the retry's own wait. A fresh
// call while the partition is closed holds nothing and asks again at the
// reopening. By then every retry refused in the streak holds its slot. So
// fresh calls only get what the retries leave, in whatever order the
// jitter sends the retries.
func (s *partitionState) reserveAligned(r Reservation, b Budget, now int64) Admission {
	w := s.probeWindows(windowsOf(b, r.Margin), r.Budget, r.Margin, r.Step)
	// The bound on the log's length must not drop admissions that the
	// current and later windows count. With more than maxLog slots held,
	// it would reopen the current window.
	counted, _ := slices.BinarySearch(s.log, w.first(now)*w.period-w.late)
	s.prune(now, max(b.Limit, len(s.log)-counted), b.Period)
	s.touched = now
	w.behind = s.behindIn(w)
	confirmAt := confirmAligned
	if r.Ticket != 0 && r.Ticket == s.behind {
		s.behind = 0
		if w.behind != 0 {
			confirmAt = confirmBehind
		}
	}
	if adm, ok := s.confirm(r, b, now, func(t int64) int64 { return confirmAt(s.log, s.fullUntil, w, t) }); ok {
		if w.behind != 0 && r.Ticket == w.behind && adm.Ticket == r.Ticket && adm.Wait > 0 {
			s.behind = adm.Ticket // confirmed before it is due: still behind
		}
		return adm
	}
	from, cooled := now, false
	if reopen := s.reopensFor(r); reopen > now {
		cooled = true
		if !r.Retry {
			wait := time.Duration(reopen - now)
			return Admission{Wait: wait, OK: wait <= r.MaxWait, Cooldown: true, Budget: b}
		}
		// The retry's place is its rank in the window that reopens,
		// held from its 429 on, at its own wait or later (After).
		from = reopen
	}
	from = max(from, now+int64(max(r.After, 0)))
	t := alignedAt(s.log, s.fullUntil, w, from)
	late := r.Retry && !r.Clamped && r.After > 0 && s.lone() && w.lateIn(t)
	if late {
		// Its Retry-After sets it after the opening. The window's probes
		// need not wait for it (see behindIn). It goes a step later, when
		// the answers of those that went before it are back.
		t = alignedAt(s.log, s.fullUntil, w, t+w.step)
	}
	wait := time.Duration(t - now)
	if wait > r.MaxWait {
		return Admission{Wait: wait, Cooldown: cooled, Budget: b}
	}
	s.insert(t)
	if late && w.lateIn(t) {
		s.behind = t
	}
	return Admission{Wait: max(wait, 0), OK: true, Cooldown: cooled, Ticket: t, Budget: b}
}

// lone reports whether the partition looks alone behind its budget. No
// refusal has shown others' requests in its windows (shared). And its
// refused probes all found the same count (varied). Alone, each window
// takes exactly the gateway's limit. Clients sharing the budget get shares
// that move from window to window. Once either sign shows, the partition
// keeps the rule for shared budgets until it is forgotten.
func (s *partitionState) lone() bool { return !s.shared && !s.varied }

// behindIn is the slot of s's late retry when it is still held, in a window
// w probes after the first. Else it is zero.
//
// Take a partition alone behind its budget. Its probe beyond the budget is
// refused in every window in which more calls wait than the budget admits.
// Its retry waits the whole Retry-After (see Reservation.After). So it
// lands late in the next window, by the probe's phase plus a round trip.
// Say that window's probes waited for it, as they wait for every other
// slot. Then the next refused probe would go later still. The phase would
// drift by a round trip and a step per window, delaying the last window's
// calls. That was the one-process regression of the probes.
//
// So, while the partition looks alone (see lone), such a retry is held a
// step after its Retry-After. It lends its place in the budget to a probe
// at the window's opening (see probeAt). The probes ramp from there. The
// step brings the answer of the one refused back before the retry is due.
// Then one of two things holds:
//   - A 429 has shown the window full by then. The partition is closed
//     until the next window's opening. The retry queues again from there,
//     its Retry-After being over.
//   - None has. The retry goes in its place (see confirmBehind).
//
// The refused probe goes a step after the opening whatever the phase of the
// retry, so the phase cannot drift. The first probed window keeps the rule
// of every other slot. Its late retry is the clean window's probe, a call
// the streak refused, which keeps its place before later calls.
func (s *partitionState) behindIn(w windows) int64 {
	if s.behind == 0 || !w.lateIn(s.behind) {
		return 0
	}
	if s.index(s.behind) < 0 {
		s.behind = 0
		return 0
	}
	return s.behind
}

// lateIn reports whether a slot at t comes after the opening of a window
// probed after the first (see behindIn).
func (w windows) lateIn(t int64) bool {
	k := floorDiv(t, w.period)
	return w.step > 0 && k*w.period >= w.from+w.period && t > w.opening(k)
}

// confirmBehind is when the late retry due at t (see behindIn) may go. It
// goes at t, its place in the budget, however many probes went before it.
// A 429 may have shown the window full before it was due. That closed the
// partition until the next window's opening. The retry then queued again
// from there (see confirm).
func confirmBehind(_ []int64, _ int64, _ windows, t int64) int64 { return t }

// reopensFor is when the partition reopens for r: when its cooldown ends.
// A clamped or guessed retry (see Reservation.Clamped and Guessed) may go
// sooner. For it, the partition reopens when the latest instruction the
// gateway gave ends, if that is sooner.
// A cooldown a short Retry-After lengthened is the limiter's guess, not
// the gateway's word. So is a window's end the limiter worked out.
func (s *partitionState) reopensFor(r Reservation) int64 {
	if (r.Clamped || r.Guessed) && r.Retry {
		return min(s.coolUntil, s.told)
	}
	return s.coolUntil
}

// probes reports whether the partition looks for room beyond its learned
// budget. It does when it has one (taught by 429s or stated by RateLimit
// fields) below the configured one, if any. The configured one is a
// ceiling. A budget learned from one window is the share this client had
// then. The others behind the same budget may since have fallen silent.
// Nothing but a request beyond the share can tell. An advertised budget is
// probed too: one answer (a proxy's, a forged one) must not throttle the
// partition for good. A gateway that means it refuses one probe per busy
// window. Or it says the quota is spent (RateLimit remaining 0), which
// closes the partition.
func (s *partitionState) probes(configured Budget) bool {
	return s.learned.enabled() && !s.sliding &&
		(!configured.enabled() || s.learned.Limit < configured.Limit)
}

// probeWindows is w with the probing geometry, when the partition probes:
//   - One admission beyond the budget at each window's opening, racing the
//     other clients' bursts.
//   - While no 429 shows the window full, rounds of probes, up to the
//     configured budget. Each round is as large as all the probes before
//     it (see startsRound).
//   - The first round goes a margin (the longest recent round trip) after
//     the opening. In a partition that looks alone it goes two paces after
//     it (see probeAt).
//   - The later rounds go a pace apart. The pace is the typical round trip
//     (Reservation.Step), at most the margin and at least a millisecond.
//
// Why a pace and not the margin? Under a heavy tail of round trips, the
// margin is many times the typical one. Rounds a margin apart would come
// too late to fill a window others left. A round sent before a slow answer
// of the previous one is back costs at most its own size in 429s. That is
// the same bound as doubling.
//
// A partition that does not look alone sends its probes ahead of the slots
// held later in the window (see heldUntil). One whose windows others'
// requests have filled sends up to its share at the opening (see probeAt).
func (s *partitionState) probeWindows(w windows, configured Budget, margin, pace time.Duration) windows {
	if !s.probes(configured) {
		return w
	}
	w.step = int64(max(margin, time.Millisecond))
	w.pace = w.step
	if pace > 0 {
		w.pace = int64(max(min(pace, margin), time.Millisecond))
	}
	w.from, w.clean = s.probeFrom, s.rampFrom
	if s.rampFrom > 0 {
		// Every client's retry of the streak goes within its additive
		// jitter after its Retry-After (a tenth of it). The clean window's
		// probes wait for that band too. So they do not take the places of
		// other clients' retries, which land late in the window.
		w.clean += int64(float64(w.period) * retryJitter)
	}
	w.ahead = !s.lone()
	w.burst = s.shared
	w.ceiling = math.MaxInt
	if configured.enabled() {
		w.ceiling = configured.Limit
	}
	return w
}

// unexplained reports whether our own count fails to explain a 429. The
// 429 is for a request sent at sent, admitted under the budget admitted,
// and came at now. It is unexplained when fewer of our requests sent by
// then than that budget may have been counted in its window. Then someone
// else's requests filled it, or the gateway's windows are not where we
// think. Slots held for later in the window are not sent yet.
func (s *partitionState) unexplained(admitted Budget, margin time.Duration, sent, now int64) bool {
	if !admitted.enabled() {
		return false
	}
	w := windowsOf(admitted, margin)
	for k := w.first(sent); k <= w.last(sent); k++ {
		if w.count(s.log, k, now+1) >= w.limit {
			return false // our own requests filled it
		}
	}
	return true
}

// insert adds an admission at t, keeping the log in order.
func (s *partitionState) insert(t int64) {
	j, _ := slices.BinarySearch(s.log, t+1)
	s.log = slices.Insert(s.log, j, t)
}

// clockAllowance is how far the gateway's clock may be from ours. NTP
// keeps servers within milliseconds of each other. A five-hundredth of the
// period, at most 100 ms, leaves room for worse. A clock further off costs
// a few 429s, after which the partition keeps to the sliding rule.
func clockAllowance(period time.Duration) time.Duration {
	return min(period/500, 100*time.Millisecond)
}

// windows is the geometry of a budget's fixed windows. The gateway counts
// a request sent at t at some time in [t − early, t + late]. early is the
// clock allowance. late is the allowance plus the spread of delivery
// delays (the margin). So the request counts against every window that
// interval touches.
type windows struct {
	limit               int
	period, early, late int64
	// Probing (see probeAt). When step is positive, the windows from the
	// one before from on admit beyond limit. They admit one admission at
	// a time, up to ceiling, until a 429 shows them full.
	step, from int64
	clean      int64 // when the last retry of the streak before from goes
	behind     int64 // a late retry the probes do not wait for (see behindIn); zero when none
	ceiling    int
	pace       int64 // the step of the rounds after the first (see probeAt)
	// ahead: the probes do not wait for the slots held later in the
	// window (see heldUntil).
	ahead bool
	// burst: the window's first round of probes is up to the learned
	// share, at the opening (see probeAt). It is set only when others'
	// requests have filled the partition's windows.
	burst bool
}

// heldUntil is the bound on the admissions that set when a probe at t may
// go (see probeAt). It takes all of them. When the probes go ahead of the
// slots held later in the window, it takes those at or before t.
//
// A partition sharing its budget has its refused probes retried a whole
// Retry-After later: Rack::Attack sends the period, not the time left.
// They land late in the next window, several of them when a round of
// probes was refused. Say that window's probes waited for them. (The
// probes of a partition alone wait for every slot but its one late retry:
// see behindIn.) Then the window would take only the learned share until
// then. The last window's calls would go that much later. Probes that
// go ahead cost the retries nothing. A retry's place is counted in the
// budget. When a 429 shows the window full before a retry is due, the
// partition is closed until the next window. The retry moves there unsent
// (see confirmAligned).
func (w windows) heldUntil(t int64) int64 {
	if w.ahead {
		return t + 1
	}
	return math.MaxInt64
}

// windowsOf is the geometry of b's windows for a request with this margin.
func windowsOf(b Budget, margin time.Duration) windows {
	a := clockAllowance(b.Period)
	return windows{
		limit:  b.Limit,
		period: int64(b.Period),
		early:  int64(a),
		late:   int64(min(a+max(margin, 0), b.Period/4)),
	}
}

// first and last are the windows a request sent at t may be counted in.
func (w windows) first(t int64) int64 { return floorDiv(t-w.early, w.period) }
func (w windows) last(t int64) int64  { return floorDiv(t+w.late, w.period) }

// count is how many admissions of the log may be counted in window k, among
// those sent before until.
func (w windows) count(log []int64, k, until int64) int {
	return countIn(log, k*w.period-w.late, min((k+1)*w.period+w.early, until))
}

// opening is the first time a request counted only in window k may go.
func (w windows) opening(k int64) int64 { return k*w.period + w.early }

// probeAt is when window k, holding n admissions, may take one more. n is
// at least the budget. It counts the admissions of the log before until. ok
// is false when the window is not probed. It is false too when the time
// would come too late. That is in the band at the window's end, where a
// request is counted in the next window too.
//
// The first admission beyond the budget goes at the window's opening,
// racing the other clients' bursts. It does so when nothing the window
// holds (before until) is later. The further ones go in rounds (see
// startsRound):
//   - A probe that opens a round goes after the window's latest admission.
//     So the previous round's answers are back before it goes.
//   - It goes a step after that admission for the first round, and a pace
//     after it for the later ones. The pace is the step when unset.
//   - It never goes before the round's time counted from the opening.
//   - The others of its round go with it.
//
// In a partition that looks alone (not ahead) the first round's step is two
// paces, at most the margin. Why two paces:
//   - The calls beyond its share in the last window wait for that round. A
//     margin the round trips' tail sets put them tens of milliseconds
//     behind a retrying client's (issue 21's p99).
//   - The opening probe goes into every client's burst, whose queue
//     lengthens its round trip. Two typical round trips leave its answer
//     room to come back. One alone let more rounds go before a 429, and
//     cost a tail of its own in the noisy scenario.
//
// A partition whose windows others' requests have filled (burst) sends an
// opening round of up to its share. Those are the window's first probes, up
// to twice the budget in all. They go while less than a pace has passed
// since the opening. Then come rounds a pace apart, each a multiple of the
// opening round's size. After an idle neighbour, the window fills in a
// round or two instead of log₂ of the share.
//
// A partition alone gives the whole log as until. So a probe never goes
// before a retry whose place the window holds, but for its one late retry
// (see behindIn). A partition sharing its budget gives only what is at or
// before the probe (see heldUntil).
//
// The window before from is the clean one, right after a 429 taught the
// windows. Every client goes at the share it learned. Its first probe goes
// only a step after every retry of the streak has gone (clean). So nobody's
// retry finds the window taken by another client's probes.
func (w windows) probeAt(log []int64, k int64, n int, until int64) (int64, bool) {
	if w.step <= 0 || k*w.period < w.from-w.period || n >= w.ceiling {
		return 0, false
	}
	open := w.opening(k)
	last := open
	j, _ := slices.BinarySearch(log, min((k+1)*w.period+w.early, until))
	if j > 0 && log[j-1] == w.behind {
		j-- // the late retry does not hold the probes back
	}
	if j > 0 && log[j-1] >= k*w.period-w.late {
		last = max(last, log[j-1])
	}
	probes := n - w.limit // the probes the window holds
	if w.behind != 0 && floorDiv(w.behind, w.period) == k {
		// A late retry the probes do not wait for (see behindIn) lends
		// its place to one more probe at the opening.
		probes--
	}
	t := last
	switch {
	case k*w.period < w.from:
		t = max(last+w.step, w.clean+w.step)
	case probes > 0:
		pace := w.pace  // at least a millisecond (probeWindows)
		first := w.step // the first round's step
		unit := 1       // the rounds after the opening one are multiples of its size
		if !w.ahead {
			// Alone: two typical round trips, not the margin.
			first = min(2*pace, w.step)
		}
		if w.burst {
			first = pace
			if countIn(log, k*w.period-w.late, until) < 2*w.limit && until-1 < open+first {
				break // one more of the opening round
			}
			unit = max(countIn(log, k*w.period-w.late, open+first)-w.limit, 1)
		}
		round := bits.Len(uint(probes / unit))
		t = max(t, open+first+int64(round-1)*pace)
		if probes%unit == 0 && startsRound(probes/unit) {
			if round == 1 {
				t = max(t, last+first)
			} else {
				t = max(t, last+pace)
			}
		}
	}
	if t >= (k+1)*w.period-w.late {
		return 0, false
	}
	return t, true
}

// startsRound reports whether a window's probe opens a round of probes, a
// step after the previous round. probes counts the window's earlier
// probes, at least one. The rounds hold 1, 1, 2, 4, ... probes, each as
// many as went before it. So the probes beyond the budget double every
// round trip while no 429 shows the window full. TCP's slow start grows
// its window the same way. docs/ratelimit-design.md ("Why the probes
// double") says why neither fewer nor more.
func startsRound(probes int) bool { return probes&(probes-1) == 0 }

// floorDiv is ⌊a/b⌋ for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// alignedAt is the admission rule in fixed windows, a pure function. It
// returns the first time at or after from when a request may go. It is
// given the log: held and sent admissions, ascending. It is also given the
// end of the latest window known to be full.
//
// Rack::Attack numbers its windows ⌊t/P⌋ in the gateway's clock. So the
// windows are [k·P, (k+1)·P) in Unix time. A time is admissible when every
// window the request may be counted in (see windows) passes two tests. The
// window ends after fullUntil. And it holds fewer than Limit admissions
// counted the same way. A window's admissions go as soon as it opens. A
// late one (a retry's jitter) does not push the next window's. Unlike
// under the sliding rule, a late slot costs nothing later. So the makespan
// stays at the floor plus the allowance.
func alignedAt(log []int64, fullUntil int64, w windows, from int64) int64 {
	t := from
	for range 2*len(log) + 3 {
		if t-w.early < fullUntil {
			t = max(t, fullUntil+w.early)
		}
		moved := false
		for k := w.first(t); k <= w.last(t); k++ {
			n := w.count(log, k, math.MaxInt64)
			if n < w.limit {
				continue
			}
			if p, ok := w.probeAt(log, k, n, w.heldUntil(t)); ok {
				if t >= p {
					continue
				}
				t, moved = p, true
				break
			}
			t, moved = w.opening(k+1), true
			break
		}
		if !moved {
			return t
		}
	}
	return t
}

// confirmAligned is when a held slot due at t may go in fixed windows. It
// goes at t if, in each window it may be counted in, fewer than Limit
// admissions come at or before it. Its own is excluded; later ones queue
// behind it. Else it goes at the first place alignedAt finds after that
// window. Ranking by ticket keeps the queue's order when the budget falls
// while slots are held. The first Limit slots of a window stand, and the
// rest move on in their order.
func confirmAligned(log []int64, fullUntil int64, w windows, t int64) int64 {
	if t-w.early < fullUntil {
		return alignedAt(log, fullUntil, w, t)
	}
	for k := w.first(t); k <= w.last(t); k++ {
		n := w.count(log, k, t+1)
		if n < w.limit {
			continue
		}
		if p, ok := w.probeAt(log, k, n, t+1); ok && t >= p {
			continue
		}
		return alignedAt(log, fullUntil, w, t)
	}
	return t
}

// confirmAt is when a held slot that is due at t may go. That is the first
// time at or after t when fewer than the budget's Limit admissions fall in
// the period before it. Its own admission does not count.
func confirmAt(log []int64, t int64, b Budget, period time.Duration) int64 {
	if !b.enabled() {
		return t
	}
	for {
		hi, _ := slices.BinarySearch(log, t+1) // admissions at or before t
		if hi < b.Limit {
			return t
		}
		next := log[hi-b.Limit] + int64(period)
		if next <= t {
			return t
		}
		t = next
	}
}

// admitAt is the sliding admission rule, a pure function. It returns the
// time at which the request may go. It also says whether the limiter holds
// that slot for it, and whether a cooldown set the time.
//
//   - First in, first out: a new slot comes after every slot already held.
//   - While the partition is closed, a retry waits for the reopening
//     plus its own jitter: a share of 10% of the cooldown. It holds its
//     slot.
//     A fresh call holds nothing until the whole jitter window after the
//     reopening has passed, and asks again then. So retries always go
//     first.
//   - Pacing: with the budget's log full, a slot opens when the Limit-th
//     previous admission is one (stretched) period old. So at most Limit
//     go in any interval of that period. After a cooldown the partition
//     reopens for at most the budget.
//   - No slot comes before r.After: a retry goes at its own wait or later.
func admitAt(log []int64, coolStart, coolUntil int64, b Budget, period time.Duration, r Reservation, now int64) (at int64, hold, cooled bool) {
	at = now
	if n := len(log); n > 0 {
		at = max(at, log[n-1])
	}
	window := float64(coolUntil-coolStart) * retryJitter
	if !r.Retry && coolUntil+int64(window) > now {
		// Until the last retry's jitter has run out, a fresh call does not
		// take a slot: it asks again then.
		return max(coolUntil+int64(window), at), false, true
	}
	if coolUntil > now {
		cooled = true
		at = max(at, coolUntil+int64(window*jitter.Clamp(r.Jitter)))
	}
	if b.enabled() && len(log) >= b.Limit {
		at = max(at, log[len(log)-b.Limit]+int64(period))
	}
	return max(at, now+int64(max(r.After, 0))), true, cooled
}

// observe applies an Observation; see learnFrom. Advertised RateLimit
// fields set the budget. It is forgotten when answers stop carrying it.
// Otherwise a 429 teaches it, and only one that gave an instruction.
func (s *partitionState) observe(o Observation, now int64) Feedback {
	s.touched = now
	if o.Unadvertised && s.advertised {
		// Answers stopped carrying the budget they stated: it is forgotten.
		s.learned, s.advertised = Budget{}, false
	}
	if o.Advertised.enabled() {
		s.learned, s.advertised = o.Advertised, true
	}
	fb := Feedback{}
	cool := o.Reset
	if o.Reset > 0 {
		s.told = max(s.told, now+int64(o.Reset))
	}
	if o.Throttled && o.RetryAfter <= 0 {
		// A 429 without an instruction was refused, so its request used
		// no budget. It teaches nothing and closes nothing. The period it
		// would be counted in is known only from an earlier header. And a
		// header informs only the attempt it came with.
		s.remove(o.Ticket)
	} else if o.Throttled {
		if o.RetryAfter > 0 {
			s.told = max(s.told, now+int64(o.RetryAfter))
		}
		if o.Closed > 0 {
			s.closed = max(s.closed, now+int64(o.Closed))
		}
		cur, first := effective(o.Budget, s.learned), s.coolUntil == 0
		if now >= s.coolUntil {
			// The first 429 since the partition reopened.
			s.reopenStart, s.reopenUntil, s.reopenBudget = s.coolStart, s.coolUntil, cur
		}
		sent := now
		if i := s.index(o.Ticket); i >= 0 {
			sent = s.log[i]
			s.log = slices.Delete(s.log, i, i+1) // refused: it used no budget
		}
		fixed := o.FixedWindows && !s.sliding
		unexplained := fixed && s.unexplained(o.Admitted, o.Margin, sent, now)
		// A short Retry-After is proved only in the first window after
		// a streak taught the partition its windows. From then on a
		// refusal at a reopening is others' requests (see probes).
		e := estimate{fixed: fixed, probing: fixed && s.probes(o.Budget), shared: s.shared,
			trusted: fixed && s.coolUntil > 0 && sent >= s.probeFrom, now: now,
			reopenStart: s.reopenStart, reopenUntil: s.reopenUntil, reopened: s.reopenBudget}
		l := learnFrom(s.log, s.coolStart, s.coolUntil, cur, o, sent, e)
		if l.budget.enabled() && !o.Advertised.enabled() {
			s.learned, s.advertised = l.budget, false
		}
		switch {
		case l.distrusted && fixed:
			s.undoubled = cur.Period
		case l.others || unexplained && e.trusted:
			// Others' requests fill our windows. A period that a
			// refusal at a reopening doubled was theirs too. (In the
			// window right after the streak, a refusal with some of ours
			// through may yet prove a short Retry-After: see
			// distrustWindows.)
			s.shared = true
			if s.undoubled > 0 && s.learned.Period > s.undoubled {
				s.learned.Period = s.undoubled
			}
			s.undoubled = 0
		}
		if l.cooldown > 0 {
			cool = l.cooldown
		}
		if l.probed > 0 {
			s.varied = s.varied || s.probed > 0 && l.probed != s.probed
			s.probed = l.probed
		}
		fb.Distrusted = l.distrusted
		if o.FixedWindows {
			after := effective(o.Budget, s.learned)
			s.learnWindows(after, unexplained, e.probing, l.distrusted, sent, now)
			if fixed && after.enabled() {
				if first || l.distrusted {
					// The window after the one the 429 showed full
					// is the clean one. Every client paces at the
					// share it learned. Probes start after it.
					s.probeFrom, s.rampFrom = s.fullUntil+int64(after.Period), 0
				}
				if now < s.probeFrom-int64(after.Period) {
					// A 429 of the streak: its retry goes a
					// Retry-After on, into the clean window.
					s.rampFrom = max(s.rampFrom, now+int64(o.RetryAfter))
				}
				if !s.sliding && !l.distrusted && cool <= after.Period {
					// Rack::Attack's Retry-After is the whole period, not
					// the time left. The window the 429 showed full ends
					// sooner. The next one opens for the partition then.
					cool = min(cool, time.Duration(s.fullUntil+int64(clockAllowance(after.Period))-now))
				}
				if clean := s.probeFrom - int64(after.Period); l.others && now < clean {
					// Nothing of ours went through: the others' shares
					// fill the clean window; ours starts with its ramp.
					open := clean + int64(clockAllowance(after.Period))
					ramp := max(open, s.rampFrom) + int64(max(o.Margin, time.Millisecond))
					cool = max(cool, time.Duration(ramp-now))
				}
			}
		}
	}
	s.close(now, cool)
	fb.Cooldown, fb.Budget = time.Duration(max(s.coolUntil-now, 0)), s.learned
	return fb
}

// learnWindows is what a 429 says about fixed windows, given the budget in
// force after it. The window it arrived in is full. To be safe, that is the
// latest window it may have arrived in. That is the window of now in the
// gateway's clock, which may be ahead of ours by the clock allowance.
//
// Some refusals contradict the windows. Our own count does not explain them
// (see unexplained). They are not part of a streak already counted. No
// short Retry-After explains them. Either the budget was too high (the
// estimator lowers it), or the gateway's windows are not where we think. On
// a partition that probes, such a refusal is taken for other clients'
// requests (see probes). Otherwise the second one ends the hypothesis for
// the partition. The partition keeps to the sliding rule until it is
// forgotten.
func (s *partitionState) learnWindows(after Budget, unexplained, probing, distrusted bool, sent, now int64) {
	if !after.enabled() || s.sliding {
		return
	}
	p := int64(after.Period)
	s.fullUntil = max(s.fullUntil, (floorDiv(now+int64(clockAllowance(after.Period)), p)+1)*p)
	if !unexplained || probing || distrusted || sent <= s.coolStart {
		// A request sent before the partition last closed belongs to a
		// streak that has taught its lesson already.
		return
	}
	s.contradicts++
	if s.contradicts >= 2 {
		s.sliding = true
	}
}

// close closes the partition for d from now, never shortening a cooldown in
// force.
func (s *partitionState) close(now int64, d time.Duration) {
	if d <= 0 {
		return
	}
	if until := now + int64(d); until > s.coolUntil {
		s.coolStart, s.coolUntil = now, until
	}
}
