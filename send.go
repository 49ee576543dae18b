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
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/rail0/rail0-go/ratelimit"
)

// This file is the send path, the one way a call reaches the gateway. It
// reads top to bottom, in the order a call runs:
//
//	prepare    the request is checked and the call opened (do)
//	authorize  the bearer token, from the client's token source
//	admit      the call's turn on its rate-limit partition (limiter.go)
//	send       one attempt leaves
//	classify   what the answer says; the limiter hears it (limiter_feedback.go)
//	decide     the retry rules (retry_rules.go)
//	report     the transcript, the observers and the logs hear of each stage
//
// go-retryablehttp runs the loop of attempts, with the call's own hooks.
// CheckRetry classifies, decides and reports. Backoff hands over the wait
// decided. PrepareRetry admits the retry and reports it sent. A 401 to a
// session the token source can renew is one more pass of that loop. The
// retry rules send the call again at once with the new token, and the send
// starts afresh from authorize.

// maxErrorBody bounds how much of an error body is read. A proxy's HTML
// page or a hostile server must not cost memory. WithMaxResponseSize bounds
// a 2xx body (DefaultMaxResponseSize).
const maxErrorBody = 1 << 20

// request is one logical API call.
type request struct {
	// op is the contract operation the call performs, declared beside its
	// method (operation). args fill its path template. do sets method and
	// path from them. A request without op gives its own method and path:
	// the contract does not name it.
	op     *operation
	args   pathArgs
	method string
	// path is relative to the base URL. It has no leading slash, and its
	// segments are escaped (ids through pathSegment).
	path  string
	query url.Values
	// body is JSON-encoded once and replayed on every attempt. nil sends
	// none. A json.RawMessage is JSON already and is sent as it is: Raw's
	// body, encoded before the call starts.
	body any
	// idempotencyKey is sent as Idempotency-Key, the same on every attempt.
	idempotencyKey string
	// anonymous calls never resolve or send the bearer token. They are the
	// public operations (security: [] in the contract) and sign-in itself.
	// Sign-in must not call a token source that signs in. Anonymous calls
	// count against the public rate-limit partition.
	anonymous bool
	// secretAnswer marks an operation whose answer carries a credential: a
	// session token, a webhook secret. Error values built from that answer
	// keep none of its body.
	secretAnswer bool
	// identify, when set, reports why the decoded 2xx answer is not the
	// resource the operation promises, or "" when it is (notTheTransaction,
	// notThePayment). A write that must not run twice is not a success on a
	// body that merely decodes.
	identify func() string
	// keep401 returns a 401 as it is, without signing in again. Logging out
	// a session the gateway already refuses needs no new session.
	keep401 bool
	// raw marks a RawRequest. Its retry class is the caller's (class), not
	// the contract table's.
	raw   bool
	class opClass
	// poll marks a read of a loop that waits out a 429 itself, for
	// min(Retry-After, RetryAfterCap) (PaymentsService.wait). It can wait,
	// so it is no interactive call. The client does not answer it on a
	// closed partition (limiter_known.go), nor put it ahead of others.
	poll bool
	// onRateWait, when not nil, hears of every wait for a rate limit that
	// the call starts: a 429's backoff, a cooldown. The sign-in a token
	// source leads uses it to tell the callers waiting for it (see
	// tokenSource.await).
	onRateWait func(rateWait)
}

// callState is one call, in one value. It holds the call's request, its
// transcript, what its attempts used and did, and the go-retryablehttp
// client it sends with. That client is the call's own, a struct literal
// built once per call. Its hooks (checkRetry, backoff, prepareRetry) are
// methods of this value. So each call's hooks see only its own attempts:
// one response's header never paces another call. Nothing about the call
// rides in its context. The hooks run on the calling goroutine, the only
// one that touches the state (go-retryablehttp calls them from Do).
//
// A call may wait in three places, each for its own reason:
//
//   - go-retryablehttp's timer, between an answer and its retry. It waits
//     what the rules decided in checkRetry (the server's Retry-After, or a
//     guess), which backoff hands over. That includes the retry after a
//     transport error. backoff reads this value, not the response, which
//     go-retryablehttp gives it as nil then.
//   - the limiter's admission (admit), before the first attempt and before
//     each retry. It is the call's turn on its rate-limit partition. Other
//     calls' answers (a 429, a lower budget) can move it while this one
//     waits. So it is taken just before the request leaves.
//   - the token source (authorize, and reauthorize after a 401). It is a
//     client's own sign-in, which another call may be leading
//     (tokenSource.await), or the caller's WithTokenSource function.
//
// checkRetry waits for nothing but the token source after a 401.
type callState struct {
	// The call, set once when it is prepared.
	c              *Client  // the view the call is made through
	r              *request // what the caller asked for
	call           *Call    // the transcript
	rc             retryablehttp.Client
	timed          http.Client    // rc's HTTP client when WithAttemptTimeout bounds each attempt
	url            string         // sent to; Call.URL has the query redacted
	method, path   string         // path has its leading slash, as the transcript shows it
	idempotencyKey string         // sent on every attempt
	op             opClass        // what repeating the operation would do
	requestBody    []byte         // the JSON body, encoded once and replayed on every attempt
	onRateWait     func(rateWait) // the request's; nil for most calls
	// resendOn401 is true while a 401 to the call's token would make it ask
	// the token source for a new one (reauthorize). The call then sends
	// again at once with it. This holds only once, for an operation safe to
	// repeat, sent with a token from a source.
	resendOn401 bool

	// What the call used and did, across its sends. Signing in again after
	// a 401 gives a call no second allowance: attempts, MaxRetryWait, the
	// guesses and other retries the rules count. Nor does it give a clean
	// record. A write an earlier attempt may have run still ends as an
	// *OutcomeUnknownError.
	attempts      int
	waited        time.Duration // server-given and rate-limit waiting spent
	otherRetries  int
	guesses429    int
	maybeExecuted bool // a write attempt may have run on the server
	sent          bool // some attempt may have reached the server

	// The session after a 401. renewed is the new token the next send
	// carries. authErr is the token source's failure, which the call
	// returns.
	renewed string
	authErr error

	sendState // what the current send has seen; startSend clears it
}

