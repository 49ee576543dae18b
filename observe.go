package rail0

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// This file is what a call tells about itself, in one of three ways:
//   - its transcript (Call);
//   - the Observer hook, which package rail0otel implements with
//     OpenTelemetry and package rail0stats with counters;
//   - the log lines.
//
// The send path feeds all three through one function, callState.report
// (send.go). It reports when the call begins, when an attempt leaves, an
// attempt's answer with the decision taken on it, and the call's end.
// Limiter admissions go into the transcript as they happen. The rules stay
// in retry_rules.go. Nothing here decides anything.

// Call is the transcript of one call. It holds every attempt with its
// answer and the retry decision taken on it, every limiter admission, and
// the outcome. A successful call's Response.Call holds it. So does every
// error a call returns: the Call field of *APIError, *OutcomeUnknownError,
// *TransportError and *DecodeError. CallOf finds it. The calling goroutine
// fills it in while the call runs. It does not change once the call has
// returned. It holds no credential: no header, no body.
type Call struct {
	// ID identifies the call within its Client, counting from 1. It is the
	// call_id of its log lines.
	ID uint64
	// Label is the label of the view the call was made through
	// (WithLabel), or empty.
	Label string
	// Operation is the gateway operation: the contract's operationId, such
	// as "getPayment" or "submitPaymentOperation". It is empty for a path
	// the contract does not name.
	Operation string
	// Route is the contract's path template ("/payments/{id}/{operation}"),
	// or the path itself when the contract does not name it.
	Route string
	// Method and Path identify the call. Path is relative to the base URL.
	Method string
	Path   string
	// URL is the URL sent to, with the query. A query value is shown as
	// REDACTED unless its key is safe (WithSafeQueryKeys). The query may
	// hold a credential.
	URL string
	// PaymentID is the payment the call addresses, as the caller gave it:
	// the {id} of a /payments/{id}... route.
	PaymentID string
	// Start is when the call began. Duration is how long it took in all.
	Start    time.Time
	Duration time.Duration
	// Attempts are the requests sent, in order.
	Attempts []Attempt
	// Limiter lists the limiter's admissions, in order. The limiter admits
	// calls with WithPacing, or with WithRetryOn429 and the cooldown.
	Limiter []LimiterWait
	// Outcome is how the call ended.
	Outcome CallOutcome

	first [1]Attempt // backing of Attempts for the common single attempt
	class opClass    // what repeating the call's operation does
	resp  Response   // the call's Response, allocated with it
}

// Attempt is one request of a call and what became of it. It holds the
// answer, the retry decision taken on it and what the answer told the
// client's limiter.
type Attempt struct {
	// N is the 1-based number of the attempt within the call.
	N int
	// Sent is when the request left. Duration is how long its answer took,
	// body included.
	Sent     time.Time
	Duration time.Duration
	// StatusCode is the answer's status, or zero when none came.
	StatusCode int
	// RequestID is the answer's X-Request-Id.
	RequestID string
	// Err is the transport failure, in one line. It is empty when an answer
	// came.
	Err string
	// RequestBytes and ResponseBytes are the sizes of the bodies.
	RequestBytes  int
	ResponseBytes int
	// RetryAfter is the answer's Retry-After, uncapped. It is zero when
	// absent.
	RetryAfter time.Duration
	// RateLimit is the rate-limit state the answer advertised, if any.
	RateLimit *RateLimitInfo
	// Deprecation is what the answer said of the endpoint's retirement
	// (Deprecation and Sunset headers), or nil.
	Deprecation *Deprecation
	// Retry says the SDK decided to send the call again after Wait. The
	// next attempt follows unless the context ends during the wait or the
	// limiter refuses it. A refused LimiterWait then ends the call.
	//
	// Reason says why the answer was retried or not. It is empty when the
	// answer was no retry matter (a success, a 4xx). After a 401 that made
	// the token source sign in again, Reason is ReasonSessionRefused. The
	// call is then sent again at once with the new token (Wait zero).
	//
	// ServerWait says Wait is the server's instruction: a 429's or a 503's
	// Retry-After, capped, plus jitter. When it is false, a retry's Wait is
	// a guess (full-jitter backoff), except after ReasonSessionRefused.
	Retry      bool
	Reason     RetryReason
	Wait       time.Duration
	ServerWait bool
	// Refused is true when a limit stopped a retry the SDK would have made:
	// the allowance, the deadline, the attempt limit, the retry budget.
	// Reason names the limit.
	Refused bool
	// PartitionState is what the client's limiter holds about the call's
	// rate-limit partition after this answer. It is nil unless the answer
	// told the limiter something. A 429 or an exhausted quota is told on
	// every client, since a view made later may wait for the limiter (see
	// Client.With). A learned budget is told only on a client that waits
	// for its limiter (WithRetryOn429 or WithPacing), or one of whose views
	// does.
	PartitionState *PartitionState
}

