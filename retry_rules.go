package rail0

import (
	"encoding/json"
	"math"
	"net/http"
	"time"

	"github.com/rail0/rail0-go/ratelimit"
)

// This file is the retry rule: whether an answer is sent again, after how
// long, and why. The rules below are read top to bottom (retryRules). Each
// is a small pure function of what the attempt got and what the call has
// left. The send path (send.go) gathers that evidence in its classify
// stage. It hands it here from go-retryablehttp's CheckRetry hook. Nothing
// here does I/O, sleeps or reads a clock. The waits themselves are
// computed in backoff.go.
//
// The invariants hold for every rule. A 429 was never executed, so it may
// be retried on any operation, but never before min(Retry-After,
// RetryAfterCap). A server-given wait gets additive jitter only, and the
// limiter's verdict only lengthens it. A header informs only the attempt it
// came with. A failure that may have run is repeated only on an operation
// safe to repeat.

// maxAttempts is a safety net against a server that answers forever with
// tiny guesses. The allowance and MaxRetries normally stop far earlier. The
// defaults of the retry options are in options.go.
const maxAttempts = 100

const maxDuration = time.Duration(math.MaxInt64)

// RetryReason says why a retry was made or not.
type RetryReason string

// Reasons of the transcript (Attempt.Reason, Call.NotRetried), the log
// lines and the observers. Every reason the SDK gives is declared here.
const (
	// ReasonRateLimited: a 429 retried after the server's Retry-After.
	ReasonRateLimited RetryReason = "rate_limited"
	// ReasonRateLimitedGuess: a 429 without a usable Retry-After, retried
	// after a guessed wait.
	ReasonRateLimitedGuess RetryReason = "rate_limited_no_retry_after"
	// ReasonRetryOn429Off: a 429 returned as it is, because WithRetryOn429
	// is off.
	ReasonRetryOn429Off RetryReason = "retry_on_429_off"
	// ReasonServerError: a 5xx on an operation that is safe to repeat.
	ReasonServerError RetryReason = "server_error"
	// ReasonNotSent: the connection could not be opened, so nothing was sent.
	ReasonNotSent RetryReason = "not_sent"
	// ReasonTransport: the connection failed after the request was written,
	// on an operation that is safe to repeat.
	ReasonTransport RetryReason = "transport_error"
	// ReasonAllowance: the server's wait does not fit in what is left of
	// WithMaxRetryWait.
	ReasonAllowance RetryReason = "allowance_exhausted"
	// ReasonDeadline: the wait would end after the context's deadline.
	ReasonDeadline RetryReason = "deadline"
	// ReasonMaxRetries: WithMaxRetries (or, for 429s, the safety net of 100
	// attempts) is used up.
	ReasonMaxRetries RetryReason = "max_retries"
	// ReasonRetryBudget: the client-wide retry budget is empty, so the
	// failure comes back at once. An outage is under way.
	ReasonRetryBudget RetryReason = "retry_budget_empty"
	// ReasonUnsafe: an operation that may have run and is not safe to
	// repeat is not repeated. Its outcome is unknown.
	ReasonUnsafe RetryReason = "outcome_unknown"
	// ReasonSessionRefused: a 401 after which the token source gave a new
	// token (a client WithSigner signed in again). The call was sent once
	// more at once, with Retry true and Wait zero. The re-send counts
	// against the call's attempts and allowance like any retry.
	ReasonSessionRefused RetryReason = "session_refused"
	// ReasonRetryAfterDistrusted: a 429 came back after the previous 429's
	// Retry-After had been honoured, so the header was short. The wait was
	// lengthened to at least twice the previous one.
	ReasonRetryAfterDistrusted RetryReason = "retry_after_distrusted"
	// ReasonRetryAfterDistrustedClamped: as ReasonRetryAfterDistrusted, but
	// the lengthened wait did not fit the call's allowance or deadline. It
	// was shortened to fit, never below the server's own instruction. So the
	// call makes its last try rather than give up with time left.
	ReasonRetryAfterDistrustedClamped RetryReason = "retry_after_distrusted_clamped"
	// ReasonResponseTooLarge: the answer's body was larger than
	// WithMaxResponseSize (a *ResponseTooLargeError). The same request would
	// get it again, so it is not repeated.
	ReasonResponseTooLarge RetryReason = "response_too_large"
	// ReasonLimiter is Call.NotRetried of a call the limiter stopped. The
	// cooldown or the pacing budget would not admit the request (or its
	// retry) within the allowance or the deadline. No attempt carries it,
	// since the refusal comes before an attempt. The transcript's last
	// LimiterWait is Refused.
	ReasonLimiter RetryReason = "limiter"
	// ReasonKnownClosed is Call.NotRetried of a call with RetryOn429 off
	// that the client answered itself. The gateway said its partition is
	// closed (a 429's Retry-After, an exhausted quota), and that has not run
	// out. The 429 is NotSent, its RetryAfter the time left. The
	// transcript's last LimiterWait is Refused with this reason.
	ReasonKnownClosed RetryReason = "known_closed"
)