// sendState is what one send of a call has seen. The send after a refused
// session starts from a fresh one (resetSend).
type sendState struct {
	token     string        // the bearer token; never logged or stored elsewhere
	anonymous bool          // no token: the public partition
	partition string        // derived from the token when first needed
	gated     bool          // waits for the limiter before each attempt
	jitter    float64       // the draw of the last 429 decision, reused for its admission
	clamped   bool          // the retry's distrusted wait was clamped (ratelimit.Reservation.Clamped)
	guessed   bool          // the retry's wait is a guess (ratelimit.Reservation.Guessed)
	turn      turn          // the limiter's admission of the attempt in flight
	held      int64         // the slot held for the retry of a 429 since the answer came; zero when none
	next      time.Duration // the wait checkRetry decided, taken by backoff
	last429   *APIError     // kept so a call cut short while waiting or retrying still reports it
	unknown   bool
	status    int
	rateLimit *RateLimitInfo
	header    http.Header
	body      []byte
	bodyErr   error
	// deprecation is what the last answer said of the endpoint's
	// retirement, or nil.
	deprecation *Deprecation
}

// do sends r and decodes a 2xx JSON answer into out: prepare, then run,
// then end. It refuses a request that could not be sent as given before
// anything goes out.
//
// A call sent with a token and answered 401 tells the client's token source
// which token the gateway refused (see bearer). The tokenSource of a client
// created WithSigner drops that session, and that one only. A newer session
// that another call obtained meanwhile is kept. So late 401s for an old
// token do not discard a fresh one.
//
// When the operation is safe to repeat (its class), the call asks the
// source for a token at once (reauthorize). A tokenSource signs in again,
// once for all callers. Given a new token, the call is sent once more (the
// rule sessionRefused). A source that fails returns its error.
//
// A source that answers the refused token again, or none (""), has no other
// session to offer. The 401 stands, as it does for a fixed token. The call
// was made as the caller. Sent again without a token, it would act as
// nobody, on the public partition.
//
// The gateway answers a 401 before it runs anything, but a proxy or a
// broken gateway might not. So a write that must not run twice (a submit, a
// secret rotation) comes back with its 401 instead, and the caller's next
// call signs in. The 401 comes inside an *OutcomeUnknownError unless it is
// in the gateway's envelope (see provesNotRun).
func (c *Client) do(ctx context.Context, r *request, out any) (*Response, error) {
	if c.sharedReads && c.viewErr == nil && shareable(r) {
		return c.doShared(ctx, r, out) // shared_reads.go
	}
	return c.doOne(ctx, r, out)
}

// doOne is do for one caller: prepare, run, end.
func (c *Client) doOne(ctx context.Context, r *request, out any) (*Response, error) {
	st, ctx, err := c.prepare(ctx, r)
	if err != nil {
		return nil, err
	}
	resp, err := st.run(ctx, out, "")
	return st.end(ctx, resp, err)
}

// prepare checks r, fills its path from its operation's template, and opens
// the call. It makes the call's state and transcript (newCall). It calls
// the observer's StartCall (report), whose context the call carries from
// then on. What it refuses is returned before the call begins, and nothing
// is reported.
func (c *Client) prepare(ctx context.Context, r *request) (*callState, context.Context, error) {
	if c.viewErr != nil {
		return nil, ctx, c.viewErr
	}
	if r.op != nil {
		path, err := r.op.path(r.args)
		if err != nil {
			return nil, ctx, err
		}
		r.method, r.path = r.op.method, path
	}
	if err := checkHeaderValue("idempotency_key", r.idempotencyKey); err != nil {
		return nil, ctx, err
	}
	st := c.forCaller(ctx).newCall(r)
	return st, st.report(ctx, event{kind: callStarted}), nil
}

// newCall returns the state of the call r, with its transcript.
func (c *Client) newCall(r *request) *callState {
	u := c.resolve(r.path, r.query)
	call := &Call{ID: c.calls.Add(1), Label: c.policy.label, Method: r.method, Path: "/" + r.path, URL: u, Start: c.now()}
	if len(r.query) > 0 {
		call.URL = c.resolveShown(r.path, r.query)
	}
	call.Attempts = call.first[:0]
	op := r.op
	if op == nil { // a request built from a method and a path
		op = lookup(r.method, r.path)
	}
	call.Operation, call.Route, call.PaymentID = routeOf(op, r.path)
	call.class = classOf(r.method, op)
	if r.raw && (call.Operation == "" || stricter(r.class, call.class)) {
		// The caller's word, for an operation the contract does not name.
		// For one it names, the stricter of the caller's and the table's.
		call.class = r.class
	}
	st := &callState{c: c, r: r, call: call, url: u, method: r.method, path: call.Path, idempotencyKey: r.idempotencyKey,
		op: call.class, onRateWait: r.onRateWait}
	st.resendOn401 = c.tokenSource != nil && !r.anonymous && !r.keep401 && st.op.Repeatable(r.idempotencyKey != "")
	hc := c.hc
	if d := c.policy.attemptTimeout; d > 0 {
		// The view's bound on each attempt, in the call's own value. It
		// needs no allocation of its own.
		st.timed = http.Client{Transport: attemptTimer{rt: c.hc.Transport, d: d}, Jar: c.hc.Jar, CheckRedirect: noRedirects}
		hc = &st.timed
	}
	// The call's own client, built as a literal. Its defaults would drop
	// the final response on exhaustion and use Retry-After uncapped.
	// checkRetry enforces every limit, so RetryMax is only a ceiling never
	// reached.
	st.rc = retryablehttp.Client{
		HTTPClient:   hc,
		RetryMax:     maxAttempts,
		CheckRetry:   st.checkRetry,
		Backoff:      st.backoff,
		ErrorHandler: passthroughErrorHandler,
		PrepareRetry: st.prepareRetry,
	}
	return st
}

