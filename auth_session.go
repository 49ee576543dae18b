package rail0

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
)

// This file is the session of a client created WithSigner. tokenSource
// signs in when a call needs a token. It shares one sign-in among the
// calls that wait for it, and drops a session the gateway refused.

// defaultRefreshMargin is how long before a session's expires_at a
// tokenSource signs in again. It covers the time a request takes to reach
// the gateway plus clock skew.
const defaultRefreshMargin = 2 * time.Minute

// tokenSourceOption configures loginTokenSource. These are the tests'
// seams.
type tokenSourceOption func(*tokenSource) error

// withRefreshMargin sets how long before expires_at the session is
// replaced (default defaultRefreshMargin). When a session lives less than
// twice the margin, half its lifetime is used instead. So a short-lived
// session is not replaced on every call.
func withRefreshMargin(d time.Duration) tokenSourceOption {
	return func(ts *tokenSource) error {
		if d < 0 {
			return fmt.Errorf("rail0: withRefreshMargin: must not be negative, got %v", d)
		}
		ts.margin = d
		return nil
	}
}

// withSessionClock sets the clock used to judge expiry; it is the tests'
// seam. The default is the gateway's clock, as the AuthService's client
// learned it (see Client.ClockOffset).
func withSessionClock(now func() time.Time) tokenSourceOption {
	return func(ts *tokenSource) error {
		if now == nil {
			return errors.New("rail0: withSessionClock: nil clock")
		}
		ts.now = now
		return nil
	}
}

// tokenSource keeps the session of a client created WithSigner alive. It
// signs in on first use and hands out the cached token. It signs in again
// once the session is within the refresh margin of expires_at. So a
// long-running job never sends an expired token. It is safe for concurrent
// use. Concurrent callers that find no fresh session share one sign-in.
//
// The gateway may answer 401 to a call the client sent with one of its
// sessions: the session was revoked. The client then drops that session,
// signs in again and sends the call once more (see do).
//
// The token is never logged or put in an error.
type tokenSource struct {
	auth   *AuthService
	signer Signer
	params SignIn
	margin time.Duration
	now    func() time.Time

	mu       sync.Mutex // guards session, obtained and inflight
	session  *Session   // never modified once stored: callers get copies
	obtained time.Time
	inflight *loginCall
}

// loginCall is one sign-in shared by the callers that wait for it.
type loginCall struct {
	done    chan struct{}
	session *Session
	err     error

	// wait is the latest wait for a rate limit the sign-in started: a
	// 429's backoff, or a cooldown. A caller whose own settings would not
	// wait that long then need not wait for the sign-in either (see
	// await). changed is closed, and replaced, whenever wait changes. Both
	// are guarded by tokenSource.mu.
	wait    rateWait
	changed chan struct{}
	// ended is when the sign-in returned: a 429 it got came before.
	ended time.Time
}

// rateWait is a wait for a rate limit that a call has started. It says on
// which request, and until when.
type rateWait struct {
	method, path string
	until        time.Time
}

// refusal is the 429 a caller gets that does not wait. The wait is on the
// request of w, with left to go. The caller's own request was not sent.
func (w rateWait) refusal(left time.Duration) *APIError {
	return notSentError(w.method, w.path, left,
		"not sent: the sign-in this call needs is waiting out a rate limit for longer than the call may wait")
}

// sessionRefusal is what a client tells its token source after a 401. It
// holds the token the gateway refused. renew says the client wants a
// token of a new session now. Otherwise it wants only the refused one
// dropped. The call that got the 401 is then not sent again. The next call
// signs in.
//
// It reaches the source in the context given to the source, as a
// read-only value. A token names its session. So the source needs no more
// to drop that one only.
//
// The zero value tells nothing. bearer sets it over a refusal the context
// inherited from another client's call, which is not for this client's
// source. (A WithTokenSource function may ask another rail0 client for its
// token.)
type sessionRefusal struct {
	token string
	renew bool
}

