// Package ratelimit is the rate-limit engine behind a rail0.Client. A client
// that retries 429s or paces its calls keeps its state here, per rate-limit
// partition:
//   - the log of its admissions;
//   - the cooldown after a 429;
//   - the budget it learned from the gateway's answers.
//
// The package also holds the rules that decide when each request may go.
//
// A program configures rate limiting on the client and never calls this
// package. The options are rail0.WithRetryOn429, rail0.WithPacing and
// rail0.WithCooldown. The package matters to two kinds of code:
//   - A program that shares one limiter among several processes passes one
//     to rail0.WithLimiter. Package redislimit is such a Limiter, kept in
//     Redis.
//   - A Limiter implementation follows the contract of the Limiter
//     interface. It also follows the contract of the types it exchanges
//     with the client: Reservation, Admission, Observation and Feedback.
//
// Memory is the in-process Limiter every client uses by default. Its rules
// are the reference that redislimit runs in Lua. In short:
//   - The gateway throttles in fixed windows aligned on the Unix epoch
//     (Rack::Attack). So a partition admits its whole budget at each
//     window's opening.
//   - On a 429 the partition closes until the refused request's window
//     ends.
//   - Its retries hold their places in the window that reopens, before
//     fresh calls ask again.
//   - The budget is learned from what got through in that window.
//   - A short Retry-After is not trusted twice.
//
// A budget learned from one window is the share this client had then.
// Several processes behind one budget that share nothing each learn only
// theirs. So a learned budget is probed:
//   - Each window takes one request beyond it at its opening, racing the
//     other clients' requests.
//   - While no 429 shows the window full, rounds a round trip apart double
//     the probes (1, 1, 2, 4, ...). A window others left fills in a few
//     round trips, not one request per round trip.
//   - A 429 then teaches what went through, less a sixteenth (at least
//     one). The probes of every client share that again.
//
// This keeps every process near its fair part. It lets a process take the
// others' parts back within the window they fall silent in. It costs a
// client alone behind its budget one refused request per window in which
// more calls wait than the budget admits. No client can tell others that
// fell silent from no others without sending one request more.
// docs/ratelimit-design.md and docs/ratelimit.md give the rules and their
// failure modes in full.
//
// # What no rule may do
//
// Learning and pacing may delay a send, never advance it. The client
// decides a 429's wait: min(Retry-After, RetryAfterCap) plus additive
// jitter of up to a tenth, never less. It passes that wait as
// Reservation.After. Every rule here places the retry's slot at After or
// later: the learned windows, pacing, probes, the late retry and the
// clamped one. A learned window's reopening lets fresh calls go. A retry
// still waits its own wait, because the window is a guess about the
// gateway's clock.
//
// A header informs only the attempt it came with. A 429 without a usable
// Retry-After teaches nothing and closes nothing. The retry of an answer
// without an instruction (Reservation.Guessed) goes at the client's guess.
// Only a cooldown whose instruction still runs, and a configured budget,
// may hold it.
//
// What a header teaches is bounded. A budget stated by RateLimit fields is
// probed beyond, as a learned one is. It is forgotten when an answer to a
// request admitted under it no longer carries it (Admission.Advertised,
// Observation.Unadvertised). The client drops a stated window longer than
// its RetryAfterCap. It clamps the quota, as it bounds a Retry-After.
package ratelimit

import (
	"context"
	"time"
)

// Budget is a pacing budget: at most Limit requests in any interval of
// Period. Zero means no pacing.
type Budget struct {
	Limit  int
	Period time.Duration
}

// enabled reports whether b paces anything.
func (b Budget) enabled() bool { return b.Limit > 0 && b.Period > 0 }

// Limiter holds the client's rate-limit state per partition. That state is
// the log of admissions, the cooldown, and the budget learned from the
// gateway's answers. The default lives in memory (Memory). An
// implementation backed by a shared store (package redislimit) serves many
// processes behind one egress IP, or sharing one session. They respect one
// budget and share what they learn. Implementations must be safe for
// concurrent use. Durations are relative, so the processes sharing a
// limiter need not agree on the wall clock.
type Limiter interface {
	// Reserve returns how long to wait before sending one request on
	// r.Partition. It may hold a slot for the request (Admission.Ticket
	// non-zero). The caller then sleeps Wait and confirms the slot by
	// reserving again with that Ticket. What happened during the sleep is
	// checked then: a new 429, a lower budget. When the wait would exceed
	// r.MaxWait, Reserve holds nothing and reports OK false. A slot being
	// confirmed that would have to move beyond r.MaxWait is given up.
	Reserve(ctx context.Context, r Reservation) (Admission, error)
	// Release gives back the slot of a ticket that will not be used: the
	// caller gave up while waiting for it.
	Release(ctx context.Context, partition string, ticket int64) error
	// Observe records what an answer on partition said. That is a 429,
	// which closes the partition and teaches the budget, or advertised
	// RateLimit fields.
	Observe(ctx context.Context, partition string, o Observation) (Feedback, error)
}

