package rail0

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// This file is the one send-and-check path: send builds the request, the
// retryablehttp hooks (checkRetry, backoff, passthroughErrorHandler) apply
// the policy of backoff.go, and finish turns what came back into a result or
// a typed error.

const (
	// maxErrorBody bounds how much of an error body is read: a proxy's HTML
	// page or a hostile server must not cost memory.
	maxErrorBody = 1 << 20
	// maxSuccessBody bounds a 2xx body; the largest legitimate one (a page of
	// 100 payments) is far smaller.
	maxSuccessBody = 32 << 20
)

// callState is one call: its request, its transcript, what its attempts
// used and did, and the go-retryablehttp client it sends with. That client
// is the call's own (a struct literal, built once per call), and its hooks
// (checkRetry, backoff, prepareRetry) are methods of this value: each call's
// hooks see only its own attempts, so one response's header never paces
// another call, and nothing about the call rides in its context. The hooks
// run on the calling goroutine (go-retryablehttp calls them from Do), the
// only one that touches the state.
//
// A call may wait in three places, each for its own reason:
//
//   - go-retryablehttp's timer, between an answer and its retry: the wait
//     the policy decided in checkRetry (the server's Retry-After, or a
//     guess), which backoff hands over. That includes the retry after a
//     transport error: backoff reads this value, not the response, which
//     go-retryablehttp gives it as nil then.
//   - the limiter's admission (admit, before the first attempt in send and
//     before each retry in prepareRetry): the call's turn on its rate-limit
//     partition, which other calls' answers (a 429, a lower budget) can move
//     while this one waits, so it is taken just before the request leaves.
//   - the token source (bearer, before the first attempt in send): a
//     client's own sign-in, which another call may be leading
//     (tokenSource.await), or the caller's WithTokenSource function.
//
// checkRetry itself never waits.
type callState struct {
	c              *Client
	rc             retryablehttp.Client
	call           *Call // the transcript
	method         string
	path           string
	idempotencyKey string
	op             opClass // what repeating the operation would do
	requestBody    []byte  // the JSON body, encoded once and replayed on every attempt
	// resendOn401 is true while a 401 would make do ask the token source
	// for a new token and send the call again: the report of such an
	// attempt waits for that decision (untold).
	resendOn401 bool
	untold      bool
	onRateWait  func(rateWait) // the request's; nil for most calls

	spent     // what the call used and did, across its sends
	sendState // what the current send has seen
}

// sendState is what one send of a call has seen. The send after a 401 (see
// do) starts from a fresh one, with the new token.
type sendState struct {
	partition string  // derived from the token when first needed
	anonymous bool    // no token: the public partition
	token     string  // the bearer token; never logged or stored elsewhere
	gated     bool    // waits for the limiter before each attempt
	jitter    float64 // the draw of the last 429 decision, reused for its admission
	clamped   bool    // the retry's distrusted wait was clamped (ratelimit.Reservation.Clamped)
	guessed   bool    // the retry's wait is a guess (ratelimit.Reservation.Guessed)
	turn      turn    // the limiter's admission of the attempt in flight
	held      int64   // the slot held for the retry of a 429 since the answer came; zero when none

	next time.Duration // the wait checkRetry decided, taken by backoff

	last429   *APIError // kept so a call cut short while waiting or retrying still reports it
	unknown   bool
	status    int
	rateLimit *RateLimitInfo
	header    http.Header
	body      []byte
	bodyErr   error
}

// partitionKey names the call's rate-limit partition, hashing the token only
// when a limiter needs it (most calls never do).
func (st *callState) partitionKey() string {
	if st.partition == "" {
		st.partition = partitionFor(st.token)
	}
	return st.partition
}

// spent is what a call has used of its limits, and what its attempts may
// have done, across sends: signing in again after a 401 gives a call
// neither a second allowance (attempts, MaxRetryWait, the guesses and other
// retries the policy counts) nor a clean record: a write an earlier attempt
// may have run still ends as an *OutcomeUnknownError.
type spent struct {
	attempts      int
	waited        time.Duration // server-given and rate-limit waiting spent
	otherRetries  int
	guesses429    int
	maybeExecuted bool // a write attempt may have run on the server
	sent          bool // some attempt may have reached the server
}