type sessionRefusalKey struct{}

// loginTokenSource returns a tokenSource that signs in with signer through
// auth. params place its messages. It does no I/O until its first use.
func loginTokenSource(auth *AuthService, signer Signer, params SignIn, opts ...tokenSourceOption) (*tokenSource, error) {
	if auth == nil || auth.client == nil {
		return nil, &ValidationError{Field: "auth", Reason: "must not be nil"}
	}
	if signer == nil {
		return nil, &ValidationError{Field: "signer", Reason: "must not be nil"}
	}
	if _, err := auth.message(params, StatementLogin, signer.Address(), "00000000"); err != nil {
		return nil, err
	}
	ts := &tokenSource{
		auth:   auth,
		signer: signer,
		params: params,
		margin: defaultRefreshMargin,
		now:    auth.client.gatewayNow, // expires_at is on the gateway's clock
	}
	for _, opt := range opts {
		if opt == nil {
			return nil, errors.New("rail0: loginTokenSource: nil option")
		}
		if err := opt(ts); err != nil {
			return nil, err
		}
	}
	return ts, nil
}

// Token returns a bearer token valid for at least the refresh margin,
// signing in first when needed.
//
// A client calls it after the gateway answered 401 to a call sent with one
// of its tokens. It then first drops that token's session, and only that
// one. A newer session another call obtained is kept.
func (ts *tokenSource) Token(ctx context.Context) (string, error) {
	if n, ok := ctx.Value(sessionRefusalKey{}).(sessionRefusal); ok && n.token != "" {
		ts.refused(n.token)
		if !n.renew {
			return "", nil
		}
	}
	s, err := ts.current(ctx)
	if err != nil {
		return "", err
	}
	return s.Token(), nil
}

// Session returns a copy of the current session. It signs in first when
// there is none, or when it is within the refresh margin of its expiry.
// The copy is deep: writing through its pointer fields does not change the
// cached session.
//
// When another caller's sign-in is under way, Session waits for it (or for
// ctx). That sign-in may fail for its caller's reasons alone:
//   - its caller's context cut it short;
//   - its 429 was refused: the wait did not fit its caller's allowance or
//     deadline, but fits this caller's. Call.NotRetried says so.
//
// The waiting callers then sign in again with their own context and
// allowance. They do not inherit a failure about another caller's budget.
func (ts *tokenSource) Session(ctx context.Context) (*Session, error) {
	s, err := ts.current(ctx)
	if err != nil {
		return nil, err
	}
	return copySession(s), nil
}

// current returns the cached session, which is not to be modified. It
// signs in first when needed; see Session. Its errors say "rail0:
// sign-in".
func (ts *tokenSource) current(ctx context.Context) (*Session, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, signInError(err)
		}
		ts.mu.Lock()
		if s := ts.session; s != nil && ts.fresh(s) {
			ts.mu.Unlock()
			return s, nil
		}
		if call := ts.inflight; call != nil {
			ts.mu.Unlock()
			if err := ts.await(ctx, call); err != nil {
				return nil, err
			}
			if call.err == nil {
				return call.session, nil
			}
			if ctx.Err() == nil && (isContextErr(call.err) || ts.ownBudgetAdmits(ctx, call.err)) {
				if err := ts.waitOutLeader(ctx, call); err != nil {
					return nil, err
				}
				continue // the leader gave up or ran out of budget; lead a sign-in ourselves
			}
			return nil, call.err
		}
		call := &loginCall{done: make(chan struct{}), changed: make(chan struct{})}
		ts.inflight = call
		ts.mu.Unlock()

		publish := func(w rateWait) {
			ts.mu.Lock()
			call.wait = w
			close(call.changed)
			call.changed = make(chan struct{})
			ts.mu.Unlock()
		}
		session, err := ts.auth.login(ctx, ts.signer, ts.params, publish)
		if err != nil {
			// A sign-in whose answer was lost spent a nonce at most. (The
			// connection broke after POST /auth was written, say.) It
			// maybe made a session nobody holds. There is nothing to look
			// up before signing in again. The callers it was for sent
			// nothing, so it is no unknown outcome of theirs.
			var unknown *OutcomeUnknownError
			if errors.As(err, &unknown) {
				err = unknown.Err // what failed, with the sign-in's transcript
			}
			err = signInError(err)
		}

		ts.mu.Lock()
		ts.inflight = nil
		call.session, call.err, call.ended = session, err, ts.auth.client.now()
		if err == nil {
			ts.session = session
			ts.obtained = ts.now()
		}
		ts.mu.Unlock()
		close(call.done)
		if err != nil {
			return nil, err
		}
		return session, nil
	}
}