// run sends the call and decodes a 2xx JSON body into out, which may be
// nil. Its stages are startSend (authorize, admit), send and finish. Every
// non-2xx becomes an *APIError, or an *OutcomeUnknownError for a write that
// may have run. token is the bearer token to send. When it is empty,
// authorize asks the token source; an anonymous request sends none.
func (st *callState) run(ctx context.Context, out any, token string) (*Response, error) {
	if err := st.startSend(ctx, token); err != nil {
		return nil, err
	}
	var body any
	if st.requestBody != nil {
		body = st.requestBody
	}
	req, err := retryablehttp.NewRequestWithContext(ctx, st.method, st.url, body)
	if err != nil {
		return nil, fmt.Errorf("rail0: %s %s: %w", st.method, st.path, err)
	}
	st.setHeader(req.Header)
	meta, err := st.finish(st.send(ctx, req), out)
	if st.authErr != nil {
		return meta, st.authErr // the token source failed after a 401
	}
	return meta, err
}

// startSend starts a send of the call: the first, or the one after a
// refused session. That one starts afresh with the new token, within what
// the call has used. startSend encodes the body once, authorizes, and
// admits the first attempt when the call is gated. The call ends with what
// it returns, as it is.
func (st *callState) startSend(ctx context.Context, token string) error {
	st.resetSend()
	if err := ctx.Err(); err != nil {
		return &TransportError{Method: st.method, Path: st.path, Err: err}
	}
	if err := st.encode(); err != nil {
		return err
	}
	if err := st.authorize(ctx, token); err != nil {
		return err
	}
	c := st.c
	if !c.policy.retryOn429 && !st.r.poll {
		// A call that does not wait out a 429 is not sent into a
		// partition the gateway said is closed (limiter_known.go).
		if left := c.shutFor(st, c.now()); left > 0 {
			st.report(ctx, event{kind: shut, adm: ratelimit.Admission{Wait: left, Cooldown: true}})
			return st.notSent(left, "not sent: the gateway said this rate limit is closed for this long")
		}
	}
	st.gated = c.pacingOn || (c.policy.retryOn429 && c.cooldown)
	if !st.gated {
		return nil
	}
	st.jitter = c.rand()
	if err := st.admit(ctx); err != nil {
		var held *APIError
		if isContextErr(err) && !errors.As(err, &held) {
			return &TransportError{Method: st.method, Path: st.path, Err: err}
		}
		return err
	}
	return nil
}

// resetSend clears what the current send has seen.
func (st *callState) resetSend() { st.sendState = sendState{} }

// encode encodes the request's body, once for the whole call.
func (st *callState) encode() error {
	if st.r.body == nil || st.requestBody != nil {
		return nil
	}
	b, encoded := st.r.body.(json.RawMessage)
	if !encoded {
		var err error
		if b, err = json.Marshal(st.r.body); err != nil {
			return fmt.Errorf("rail0: %s %s: encoding the request body: %w", st.method, st.path, err)
		}
	}
	st.requestBody = b
	return nil
}

// authorize gives the send its bearer token: token, or the token source's
// when it is empty (bearer). An anonymous request sends none.
func (st *callState) authorize(ctx context.Context, token string) error {
	if !st.r.anonymous && token == "" {
		t, err := st.c.bearer(ctx, "", true)
		if err != nil {
			return err
		}
		token = t
	}
	st.token, st.anonymous = token, token == ""
	return nil
}

// setHeader sets the headers the SDK owns on an attempt.
func (st *callState) setHeader(h http.Header) {
	h.Set("Accept", "application/json")
	h.Set("User-Agent", st.c.userAgent)
	if st.requestBody != nil {
		h.Set("Content-Type", "application/json")
	}
	if st.token != "" {
		h.Set("Authorization", "Bearer "+st.token)
	}
	if st.idempotencyKey != "" {
		h.Set("Idempotency-Key", st.idempotencyKey)
	}
}

// admit waits for the call's turn on its rate-limit partition (see
// takeTurn). The wait counts against the call's allowance. When it does not
// fit the allowance or the deadline, the call gets a 429 at once, without
// sending. When ctx ends during the wait, the call gets the same 429, with
// the wait that was left; it matches ctx's error too. A failing limiter
// (say, an unreachable shared store) does not stop payments. The call goes
// ahead, and the failure is logged.
func (st *callState) admit(ctx context.Context) error {
	c := st.c
	noted := len(st.call.Limiter) // takeTurn reports each wait it sleeps
	adm, err := c.takeTurn(ctx, st)
	if err != nil {
		if ctx.Err() != nil {
			if n := len(st.call.Limiter); n > noted {
				// Cut short while waiting for its turn. The rate limit held
				// the call back, as a refusal does.
				w := st.call.Limiter[n-1]
				left := max(w.At.Add(w.Wait).Sub(c.now()), 0)
				return st.notSent(left, "not sent: the context ended while the call waited for its turn on the rate limit").withCause(ctx.Err())
			}
			return ctx.Err()
		}
		st.report(ctx, event{kind: limiterDown, msg: "rail0: rate limiter unavailable; sending without it", err: err})
		return nil
	}
	if !adm.OK || len(st.call.Limiter) == noted {
		st.report(ctx, event{kind: admitted, adm: adm}) // a refusal, or an admission at once
	}
	if !adm.OK {
		return st.notSent(adm.Wait, "not sent: the rate-limit wait does not fit the call's allowance or deadline")
	}
	return nil
}