// newCall starts the state of the call r, whose transcript is call.
func (c *Client) newCall(r *request, call *Call) *callState {
	st := &callState{c: c, call: call, method: r.method, path: call.Path, idempotencyKey: r.idempotencyKey, op: call.class,
		onRateWait: r.onRateWait}
	// The call's own client, built as a literal (its defaults would drop
	// the final response on exhaustion and use Retry-After uncapped).
	// checkRetry enforces every limit, so RetryMax is only a ceiling never
	// reached.
	st.rc = retryablehttp.Client{
		HTTPClient:   c.hc,
		RetryMax:     maxAttempts,
		CheckRetry:   st.checkRetry,
		Backoff:      st.backoff,
		ErrorHandler: passthroughErrorHandler,
		PrepareRetry: st.prepareRetry,
	}
	return st
}

// send sends r through the retry policy and decodes a 2xx JSON body into
// out (out may be nil). Every non-2xx becomes an *APIError, or an
// *OutcomeUnknownError for a write that may have run. token is the bearer
// token to send; empty, the call's token source is asked (an anonymous
// request sends none).
func (st *callState) send(ctx context.Context, r *request, out any, token string) (*Response, error) {
	c := st.c
	st.sendState = sendState{}
	if err := ctx.Err(); err != nil {
		return nil, &TransportError{Method: st.method, Path: st.path, Err: err}
	}
	if r.body != nil && st.requestBody == nil {
		b, encoded := r.body.(json.RawMessage)
		if !encoded {
			var err error
			if b, err = json.Marshal(r.body); err != nil {
				return nil, fmt.Errorf("rail0: %s %s: encoding the request body: %w", st.method, st.path, err)
			}
		}
		st.requestBody = b
	}
	if !r.anonymous && token == "" {
		t, err := c.bearer(ctx, "", true)
		if err != nil {
			return nil, err
		}
		token = t
	}
	st.token, st.anonymous = token, token == ""
	st.gated = c.pacingOn || (c.policy.retryOn429 && c.cooldown)
	if st.gated {
		st.jitter = c.rand()
		if err := c.admit(ctx, st); err != nil {
			var held *APIError
			if isContextErr(err) && !errors.As(err, &held) {
				return nil, &TransportError{Method: st.method, Path: st.path, Err: err}
			}
			return nil, err
		}
	}
	var body any
	if st.requestBody != nil {
		body = st.requestBody
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, r.method, st.call.URL, body)
	if err != nil {
		return nil, fmt.Errorf("rail0: %s %s: %w", st.method, st.path, err)
	}
	h := req.Header
	h.Set("Accept", "application/json")
	h.Set("User-Agent", c.userAgent)
	if body != nil {
		h.Set("Content-Type", "application/json")
	}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	if r.idempotencyKey != "" {
		h.Set("Idempotency-Key", r.idempotencyKey)
	}
	c.beforeAttempt(req.Request, st)
	resp, err := st.rc.Do(req)
	if resp != nil && resp.Body != nil {
		resp.Body.Close() // checkRetry has read it already
	}
	return c.finish(st, err, out)
}