// signInError is err, a failure to sign in, as the callers of a client
// created WithSigner get it.
func signInError(err error) error { return &signInFailure{err} }

// signInFailure is a failure of a client's own sign-in. Its text names the
// sign-in once, then says what failed: "rail0: sign-in: POST /auth/nonces:
// 429 ...". It has no second "rail0:" for the SDK error it wraps.
// errors.Is and errors.As reach that error.
type signInFailure struct{ err error }

// Error names the sign-in once, then what failed.
func (e *signInFailure) Error() string {
	return "rail0: sign-in: " + strings.TrimPrefix(e.err.Error(), "rail0: ")
}

// Unwrap returns the error the sign-in failed with.
func (e *signInFailure) Unwrap() error { return e.err }

// await waits for call, a sign-in another caller leads, to end (nil), or
// for ctx. That sign-in may wait out a rate limit. A caller whose own
// settings would not wait so long does not wait for it. (Its view does not
// retry 429s, or the wait does not fit its allowance or deadline.) It gets
// at once the 429 that its own call would have got:
//   - NotSent, since its request never left;
//   - RetryAfter the wait that is left.
//
// A caller whose context ends while that wait lasts gets the same 429. It
// matches ctx's error too.
func (ts *tokenSource) await(ctx context.Context, call *loginCall) error {
	for {
		ts.mu.Lock()
		w, changed := call.wait, call.changed
		ts.mu.Unlock()
		left := w.until.Sub(ts.auth.client.now())
		if left > 0 && !ts.ownBudgetWaits(ctx, left) {
			return signInError(w.refusal(left))
		}
		select {
		case <-call.done:
			return nil
		case <-changed:
		case <-ctx.Done():
			if left := w.until.Sub(ts.auth.client.now()); left > 0 {
				return signInError(w.refusal(left).withCause(ctx.Err()))
			}
			return signInError(ctx.Err())
		}
	}
}

// waitOutLeader waits, before a caller signs in again after the sign-in
// it waited for failed, until that sign-in's 429 may be retried. Signing in
// again is that request's retry. It waits:
//   - min(Retry-After, RetryAfterCap) after the 429 arrived, plus additive
//     jitter; without a usable Retry-After, a guessed wait (guessWait);
//   - and no less than the rate-limit wait the sign-in was in when it
//     ended (loginCall.wait), which the retry would have waited out.
//
// A caller whose context ends first gets the 429, not sent, matching ctx's
// error too.
func (ts *tokenSource) waitOutLeader(ctx context.Context, call *loginCall) error {
	c := ts.auth.client.forCaller(ctx)
	ts.mu.Lock()
	w := call.wait // the leader's last rate-limit wait; it publishes no more
	ts.mu.Unlock()
	var apiErr *APIError
	if errors.As(call.err, &apiErr) && apiErr.StatusCode == http.StatusTooManyRequests {
		from := call.ended
		if a := lastAttempt(apiErr.Call); a != nil && a.StatusCode == http.StatusTooManyRequests && !apiErr.NotSent {
			from = a.Sent.Add(a.Duration)
		}
		var d time.Duration
		if apiErr.RetryAfter > 0 {
			d, _ = serverWait(apiErr.RetryAfter, c.policy.retryAfterCap, maxDuration, c.rand())
		} else if !apiErr.NotSent {
			d, _ = guessWait(c.policy.base, c.policy.retryAfterCap, 0, maxDuration, c.rand())
		}
		if until := from.Add(d); until.After(w.until) {
			w = rateWait{method: apiErr.Method, path: apiErr.Path, until: until}
		}
	}
	left := w.until.Sub(c.now())
	if left <= 0 {
		return nil
	}
	refusal := func() *APIError { return w.refusal(max(w.until.Sub(c.now()), 0)) }
	if !ts.ownBudgetWaits(ctx, left) {
		return signInError(refusal()) // a caller that would not wait that long: at once
	}
	if !sleepCtx(ctx, left) {
		return signInError(refusal().withCause(ctx.Err()))
	}
	return nil
}