// send sends the call's first attempt (report). go-retryablehttp's loop
// sends the rest, with the call's hooks. send returns what ended the loop:
// a transport error, or an error a hook returned. It returns nil when an
// answer did.
func (st *callState) send(ctx context.Context, req *retryablehttp.Request) error {
	st.report(ctx, event{kind: attemptSent, req: req.Request})
	resp, err := st.rc.Do(req)
	if resp != nil && resp.Body != nil {
		resp.Body.Close() // checkRetry has read it already
	}
	return err
}

// checkRetry is the CheckRetry hook, run when an attempt's answer (or
// failure) is in. Its stages are classify, decide, report, then the count
// of the retry. It waits for nothing but the token source after a 401
// (decide). The wait it decides is backoff's.
func (st *callState) checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	now := st.c.now()
	o, failure := st.classify(ctx, resp, err, now)
	d := st.decide(ctx, o, now)
	st.report(ctx, event{kind: attemptDecided, o: o, d: d, failure: failure, now: now})
	if st.refusedSession(o) && !st.op.Repeatable(st.idempotencyKey != "") {
		// The session is dropped; the answer is not used.
		_, _ = st.c.bearer(ctx, st.token, false)
	}
	if !st.proceed(ctx, o, d, now) {
		return false, failure
	}
	return true, nil
}

// classify reads an attempt's answer (or failure) into the outcome the
// rules see. It keeps what the call reports and returns. It tells the
// limiter what the answer says (observe). failure is the transport error,
// or a 2xx body that broke off.
func (st *callState) classify(ctx context.Context, resp *http.Response, err error, now time.Time) (o outcome, failure error) {
	c := st.c
	st.attempts++
	o = outcome{op: st.op, idempotencyKey: st.idempotencyKey != "", ctxDone: ctx.Err() != nil}
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			// net/http names the URL in its error, query and all. The
			// error and its log lines show it redacted, as Call.URL.
			ue.URL = st.call.URL
		}
		o.failed = true
		o.notSent = isNotSent(err)
		o.timeout = isTimeout(err)
		failure = err
		// No answer this time: an earlier attempt's must not be reported.
		st.status, st.header, st.body, st.rateLimit, st.deprecation = 0, nil, nil, nil, nil
	} else {
		st.status, st.header = resp.StatusCode, resp.Header
		st.deprecation = deprecationOf(resp.Header, st.c.shownQuery)
		o.status = resp.StatusCode
		if n := len(st.call.Attempts); n > 0 {
			c.clock.sample(resp.Header, st.call.Attempts[n-1].Sent, now)
		}
		gatewayNow := now.Add(c.clock.offset()) // what the answer's times are relative to
		success := resp.StatusCode >= 200 && resp.StatusCode <= 299
		st.body, st.bodyErr = readBody(resp, success, c.maxBody)
		st.report(ctx, event{kind: answerRead})
		if success && st.bodyErr != nil {
			// A body that breaks off is a broken connection after the
			// request ran, and is handled like one. A body over the limit
			// is an answer, which a repetition would get again (the rule
			// tooLarge).
			o.failed = true
			var big *ResponseTooLargeError
			o.tooLarge = errors.As(st.bodyErr, &big)
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
			// The gateway answered and is healthy, so the retry budget
			// refills. A 4xx is its answer too.
			c.quota.credit(successCredit)
		}
	}
	if !o.notSent {
		st.sent = true
		if mayHaveRun(o, st.body) {
			st.maybeExecuted = true
		}
	}
	switch {
	case o.status == http.StatusTooManyRequests:
		st.last429 = newAPIError(st, o.status, st.header, st.body, now.Add(c.clock.offset()))
	case o.failed && o.ctxDone && st.last429 != nil:
		// The retry after a 429 died on the context: say, a deadline that
		// fitted the wait but not the retry. Keep the 429 to report it.
	default:
		st.last429 = nil
	}
	return o, failure
}

// decide applies the retry rules (retry_rules.go) to the attempt's
// outcome. It weighs what the call has left and what the client's retry
// budget and limiter say. After a 401 to a session the token source may
// renew, it asks the source first (reauthorize). So the rules see whether a
// new token came.
func (st *callState) decide(ctx context.Context, o outcome, now time.Time) decision {
	c := st.c
	u := c.rand()
	st.jitter = u
	e := &evidence{p: c.policy, o: o, u: u, fb: st.turn.fb, b: budget{
		attempts:     st.attempts,
		waited:       st.waited,
		otherRetries: st.otherRetries,
		guesses429:   st.guesses429,
		deadline:     timeLeft(ctx, now),
	}}
	if st.turn.fb.Distrusted {
		e.b.rtt = c.delays.margin(0)
	}
	if st.resendOn401 && st.refusedSession(o) {
		e.renewed = st.reauthorize(ctx)
	}
	d := c.quota.spend(func(tokens int) decision {
		e.b.tokens = tokens
		return decideOn(e)
	})
	st.clamped = d.reason == ReasonRetryAfterDistrustedClamped
	st.guessed = d.guess
	return d
}

// refusedSession reports whether the gateway refused the session the call
// sent, with a 401 to its token, and the call may act on it.
func (st *callState) refusedSession(o outcome) bool {
	return o.status == http.StatusUnauthorized && st.token != "" && !st.r.keep401
}

// reauthorize asks the token source for a new token after the gateway
// refused the one the call sent (bearer). A tokenSource drops that session
// and signs in again. reauthorize reports whether a new token came. The
// next send carries it (prepareRetry). A source that fails fails the call
// with its own error.
func (st *callState) reauthorize(ctx context.Context) bool {
	tok, err := st.c.bearer(ctx, st.token, true)
	if err != nil {
		st.authErr = err
		return false
	}
	if tok == st.token || tok == "" {
		return false
	}
	st.renewed = tok
	return true
}