// finish turns the final state of a call into its result.
func (c *Client) finish(st *callState, err error, out any) (*Response, error) {
	if st.held != 0 {
		// The call ended (its context, say) before the retry it held a
		// slot for.
		c.release(context.Background(), st, st.held)
		st.held = 0
	}
	var meta *Response
	if st.status != 0 {
		// Allocated with the transcript: one allocation for both.
		meta = &st.call.resp
		*meta = Response{StatusCode: st.status, Header: st.header, RequestID: requestID(st.header), Attempts: st.attempts, RateLimit: st.rateLimit}
	}
	if err != nil {
		var failure error = &TransportError{Method: st.method, Path: st.path, Sent: st.sent, Err: err}
		var local *APIError
		if errors.As(err, &local) && local.NotSent {
			// The limiter would not admit the retry in time, or the call
			// ended while it waited. The server's own last answer, not one
			// built here, is what the caller gets, with the context's
			// error when that ended the wait.
			failure = local
			if last := c.lastAnswer(st); last != nil {
				failure = last
				if local.cause != nil {
					failure = last.withCause(local.cause)
				}
			}
		} else if isContextErr(err) && st.last429 != nil {
			// Cut short while waiting out a 429, or on the retry that
			// followed the wait: report that 429 too.
			failure = st.last429.withCause(err)
		}
		if st.maybeExecuted {
			return meta, &OutcomeUnknownError{Method: st.method, Path: st.path, IdempotencyKey: st.idempotencyKey, Err: failure}
		}
		return meta, failure
	}
	if st.status < 200 || st.status > 299 {
		apiErr := c.answerError(st)
		if st.unknown || st.maybeExecuted {
			// An earlier attempt may have run (a 5xx, a broken connection)
			// even if the last answer is a 429 or a 4xx: the caller must
			// not send the write again without its Idempotency-Key.
			return meta, &OutcomeUnknownError{Method: st.method, Path: st.path, IdempotencyKey: st.idempotencyKey, Err: apiErr}
		}
		return meta, apiErr
	}
	if out != nil && st.status != http.StatusNoContent {
		if err := json.Unmarshal(st.body, out); err != nil {
			return meta, st.undecodable(meta, err)
		}
	}
	return meta, nil
}

// undecodable is the failure of a 2xx whose body is not what the operation
// promises, for the reason cause: not its JSON, or (request.identify) JSON
// that is not its resource. It is a *DecodeError, inside an
// *OutcomeUnknownError on a write that may have run: such an answer may be
// a proxy's, written after the write ran or not, and a keyed write can be
// repeated with its key.
func (st *callState) undecodable(meta *Response, cause error) error {
	var failure error = &DecodeError{
		Method: st.method, Path: st.path, StatusCode: st.status,
		RequestID: meta.RequestID, ContentType: st.header.Get("Content-Type"),
		Body: truncate(st.body, 1024), Err: cause,
	}
	if st.maybeExecuted {
		failure = &OutcomeUnknownError{Method: st.method, Path: st.path, IdempotencyKey: st.idempotencyKey, Err: failure}
	}
	return failure
}

