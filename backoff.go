package rail0

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rail0/rail0-go/internal/jitter"
)

// This file holds the retry policy as pure functions: given what happened and
// what the call has left, what to do next. retry.go wires it into
// go-retryablehttp's hooks; nothing here does I/O, sleeps or reads a clock.

const (
	// DefaultRetryAfterCap bounds a server-given wait before jitter is added.
	DefaultRetryAfterCap = 60 * time.Second
	// DefaultMaxRetryWait is the per-call allowance of server-given waiting.
	DefaultMaxRetryWait = 3 * time.Minute
	// DefaultMaxRetries bounds retries of failures other than 429.
	DefaultMaxRetries = 2
	// defaultBackoffBase is the first full-jitter window of a guessed wait.
	defaultBackoffBase = 500 * time.Millisecond
	// serverJitter is the additive jitter on a server-given wait, as a
	// fraction of the (capped) wait.
	serverJitter = 0.10
	// maxAttempts is a safety net against a server that answers forever with
	// tiny guesses; the allowance and MaxRetries normally stop far earlier.
	maxAttempts = 100
)

const maxDuration = time.Duration(math.MaxInt64)

// parseRetryAfter parses a Retry-After value: delta-seconds, or an HTTP-date
// in any of the three forms http.ParseTime accepts, relative to now. It
// reports false ("no instruction") for an empty, zero, negative or malformed
// value and for a date that is not in the future. A value too large to
// represent saturates at the largest time.Duration: it is still an
// instruction, and RetryAfterCap bounds the wait.
func parseRetryAfter(value string, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(value)
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n > int64(maxDuration/time.Second) {
			return maxDuration, true // only digits, so the error is overflow
		}
		if n == 0 {
			return 0, false
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := t.Sub(now) // Sub saturates instead of overflowing
	if d <= 0 {
		return 0, false
	}
	return d, true
}

// retryAfterOf reads the Retry-After of an answer. An HTTP-date is read
// against the answer's own Date header when it has a valid one, so that a
// server whose clock is ahead of or behind the local one still gets the wait
// it asked for; local is the fallback "now" (and the only one delta-seconds
// need).
func retryAfterOf(h http.Header, local time.Time) (time.Duration, bool) {
	v := h.Get("Retry-After")
	if v == "" || isDigits(strings.TrimSpace(v)) {
		return parseRetryAfter(v, local) // no date to read against: skip parsing Date
	}
	now := local
	if t, err := http.ParseTime(h.Get("Date")); err == nil {
		now = t
	}
	return parseRetryAfter(v, now)
}

// serverWait is the wait before retrying a server-given instruction:
// min(retryAfter, cap) plus additive jitter drawn from U[0, 10%) of that, so
// that clients told the same number do not wake together and none wakes
// before the instruction. room is what is left of the allowance and of the
// context deadline. When the server's instruction, uncapped, does not fit in
// room, ok is false: the server said the window stays closed longer than the
// call may wait, so the call must not wait at all (the cap only shortens
// waits the room admits). Otherwise the jitter shrinks to fit, and the wait
// never goes below the capped instruction. u is a uniform draw from [0, 1).
func serverWait(retryAfter, cap, room time.Duration, u float64) (wait time.Duration, ok bool) {
	if retryAfter > room {
		return 0, false
	}
	lower := min(retryAfter, cap)
	spread := time.Duration(float64(lower) * serverJitter * jitter.Clamp(u))
	if spread > room-lower {
		spread = room - lower
	}
	return lower + spread, true
}

// guessWait is the wait when the server gave no instruction (a 429 without a
// usable Retry-After, a 5xx, a transport error): full jitter,
// U[0, min(cap, base·2ⁿ)), where n counts the guesses already made in this
// call. The window shrinks to fit room; ok is false only when room is gone.
func guessWait(base, cap time.Duration, n int, room time.Duration, u float64) (wait time.Duration, ok bool) {
	if room <= 0 {
		return 0, false
	}
	window := min(expWindow(base, n), cap, room)
	return time.Duration(float64(window) * jitter.Clamp(u)), true
}

// expWindow is base·2ⁿ, saturating instead of overflowing.
func expWindow(base time.Duration, n int) time.Duration {
	if n < 0 {
		n = 0
	}
	if n >= 62 || base > maxDuration>>uint(n) {
		return maxDuration
	}
	return base << uint(n)
}

// policy is the client's retry configuration.
type policy struct {
	retryOn429    bool
	retryAfterCap time.Duration
	maxRetryWait  time.Duration
	maxRetries    int
	base          time.Duration
}

// outcome is what one attempt produced, as the policy sees it.
type outcome struct {
	op             opClass // what a repetition of the operation would do
	idempotencyKey bool    // the request carries an Idempotency-Key
	status         int     // 0 when no response arrived
	retryAfter     time.Duration
	hasRetryAfter  bool
	failed         bool // transport error, or the body could not be read
	timeout        bool // the failure was a timeout
	notSent        bool // the request provably never left the client
	ctxDone        bool
}

// budget is what the call has used so far, and what the client has left.
type budget struct {
	attempts     int           // attempts made, this one included
	waited       time.Duration // server-given and rate-limit waiting already spent
	otherRetries int           // retries of non-429 failures so far
	guesses429   int           // 429 retries without instruction so far
	deadline     time.Duration // time left before the context deadline; maxDuration when none
	tokens       int           // what is left of the client-wide retry budget
	rtt          time.Duration // the expected round trip: a retry clamped to the deadline leaves one for its answer
}

// RetryReason says why a retry was made or not.
type RetryReason string

// Reasons of the transcript (Attempt.Reason, Call.NotRetried), the log
// lines and the observers.
const (
	// ReasonRateLimited: a 429 retried after the server's Retry-After.
	ReasonRateLimited RetryReason = "rate_limited"
	// ReasonRateLimitedGuess: a 429 without a usable Retry-After, retried after a guessed wait.
	ReasonRateLimitedGuess RetryReason = "rate_limited_no_retry_after"
	// ReasonRetryOn429Off: a 429 returned as it is, because WithRetryOn429 is off.
	ReasonRetryOn429Off RetryReason = "retry_on_429_off"
	// ReasonServerError: a 5xx on an operation that is safe to repeat.
	ReasonServerError RetryReason = "server_error"
	// ReasonNotSent: the connection could not be opened, so nothing was sent.
	ReasonNotSent RetryReason = "not_sent"
	// ReasonTransport: the connection failed after the request was written,
	// on an operation that is safe to repeat.
	ReasonTransport RetryReason = "transport_error"
	// ReasonAllowance: the server's wait does not fit in what is left of WithMaxRetryWait.
	ReasonAllowance RetryReason = "allowance_exhausted"
	// ReasonDeadline: the wait would end after the context's deadline.
	ReasonDeadline RetryReason = "deadline"
	// ReasonMaxRetries: WithMaxRetries (or, for 429s, the safety net of 100
	// attempts) is used up.
	ReasonMaxRetries RetryReason = "max_retries"
	// ReasonRetryBudget: the client-wide retry budget is empty (an outage is
	// under way), so the failure comes back at once.
	ReasonRetryBudget RetryReason = "retry_budget_empty"
	// ReasonUnsafe: an operation that may have run and is not safe to
	// repeat is not repeated; its outcome is unknown.
	ReasonUnsafe RetryReason = "outcome_unknown"
)

// decision is the policy's answer for one attempt.
type decision struct {
	retry bool
	wait  time.Duration
	// relevant is false when the outcome is not a retry matter at all (a
	// success or a definitive answer): nothing is reported.
	relevant bool
	reason   RetryReason
	// unknown marks a write whose outcome is unknown (do not retry, tell the caller).
	unknown bool
	// rateWait is true when wait counts against the allowance (MaxRetryWait).
	rateWait bool
	// cost is what the retry takes from the client-wide retry budget.
	cost int
	// guess is true when wait is a guess (full jitter): the answer gave
	// no usable instruction, so no header may pace the retry
	// (ratelimit.Reservation.Guessed).
	guess bool
}

// decide is the whole retry policy. u is a uniform draw from [0, 1).
func decide(p policy, o outcome, b budget, u float64) decision {
	if o.ctxDone {
		return decision{}
	}
	if o.status == http.StatusTooManyRequests {
		// A 429 was refused before the application ran: safe on any
		// operation, and governed by the allowance, not the retry budget.
		if !p.retryOn429 {
			return decision{relevant: true, reason: ReasonRetryOn429Off}
		}
		if b.attempts >= maxAttempts {
			return decision{relevant: true, reason: ReasonMaxRetries}
		}
		room, limit := roomFor(p, b)
		if o.hasRetryAfter {
			w, ok := serverWait(o.retryAfter, p.retryAfterCap, room, u)
			if !ok {
				return decision{relevant: true, reason: limit}
			}
			return decision{relevant: true, retry: true, wait: w, reason: ReasonRateLimited, rateWait: true}
		}
		w, ok := guessWait(p.base, p.retryAfterCap, b.guesses429, room, u)
		if !ok {
			return decision{relevant: true, reason: limit}
		}
		return decision{relevant: true, retry: true, wait: w, reason: ReasonRateLimitedGuess, rateWait: true, guess: true}
	}

	var reason RetryReason
	switch {
	case o.failed && o.notSent:
		reason = ReasonNotSent
	case o.failed:
		reason = ReasonTransport
	case o.status >= 500: // and past 599: a nonsense status is no proof that nothing ran
		reason = ReasonServerError
	default:
		return decision{} // success or a definitive answer
	}
	// Every 5xx and every broken connection may have let the operation run.
	unknown := !o.notSent && o.op.matters()
	if !o.notSent && !o.op.repeatable(o.idempotencyKey) {
		return decision{relevant: true, reason: ReasonUnsafe, unknown: true}
	}
	if reason == ReasonServerError && !retryableStatus(o.status) {
		if unknown {
			return decision{relevant: true, reason: ReasonUnsafe, unknown: true}
		}
		return decision{} // a 5xx not worth repeating (501, 507...): definitive
	}
	if b.otherRetries >= p.maxRetries || b.attempts >= maxAttempts {
		return decision{relevant: true, reason: ReasonMaxRetries, unknown: unknown}
	}
	var w time.Duration
	var ok, rateWait, guess bool
	if o.status == http.StatusServiceUnavailable && o.hasRetryAfter {
		// The server said when to come back: a server wait, like a 429's.
		room, limit := roomFor(p, b)
		if w, ok = serverWait(o.retryAfter, p.retryAfterCap, room, u); !ok {
			return decision{relevant: true, reason: limit, unknown: unknown}
		}
		rateWait = true
	} else if w, ok = guessWait(p.base, p.retryAfterCap, b.otherRetries, b.deadline, u); !ok {
		return decision{relevant: true, reason: ReasonDeadline, unknown: unknown}
	} else {
		guess = true
	}
	cost := retryCost
	if o.timeout {
		cost = timeoutRetryCost
	}
	if b.tokens < cost {
		return decision{relevant: true, reason: ReasonRetryBudget, unknown: unknown}
	}
	return decision{relevant: true, retry: true, wait: w, reason: reason, rateWait: rateWait, cost: cost, guess: guess}
}

// roomFor is what the call may still wait for a server-given instruction:
// what is left of the allowance and of the deadline, and which of the two
// is the limit.
func roomFor(p policy, b budget) (time.Duration, RetryReason) {
	left := p.maxRetryWait - b.waited
	if b.deadline < left {
		return b.deadline, ReasonDeadline
	}
	return left, ReasonAllowance
}

// retryableStatus lists the 5xx answers worth repeating a safe request for.
func retryableStatus(status int) bool {
	switch status {
	case http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// opClass says what repeating an operation would do. It is decided per
// operation of the gateway contract, not per HTTP method: PUT
// /webhooks/{id}/rotate_secret is a PUT that must not run twice, and a
// prepare is a POST that the gateway deduplicates.
type opClass int

const (
	// opOnce: running it twice has two effects, or a second run is answered
	// as a failure although the first one worked. Never repeated after it
	// may have run; its outcome is then unknown.
	opOnce opClass = iota
	// opRead: no effect at all.
	opRead
	// opRepeatable: a repetition has the effect of one.
	opRepeatable
	// opKeyed: deduplicated by the gateway when it carries an
	// Idempotency-Key (the same on every attempt); opOnce without one.
	opKeyed
)

// repeatable reports whether an attempt that may have run can be sent again.
func (c opClass) repeatable(hasIdempotencyKey bool) bool {
	return c == opRead || c == opRepeatable || (c == opKeyed && hasIdempotencyKey)
}

// matters reports whether the caller must learn that an attempt may have
// run: the operation has an effect that a repetition would not reproduce.
func (c opClass) matters() bool { return c == opOnce || c == opKeyed }

// The client-wide retry budget (a token bucket, after the retry quota of
// the AWS SDKs) keeps an outage from multiplying the load: each retry of a
// failure other than a 429 takes retryCost tokens (timeoutRetryCost after
// a timeout, which holds a connection the longest), and each answer that is
// not a failure (a 2xx, or a 4xx other than 429) gives successCredit back,
// up to retryBudgetSize. An empty budget
// makes failures come back at once. At 100 tokens a burst of failures gets
// 20 retries client-wide, and in the long run retries keep going as long as
// fewer than about one answer in six fails; 429s are not counted, since
// MaxRetryWait and the cooldown govern them.
const (
	retryBudgetSize  = 100
	retryCost        = 5
	timeoutRetryCost = 10
	successCredit    = 1
)

// retryQuota is the client-wide retry budget; safe for concurrent use.
type retryQuota struct {
	mu     sync.Mutex
	tokens int
}

func newRetryQuota() *retryQuota { return &retryQuota{tokens: retryBudgetSize} }

// spend runs a decision against the tokens left and takes what it costs, in
// one step so that concurrent calls cannot spend the same tokens.
func (q *retryQuota) spend(decide func(tokens int) decision) decision {
	q.mu.Lock()
	defer q.mu.Unlock()
	d := decide(q.tokens)
	q.tokens -= min(d.cost, q.tokens)
	return d
}

// credit gives n tokens back, up to the budget's size.
func (q *retryQuota) credit(n int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.tokens = min(q.tokens+n, retryBudgetSize)
}

// left returns the tokens left.
func (q *retryQuota) left() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.tokens
}
