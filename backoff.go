package rail0

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// This file holds the retry policy as pure functions: given what happened and
// what the call has left, what to do next. retry.go wires it into
// go-retryablehttp's hooks; nothing here does I/O, sleeps or reads a clock.

const (
	// DefaultRetryAfterCap bounds a server-given wait before jitter is added.
	DefaultRetryAfterCap = 60 * time.Second
	// DefaultMaxRetryWait is the per-call allowance of rate-limit waiting.
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

// ParseRetryAfter parses a Retry-After value: delta-seconds, or an HTTP-date
// in any of the three forms http.ParseTime accepts, relative to now. It
// reports false ("no instruction") for an empty, zero, negative or malformed
// value and for a date that is not in the future. A value too large to
// represent saturates at the largest time.Duration: it is still an
// instruction, and RetryAfterCap bounds the wait.
func ParseRetryAfter(value string, now time.Time) (time.Duration, bool) {
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

// serverWait is the wait before retrying a server-given instruction:
// min(retryAfter, cap) plus additive jitter drawn from U[0, 10%) of that, so
// that clients told the same number do not wake together and none wakes
// before the instruction. room is what is left of the allowance and of the
// context deadline. When the un-jittered wait does not fit in room, ok is
// false: the caller must not start a wait it cannot finish. Otherwise the
// jitter shrinks to fit, and the wait never goes below the instruction.
// u is a uniform draw from [0, 1).
func serverWait(retryAfter, cap, room time.Duration, u float64) (wait time.Duration, ok bool) {
	lower := min(retryAfter, cap)
	if lower > room {
		return 0, false
	}
	jitter := time.Duration(float64(lower) * serverJitter * clampUnit(u))
	if jitter > room-lower {
		jitter = room - lower
	}
	return lower + jitter, true
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
	return time.Duration(float64(window) * clampUnit(u)), true
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

func clampUnit(u float64) float64 {
	switch {
	case u < 0 || math.IsNaN(u):
		return 0
	case u >= 1:
		return math.Nextafter(1, 0)
	}
	return u
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
	method         string
	idempotencyKey bool // the request carries an Idempotency-Key
	status         int  // 0 when no response arrived
	retryAfter     time.Duration
	hasRetryAfter  bool
	failed         bool // transport error, or the body could not be read
	notSent        bool // the request provably never left the client
	ctxDone        bool
}

// budget is what the call has used so far.
type budget struct {
	attempts     int           // attempts made, this one included
	waited       time.Duration // rate-limit waiting already spent
	otherRetries int           // retries of non-429 failures so far
	guesses429   int           // 429 retries without instruction so far
	deadline     time.Duration // time left before the context deadline; maxDuration when none
}

// RetryReason says why a retry was made or not.
type RetryReason string

// Reasons reported in RetryEvent.
const (
	// ReasonRateLimited: a 429 retried after the server's Retry-After.
	ReasonRateLimited RetryReason = "rate_limited"
	// ReasonRateLimitedGuess: a 429 without a usable Retry-After, retried after a guessed wait.
	ReasonRateLimitedGuess RetryReason = "rate_limited_no_retry_after"
	// ReasonServerError: a 5xx on a request that is safe to repeat.
	ReasonServerError RetryReason = "server_error"
	// ReasonNotSent: the connection could not be opened, so nothing was sent.
	ReasonNotSent RetryReason = "not_sent"
	// ReasonTransport: the connection failed after the request was written,
	// on a request that is safe to repeat.
	ReasonTransport RetryReason = "transport_error"
	// ReasonAllowance: the 429's wait does not fit in what is left of MaxRetryWait.
	ReasonAllowance RetryReason = "allowance_exhausted"
	// ReasonDeadline: the 429's wait would end after the context's deadline.
	ReasonDeadline RetryReason = "deadline"
	// ReasonMaxRetries: MaxRetries is used up.
	ReasonMaxRetries RetryReason = "max_retries"
	// ReasonUnsafe: a write that may have executed is not repeated blindly.
	ReasonUnsafe RetryReason = "outcome_unknown"
)

// decision is the policy's answer for one attempt.
type decision struct {
	retry bool
	wait  time.Duration
	// relevant is false when the outcome is not a retry matter at all (a
	// success, a 4xx, or a 429 with RetryOn429 off): nothing is reported.
	relevant bool
	reason   RetryReason
	// refused429 marks a 429 that would have been retried but whose wait
	// does not fit the allowance or the deadline.
	refused429 bool
	// unknown marks a write whose outcome is unknown (do not retry, tell the caller).
	unknown bool
	// rateWait is true when wait counts against the rate-limit allowance.
	rateWait bool
}

// decide is the whole retry policy. u is a uniform draw from [0, 1).
func decide(p policy, o outcome, b budget, u float64) decision {
	if o.ctxDone {
		return decision{}
	}
	if o.status == http.StatusTooManyRequests {
		// A 429 was refused before the application ran: safe on any method.
		if !p.retryOn429 {
			return decision{}
		}
		room := min(p.maxRetryWait-b.waited, b.deadline)
		limitReason := ReasonAllowance
		if b.deadline < p.maxRetryWait-b.waited {
			limitReason = ReasonDeadline
		}
		if b.attempts >= maxAttempts {
			return decision{relevant: true, reason: ReasonMaxRetries, refused429: true}
		}
		if o.hasRetryAfter {
			w, ok := serverWait(o.retryAfter, p.retryAfterCap, room, u)
			if !ok {
				return decision{relevant: true, reason: limitReason, refused429: true}
			}
			return decision{relevant: true, retry: true, wait: w, reason: ReasonRateLimited, rateWait: true}
		}
		w, ok := guessWait(p.base, p.retryAfterCap, b.guesses429, room, u)
		if !ok {
			return decision{relevant: true, reason: limitReason, refused429: true}
		}
		return decision{relevant: true, retry: true, wait: w, reason: ReasonRateLimitedGuess, rateWait: true}
	}

	var reason RetryReason
	switch {
	case o.failed && o.notSent:
		reason = ReasonNotSent
	case o.failed:
		reason = ReasonTransport
	case retryableStatus(o.status):
		reason = ReasonServerError
	default:
		return decision{} // success or a definitive answer
	}
	safe := o.notSent || safeToRepeat(o.method, o.idempotencyKey)
	if !safe {
		return decision{relevant: true, reason: ReasonUnsafe, unknown: true}
	}
	unknown := !o.notSent && !idempotentMethod(o.method)
	if b.otherRetries >= p.maxRetries || b.attempts >= maxAttempts {
		return decision{relevant: true, reason: ReasonMaxRetries, unknown: unknown}
	}
	w, ok := guessWait(p.base, p.retryAfterCap, b.otherRetries, b.deadline, u)
	if !ok {
		return decision{relevant: true, reason: ReasonDeadline, unknown: unknown}
	}
	return decision{relevant: true, retry: true, wait: w, reason: reason}
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

// idempotentMethod reports the methods whose repetition has the effect of one.
func idempotentMethod(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodOptions:
		return true
	}
	return false
}

// safeToRepeat reports whether a request that may have executed can be sent
// again: idempotent methods, and writes that carry an Idempotency-Key (the
// same on every attempt), which the gateway deduplicates.
func safeToRepeat(method string, hasIdempotencyKey bool) bool {
	return idempotentMethod(method) || hasIdempotencyKey
}