// checkRetry is the CheckRetry hook: it reads the answer, asks the policy
// and records the decision. It is the only place that decides, and it does
// not wait: the wait it decides is backoff's.
func (st *callState) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	c := st.c
	st.attempts++
	now := c.now()
	o := outcome{op: st.op, idempotencyKey: st.idempotencyKey != "", ctxDone: ctx.Err() != nil}
	var failure error
	if err != nil {
		o.failed = true
		o.notSent = isNotSent(err)
		o.timeout = isTimeout(err)
		failure = err
		// No answer this time: an earlier attempt's must not be reported.
		st.status, st.header, st.body, st.rateLimit = 0, nil, nil, nil
	} else {
		st.status, st.header = resp.StatusCode, resp.Header
		o.status = resp.StatusCode
		if n := len(st.call.Attempts); n > 0 {
			c.clock.sample(resp.Header, st.call.Attempts[n-1].Sent, now)
		}
		gatewayNow := now.Add(c.clock.offset()) // what the answer's times are relative to
		success := resp.StatusCode >= 200 && resp.StatusCode <= 299
		st.body, st.bodyErr = readBody(resp, success)
		if c.wireLogging(ctx) {
			c.logWireResponse(ctx, st, resp.StatusCode, resp.Header, st.body)
		}
		if success && st.bodyErr != nil {
			// A body that breaks off is a broken connection after the
			// request ran: handled like one.
			o.failed = true
			failure = st.bodyErr
		}
		if ra, ok := retryAfterOf(resp.Header, gatewayNow); ok {
			o.retryAfter, o.hasRetryAfter = ra, true
		}
		st.rateLimit = nil
		if rl, ok := parseRateLimit(resp.Header, gatewayNow); ok {
			st.rateLimit = &rl
		}
		c.observe(ctx, st, o)
		if !o.failed && o.status < 500 && o.status != http.StatusTooManyRequests {
			// The gateway answered and is healthy (a 4xx is its answer
			// too): the retry budget refills.
			c.quota.credit(successCredit)
		}
	}
	if !o.notSent {
		st.sent = true
		if st.op.matters() && (o.failed || !provesNotRun(o.status, st.body)) {
			// A write that must not run twice may have run: a broken
			// connection, or any answer that does not prove it did not
			// (a 2xx included, so that one the SDK cannot read is no
			// proof either way).
			st.maybeExecuted = true
		}
	}

	u := c.rand()
	st.jitter = u
	b := budget{
		attempts:     st.attempts,
		waited:       st.waited,
		otherRetries: st.otherRetries,
		guesses429:   st.guesses429,
		deadline:     timeLeft(ctx, now),
	}
	if st.turn.fb.Distrusted {
		b.rtt = c.delays.margin(0)
	}
	d := c.quota.spend(func(tokens int) decision {
		b.tokens = tokens
		return decide(c.policy, o, b, u)
	})
	d = distrust(d, st.turn.fb, c.policy, b, u)
	st.clamped = d.reason == ReasonRetryAfterDistrustedClamped
	st.guessed = d.guess
	switch {
	case o.status == http.StatusTooManyRequests:
		st.last429 = newAPIError(st, o.status, st.header, st.body, now.Add(c.clock.offset()))
	case o.failed && o.ctxDone && st.last429 != nil:
		// The retry after a 429 died on the context (say, a deadline that
		// fitted the wait but not the retry): keep the 429 to report it.
	default:
		st.last429 = nil
	}
	a := c.recordAttempt(st, o, d, failure, now)
	if a != nil {
		if o.status == http.StatusUnauthorized && st.resendOn401 {
			st.untold = true // do tells it once the token source has answered
		} else {
			c.tellAttempt(ctx, st.call, a)
		}
	}
	if !d.relevant {
		return false, failure
	}
	if !d.retry {
		st.unknown = d.unknown
		return false, failure
	}
	if d.rateWait {
		st.waited += d.wait
	}
	if o.status == http.StatusTooManyRequests {
		if !o.hasRetryAfter {
			st.guesses429++
		}
	} else {
		st.otherRetries++
	}
	st.next = d.wait
	if o.status == http.StatusTooManyRequests && st.onRateWait != nil {
		st.onRateWait(rateWait{method: st.method, path: st.path, until: now.Add(d.wait)})
	}
	if st.gated && o.status == http.StatusTooManyRequests {
		c.holdRetrySlot(ctx, st, d.wait)
	}
	return true, nil
}

// backoff is the Backoff hook: it returns the wait checkRetry decided for
// the call's last answer, and consumes it. It reads the call's state, not
// the response, which go-retryablehttp passes as nil after a transport
// error.
func (st *callState) backoff(_, _ time.Duration, _ int, _ *http.Response) time.Duration {
	w := st.next
	st.next = 0
	return w
}

// prepareRetry is the PrepareRetry hook, run when the backoff is over and
// just before the retry leaves: a gated call takes its turn with the
// limiter again (after a 429 the cooldown that answer set is normally over
// by now, since the backoff waited it out with the same jitter draw), then
// the retry opens its entry in the transcript.
func (st *callState) prepareRetry(req *http.Request) error {
	if st.gated {
		if err := st.c.admit(req.Context(), st); err != nil {
			return err
		}
	}
	st.c.beforeAttempt(req, st)
	return nil
}

// admit waits for the call's turn on its rate-limit partition (see
// takeTurn). The wait counts against the call's allowance; when it does not
// fit the allowance or the deadline, the call gets a 429 at once without
// sending, and when ctx ends during it, the same 429 matching ctx's error
// too, with the wait that was left. A failing limiter (say, an unreachable
// shared store) does not stop payments: the call goes ahead, and the
// failure is logged.
func (c *Client) admit(ctx context.Context, st *callState) error {
	noted := len(st.call.Limiter) // takeTurn notes each wait it sleeps
	adm, err := c.takeTurn(ctx, st)
	if err != nil {
		if ctx.Err() != nil {
			if n := len(st.call.Limiter); n > noted {
				// Cut short while waiting for its turn: the rate limit held
				// the call back, as a refusal does.
				w := st.call.Limiter[n-1]
				left := max(w.At.Add(w.Wait).Sub(c.now()), 0)
				return c.notSent(st, left, "not sent: the context ended while the call waited for its turn on the rate limit").withCause(ctx.Err())
			}
			return ctx.Err()
		}
		if c.logger != nil {
			c.logger.LogAttrs(ctx, slog.LevelWarn, "rail0: rate limiter unavailable; sending without it",
				callAttrs(st.call.ID, st.method, st.path, slog.String("error", err.Error()))...)
		}
		return nil
	}
	if !adm.OK || len(st.call.Limiter) == noted {
		c.noteAdmission(ctx, st, adm) // a refusal, or an admission at once
	}
	if !adm.OK {
		return c.notSent(st, adm.Wait, "not sent: the rate-limit wait does not fit the call's allowance or deadline")
	}
	return nil
}