// proceed counts a retry the rules decided against the call's limits. It
// sets the retry's wait, for backoff, and reports whether the call is sent
// again. A 429's retry tells the request's onRateWait. A gated call holds
// its retry's slot with the limiter at once (holdRetrySlot).
func (st *callState) proceed(ctx context.Context, o outcome, d decision, now time.Time) bool {
	if !d.relevant {
		return false
	}
	if !d.retry {
		st.unknown = d.unknown
		return false
	}
	if d.reason == ReasonSessionRefused {
		st.resendOn401 = false // a second 401 is returned as it is
		return true
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
		st.c.holdRetrySlot(ctx, st, d.wait)
	}
	return true
}

// backoff is the Backoff hook. It returns the wait checkRetry decided for
// the call's last answer, and consumes it. It reads the call's state, not
// the response, since go-retryablehttp passes that as nil after a transport
// error.
func (st *callState) backoff(_, _ time.Duration, _ int, _ *http.Response) time.Duration {
	w := st.next
	st.next = 0
	return w
}

// prepareRetry is the PrepareRetry hook, run just before a retry leaves. A
// gated call takes its turn with the limiter again. After a 429, the
// cooldown that answer set is normally over by now: the backoff waited it
// out with the same jitter draw. After a refused session, the send starts
// afresh with the new token (startSend). Then the retry opens its entry in
// the transcript (report).
func (st *callState) prepareRetry(req *http.Request) error {
	ctx := req.Context()
	if tok := st.renewed; tok != "" {
		st.renewed = ""
		if err := st.startSend(ctx, tok); err != nil {
			return restartError{err}
		}
		req.Header = make(http.Header)
		st.setHeader(req.Header)
	} else if st.gated {
		if err := st.admit(ctx); err != nil {
			return err
		}
	}
	st.report(ctx, event{kind: attemptSent, req: req})
	return nil
}

// restartError carries what ended the send after a refused session, before
// its first attempt. The call returns it as it is, as it would the same
// failure of its first send.
type restartError struct{ err error }

func (e restartError) Error() string { return e.err.Error() }