// Reservation asks a Limiter for a sending slot.
type Reservation struct {
	// Partition is "public", or "session:" followed by a hash of the
	// token. It is never the token itself.
	Partition string
	// Budget is the configured budget (rail0.WithPacing). The zero Budget
	// leaves the partition to the budget the limiter learned, if any. When
	// both exist the stricter of the two applies.
	Budget Budget
	// Margin stretches the period to absorb the spread of delivery delays.
	Margin time.Duration
	// Step is the typical round trip: the median of the recent ones. It
	// paces the rounds of probes beyond a learned budget, after the first
	// round. The pace it sets is at most Margin. Margin is the longest
	// round trip, and grows with a heavy tail the typical probe does not
	// have. Zero means Margin.
	Step time.Duration
	// Retry is true for the retry of a call the gateway refused. Retries
	// go before fresh calls when a partition reopens.
	Retry bool
	// Jitter is a uniform draw from [0, 1). Under the sliding rule, a
	// retry admitted after a cooldown waits an extra Jitter × 10% of the
	// cooldown. That is its own additive jitter, so that waiters do not
	// wake together. Fresh calls wait the whole 10%, so that no draw puts
	// a retry behind them. In fixed windows a retry's place is its rank in
	// the window that reopens, held from its 429 on. Its time is After
	// (the client's wait, jitter included) or later.
	Jitter float64
	// MaxWait is the longest acceptable wait.
	MaxWait time.Duration
	// After is how long from now the request will go at the earliest. A
	// retry's slot is held when its 429 arrives. It is not taken before
	// the client's wait has passed: the Retry-After, capped, plus its
	// jitter. A Limiter places no slot earlier, under any rule. Learning
	// and pacing may delay a send, never advance it.
	After time.Duration
	// Clamped marks the retry of a 429 whose Retry-After the Limiter found
	// short (Feedback.Distrusted), when its call cannot wait out the
	// lengthened cooldown. The client clamped its wait to what is left of
	// the call's allowance or deadline. It never clamps below the server's
	// own instruction. The lengthened cooldown is the Limiter's guess, not
	// the gateway's word. So a Limiter places such a retry at After or
	// later without waiting for the cooldown. It places it no earlier than
	// the end of the latest instruction the gateway gave the partition (a
	// Retry-After, a reset). It places it only where the windows have
	// room. Fresh calls and other retries still wait for the cooldown.
	Clamped bool
	// Guessed marks a retry whose wait is the client's own guess. The
	// answer it retries carried no usable instruction: a 429 without
	// Retry-After, a 5xx, a broken connection. A header informs only the
	// attempt it came with. So a Limiter places the retry at After. Only
	// two things hold it back. One is a cooldown whose instruction still
	// runs (as for Clamped: not past the latest Retry-After or reset). The
	// other is the configured Budget. A budget or windows learned from
	// earlier answers do not hold it.
	Guessed bool
	// FixedWindows says the gateway counts requests in fixed windows of
	// the budget's period, aligned to the Unix epoch, as Rack::Attack does.
	// A Limiter may then admit the whole budget in each window, in bursts
	// at the window's start. Otherwise it keeps to the sliding rule. That
	// rule is always safe, and is what a Limiter that ignores the field
	// does. A rail0.Client always sets it: that is how the RAIL0 gateway
	// throttles.
	FixedWindows bool
	// Ticket confirms a slot held by an earlier Reserve whose Wait has
	// passed; zero asks for a new slot.
	Ticket int64
	// Interactive marks a call whose caller waits for its answer: a
	// request/response handler's, which does not retry 429s. Its slot goes
	// ahead of the slots waiting calls hold (retries, paced calls). It
	// stays within the budget in every window. It counts only what was
	// sent and what other interactive calls hold. The slots it goes ahead
	// of move later when their holders confirm them. So a holder that may
	// be passed must confirm its slot after its sleep. While the partition
	// is closed it holds nothing, as a fresh call.
	Interactive bool
}