// notSent is the 429 of a call that its rate limit held back, for why:
// wait is what it would still have had to wait.
func (c *Client) notSent(st *callState, wait time.Duration, why string) *APIError {
	return notSentError(st.method, st.path, wait, why)
}

// notSentError is the 429 the SDK answers itself for a request it did not
// send (method, path) because of a rate limit, for why: wait is what is
// left of that limit's wait.
func notSentError(method, path string, wait time.Duration, why string) *APIError {
	return &APIError{
		StatusCode: http.StatusTooManyRequests, Code: CodeRateLimited, Title: "Too many requests",
		Detail: why, RetryAfter: wait, Method: method, Path: path, NotSent: true,
	}
}

// answerError is the call's last answer as an *APIError: the 429 that
// checkRetry already parsed, or the answer parsed now.
func (c *Client) answerError(st *callState) *APIError {
	if st.last429 != nil {
		return st.last429
	}
	return newAPIError(st, st.status, st.header, st.body, c.gatewayNow())
}

// lastAnswer returns the call's last answer from the server as an
// *APIError, for a retry that the limiter refused locally (the transcript
// ends with the refusal: Call.NotRetried is ReasonLimiter); nil when the
// last attempt got no answer.
func (c *Client) lastAnswer(st *callState) *APIError {
	if st.status == 0 {
		return nil
	}
	return c.answerError(st)
}

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

// isTimeout reports whether a transport failure was a timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// passthroughErrorHandler keeps the final response and error: the default
// handler would close the response and lose the status and Retry-After.
func passthroughErrorHandler(resp *http.Response, err error, _ int) (*http.Response, error) {
	return resp, err
}

// readBody reads and closes a response body, replacing it with http.NoBody
// so retryablehttp's drain is a no-op. A success body larger than
// maxSuccessBody, or one that breaks off, is an error; an error body is cut
// at maxErrorBody and never fails (what was read is kept).
func readBody(resp *http.Response, success bool) ([]byte, error) {
	body := resp.Body
	resp.Body = http.NoBody
	if body == nil {
		return nil, nil
	}
	defer body.Close()
	limit := int64(maxErrorBody)
	if success {
		limit = maxSuccessBody
	}
	var buf bytes.Buffer
	if n := resp.ContentLength; n > 0 && n <= limit {
		buf.Grow(int(n) + 1)
	}
	_, err := buf.ReadFrom(io.LimitReader(body, limit+1))
	b := buf.Bytes()
	if int64(len(b)) > limit {
		b = b[:limit]
		if success {
			return b, fmt.Errorf("response body larger than %d bytes", limit)
		}
	}
	if err != nil && success {
		return b, fmt.Errorf("reading the response body: %w", err)
	}
	return b, nil
}

// timeLeft is the time before ctx's deadline, or maxDuration without one.
func timeLeft(ctx context.Context, now time.Time) time.Duration {
	dl, ok := ctx.Deadline()
	if !ok {
		return maxDuration
	}
	return dl.Sub(now)
}

// sleepCtx waits d or until ctx ends, reporting whether the wait completed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		b = b[:n]
	}
	return append([]byte(nil), b...)
}

// newIdempotencyKey returns a random key (128 bits from crypto/rand) for a
// write the caller gave no key: generated once per call, the same on every
// attempt.
func newIdempotencyKey() string { return rand.Text() }
