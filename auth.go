package rail0

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/rail0/rail0-go/internal/secret"
)

// Signer is an Ethereum account: the one interface through which the SDK
// signs sign-in messages, payment authorizations and transactions. It signs
// 32-byte digests only; the SDK builds every digest itself from artifacts it
// has checked against the caller's request (see VerifyPayload and
// VerifyTransaction), so a signer never sees, and cannot be tricked into
// signing, anything else. Package signing provides one backed by a private
// key; an HSM or KMS adapter implements the same two methods. The root
// package does not import go-ethereum.
//
// Implementations must be safe for concurrent use and must never put key
// material in an error.
type Signer interface {
	// Address returns the account's address, 0x + 40 hex digits (EIP-55
	// checksummed form preferred: SIWE messages carry it as given).
	Address() string
	// SignDigest signs digest as is (without hashing it again) and returns
	// 65 bytes r ‖ s ‖ v: r and s big-endian, s in the lower half of the
	// curve order, v the recovery id (0/1 or 27/28). The SDK checks that
	// the signature recovers to Address before using it.
	SignDigest(ctx context.Context, digest [32]byte) ([]byte, error)
}

// Nonce is a single-use sign-in nonce.
type Nonce struct {
	Nonce     string    `json:"nonce"`
	ExpiresAt time.Time `json:"expires_at"`
	// Response is the metadata of the call that returned this value; nil
	// on a value nested in another call's result.
	Response *Response `json:"-"`
}

// Session is a signed-in session. Its bearer token is read with Token and
// is never printed: String, Format (every fmt verb) and LogValue show the
// address, account and expiry only, and the token is held where no
// reflection-based printer or encoder reaches it, so a Session kept in an
// unexported field of the application's own struct (which fmt and slog's
// text handler walk field by field, without calling those methods), or
// encoded with encoding/json, encoding/xml or gob, shows no token either.
type Session struct {
	// token is the bearer JWT (Authorization: Bearer <token>).
	token *secret.Value
	// Address is the signed-in address.
	Address string `json:"address"`
	// AccountID is the merchant account of the address, nil for an
	// account-less session (typically a buyer): such a session can act on
	// its own payments but gets 403 account_required from account
	// endpoints such as analytics, wallets and webhooks.
	AccountID *string `json:"account_id"`
	// Name is the account's name, nil for an account-less session.
	Name *string `json:"name"`
	// ExpiresAt is when the token stops working. There is no refresh call:
	// sign in again before then (a client created WithSigner does).
	ExpiresAt time.Time `json:"expires_at"`
	// Response is the metadata of the call that returned this value; nil
	// on a value nested in another call's result.
	Response *Response `json:"-"`
}

// HasAccount reports whether the session belongs to a merchant account.
func (s *Session) HasAccount() bool { return s != nil && s.AccountID != nil && *s.AccountID != "" }

// String describes the session without its token.
func (s Session) String() string {
	account := "none"
	if s.AccountID != nil {
		account = *s.AccountID
	}
	return fmt.Sprintf("rail0.Session{address: %s, account: %s, expires_at: %s, token: [redacted]}",
		s.Address, account, s.ExpiresAt.UTC().Format(time.RFC3339))
}

// Format implements fmt.Formatter so that every verb prints String: a
// struct printed with %d or %x would otherwise show the token's bytes.
func (s Session) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, s.String()) }

// Token returns the bearer JWT to send as Authorization: Bearer <token>.
// It is the one way to read it: persist it explicitly if you must.
func (s Session) Token() string { return s.token.Reveal() }