// lastAttempt is call's last attempt; nil when it has none.
func lastAttempt(call *Call) *Attempt {
	if call == nil || len(call.Attempts) == 0 {
		return nil
	}
	return &call.Attempts[len(call.Attempts)-1]
}

// ownBudgetAdmits reports whether a sign-in led by another caller failed
// only for that caller's settings or budget. It came back with a 429 whose
// wait this caller would take (see ownBudgetWaits). That wait did not fit
// that caller's allowance or deadline, or that caller's view does not
// retry 429s.
func (ts *tokenSource) ownBudgetAdmits(ctx context.Context, err error) bool {
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests {
		return false
	}
	return ts.ownBudgetWaits(ctx, apiErr.RetryAfter)
}

// ownBudgetWaits reports whether a fresh call with the settings of ctx's
// caller (see Client.With) would wait out a 429 for wait. Its view must
// retry 429s, and wait must fit its allowance and its deadline.
func (ts *tokenSource) ownBudgetWaits(ctx context.Context, wait time.Duration) bool {
	c := ts.auth.client.forCaller(ctx)
	return c.policy.retryOn429 && wait <= c.policy.maxRetryWait && wait < timeLeft(ctx, c.now())
}

// refused drops the session whose token the gateway answered 401: it was
// revoked. A newer session is kept: another call already signed in again.
func (ts *tokenSource) refused(token string) {
	ts.mu.Lock()
	if ts.session != nil && ts.session.Token() == token {
		ts.session = nil
	}
	ts.mu.Unlock()
}

// copySession returns a deep copy that the caller may modify without
// touching the cached session.
func copySession(s *Session) *Session {
	c := *s
	if s.AccountID != nil {
		v := *s.AccountID
		c.AccountID = &v
	}
	if s.Name != nil {
		v := *s.Name
		c.Name = &v
	}
	if s.Response != nil {
		c.Response = copyResponse(s.Response)
	}
	return &c
}

// Invalidate drops the cached session, so the next call signs in again.
// Logout calls it. A 401 drops only the session it refused.
func (ts *tokenSource) Invalidate() {
	ts.mu.Lock()
	ts.session = nil
	ts.mu.Unlock()
}

// String describes the token source without any token.
func (ts *tokenSource) String() string {
	return fmt.Sprintf("rail0.tokenSource{address: %s, margin: %s}", ts.signer.Address(), ts.margin)
}

// Format implements fmt.Formatter so that every verb prints String. %d or
// %x would otherwise walk the struct's fields.
func (ts *tokenSource) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, ts.String()) }

// LogValue implements slog.LogValuer without any token.
func (ts *tokenSource) LogValue() slog.Value {
	return slog.GroupValue(slog.String("address", ts.signer.Address()), slog.Duration("margin", ts.margin))
}

// fresh reports whether s can still be handed out. now must be before its
// expiry minus the refresh margin. The margin is at most half the
// session's lifetime.
func (ts *tokenSource) fresh(s *Session) bool {
	margin := ts.margin
	if half := max(s.ExpiresAt.Sub(ts.obtained)/2, 0); half < margin {
		margin = half
	}
	return ts.now().Before(s.ExpiresAt.Add(-margin))
}