// LimiterWait is one admission of the client's limiter before an attempt.
type LimiterWait struct {
	// Before is the number of the attempt it admitted (or refused).
	Before int
	// At is when the limiter answered.
	At time.Time
	// Partition is the rate-limit partition: "public", or "session:"
	// followed by a hash of the token (never the token).
	Partition string
	// Wait is how long the call waited for its turn. When Refused, it is
	// how long it would have had to wait.
	Wait time.Duration
	// Cooldown says a cooldown after a 429 set the wait; otherwise pacing
	// did.
	Cooldown bool
	// Refused is true when the attempt was not sent and the call ended.
	// Either the wait did not fit the allowance or the deadline, or the
	// client knew the partition closed. Reason says which.
	Refused bool
	// Reason is why a refused attempt was not sent (Call.NotRetried). It is
	// ReasonLimiter, or ReasonKnownClosed for a call that does not retry
	// 429s on a partition the gateway said is closed. It is empty when
	// admitted.
	Reason RetryReason
}

// CallOutcome says how a call ended.
type CallOutcome string

// Outcomes of a call.
const (
	// OutcomeOK: a 2xx answer, decoded.
	OutcomeOK CallOutcome = "ok"
	// OutcomeRateLimited: a 429 came back (or the limiter refused to send).
	OutcomeRateLimited CallOutcome = "rate_limited"
	// OutcomeAPIError: another non-2xx answer came back (*APIError).
	OutcomeAPIError CallOutcome = "api_error"
	// OutcomeUnknown: a write may or may not have run (*OutcomeUnknownError).
	OutcomeUnknown CallOutcome = "outcome_unknown"
	// OutcomeTransport: no answer (*TransportError).
	OutcomeTransport CallOutcome = "transport_error"
	// OutcomeDecode: a 2xx whose body could not be decoded (*DecodeError).
	OutcomeDecode CallOutcome = "decode_error"
	// OutcomeCanceled: the context ended the call.
	OutcomeCanceled CallOutcome = "canceled"
	// OutcomeError: the call failed before sending, for example because the
	// token source failed.
	OutcomeError CallOutcome = "error"
)

// StatusCode returns the status of the call's last answer, or zero when
// none came.
func (c *Call) StatusCode() int {
	if n := len(c.Attempts); n > 0 {
		return c.Attempts[n-1].StatusCode
	}
	return 0
}

// RequestID returns the request id of the call's last answer.
func (c *Call) RequestID() string {
	if n := len(c.Attempts); n > 0 {
		return c.Attempts[n-1].RequestID
	}
	return ""
}

// NotRetried returns why the call's last answer (or failure) came back
// instead of being sent again. It is the Reason of the refusal Limiter ends
// with (ReasonLimiter, ReasonKnownClosed). Otherwise it is the Reason of
// the last attempt when no retry followed it:
//   - a limit (ReasonAllowance, ReasonDeadline, ReasonMaxRetries,
//     ReasonRetryBudget);
//   - an operation not safe to repeat (ReasonUnsafe);
//   - RetryOn429 off (ReasonRetryOn429Off);
//   - an answer over the size limit (ReasonResponseTooLarge).
//
// It is empty when the last answer was no retry matter (a success, a 4xx),
// and when the context ended the call.
func (c *Call) NotRetried() RetryReason {
	if n := len(c.Limiter); n > 0 && c.Limiter[n-1].Refused {
		if r := c.Limiter[n-1].Reason; r != "" {
			return r
		}
		return ReasonLimiter
	}
	if n := len(c.Attempts); n > 0 && !c.Attempts[n-1].Retry {
		return c.Attempts[n-1].Reason
	}
	return ""
}

