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
	"net/http"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// This file is the one send-and-check path: do builds the request, the
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

// RetryEvent describes one retry decision: a retry about to be made, or a
// retryable failure that is returned instead.
type RetryEvent struct {
	// Method and Path identify the call (Path is relative to the base URL).
	Method string
	Path   string
	// Attempt is the 1-based number of the attempt that just failed.
	Attempt int
	// StatusCode is the failed attempt's status; zero after a transport error.
	StatusCode int
	// Err is the transport error, if any.
	Err error
	// RetryAfter is the server's instruction on that answer, uncapped.
	RetryAfter time.Duration
	// Wait is how long the SDK waits before the next attempt (zero when it
	// does not retry).
	Wait time.Duration
	// WillRetry says whether another attempt follows.
	WillRetry bool
	// Reason says why.
	Reason RetryReason
	// RequestID is the failed answer's X-Request-Id, if any.
	RequestID string
}

// callState is the per-call state. It rides in the request's context under
// an unexported key, so that each call's hooks see only their own attempts:
// one response's header never paces another call or attempt. Only the
// calling goroutine touches it (retryablehttp runs the hooks synchronously).
type callState struct {
	method         string
	path           string
	idempotencyKey string
	write          bool    // POST or PATCH
	partition      string  // derived from the token when first needed
	anonymous      bool    // no token: the public partition
	token          string  // only to derive partition; never logged or stored elsewhere
	gated          bool    // waits for the limiter before each attempt
	jitter         float64 // the draw of the last 429 decision, reused for its admission
	turn           turn    // the limiter's admission of the attempt in flight

	attempts     int
	waited       time.Duration // rate-limit waiting spent
	otherRetries int
	guesses429   int
	next         time.Duration // the wait checkRetry decided, taken by backoff
	waiting      bool          // between a retry decision and the next attempt

	last429        *APIError // kept so a call cut short while waiting still reports it
	refused        bool
	unknown        bool
	maybeExecuted  bool // a write attempt may have run on the server
	sent           bool // some attempt may have reached the server
	status         int
	rateLimit      *RateLimitInfo
	header         http.Header
	body           []byte
	bodyErr        error
	transportError error
}

type callStateKey struct{}

// partitionKey names the call's rate-limit partition, hashing the token only
// when a limiter needs it (most calls never do).
func (st *callState) partitionKey() string {
	if st.partition == "" {
		st.partition = partitionFor(st.token)
	}
	return st.partition
}

func stateFrom(ctx context.Context) *callState {
	st, _ := ctx.Value(callStateKey{}).(*callState)
	return st
}

// do sends r through the retry policy and decodes a 2xx JSON body into out
// (out may be nil). Every non-2xx becomes an *APIError, or an
// *OutcomeUnknownError for a write that may have run.
func (c *Client) do(ctx context.Context, r *request, out any) (*Response, error) {
	st := &callState{
		method:         r.method,
		path:           "/" + r.path,
		idempotencyKey: r.idempotencyKey,
		write:          r.method == http.MethodPost || r.method == http.MethodPatch,
	}
	if err := ctx.Err(); err != nil {
		return nil, &TransportError{Method: st.method, Path: st.path, Err: err}
	}
	var body any
	if r.body != nil {
		b, err := json.Marshal(r.body)
		if err != nil {
			return nil, fmt.Errorf("rail0: %s %s: encoding the request body: %w", st.method, st.path, err)
		}
		body = b // replayed from these bytes on every attempt
	}
	var token string
	if !r.anonymous {
		t, err := c.bearer(ctx)
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
			if isContextErr(err) {
				return nil, &TransportError{Method: st.method, Path: st.path, Err: err}
			}
			return nil, err
		}
	}
	req, err := retryablehttp.NewRequestWithContext(context.WithValue(ctx, callStateKey{}, st), r.method, c.resolve(r.path, r.query), body)
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
	resp, err := c.rc.Do(req)
	if resp != nil && resp.Body != nil {
		resp.Body.Close() // checkRetry has read it already
	}
	return c.finish(ctx, st, err, out)
}

