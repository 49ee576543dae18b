package rail0

import (
	"encoding/json"
	"math"
	"net/http"
	"time"

	"github.com/rail0/rail0-go/ratelimit"
)

// This file holds the retry policy as pure functions: given what happened and
// what the call has left, what to do next. send.go wires it into
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
		return decision{relevant: true, retry: true, wait: w, reason: ReasonRateLimitedGuess, rateWait: true}
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
	var ok, rateWait bool
	if o.status == http.StatusServiceUnavailable && o.hasRetryAfter {
		// The server said when to come back: a server wait, like a 429's.
		room, limit := roomFor(p, b)
		if w, ok = serverWait(o.retryAfter, p.retryAfterCap, room, u); !ok {
			return decision{relevant: true, reason: limit, unknown: unknown}
		}
		rateWait = true
	} else if w, ok = guessWait(p.base, p.retryAfterCap, b.otherRetries, b.deadline, u); !ok {
		return decision{relevant: true, reason: ReasonDeadline, unknown: unknown}
	}
	cost := retryCost
	if o.timeout {
		cost = timeoutRetryCost
	}
	if b.tokens < cost {
		return decision{relevant: true, reason: ReasonRetryBudget, unknown: unknown}
	}
	return decision{relevant: true, retry: true, wait: w, reason: reason, rateWait: rateWait, cost: cost}
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

// provesNotRun reports whether an answer proves that the request it
// answers was not run, so that a write that must not run twice (opOnce, or
// opKeyed: see operation.go) may come back as a refusal, an *APIError, rather
// than as an *OutcomeUnknownError. Two answers prove it:
//
//   - a 429: the gateway's throttle refuses in middleware, before the
//     application runs (the contract guide, section 10);
//   - a 4xx other than 408 whose body is the gateway's own error envelope,
//     a JSON object with the four fields the contract's Error schema
//     requires (code, title, detail, status) as strings, code not empty
//     (section 9): the application read the request and refused it.
//
// Nothing else does, because a proxy or load balancer in front of the
// gateway may have written it after passing the request on: a 2xx whose
// body is not the promised JSON (an HTML page, an empty body), a 3xx, a 408
// (a timeout: whoever writes it may have forwarded the request), every 5xx
// and every status outside 100-599, and a 4xx without the envelope (an
// authenticating proxy's 401, a firewall's 403). The gateway's own bodiless
// answers (a 400 to a raw transaction it cannot decode, 409 or 422 to a
// wallet registration) cannot be told from those, so they prove nothing
// either: reading the resource tells what happened.
//
// The envelope is what marks the gateway's answer, not its code being one
// the guide lists: the list grows (and the gateway's 409 to a reused
// Idempotency-Key has a code it does not list), while a proxy's JSON, where
// there is any, is not shaped like it. A proxy that forges the envelope is
// outside what any client can tell from the wire.
func provesNotRun(status int, body []byte) bool {
	switch {
	case status == http.StatusTooManyRequests:
		return true
	case status < 400 || status > 499 || status == http.StatusRequestTimeout:
		return false
	}
	var fields map[string]json.RawMessage // exact keys: "Code" is not "code"
	if json.Unmarshal(body, &fields) != nil {
		return false
	}
	for _, name := range [...]string{"code", "title", "detail", "status"} {
		if raw := fields[name]; len(raw) == 0 || raw[0] != '"' {
			return false // absent, null, or not a string
		}
	}
	var code string
	return json.Unmarshal(fields["code"], &code) == nil && code != ""
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
func distrust(d decision, fb ratelimit.Feedback, p policy, b budget, u float64) decision {
	if fb.RetryWait > 0 && !fb.Distrusted && d.retry && d.rateWait && d.reason == ReasonRateLimited {
		// In fixed windows the limiter holds the retry's place by count:
		// the instruction, exactly, without jitter.
		d.wait = min(d.wait, fb.RetryWait)
		return d
	}
	if !fb.Distrusted || !d.retry || !d.rateWait {
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

// ReasonRetryAfterDistrusted: a 429 came back after the previous 429's
// Retry-After had been honoured, so the header was short; the wait was
// lengthened to at least twice the previous one.
const ReasonRetryAfterDistrusted RetryReason = "retry_after_distrusted"

// ReasonRetryAfterDistrustedClamped: as ReasonRetryAfterDistrusted, but the
// lengthened wait did not fit what is left of the call's allowance or
// deadline, so it was shortened to fit, never below the server's own
// instruction: the lengthened wait is the limiter's guess, while the
// instruction still fits, so the call makes its last try rather than
// giving up with time left.
const ReasonRetryAfterDistrustedClamped RetryReason = "retry_after_distrusted_clamped"

// ReasonLimiter is Call.NotRetried of a call that the limiter stopped: the
// cooldown or the pacing budget would not admit the request (or its retry)
// within the allowance or the deadline. No attempt carries it, since the
// refusal comes before an attempt: the transcript's last LimiterWait is
// Refused.
const ReasonLimiter RetryReason = "limiter"

// ReasonSessionRefused is the Attempt.Reason of a 401 after which the
// client's token source gave a new token (a client created WithSigner
// signed in again) and the call was sent once more, at once, with it: the
// attempt has Retry true and Wait zero, the observer's EndAttempt and the
// info log line say so, and the re-send counts against the call's attempts
// and allowance like any retry.
const ReasonSessionRefused RetryReason = "session_refused"