// String prints the transcript as a few readable lines. The call comes
// first, then its attempts and limiter admissions in order.
func (c *Call) String() string {
	if c == nil {
		return "<no call>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "call %d", c.ID)
	if c.Label != "" {
		fmt.Fprintf(&b, " [%s]", c.Label)
	}
	fmt.Fprintf(&b, " %s %s", c.Method, c.Path)
	if c.Operation != "" {
		fmt.Fprintf(&b, " (%s)", c.Operation)
	}
	fmt.Fprintf(&b, ": %s after %d attempt(s) in %v", c.Outcome, len(c.Attempts), c.Duration.Round(time.Millisecond))
	li := 0
	for _, a := range c.Attempts {
		for ; li < len(c.Limiter) && c.Limiter[li].Before <= a.N; li++ {
			writeLimiterLine(&b, c.Limiter[li])
		}
		fmt.Fprintf(&b, "\n  #%d %s ", a.N, a.Sent.UTC().Format("15:04:05.000"))
		if a.StatusCode != 0 {
			fmt.Fprintf(&b, "%d", a.StatusCode)
		} else {
			b.WriteString("no answer: ")
			b.WriteString(oneLine(a.Err))
		}
		fmt.Fprintf(&b, " in %v", roundDuration(a.Duration))
		if a.RequestID != "" {
			fmt.Fprintf(&b, " request_id=%s", oneLine(a.RequestID))
		}
		if a.RetryAfter > 0 {
			fmt.Fprintf(&b, " retry_after=%v", a.RetryAfter)
		}
		if rl := a.RateLimit; rl != nil && rl.HasRemaining {
			fmt.Fprintf(&b, " ratelimit_remaining=%d reset=%v", rl.Remaining, rl.Reset)
		}
		if ps := a.PartitionState; ps != nil {
			writePartitionState(&b, ps)
		}
		if d := a.Deprecation; d != nil {
			writeDeprecation(&b, d)
		}
		switch {
		case a.Retry && a.Reason == ReasonSessionRefused:
			fmt.Fprintf(&b, " -> sent again at once with a new token (%s)", a.Reason)
		case a.Retry:
			src := "guessed"
			if a.ServerWait {
				src = "server-given"
			}
			fmt.Fprintf(&b, " -> retry in %v (%s, %s)", a.Wait.Round(time.Millisecond), a.Reason, src)
		case a.Reason != "":
			fmt.Fprintf(&b, " -> return (%s)", a.Reason)
		default:
			b.WriteString(" -> return")
		}
	}
	for ; li < len(c.Limiter); li++ {
		writeLimiterLine(&b, c.Limiter[li])
	}
	return b.String()
}

// roundDuration keeps a transcript readable. It rounds to milliseconds, or
// to microseconds under one millisecond.
func roundDuration(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return d.Round(time.Millisecond)
}

// writePartitionState prints what an answer told the limiter. That is when
// the partition reopens, the budget learned, or a Retry-After found short.
func writePartitionState(b *strings.Builder, ps *PartitionState) {
	if !ps.CooldownUntil.IsZero() {
		fmt.Fprintf(b, " closed_until=%s", ps.CooldownUntil.UTC().Format("15:04:05.000"))
	}
	if ps.Budget.Limit > 0 {
		fmt.Fprintf(b, " budget=%d/%v", ps.Budget.Limit, ps.Budget.Period)
	}
	if ps.Distrusted {
		b.WriteString(" retry_after_distrusted")
	}
}

// writeDeprecation prints what an answer said of its endpoint's
// retirement.
func writeDeprecation(b *strings.Builder, d *Deprecation) {
	if d.Deprecated {
		b.WriteString(" deprecated")
		if !d.Date.IsZero() {
			fmt.Fprintf(b, "=%s", d.Date.Format(time.DateOnly))
		}
	}
	if !d.Sunset.IsZero() {
		fmt.Fprintf(b, " sunset=%s", d.Sunset.Format(time.DateOnly))
	}
}

func writeLimiterLine(b *strings.Builder, w LimiterWait) {
	kind := "pacing"
	if w.Cooldown {
		kind = "cooldown"
	}
	switch {
	case w.Refused && w.Reason == ReasonKnownClosed:
		fmt.Fprintf(b, "\n  not sent #%d: the gateway said the partition is closed for %v more (%s)", w.Before, w.Wait.Round(time.Millisecond), w.Reason)
	case w.Refused:
		fmt.Fprintf(b, "\n  limiter refused #%d: %s wait of %v does not fit", w.Before, kind, w.Wait.Round(time.Millisecond))
	case w.Wait > 0:
		fmt.Fprintf(b, "\n  limiter held #%d for %v (%s)", w.Before, w.Wait.Round(time.Millisecond), kind)
	default:
		fmt.Fprintf(b, "\n  limiter admitted #%d at once", w.Before)
	}
}

// CallOf returns the transcript of the call that returned err (see Call).
// It is nil when err carries none: a *ValidationError refused before any
// call, or an error from elsewhere.
func CallOf(err error) *Call {
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.Call != nil {
		return apiErr.Call
	}
	var unknown *OutcomeUnknownError
	if errors.As(err, &unknown) && unknown.Call != nil {
		return unknown.Call
	}
	var te *TransportError
	if errors.As(err, &te) && te.Call != nil {
		return te.Call
	}
	var de *DecodeError
	if errors.As(err, &de) && de.Call != nil {
		return de.Call
	}
	return nil
}

// Observer watches calls as they run. Package rail0otel implements it with
// OpenTelemetry spans and metrics, package rail0stats with counters.
// WithObserver installs one; give it once per observer.
//
// It is called at the four points of a call's life. It reads everything
// else from the transcript it is handed:
//   - when an attempt leaves, the limiter's admissions before it: the
//     Call.Limiter entries whose Before is the attempt's N;
//   - when the attempt ends, what its answer told the limiter
//     (Attempt.PartitionState);
//   - when the call ends, a limiter refusal or a wait the context cut
//     short: the entries after the last attempt.
//
// Its methods are called synchronously on the calling goroutine and must
// not block. The *Call they get is the live transcript, to be read, not
// kept and not changed. An Observer that serves several clients, or
// several calls at once, must be safe for concurrent use.
type Observer interface {
	// StartCall is called when a call begins, before anything is sent. The
	// context it returns is the call's context from then on, for example
	// with a span in it. It must derive from ctx.
	StartCall(ctx context.Context, call *Call) context.Context
	// SendAttempt is called just before each attempt leaves, after the
	// limiter admitted it. The attempt is already in call.Attempts. It may
	// add headers to the attempt (trace context) through h.
	SendAttempt(ctx context.Context, call *Call, h AttemptHeader)
	// EndAttempt is called when an attempt's answer (or failure) has been
	// read and the retry decision taken on it. That includes a's Retry,
	// Reason, Wait and Refused. After a 401, it is called once the token
	// source was asked.
	EndAttempt(ctx context.Context, call *Call, a *Attempt)
	// EndCall is called when the call returns, with what it returns.
	EndCall(ctx context.Context, call *Call, err error)
}

// PartitionState is what the client's limiter holds about one rate-limit
// partition after an answer (Attempt.PartitionState).
type PartitionState struct {
	// Partition is "public" or "session:" followed by a hash prefix of the
	// token (never the token).
	Partition string
	// CooldownUntil is when the partition reopens, or zero when it is open.
	CooldownUntil time.Time
	// Budget is the budget the limiter learned, or zero when none.
	Budget Budget
	// Distrusted is true when the answer proved the gateway's Retry-After
	// short and the cooldown was lengthened.
	Distrusted bool
}

// isToken reports whether s is an HTTP field name (RFC 9110 token). A name
// net/http would refuse would make the attempt fail before it is sent. On
// a write, the SDK could not tell that from a lost answer.
func isToken(s string) bool { return s != "" && tokenLen(s) == len(s) }

// AttemptHeader lets an Observer add headers to one attempt, such as
// traceparent. It cannot read the request's headers, and it will not set
// the ones the SDK owns (Authorization, Idempotency-Key, Content-Type, ...).
type AttemptHeader struct{ set func(key, value string) } // a func: printed, it shows no header

// Set sets a header of the attempt. It does nothing when the SDK owns the
// header, or when the name or value cannot be sent in a header.
func (a AttemptHeader) Set(key, value string) {
	if a.set == nil || !isToken(key) || checkHeaderValue("header", value) != nil {
		return
	}
	switch http.CanonicalHeaderKey(key) {
	case "Authorization", "Proxy-Authorization", "Cookie", "Idempotency-Key", "Content-Type",
		"Content-Length", "Host", "User-Agent", "Accept", "Transfer-Encoding", "Connection":
		return
	}
	a.set(key, value)
}

// WithObserver installs an Observer of every call. Package rail0otel
// provides one for OpenTelemetry, package rail0stats one that counts. Give
// it once per observer: they add up, and each hears every call in the order
// given. Each StartCall's context is passed to the next.
func WithObserver(o Observer) Option {
	return func(c *config) error {
		if o == nil {
			return errors.New("rail0: WithObserver: nil observer")
		}
		c.observers = append(c.observers, o)
		return nil
	}
}

// observers tells several Observers, in order.
type observers []Observer

func (os observers) StartCall(ctx context.Context, call *Call) context.Context {
	for _, o := range os {
		ctx = o.StartCall(ctx, call)
	}
	return ctx
}

func (os observers) SendAttempt(ctx context.Context, call *Call, h AttemptHeader) {
	for _, o := range os {
		o.SendAttempt(ctx, call, h)
	}
}

func (os observers) EndAttempt(ctx context.Context, call *Call, a *Attempt) {
	for _, o := range os {
		o.EndAttempt(ctx, call, a)
	}
}

func (os observers) EndCall(ctx context.Context, call *Call, err error) {
	for _, o := range os {
		o.EndCall(ctx, call, err)
	}
}

// observerOf is what the client calls: nothing, the one observer, or all.
func observerOf(os []Observer) Observer {
	switch len(os) {
	case 0:
		return nil
	case 1:
		return os[0]
	}
	return observers(append([]Observer(nil), os...))
}

// outcomeOf names how a call ended from the error it returns.
func outcomeOf(err error) CallOutcome {
	if err == nil {
		return OutcomeOK
	}
	var apiErr *APIError
	var te *TransportError
	var de *DecodeError
	switch {
	case errors.Is(err, ErrOutcomeUnknown):
		return OutcomeUnknown
	case isContextErr(err):
		return OutcomeCanceled
	case errors.As(err, &apiErr):
		if apiErr.StatusCode == http.StatusTooManyRequests {
			return OutcomeRateLimited
		}
		return OutcomeAPIError
	case errors.As(err, &de):
		return OutcomeDecode
	case errors.As(err, &te):
		return OutcomeTransport
	}
	return OutcomeError
}

// attachCall sets the transcript on the SDK errors in err's chain that have
// none: those the call made itself. An error may come from a call made on
// its behalf, such as the sign-in it waited for. That error already carries
// that call's transcript and keeps it: it tells what that call did. It is
// shared with every caller that waited for the same sign-in. Writing to it
// would race with them and hand each the others' transcripts.
func attachCall(err error, call *Call) {
	for e := err; e != nil; e = errors.Unwrap(e) {
		var slot **Call
		switch t := e.(type) {
		case *APIError:
			slot = &t.Call
		case *OutcomeUnknownError:
			slot = &t.Call
		case *TransportError:
			slot = &t.Call
		case *DecodeError:
			slot = &t.Call
		}
		if slot != nil && *slot == nil {
			*slot = call
		}
	}
}