// finish turns the final state of a call into its result.
func (c *Client) finish(ctx context.Context, st *callState, err error, out any) (*Response, error) {
	var meta *Response
	if st.status != 0 {
		meta = &Response{StatusCode: st.status, Header: st.header, RequestID: st.header.Get("X-Request-Id"), Attempts: st.attempts, RateLimit: st.rateLimit}
		if hook, ok := ctx.Value(responseHookKey{}).(func(*Response)); ok && hook != nil {
			hook(meta)
		}
	}
	if err != nil {
		var failure error = &TransportError{Method: st.method, Path: st.path, Attempts: st.attempts, Sent: st.sent, Err: err}
		var local *APIError
		if errors.As(err, &local) && local.NotSent {
			// The limiter would not admit the retry in time: answered here.
			failure = local
		} else if isContextErr(err) && st.waiting && st.last429 != nil {
			// Cut short while waiting out a 429: report that 429 too.
			failure = st.last429.withCause(err, st.attempts)
		}
		if st.maybeExecuted {
			return meta, &OutcomeUnknownError{Method: st.method, Path: st.path, Attempts: st.attempts, IdempotencyKey: st.idempotencyKey, Err: failure}
		}
		return meta, failure
	}
	if st.status < 200 || st.status > 299 {
		apiErr := st.last429 // a final 429 was already parsed by checkRetry
		if apiErr == nil {
			apiErr = newAPIError(st, st.status, st.header, st.body, c.now())
		}
		apiErr.RetryRefused = st.refused
		if st.unknown {
			return meta, &OutcomeUnknownError{Method: st.method, Path: st.path, Attempts: st.attempts, IdempotencyKey: st.idempotencyKey, Err: apiErr}
		}
		return meta, apiErr
	}
	if out != nil && st.status != http.StatusNoContent {
		if err := json.Unmarshal(st.body, out); err != nil {
			return meta, &DecodeError{
				Method: st.method, Path: st.path, StatusCode: st.status,
				RequestID: meta.RequestID, ContentType: st.header.Get("Content-Type"),
				Body: truncate(st.body, 1024), Err: err,
			}
		}
	}
	return meta, nil
}

// checkRetry is the CheckRetry hook: it reads the answer, asks the policy
// and records the decision. It is the only place that decides.
func (c *Client) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	st := stateFrom(ctx)
	if st == nil {
		return false, err
	}
	st.attempts++
	st.waiting = false
	now := c.now()
	o := outcome{method: st.method, idempotencyKey: st.idempotencyKey != "", ctxDone: ctx.Err() != nil}
	var failure error
	if err != nil {
		o.failed = true
		o.notSent = isNotSent(err)
		failure = err
		// No answer this time: an earlier attempt's must not be reported.
		st.status, st.header, st.body, st.rateLimit = 0, nil, nil, nil
	} else {
		st.status, st.header = resp.StatusCode, resp.Header
		o.status = resp.StatusCode
		success := resp.StatusCode >= 200 && resp.StatusCode <= 299
		st.body, st.bodyErr = readBody(resp, success)
		if success && st.bodyErr != nil {
			// A body that breaks off is a broken connection after the
			// request ran: handled like one.
			o.failed = true
			failure = st.bodyErr
		}
		if ra, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), now); ok {
			o.retryAfter, o.hasRetryAfter = ra, true
		}
		st.rateLimit = nil
		if rl, ok := ParseRateLimit(resp.Header, now); ok {
			st.rateLimit = &rl
		}
		c.observe(ctx, st, o)
	}
	if !o.notSent {
		st.sent = true
		if st.write && (o.failed || retryableStatus(o.status)) {
			st.maybeExecuted = true
		}
	}
	st.transportError = failure

	u := c.rand()
	st.jitter = u
	d := decide(c.policy, o, budget{
		attempts:     st.attempts,
		waited:       st.waited,
		otherRetries: st.otherRetries,
		guesses429:   st.guesses429,
		deadline:     timeLeft(ctx, now),
	}, u)
	d = distrust(d, st.turn.fb, c.policy.maxRetryWait-st.waited, timeLeft(ctx, now), u)
	st.last429 = nil
	if o.status == http.StatusTooManyRequests {
		st.last429 = newAPIError(st, o.status, st.header, st.body, now)
	}
	if !d.relevant {
		return false, failure
	}
	ev := RetryEvent{
		Method: st.method, Path: st.path, Attempt: st.attempts, StatusCode: o.status,
		Err: failure, RetryAfter: o.retryAfter, Wait: d.wait, WillRetry: d.retry, Reason: d.reason,
	}
	if st.header != nil && err == nil {
		ev.RequestID = st.header.Get("X-Request-Id")
	}
	if !d.retry {
		st.refused = d.refused429
		st.unknown = d.unknown
		if d.refused429 {
			c.refusals.Add(1)
		}
		c.report(ctx, ev)
		return false, failure
	}
	if d.rateWait {
		st.waited += d.wait
		if !o.hasRetryAfter {
			st.guesses429++
		}
	} else {
		st.otherRetries++
	}
	c.retries.Add(1)
	c.report(ctx, ev)
	st.waiting = true
	if resp == nil {
		// retryablehttp hands Backoff no response after a transport error,
		// so Backoff cannot reach this call's state and its decided wait.
		// Rather than draw a second, different wait there, the wait the
		// policy decided (and reported) is taken here.
		if !sleepCtx(ctx, d.wait) {
			return false, ctx.Err()
		}
		return true, nil
	}
	st.next = d.wait
	return true, nil
}