// UnmarshalJSON decodes the gateway's session answer ({"token", "address",
// "account_id", "name", "expires_at"}), keeping the token behind a value
// no printer can open. Encoding a Session writes no token.
func (s *Session) UnmarshalJSON(data []byte) error {
	type fields Session // the fields without the methods, so this is not called again
	var v struct {
		fields
		Token string `json:"token"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*s = Session(v.fields)
	s.token = secret.New(v.Token)
	return nil
}

// LogValue implements slog.LogValuer without the token.
func (s Session) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("address", s.Address), slog.Time("expires_at", s.ExpiresAt)}
	if s.AccountID != nil {
		attrs = append(attrs, slog.String("account_id", *s.AccountID))
	}
	return slog.GroupValue(attrs...)
}

var createNonce = declare(operation{"createNonce", "POST", "/auth/nonces", opRepeatable, "a second nonce is issued and expires unused"})

// CreateNonce asks for a single-use sign-in nonce.
//
// POST /auth/nonces — public (sent without a token, so it never calls the
// client's token source).
func (s *AuthService) CreateNonce(ctx context.Context) (*Nonce, error) {
	return s.createNonce(ctx, nil)
}

// createNonce is CreateNonce, telling onRateWait (when not nil) of every
// wait for a rate limit it starts: see tokenSource.await.
func (s *AuthService) createNonce(ctx context.Context, onRateWait func(rateWait)) (*Nonce, error) {
	var n Nonce
	resp, err := s.client.do(ctx, &request{op: createNonce, anonymous: true, onRateWait: onRateWait}, &n)
	if err != nil {
		return nil, err
	}
	n.Response = resp
	return &n, nil
}

var verifySiwe = declare(operation{"verifySiwe", "POST", "/auth", opOnce, "consumes the nonce: a repeat is refused with nonce_used"})

// AuthVerifyParams is a signed SIWE message.
type AuthVerifyParams struct {
	// Message is the exact text that was signed (SIWEMessage.String).
	Message string `json:"message"`
	// Signature is its EIP-191 signature as 0x hex.
	Signature string `json:"signature"`
}

// Verify trades a signed SIWE message for a session. A client created
// WithSigner builds, signs and verifies the message by itself (see
// Client.Session); Verify is for a message signed elsewhere.
//
// POST /auth — public (sent without a token). A refused proof is a 422
// *APIError with code invalid_siwe, invalid_nonce, nonce_used,
// signer_mismatch or siwe_purpose_mismatch.
func (s *AuthService) Verify(ctx context.Context, params AuthVerifyParams) (*Session, error) {
	return s.verify(ctx, params, nil)
}

// verify is Verify, telling onRateWait (when not nil) of every wait for a
// rate limit it starts: see tokenSource.await.
func (s *AuthService) verify(ctx context.Context, params AuthVerifyParams, onRateWait func(rateWait)) (*Session, error) {
	if params.Message == "" {
		return nil, &ValidationError{Field: "message", Reason: "is required"}
	}
	if params.Signature == "" {
		return nil, &ValidationError{Field: "signature", Reason: "is required"}
	}
	var sess Session
	r := &request{op: verifySiwe, body: params, anonymous: true, secretAnswer: true, onRateWait: onRateWait}
	r.identify = func() string { return notASession(&sess) }
	resp, err := s.client.do(ctx, r, &sess)
	if err != nil {
		return nil, err
	}
	sess.Response = resp
	return &sess, nil
}

var logout = declare(operation{"logout", "POST", "/auth/logout", opOnce, "a repeat with the revoked token is refused with 401"})

// Logout revokes the token the client sends. It only revokes that token;
// other tokens of the same address stay valid.
//
// Revoked false means the gateway could not store the revocation and the
// token keeps working until it expires: discard it and treat it as exposed.
// A client created WithSigner drops its session once Logout is answered,
// revoked or not, and its next call signs in again. A 401 to Logout itself
// is returned as it is: the session is already refused.
//
// POST /auth/logout — any session.
func (s *AuthService) Logout(ctx context.Context) (*AuthLogoutResult, error) {
	var out AuthLogoutResult
	resp, err := s.client.do(ctx, &request{op: logout, keep401: true}, &out)
	if err != nil {
		return nil, err
	}
	if s.client.login != nil {
		s.client.login.Invalidate()
	}
	out.Response = resp
	return &out, nil
}

// AuthLogoutResult is the answer to Logout.
type AuthLogoutResult struct {
	// Revoked is false when the gateway could not store the revocation.
	Revoked bool `json:"revoked"`
	// Response is the metadata of the call.
	Response *Response `json:"-"`
}

// SignIn says where the SIWE messages a client signs are used: its own
// sign-in (WithSigner) and the wallet proofs it builds (Auth.WalletProof).
// Zero fields take defaults from the client's base URL and the gateway's
// usual chain policy, which suit a client talking to the gateway directly;
// set them with WithSignIn for a gateway that accepts another domain or
// follows another sign-in chain.
type SignIn struct {
	// Domain is the bare host the gateway accepts; default: the base
	// URL's host name without port.
	Domain string
	// URI is the origin; default: the base URL's scheme and host (with
	// port, if any).
	URI string
	// ChainID follows the gateway's sign-in chain policy; default
	// DefaultSIWEChainID (1).
	ChainID int64
}

// message builds and validates the SIWE message for statement, signed by
// address with nonce at now.
func (s *AuthService) message(p SignIn, statement, address, nonce string) (SIWEMessage, error) {
	base := s.client.base
	if p.Domain == "" {
		p.Domain = base.Hostname()
	}
	if p.URI == "" {
		p.URI = (&url.URL{Scheme: base.Scheme, Host: base.Host}).String()
	}
	if p.ChainID == 0 {
		p.ChainID = DefaultSIWEChainID
	}
	m := SIWEMessage{
		Domain:    p.Domain,
		Address:   address,
		Statement: statement,
		URI:       p.URI,
		ChainID:   p.ChainID,
		Nonce:     nonce,
		IssuedAt:  s.client.gatewayNow().UTC().Truncate(time.Second), // the gateway judges it by its clock
	}
	return m, m.Validate()
}

// signedMessage runs nonce → message → signature and returns the signer's
// address, the message text and its signature, with the nonce call's
// metadata. onRateWait, when not nil, hears of the nonce call's waits for
// a rate limit.
func (s *AuthService) signedMessage(ctx context.Context, signer Signer, p SignIn, statement string, onRateWait func(rateWait)) (*WalletProof, error) {
	if signer == nil {
		return nil, &ValidationError{Field: "signer", Reason: "must not be nil"}
	}
	addr := signer.Address()
	// Check the parameters with a well-formed dummy nonce before spending
	// a real one on them.
	if _, err := s.message(p, statement, addr, "00000000"); err != nil {
		return nil, err
	}
	n, err := s.createNonce(ctx, onRateWait)
	if err != nil {
		return nil, err
	}
	m, err := s.message(p, statement, addr, n.Nonce)
	if err != nil {
		return nil, err
	}
	msg := m.String()
	sig, err := signMessage(ctx, signer, msg)
	if err != nil {
		return nil, fmt.Errorf("rail0: signing the SIWE message: %w", err)
	}
	return &WalletProof{Address: addr, Message: msg, Signature: sig, Response: n.Response}, nil
}

// login signs in with Ethereum: it asks for a nonce, builds the login
// message (StatementLogin) for signer's address, has signer sign it, and
// verifies it, returning the session. onRateWait, when not nil, hears of
// every wait for a rate limit its two calls start.
//
// POST /auth/nonces, then POST /auth — public.
func (s *AuthService) login(ctx context.Context, signer Signer, params SignIn, onRateWait func(rateWait)) (*Session, error) {
	signed, err := s.signedMessage(ctx, signer, params, StatementLogin, onRateWait)
	if err != nil {
		return nil, err
	}
	return s.verify(ctx, AuthVerifyParams{Message: signed.Message, Signature: signed.Signature}, onRateWait)
}

// WalletProof is a signed SIWE proof that the holder of Address controls it,
// as Wallets.Create needs to register the wallet. It is single-use (its
// nonce is) and expires with its nonce.
type WalletProof struct {
	Address   string `json:"address"`
	Message   string `json:"message"`
	Signature string `json:"signature"`
	// Response is the metadata of the nonce call WalletProof made; it is
	// never sent.
	Response *Response `json:"-"`
}

// AuthWalletProofParams names the wallet whose ownership WalletProof
// proves.
type AuthWalletProofParams struct {
	// Wallet signs the proof: the wallet being registered, which may
	// differ from the client's signer.
	Wallet Signer
}

// WalletProof builds the ownership proof of params.Wallet for
// Wallets.Create: a fresh nonce, a message with StatementAddWallet, where
// the client's sign-in messages are used (WithSignIn), and the wallet's
// signature. The wallet may differ from the session's address; a merchant
// account can own several.
//
// POST /auth/nonces — public.
func (s *AuthService) WalletProof(ctx context.Context, params AuthWalletProofParams) (*WalletProof, error) {
	if params.Wallet == nil {
		return nil, &ValidationError{Field: "wallet", Reason: "is required: the signer of the wallet to register"}
	}
	return s.signedMessage(ctx, params.Wallet, s.client.signIn, StatementAddWallet, nil)
}

// defaultRefreshMargin is how long before a session's expires_at a
// tokenSource signs in again. It covers the time a request takes to reach
// the gateway plus clock skew.
const defaultRefreshMargin = 2 * time.Minute

// tokenSourceOption configures loginTokenSource; the tests' seams.
type tokenSourceOption func(*tokenSource) error

// withRefreshMargin sets how long before expires_at the session is
// replaced (default defaultRefreshMargin). When a session lives less than
// twice the margin, half its lifetime is used instead, so a short-lived
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

// withSessionClock sets the clock used to judge expiry (default: the
// gateway's clock as the AuthService's client learned it; see
// Client.ClockOffset); the tests' seam.
func withSessionClock(now func() time.Time) tokenSourceOption {
	return func(ts *tokenSource) error {
		if now == nil {
			return errors.New("rail0: withSessionClock: nil clock")
		}
		ts.now = now
		return nil
	}
}

// tokenSource keeps the session of a client created WithSigner alive: it
// signs in on first use, hands out the cached token, and signs in again
// once the session is within the refresh margin of expires_at, so a
// long-running job never sends an expired token. It is safe for concurrent
// use; concurrent callers that find no fresh session share one sign-in.
//
// A call that the client sends with one of its sessions and that the
// gateway answers 401 (the session was revoked) makes the client drop that
// session, sign in again and send the call once more: see do.
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

	// wait is the latest wait for a rate limit the sign-in started (a
	// 429's backoff, or a cooldown), so that a caller whose own settings
	// would not wait that long need not wait for the sign-in either (see
	// await); changed is closed, and replaced, whenever wait changes. Both
	// are guarded by tokenSource.mu.
	wait    rateWait
	changed chan struct{}
}

// rateWait is a wait for a rate limit that a call has started: on which
// request, and until when.
type rateWait struct {
	method, path string
	until        time.Time
}

// refusal is the 429 a caller gets that does not wait, for a wait on the
// request of w with left to go: its own request was not sent.
func (w rateWait) refusal(left time.Duration) *APIError {
	return notSentError(w.method, w.path, left,
		"not sent: the sign-in this call needs is waiting out a rate limit for longer than the call may wait")
}

// sessionRefusal is what a client tells its token source after a 401:
// the token the gateway refused, and whether the client wants a token of a
// new session now (renew) or only the refused one dropped (the call that
// got the 401 is not sent again; the next call signs in). It reaches the
// source in the context given to the source, as a read-only value. A
// token names its session, so the source needs no more to drop that one
// only. The zero value tells nothing: bearer sets it over a refusal the
// context inherited from another client's call (a WithTokenSource function
// that asks another rail0 client for its token), which is not for this
// client's source.
type sessionRefusal struct {
	token string
	renew bool
}

type sessionRefusalKey struct{}

// loginTokenSource returns a tokenSource that signs in with signer through
// auth, its messages placed by params. It does no I/O until its first use.
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
// Called by a client after the gateway answered 401 to a call sent with one
// of its tokens, it first drops that token's session (and only that one: a
// newer session another call obtained is kept).
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

// Session returns a copy of the current session, signing in first when
// there is none or it is within the refresh margin of its expiry. The copy
// is deep: writing through its pointer fields does not change the cached
// session.
//
// When another caller's sign-in is under way, Session waits for it (or for
// ctx). If that sign-in was cut short by its caller's context, or its 429
// was refused because the wait did not fit its caller's allowance or
// deadline (Call.NotRetried says so) while it fits this caller's, the waiting
// callers sign in again with their own context and allowance instead of
// inheriting a failure that was about another caller's budget.
func (ts *tokenSource) Session(ctx context.Context) (*Session, error) {
	s, err := ts.current(ctx)
	if err != nil {
		return nil, err
	}
	return copySession(s), nil
}

// current returns the cached session (not to be modified), signing in
// first when needed; see Session. Its errors say "rail0: sign-in".
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
			// A sign-in whose answer was lost (the connection broke after
			// POST /auth was written) spent a nonce at most, and maybe
			// made a session nobody holds: nothing to look up before
			// signing in again. The callers it was for sent nothing, so
			// it is no unknown outcome of theirs.
			var unknown *OutcomeUnknownError
			if errors.As(err, &unknown) {
				err = unknown.Err // what failed, with the sign-in's transcript
			}
			err = signInError(err)
		}

		ts.mu.Lock()
		ts.inflight = nil
		call.session, call.err = session, err
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

// signInFailure is a failure of a client's own sign-in: its text names the
// sign-in once, then says what failed ("rail0: sign-in: POST /auth/nonces:
// 429 ..."), without a second "rail0:" for the SDK error it wraps; errors.Is
// and errors.As reach that error.
type signInFailure struct{ err error }

func (e *signInFailure) Error() string {
	return "rail0: sign-in: " + strings.TrimPrefix(e.err.Error(), "rail0: ")
}

func (e *signInFailure) Unwrap() error { return e.err }

// await waits for call, a sign-in another caller leads, to end (nil), or
// for ctx. While that sign-in waits out a rate limit, a caller whose own
// settings would not wait so long (its view does not retry 429s, or the
// wait does not fit its allowance or deadline) does not wait for it: it
// gets at once the 429 that its own call would have got, NotSent (its
// request never left), RetryAfter the wait that is left. A caller whose
// context ends while that wait lasts gets the same 429, matching ctx's
// error too.
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

// ownBudgetAdmits reports whether a sign-in led by another caller failed
// only for that caller's settings or budget: it came back with a 429 (its
// wait did not fit that caller's allowance or deadline, or that caller's
// view does not retry 429s) whose wait this caller would take (see
// ownBudgetWaits).
func (ts *tokenSource) ownBudgetAdmits(ctx context.Context, err error) bool {
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests {
		return false
	}
	return ts.ownBudgetWaits(ctx, apiErr.RetryAfter)
}

// ownBudgetWaits reports whether a fresh call with the settings of ctx's
// caller (see Client.With) would wait out a 429 for wait: its view retries
// 429s, and wait fits its allowance and its deadline.
func (ts *tokenSource) ownBudgetWaits(ctx context.Context, wait time.Duration) bool {
	c := ts.auth.client.forCaller(ctx)
	return c.policy.retryOn429 && wait <= c.policy.maxRetryWait && wait < timeLeft(ctx, c.now())
}

// refused drops the session whose token the gateway answered 401: it was
// revoked. A newer session (another call already signed in again) is
// kept.
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
		r := *s.Response
		r.Header = s.Response.Header.Clone()
		c.Response = &r
	}
	return &c
}

// Invalidate drops the cached session, so the next call signs in again
// (after Logout; a 401 drops only the session it refused).
func (ts *tokenSource) Invalidate() {
	ts.mu.Lock()
	ts.session = nil
	ts.mu.Unlock()
}

// String describes the token source without any token.
func (ts *tokenSource) String() string {
	return fmt.Sprintf("rail0.tokenSource{address: %s, margin: %s}", ts.signer.Address(), ts.margin)
}

// Format implements fmt.Formatter so that every verb prints String: %d or
// %x would otherwise walk the struct's fields.
func (ts *tokenSource) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, ts.String()) }

// LogValue implements slog.LogValuer without any token.
func (ts *tokenSource) LogValue() slog.Value {
	return slog.GroupValue(slog.String("address", ts.signer.Address()), slog.Duration("margin", ts.margin))
}

// fresh reports whether s can still be handed out: now is before its
// expiry minus the refresh margin (at most half the session's lifetime).
func (ts *tokenSource) fresh(s *Session) bool {
	margin := ts.margin
	if half := max(s.ExpiresAt.Sub(ts.obtained)/2, 0); half < margin {
		margin = half
	}
	return ts.now().Before(s.ExpiresAt.Add(-margin))
}