// finish turns the final state of a call into its result.
func (st *callState) finish(err error, out any) (*Response, error) {
	var restart restartError
	if errors.As(err, &restart) {
		return nil, restart.err
	}
	if st.renewed != "" && isContextErr(err) {
		// The context ended before the send after a refused session.
		return nil, &TransportError{Method: st.method, Path: st.path, Err: err}
	}
	if st.held != 0 {
		// The call ended (its context, say) before the retry it held a slot
		// for.
		st.c.release(context.Background(), st, st.held)
		st.held = 0
	}
	var meta *Response
	if st.status != 0 {
		// Allocated with the transcript: one allocation for both.
		meta = &st.call.resp
		*meta = Response{StatusCode: st.status, Header: st.header, RequestID: requestID(st.header), Attempts: st.attempts,
			RateLimit: st.rateLimit, Deprecation: st.deprecation}
	}
	if err != nil && st.tooLarge(err) {
		// The answer came and was too large. It is a *DecodeError, not a
		// transport failure.
		return meta, st.undecodable(meta, err)
	}
	if err != nil {
		var failure error = &TransportError{Method: st.method, Path: st.path, Sent: st.sent, Err: err}
		var local *APIError
		if errors.As(err, &local) && local.NotSent {
			// The limiter would not admit the retry in time, or the call
			// ended while it waited. The caller gets the server's own last
			// answer, not one built here. It carries the context's error
			// when that ended the wait.
			failure = local
			if last := st.lastAnswer(); last != nil {
				failure = last
				if local.cause != nil {
					failure = last.withCause(local.cause)
				}
			}
		} else if isContextErr(err) && st.last429 != nil {
			// Cut short while waiting out a 429, or on the retry that
			// followed the wait. Report that 429 too.
			failure = st.last429.withCause(err)
		}
		if st.maybeExecuted {
			return meta, &OutcomeUnknownError{Method: st.method, Path: st.path, IdempotencyKey: st.idempotencyKey, Err: failure}
		}
		return meta, failure
	}
	if st.status < 200 || st.status > 299 {
		apiErr := st.answerError()
		if st.unknown || st.maybeExecuted {
			// An earlier attempt may have run (a 5xx, a broken connection),
			// even if the last answer is a 429 or a 4xx. The caller must not
			// send the write again without its Idempotency-Key.
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

// end checks that a 2xx answer is the resource the operation promises
// (request.identify). It keeps a credential out of a *DecodeError and
// closes the call (report). An error carries the answer and the transcript.
// The call then returns no *Response.
func (st *callState) end(ctx context.Context, resp *Response, err error) (*Response, error) {
	r := st.r
	if st.c.tokenSource == nil && !r.anonymous {
		markNoCredentials(err)
	}
	if err == nil && r.identify != nil && resp != nil {
		if why := r.identify(); why != "" {
			err = st.undecodable(resp, fmt.Errorf("not the resource the operation promises: the answer %s", why))
		}
	}
	if r.secretAnswer {
		var decodeErr *DecodeError
		if errors.As(err, &decodeErr) {
			decodeErr.Body = nil // it holds the credential
		}
	}
	st.report(ctx, event{kind: callEnded, resp: resp, err: err})
	if err != nil {
		resp = nil
	}
	return resp, err
}

// markNoCredentials marks a 401 in err as sent by a client that has no
// credentials, so that its error names WithSigner.
func markNoCredentials(err error) {
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusUnauthorized {
		apiErr.noCredentials = true
	}
}

// undecodable is the failure of a 2xx whose body is not what the operation
// promises. cause says why: not its JSON, or JSON that is not its resource
// (request.identify). The failure is a *DecodeError. On a write that may
// have run, it is inside an *OutcomeUnknownError. Such an answer may be a
// proxy's, written after the write ran or not. A keyed write can be
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

// tooLarge reports whether err is a body over the size limit.
func (st *callState) tooLarge(err error) bool {
	var big *ResponseTooLargeError
	return errors.As(err, &big)
}

// answerError is the call's last answer as an *APIError: the 429 that
// checkRetry already parsed, or the answer parsed now.
func (st *callState) answerError() *APIError {
	if st.last429 != nil {
		return st.last429
	}
	return newAPIError(st, st.status, st.header, st.body, st.c.gatewayNow())
}

// lastAnswer returns the call's last answer from the server as an
// *APIError, or nil when the last attempt got no answer. It serves a retry
// that the limiter refused locally. The transcript then ends with the
// refusal: Call.NotRetried is ReasonLimiter.
func (st *callState) lastAnswer() *APIError {
	if st.status == 0 {
		return nil
	}
	return st.answerError()
}

// notSent is the 429 of a call that its rate limit held back, for why. wait
// is what it would still have had to wait.
func (st *callState) notSent(wait time.Duration, why string) *APIError {
	return notSentError(st.method, st.path, wait, why)
}

// notSentError is the 429 the SDK answers itself for a request it did not
// send (method, path) because of a rate limit, for why. wait is what is
// left of that limit's wait.
func notSentError(method, path string, wait time.Duration, why string) *APIError {
	return &APIError{
		StatusCode: http.StatusTooManyRequests, Code: CodeRateLimited, Title: "Too many requests",
		Detail: why, RetryAfter: wait, Method: method, Path: path, NotSent: true,
	}
}

// partitionKey names the call's rate-limit partition. It hashes the token
// only when a limiter needs it, which most calls never do.
func (st *callState) partitionKey() string {
	if st.partition == "" {
		st.partition = partitionFor(st.token)
	}
	return st.partition
}

// eventKind names what a call reports.
type eventKind int

const (
	callStarted    eventKind = iota // the call begins, before anything is sent
	admitted                        // the limiter answered: a wait, a refusal, or an admission at once
	shut                            // the client knows the partition closed: answered at once, not sent
	attemptSent                     // an attempt is about to leave
	answerRead                      // an attempt's answer is read
	attemptDecided                  // an attempt's answer (or failure) and the decision taken on it
	limiterDown                     // the limiter failed; the call goes on without it
	callEnded                       // the call returns
)

// event is one thing a call reports, with what report needs to tell it.
type event struct {
	kind    eventKind
	req     *http.Request       // attemptSent
	adm     ratelimit.Admission // admitted
	o       outcome             // attemptDecided
	d       decision            // attemptDecided
	failure error               // attemptDecided: the transport failure
	now     time.Time           // attemptDecided: when the answer came
	msg     string              // limiterDown
	resp    *Response           // callEnded
	err     error               // callEnded; limiterDown
}

// report is the one place a call tells about itself, at each point of its
// life (event). It tells its transcript (Call), the observer (Observer) and
// the logs. It returns the call's context, which an observer's StartCall
// may extend.
func (st *callState) report(ctx context.Context, ev event) context.Context {
	c, call := st.c, st.call
	switch ev.kind {
	case callStarted:
		if c.observer != nil {
			ctx = c.observer.StartCall(ctx, call)
		}

	case admitted:
		// The observer reads admissions in the transcript (see Observer).
		// The request's onRateWait also hears of a cooldown the call is
		// about to wait out.
		adm := ev.adm
		call.Limiter = append(call.Limiter, LimiterWait{
			Before: len(call.Attempts) + 1, At: c.now(), Partition: st.partitionKey(),
			Wait: adm.Wait, Cooldown: adm.Cooldown, Refused: !adm.OK,
		})
		w := &call.Limiter[len(call.Limiter)-1]
		if w.Refused {
			w.Reason = ReasonLimiter
		}
		if st.onRateWait != nil && adm.OK && adm.Cooldown && adm.Wait > 0 {
			st.onRateWait(rateWait{method: st.method, path: st.path, until: w.At.Add(adm.Wait)})
		}
		if c.logger != nil && (w.Wait > 0 || w.Refused) {
			level, msg := slog.LevelDebug, "rail0: waiting for the rate limit"
			if w.Refused {
				level, msg = slog.LevelInfo, "rail0: not sent: the rate-limit wait does not fit the call's allowance or deadline"
			}
			c.logger.LogAttrs(ctx, level, msg, callAttrs(call,
				slog.Duration("wait", w.Wait), slog.Bool("cooldown", w.Cooldown))...)
		}

	case shut:
		// The transcript ends with the refusal. The observer reads it there
		// (EndCall), as it reads the limiter's.
		call.Limiter = append(call.Limiter, LimiterWait{
			Before: len(call.Attempts) + 1, At: c.now(), Partition: st.partitionKey(),
			Wait: ev.adm.Wait, Cooldown: true, Refused: true, Reason: ReasonKnownClosed,
		})
		if c.logger != nil {
			c.logger.LogAttrs(ctx, slog.LevelInfo, "rail0: not sent: the gateway said this rate limit is closed",
				callAttrs(call, slog.Duration("retry_after", ev.adm.Wait), slog.String("reason", string(ReasonKnownClosed)))...)
		}

	case attemptSent:
		// The attempt's entry opens in the transcript. The observer may add
		// its headers.
		call.Attempts = append(call.Attempts, Attempt{N: len(call.Attempts) + 1, Sent: c.now(), RequestBytes: len(st.requestBody)})
		if c.observer != nil {
			c.observer.SendAttempt(ctx, call, AttemptHeader{ev.req.Header.Set})
		}
		if c.wireLogging(ctx) {
			c.logWireRequest(ctx, st, ev.req.Header)
		}

	case answerRead:
		if c.wireLogging(ctx) {
			c.logWireResponse(ctx, st, st.status, st.header, st.body)
		}

	case attemptDecided:
		a := st.recordAttempt(ev)
		if a == nil {
			return ctx // no attempt is open
		}
		// One line at debug with its facts. One at info with the retry
		// decision, when the answer was a retry matter. Then the observer's
		// EndAttempt.
		if c.logger != nil {
			if c.logger.Enabled(ctx, slog.LevelDebug) {
				attrs := callAttrs(call,
					slog.Int("attempt", a.N),
					slog.Int("status", a.StatusCode),
					slog.Duration("duration", a.Duration),
					slog.String("request_id", a.RequestID),
					slog.Int("request_bytes", a.RequestBytes),
					slog.Int("response_bytes", a.ResponseBytes))
				if a.Err != "" {
					attrs = append(attrs, slog.String("error", a.Err))
				}
				c.logger.LogAttrs(ctx, slog.LevelDebug, "rail0: attempt", attrs...)
			}
			if a.Reason != "" {
				c.logDecision(ctx, call, a)
			}
			if a.Deprecation != nil {
				c.logDeprecation(ctx, call, a)
			}
		}
		if c.observer != nil {
			c.observer.EndAttempt(ctx, call, a)
		}

	case limiterDown:
		if c.logger != nil {
			c.logger.LogAttrs(ctx, slog.LevelWarn, ev.msg,
				callAttrs(call, slog.String("error", ev.err.Error()))...)
		}

	case callEnded:
		// The transcript closes and goes with what the call returns. What
		// the user must act on is logged at warn.
		call.Duration = c.now().Sub(call.Start)
		call.Outcome = outcomeOf(ev.err)
		if ev.err == nil {
			if ev.resp != nil {
				ev.resp.Call = call
				ev.resp.Attempts = len(call.Attempts)
			}
		} else {
			attachCall(ev.err, call)
			if c.logger != nil {
				c.logOutcome(ctx, call, ev.err)
			}
		}
		if c.observer != nil {
			c.observer.EndCall(ctx, call, ev.err)
		}
		if c.record != nil {
			c.record.add(call)
		}
	}
	return ctx
}

// recordAttempt completes the transcript's entry of the attempt that just
// came back. It adds what the attempt got and the decision taken. It
// returns nil when no attempt is open.
func (st *callState) recordAttempt(ev event) *Attempt {
	call, o, d := st.call, ev.o, ev.d
	if len(call.Attempts) == 0 {
		return nil
	}
	a := &call.Attempts[len(call.Attempts)-1]
	a.Duration = ev.now.Sub(a.Sent)
	a.StatusCode = o.status
	a.ResponseBytes = len(st.body)
	if o.status != 0 {
		a.RequestID = requestID(st.header)
		a.RateLimit = st.rateLimit
		a.Deprecation = st.deprecation
		if o.hasRetryAfter {
			a.RetryAfter = o.retryAfter
		}
	}
	if ev.failure != nil {
		a.Err = errorText(ev.failure)
	}
	if d.relevant {
		a.Retry, a.Reason = d.retry, d.reason
		if d.retry {
			a.Wait = d.wait
			a.ServerWait = o.hasRetryAfter && (o.status == http.StatusTooManyRequests || o.status == http.StatusServiceUnavailable)
		} else {
			a.Refused = isRefusal(d.reason)
		}
	}
	return a
}

// logDecision logs a retry decision at info: a retry, or a retryable
// failure returned instead. What the user must act on is logged at warn
// when the call ends.
func (c *Client) logDecision(ctx context.Context, call *Call, a *Attempt) {
	msg := "rail0: retrying"
	switch {
	case a.Reason == ReasonRetryOn429Off:
		msg = "rail0: rate limited; not retrying (WithRetryOn429 is off)"
	case !a.Retry:
		msg = "rail0: not retrying"
	}
	attrs := callAttrs(call,
		slog.Int("attempt", a.N),
		slog.Int("status", a.StatusCode),
		slog.Duration("wait", a.Wait),
		slog.Bool("will_retry", a.Retry),
		slog.String("reason", string(a.Reason)))
	if a.RetryAfter > 0 {
		attrs = append(attrs, slog.Duration("retry_after", a.RetryAfter))
	}
	if a.RequestID != "" {
		attrs = append(attrs, slog.String("request_id", a.RequestID))
	}
	if a.Err != "" {
		attrs = append(attrs, slog.String("error", a.Err))
	}
	c.logger.LogAttrs(ctx, slog.LevelInfo, msg, attrs...)
}

// logDeprecation logs, at warn, that the gateway deprecates the call's
// operation or will retire it. It logs once per operation
// (deprecationNotes), not on every call.
func (c *Client) logDeprecation(ctx context.Context, call *Call, a *Attempt) {
	op := call.Operation
	if op == "" {
		op = call.Method + " " + call.Route
	}
	if !c.deprecations.first(op) {
		return
	}
	d := a.Deprecation
	attrs := callAttrs(call, slog.String("operation", op), slog.Bool("deprecated", d.Deprecated))
	if !d.Date.IsZero() {
		attrs = append(attrs, slog.Time("deprecation", d.Date))
	}
	if !d.Sunset.IsZero() {
		attrs = append(attrs, slog.Time("sunset", d.Sunset))
	}
	if d.Link != "" {
		attrs = append(attrs, slog.String("link", d.Link))
	}
	c.logger.LogAttrs(ctx, slog.LevelWarn, "rail0: the gateway deprecates this operation; move off it before its sunset", attrs...)
}

// logOutcome logs, at warn, the failures the user must act on. One is a
// write whose outcome is unknown: read the resource before doing it again.
// The other is a redirect: the base URL is wrong or a proxy is in the way.
func (c *Client) logOutcome(ctx context.Context, call *Call, err error) {
	var msg string
	var apiErr *APIError
	switch {
	case call.Outcome == OutcomeUnknown:
		msg = "rail0: outcome unknown; read the resource before doing this again"
	case errors.As(err, &apiErr) && apiErr.StatusCode >= 300 && apiErr.StatusCode <= 399:
		msg = "rail0: redirect not followed; check the base URL"
	default:
		return
	}
	c.logger.LogAttrs(ctx, slog.LevelWarn, msg, callAttrs(call,
		slog.Int("attempts", len(call.Attempts)), slog.String("request_id", call.RequestID()))...)
}

// callAttrs opens every log line about a call with the same keys. One
// search on call_id then finds its attempts, limiter waits, retry decisions
// and outcome. One on label finds a view's calls.
func callAttrs(call *Call, more ...slog.Attr) []slog.Attr {
	attrs := make([]slog.Attr, 0, 4+len(more))
	attrs = append(attrs, slog.Uint64("call_id", call.ID), slog.String("method", call.Method), slog.String("path", call.Path))
	if call.Label != "" {
		attrs = append(attrs, slog.String("label", call.Label))
	}
	return append(attrs, more...)
}

// bearer asks the client's token source for a token.
//
// refused, when not empty, is the token a 401 just refused. It reaches the
// source in the context, as a read-only value (sessionRefusal). A
// tokenSource's Token drops that session. With renew, it then returns a
// token of a fresh one. Without renew, it returns at once without signing
// in, and the caller does not use that answer. Nothing else rides in the
// context. The answer is the token, which itself names the session.
func (c *Client) bearer(ctx context.Context, refused string, renew bool) (string, error) {
	if c.tokenSource == nil {
		return "", nil
	}
	if refused != "" {
		ctx = context.WithValue(ctx, sessionRefusalKey{}, sessionRefusal{token: refused, renew: renew})
	} else if n, ok := ctx.Value(sessionRefusalKey{}).(sessionRefusal); ok && n.token != "" {
		// ctx is that of a call made inside another client's token source,
		// after a 401 of its own. That refusal is not about this client.
		ctx = context.WithValue(ctx, sessionRefusalKey{}, sessionRefusal{})
	}
	tok, err := c.tokenSource(c.withCaller(ctx))
	if err != nil {
		if c.login != nil {
			return "", err // the client's own sign-in, which names itself
		}
		return "", fmt.Errorf("rail0: token source: %w", err)
	}
	if err := checkHeaderValue("token", tok); err != nil {
		return "", err
	}
	return tok, nil
}

// checkHeaderValue refuses a header value that net/http would not send: a
// control character such as CR or LF, or DEL. Such a call then fails at
// once with a *ValidationError, not as a transport error after retries.
func checkHeaderValue(field, v string) error {
	for i := 0; i < len(v); i++ {
		if b := v[i]; (b < ' ' && b != '\t') || b == 0x7f {
			return &ValidationError{Field: field, Reason: fmt.Sprintf("contains the control character %#04x, which cannot be sent in a header", b)}
		}
	}
	return nil
}

// resolve builds the absolute URL of a path relative to the base URL. The
// path's segments are already escaped by the caller (url.PathEscape).
func (c *Client) resolve(path string, query url.Values) string {
	u := c.baseStr + strings.TrimLeft(path, "/")
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	return u
}

// resolveShown is resolve with the query's values redacted, but for the
// keys shown (shownQuery). It is what the transcript, the logs and the
// observers see.
func (c *Client) resolveShown(path string, query url.Values) string {
	return c.baseStr + strings.TrimLeft(path, "/") + "?" + redactQuery(query, c.shownQuery)
}

// isNotSent reports whether a transport error proves the request never left
// the client. Either the connection could not be opened, or the name could
// not be resolved.
func isNotSent(err error) bool {
	var cut *attemptTimeoutError
	if errors.As(err, &cut) {
		return cut.notSent
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return true
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return true
	}
	return false
}

// isTimeout reports whether a transport failure was a timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// passthroughErrorHandler keeps the final response and error. The default
// handler would close the response and lose the status and Retry-After.
func passthroughErrorHandler(resp *http.Response, err error, _ int) (*http.Response, error) {
	return resp, err
}

// readBody reads and closes a response body. It replaces the body with
// http.NoBody, so retryablehttp's drain is a no-op. A success body larger
// than limit is a *ResponseTooLargeError. It is not read at all when its
// Content-Length says so. A success body that breaks off is an error. An
// error body is cut at maxErrorBody (or limit, if lower) and never fails.
func readBody(resp *http.Response, success bool, limit int64) ([]byte, error) {
	body := resp.Body
	resp.Body = http.NoBody
	if body == nil {
		return nil, nil
	}
	defer body.Close()
	if !success {
		limit = min(limit, maxErrorBody)
	} else if resp.ContentLength > limit {
		return nil, &ResponseTooLargeError{Limit: limit, ContentLength: resp.ContentLength}
	}
	var buf bytes.Buffer
	if n := resp.ContentLength; n > 0 && n <= limit {
		buf.Grow(int(n) + 1)
	}
	_, err := buf.ReadFrom(io.LimitReader(body, limit+1))
	b := buf.Bytes()
	if int64(len(b)) > limit {
		if success {
			// Only the start is kept, for the error and the wire log.
			return bytes.Clone(b[:min(limit, maxWireBody)]), &ResponseTooLargeError{Limit: limit, ContentLength: resp.ContentLength}
		}
		b = b[:limit]
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
// write the caller gave no key. It is generated once per call and is the
// same on every attempt.
func newIdempotencyKey() string { return rand.Text() }