// backoff is the Backoff hook: it returns the wait checkRetry decided for
// this call's last answer, and consumes it so it cannot pace another attempt.
func (c *Client) backoff(_, _ time.Duration, _ int, resp *http.Response) time.Duration {
	if resp == nil || resp.Request == nil {
		return 0 // transport error: waited in checkRetry
	}
	st := stateFrom(resp.Request.Context())
	if st == nil {
		return 0
	}
	w := st.next
	st.next = 0
	return w
}

// prepareRetry is the PrepareRetry hook: a retry is a new send, so a gated
// call takes its turn with the limiter again (after a 429 the cooldown that
// answer set is normally over by now, since the backoff waited it out with
// the same jitter draw).
func (c *Client) prepareRetry(req *http.Request) error {
	st := stateFrom(req.Context())
	if st == nil || !st.gated {
		return nil
	}
	return c.admit(req.Context(), st)
}

// admit waits for the call's turn on its rate-limit partition (see
// takeTurn). The wait counts against the call's allowance; when it does not
// fit the allowance or the deadline, the call gets a 429 at once without
// sending. A failing limiter (say, an unreachable shared store) does not
// stop payments: the call goes ahead, and the failure is logged.
func (c *Client) admit(ctx context.Context, st *callState) error {
	adm, err := c.takeTurn(ctx, st)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if c.logger != nil {
			c.logger.LogAttrs(ctx, slog.LevelWarn, "rail0: rate limiter unavailable; sending without it",
				slog.String("method", st.method), slog.String("path", st.path), slog.String("error", err.Error()))
		}
		return nil
	}
	if !adm.OK {
		c.refusals.Add(1)
		return &APIError{
			StatusCode: http.StatusTooManyRequests, Code: CodeRateLimited, Title: "Too many requests",
			Detail:     "not sent: the rate-limit wait does not fit the call's allowance or deadline",
			RetryAfter: adm.Wait, Attempts: st.attempts, Method: st.method, Path: st.path,
			RetryRefused: true, NotSent: true,
		}
	}
	return nil
}

// passthroughErrorHandler keeps the final response and error: the default
// handler would close the response and lose the status and Retry-After.
func passthroughErrorHandler(resp *http.Response, err error, _ int) (*http.Response, error) {
	return resp, err
}

// report logs a retry decision and hands it to the OnRetry hook.
func (c *Client) report(ctx context.Context, ev RetryEvent) {
	if c.logger != nil {
		level := slog.LevelInfo
		msg := "rail0: retrying"
		if !ev.WillRetry {
			level, msg = slog.LevelWarn, "rail0: not retrying"
		}
		attrs := []slog.Attr{
			slog.String("method", ev.Method),
			slog.String("path", ev.Path),
			slog.Int("attempt", ev.Attempt),
			slog.Int("status", ev.StatusCode),
			slog.Duration("wait", ev.Wait),
			slog.Bool("will_retry", ev.WillRetry),
			slog.String("reason", string(ev.Reason)),
		}
		if ev.RetryAfter > 0 {
			attrs = append(attrs, slog.Duration("retry_after", ev.RetryAfter))
		}
		if ev.RequestID != "" {
			attrs = append(attrs, slog.String("request_id", ev.RequestID))
		}
		if ev.Err != nil {
			attrs = append(attrs, slog.String("error", ev.Err.Error()))
		}
		c.logger.LogAttrs(ctx, level, msg, attrs...)
	}
	if c.onRetry != nil {
		c.onRetry(ev)
	}
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