// isRefusal reports whether reason is a limit that stopped a retry the
// client would have made (Attempt.Refused).
func isRefusal(reason RetryReason) bool {
	switch reason {
	case ReasonAllowance, ReasonDeadline, ReasonMaxRetries, ReasonLimiter, ReasonRetryBudget:
		return true
	}
	return false
}

// policy is the client's retry configuration. It also holds the label of
// the view its calls are made through (WithLabel). That is the one setting
// of a view that the rules do not read.
type policy struct {
	retryOn429    bool
	retryAfterCap time.Duration
	maxRetryWait  time.Duration
	maxRetries    int
	base          time.Duration
	label         string
	// attemptTimeout bounds each attempt (WithAttemptTimeout). Zero leaves
	// it to the HTTP client's Timeout. The send path applies it. The rules
	// see its cut as the timeout it is.
	attemptTimeout time.Duration
}

// outcome is what one attempt produced, as the rules see it.
type outcome struct {
	op             opClass // what a repetition of the operation would do
	idempotencyKey bool    // the request carries an Idempotency-Key
	status         int     // 0 when no response arrived
	retryAfter     time.Duration
	hasRetryAfter  bool
	failed         bool // transport error, or the body could not be read
	tooLarge       bool // the 2xx body was larger than WithMaxResponseSize
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
	rtt          time.Duration // the expected round trip, left for the answer of a retry clamped to the deadline
}

// decision is the rules' answer for one attempt.
type decision struct {
	retry bool
	wait  time.Duration
	// relevant is false when the outcome is not a retry matter at all: a
	// success or a definitive answer. Nothing is reported.
	relevant bool
	reason   RetryReason
	// unknown marks a write whose outcome is unknown. Do not retry; tell
	// the caller.
	unknown bool
	// rateWait is true when wait counts against the allowance (MaxRetryWait).
	rateWait bool
	// cost is what the retry takes from the client-wide retry budget.
	cost int
	// guess is true when wait is a guess (full jitter). The answer gave no
	// usable instruction, so no header may pace the retry
	// (ratelimit.Reservation.Guessed).
	guess bool
}

// evidence is what the rules read about one attempt.
type evidence struct {
	p policy
	o outcome
	b budget
	u float64 // a uniform draw from [0, 1), for the jitter
	// fb is what the limiter concluded from the answer (limiterVerdict).
	fb ratelimit.Feedback
	// renewed: after a 401, the token source gave the call a new token.
	renewed bool
}

// rule is one step of the retry rule. It reads the evidence and the
// decision the rules above it drafted. It returns the decision, and
// settled when the rules below must not change it.
type rule func(e *evidence, d decision) (_ decision, settled bool)

// retryRules is the retry rule, in the order it is applied. A rule that
// does not apply returns the draft unchanged.
var retryRules = [...]rule{
	sessionRefused,
	contextEnded,
	tooLarge,
	status,
	retryOn429,
	operationClass,
	worthRepeating,
	attemptsLeft,
	instruction,
	guess,
	retryBudget,
	limiterVerdict,
}

// decide applies the retry rules to one attempt. u is a uniform draw from
// [0, 1).
func decide(p policy, o outcome, b budget, u float64) decision {
	return decideOn(&evidence{p: p, o: o, b: b, u: u})
}

// decideOn applies the retry rules, top to bottom, to e.
func decideOn(e *evidence) decision {
	var d decision
	for _, r := range retryRules {
		var settled bool
		if d, settled = r(e, d); settled {
			break
		}
	}
	return d
}

// refuse settles a retry matter without a retry, for reason. A failure
// other than a 429 that may have run leaves the outcome of a write unknown.
func (e *evidence) refuse(reason RetryReason) (decision, bool) {
	return decision{relevant: true, reason: reason, unknown: e.outcomeUnknown()}, true
}

// outcomeUnknown reports whether the failure may have let the operation
// run with an effect a repetition would not reproduce. That is every 5xx
// and every broken connection, on a write that must not run twice. A 429
// never ran.
func (e *evidence) outcomeUnknown() bool {
	return e.o.status != http.StatusTooManyRequests && !e.o.notSent && e.o.op.Matters()
}