// Admission is a Limiter's answer.
type Admission struct {
	// Wait is how long to wait before sending (or, without a Ticket, before
	// asking again).
	Wait time.Duration
	// OK is false when Wait exceeds the reservation's MaxWait: nothing was
	// held and the request must not be sent.
	OK bool
	// Cooldown is true when a cooldown set the wait.
	Cooldown bool
	// Ticket identifies the slot held for the request. Confirm it after
	// Wait, Release it when giving up, and pass it in the Observation of
	// the answer. It is zero when nothing is held. A fresh call waiting
	// for a closed partition to reopen asks again after Wait.
	Ticket int64
	// Budget is the budget in force on the partition, configured or
	// learned. It is zero when none is known. A Guessed retry's is the
	// configured one only.
	Budget Budget
	// Advertised is true when the partition's learned budget is one that
	// RateLimit fields stated (Observation.Advertised). An answer to this
	// request without them makes it forgotten (Observation.Unadvertised).
	Advertised bool
}

// Observation is what one answer said about its partition.
type Observation struct {
	// Ticket is the admission of the request answered (Admission.Ticket).
	// It is zero when unknown.
	Ticket int64
	// Throttled is true for a 429.
	Throttled bool
	// RetryAfter is the server's instruction on a 429, already bounded by
	// the client's RetryAfterCap. It is zero when the answer carried none.
	// A 429 without one teaches nothing and closes nothing. Its request
	// used no budget, and what earlier headers taught says nothing about
	// it.
	RetryAfter time.Duration
	// Capped is true when the instruction was longer than the cap. The
	// gateway's period is then unknown, and the 429 teaches no budget.
	Capped bool
	// MaxCooldown bounds a cooldown the limiter lengthens because the
	// server's Retry-After proved short. It is the client's RetryAfterCap.
	MaxCooldown time.Duration
	// Advertised is the quota the answer's RateLimit fields state. It is
	// zero when absent. It replaces the learned budget, and is probed
	// beyond as a learned one is: one answer must not throttle a partition
	// for good. The client bounds it as it bounds a Retry-After. A
	// rail0.Client drops a window beyond its RetryAfterCap and clamps the
	// quota.
	Advertised Budget
	// Unadvertised says the answer carried no RateLimit fields stating a
	// budget. It is set for a request admitted while the partition's
	// budget was an advertised one (Admission.Advertised). Answers stopped
	// carrying that budget, so it is forgotten. A budget learned from 429s
	// stays.
	Unadvertised bool
	// Closed is how long the server's instruction says the partition stays
	// closed: a 429's Retry-After, uncapped. It is set when that is longer
	// than the cap (Capped). The client retries no sooner than the cap
	// allows. But a call that cannot wait the rest of the instruction
	// would only be refused again. Until it has passed, a Limiter refuses
	// at once every reservation whose MaxWait is shorter than what is left
	// of it. Admission.Wait is then that rest. Reservations that can wait
	// it out are admitted as the cooldown allows. The client bounds Closed
	// (a rail0.Client at ten times its RetryAfterCap), so that an absurd
	// header is not remembered for years. Zero says nothing.
	Closed time.Duration
	// Reset closes the partition for this long: the answer's RateLimit
	// fields said the quota is exhausted until then.
	Reset time.Duration
	// Budget is the configured budget of the request (see Reservation).
	Budget Budget
	// Margin is the request's margin (see Reservation).
	Margin time.Duration
	// FixedWindows is the Reservation's (see there).
	FixedWindows bool
	// Admitted is the budget the request was admitted under
	// (Admission.Budget). It is zero when the request went unpaced.
	Admitted Budget
}

// Feedback is what a Limiter concluded from an Observation.
type Feedback struct {
	// Cooldown is how long the partition stays closed from now. It is zero
	// when the partition is open.
	Cooldown time.Duration
	// Distrusted is true when this 429 came after the previous one's
	// Retry-After had been honoured, in the same streak. The header was
	// short. The cooldown was lengthened to at least twice the previous
	// one, bounded by MaxCooldown.
	Distrusted bool
	// Budget is the learned budget after the observation. It is zero when
	// none is learned.
	Budget Budget
}