// is429 reports whether the answer is a 429.
func (e *evidence) is429() bool { return e.o.status == http.StatusTooManyRequests }

// sessionRefused: a 401 after which the token source gave a new token is
// sent again at once with it. The gateway answers a 401 before it runs
// anything. The send path asks the token source only for an operation safe
// to repeat (callState.resendOn401).
func sessionRefused(e *evidence, d decision) (decision, bool) {
	if e.o.status == http.StatusUnauthorized && e.renewed {
		return decision{relevant: true, retry: true, reason: ReasonSessionRefused}, true
	}
	return d, false
}

// contextEnded: the caller gave up. Nothing is decided or reported.
func contextEnded(e *evidence, d decision) (decision, bool) {
	if e.o.ctxDone {
		return decision{}, true
	}
	return d, false
}

// tooLarge: an answer whose body is over WithMaxResponseSize is not
// repeated, since the same request would get the same answer. On a write
// that must not run twice, it proves nothing either way. The outcome is
// unknown.
func tooLarge(e *evidence, d decision) (decision, bool) {
	if e.o.tooLarge {
		return e.refuse(ReasonResponseTooLarge)
	}
	return d, false
}

// status: a 429, a connection that failed (before or after the request
// left) and a 5xx are retry matters. Any other answer is definitive. A
// status past 599 is no proof that nothing ran either.
func status(e *evidence, _ decision) (decision, bool) {
	o := e.o
	switch {
	case e.is429():
		return decision{relevant: true}, false
	case o.failed && o.notSent:
		return decision{relevant: true, reason: ReasonNotSent}, false
	case o.failed:
		return decision{relevant: true, reason: ReasonTransport}, false
	case o.status >= 500:
		return decision{relevant: true, reason: ReasonServerError}, false
	}
	return decision{}, true // a success or a definitive answer
}

// retryOn429: a 429 is retried only WithRetryOn429. It was refused before
// the application ran, so it is safe on any operation. The allowance
// governs it, not the retry budget.
func retryOn429(e *evidence, d decision) (decision, bool) {
	if e.is429() && !e.p.retryOn429 {
		return e.refuse(ReasonRetryOn429Off)
	}
	return d, false
}

// operationClass: a failure that may have run is repeated only on an
// operation safe to repeat (opClass.repeatable). Otherwise its outcome is
// unknown.
func operationClass(e *evidence, d decision) (decision, bool) {
	if !e.is429() && !e.o.notSent && !e.o.op.Repeatable(e.o.idempotencyKey) {
		return e.refuse(ReasonUnsafe)
	}
	return d, false
}

// worthRepeating: a 5xx other than 500, 502, 503 and 504 (501, 507...) is
// definitive. On a write that may have run, its outcome is unknown.
func worthRepeating(e *evidence, d decision) (decision, bool) {
	if d.reason != ReasonServerError || retryableStatus(e.o.status) {
		return d, false
	}
	if e.outcomeUnknown() {
		return e.refuse(ReasonUnsafe)
	}
	return decision{}, true
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

// attemptsLeft: WithMaxRetries bounds the retries of failures other than
// 429. maxAttempts bounds every call.
func attemptsLeft(e *evidence, d decision) (decision, bool) {
	if e.b.attempts >= maxAttempts || (!e.is429() && e.b.otherRetries >= e.p.maxRetries) {
		return e.refuse(ReasonMaxRetries)
	}
	return d, false
}

// instruction: a 429's or a 503's Retry-After is a server-given wait
// (serverWait), counted against the allowance. The instruction, uncapped,
// may not fit what is left of the allowance or the deadline. Then no wait
// is started, and the limit that refused it is the reason.
func instruction(e *evidence, d decision) (decision, bool) {
	if !e.o.hasRetryAfter || (!e.is429() && e.o.status != http.StatusServiceUnavailable) {
		return d, false
	}
	room, limit := roomFor(e.p, e.b)
	w, ok := serverWait(e.o.retryAfter, e.p.retryAfterCap, room, e.u)
	if !ok {
		return e.refuse(limit)
	}
	d.retry, d.wait, d.rateWait = true, w, true
	if e.is429() {
		d.reason = ReasonRateLimited
	}
	return d, false
}

// guess: without an instruction, the wait is a full-jitter guess
// (guessWait). A 429's counts against the allowance. Another failure's
// must only end before the deadline.
func guess(e *evidence, d decision) (decision, bool) {
	if d.retry {
		return d, false // the server said when
	}
	if e.is429() {
		room, limit := roomFor(e.p, e.b)
		w, ok := guessWait(e.p.base, e.p.retryAfterCap, e.b.guesses429, room, e.u)
		if !ok {
			return e.refuse(limit)
		}
		return decision{relevant: true, retry: true, wait: w, reason: ReasonRateLimitedGuess, rateWait: true, guess: true}, false
	}
	w, ok := guessWait(e.p.base, e.p.retryAfterCap, e.b.otherRetries, e.b.deadline, e.u)
	if !ok {
		return e.refuse(ReasonDeadline)
	}
	d.retry, d.wait, d.guess = true, w, true
	return d, false
}

// retryBudget: a retry of a failure other than a 429 costs retryCost from
// the client-wide retry budget (retry_budget.go). After a timeout it costs
// timeoutRetryCost. An empty budget returns the failure at once.
func retryBudget(e *evidence, d decision) (decision, bool) {
	if e.is429() {
		return d, false
	}
	cost := retryCost
	if e.o.timeout {
		cost = timeoutRetryCost
	}
	if e.b.tokens < cost {
		return e.refuse(ReasonRetryBudget)
	}
	d.cost = cost
	return d, false
}

// roomFor is what the call may still wait for a server-given instruction.
// It is the lesser of what is left of the allowance and of the deadline. It
// also names which of the two is the limit.
func roomFor(p policy, b budget) (time.Duration, RetryReason) {
	left := p.maxRetryWait - b.waited
	if b.deadline < left {
		return b.deadline, ReasonDeadline
	}
	return left, ReasonAllowance
}

// limiterVerdict: what the limiter concluded from the answer changes a
// 429's retry (distrust). It may only lengthen the wait. A retry never
// leaves before the server's instruction. What the limiter learned of the
// gateway's windows is a guess about its clock (issue 27).
func limiterVerdict(e *evidence, d decision) (decision, bool) {
	return distrust(d, e.fb, e.p, e.b, e.u), true
}

// distrust applies the limiter's verdict on a short Retry-After, fb, to a
// 429 retry decision d. The wait becomes at least the lengthened cooldown
// plus additive jitter, reported as ReasonRetryAfterDistrusted. A guessed
// wait is left alone.
//
// That wait may not fit what is left of the allowance or the deadline.
// Then it is clamped to what is left. A round trip for the retry's answer
// is kept back from what is left of the deadline. The wait is never below
// the one decided on the server's own instruction, which the rules above
// found to fit. It is reported as ReasonRetryAfterDistrustedClamped. The
// lengthened cooldown is the limiter's guess. A call whose room the
// instruction fits makes its last try rather than give up with time left.
// Its retry is admitted before the lengthened cooldown ends
// (ratelimit.Reservation.Clamped).
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

// mayHaveRun reports whether an attempt of a write that must not run twice
// may have run. The call then ends as an *OutcomeUnknownError, whatever its
// later attempts get. Such an attempt got a broken connection after the
// request left. Or it got any answer that does not prove it did not run
// (provesNotRun). That includes a 2xx, so that one the SDK cannot read is
// no proof either way.
func mayHaveRun(o outcome, body []byte) bool {
	return !o.notSent && o.op.Matters() && (o.failed || !provesNotRun(o.status, body))
}

// provesNotRun reports whether an answer proves that the request it
// answers was not run. A write that must not run twice (opOnce, or
// opKeyed: see operation.go) may then come back as a refusal, an
// *APIError, rather than as an *OutcomeUnknownError. Two answers prove it:
//
//   - a 429. The gateway's throttle refuses in middleware, before the
//     application runs (the contract guide, section 10).
//   - a 4xx other than 408 whose body is the gateway's own error envelope
//     (section 9). That is a JSON object with the four fields the
//     contract's Error schema requires (code, title, detail, status), as
//     strings, code not empty. The application read the request and
//     refused it.
//
// Nothing else does. A proxy or load balancer in front of the gateway may
// have written it after passing the request on:
//   - a 2xx whose body is not the promised JSON (an HTML page, an empty
//     body);
//   - a 3xx;
//   - a 408, a timeout: whoever writes it may have forwarded the request;
//   - every 5xx, and every status outside 100-599;
//   - a 4xx without the envelope (an authenticating proxy's 401, a
//     firewall's 403).
//
// The gateway's own bodiless answers cannot be told from those: a 400 to a
// raw transaction it cannot decode, a 409 or 422 to a wallet registration.
// So they prove nothing either. Reading the resource tells what happened.
//
// The envelope is what marks the gateway's answer, not its code being one
// the guide lists. The list grows. The gateway's 409 to a reused
// Idempotency-Key even has a code it does not list. A proxy's JSON, where
// there is any, is not shaped like the envelope. A proxy that forges the
// envelope is outside what any client can tell from the wire.
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
