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
	var n Nonce
	resp, err := s.client.do(ctx, &request{op: createNonce, anonymous: true}, &n)
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
	if params.Message == "" {
		return nil, &ValidationError{Field: "message", Reason: "is required"}
	}
	if params.Signature == "" {
		return nil, &ValidationError{Field: "signature", Reason: "is required"}
	}
	var sess Session
	resp, err := s.client.do(ctx, &request{op: verifySiwe, body: params, anonymous: true, secretAnswer: true}, &sess)
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
// metadata.
func (s *AuthService) signedMessage(ctx context.Context, signer Signer, p SignIn, statement string) (*WalletProof, error) {
	if signer == nil {
		return nil, &ValidationError{Field: "signer", Reason: "must not be nil"}
	}
	addr := signer.Address()
	// Check the parameters with a well-formed dummy nonce before spending
	// a real one on them.
	if _, err := s.message(p, statement, addr, "00000000"); err != nil {
		return nil, err
	}
	n, err := s.CreateNonce(ctx)
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
// verifies it, returning the session.
//
// POST /auth/nonces, then POST /auth — public.
func (s *AuthService) login(ctx context.Context, signer Signer, params SignIn) (*Session, error) {
	signed, err := s.signedMessage(ctx, signer, params, StatementLogin)
	if err != nil {
		return nil, err
	}
	return s.Verify(ctx, AuthVerifyParams{Message: signed.Message, Signature: signed.Signature})
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
	return s.signedMessage(ctx, params.Wallet, s.client.signIn, StatementAddWallet)
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
}

// sessionRefusal is what a client tells its token source after a 401:
// the token the gateway refused, and whether the client wants a token of a
// new session now (renew) or only the refused one dropped (the call that
// got the 401 is not sent again; the next call signs in). It reaches the
// source in the context given to the source, as a value: read-only, and
// passed on by any source that hands the context to tokenSource.Token. A
// token names its session, so the source needs no more to drop that one
// only.
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
	if n, ok := ctx.Value(sessionRefusalKey{}).(sessionRefusal); ok {
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
// first when needed; see Session.
func (ts *tokenSource) current(ctx context.Context) (*Session, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ts.mu.Lock()
		if s := ts.session; s != nil && ts.fresh(s) {
			ts.mu.Unlock()
			return s, nil
		}
		if call := ts.inflight; call != nil {
			ts.mu.Unlock()
			select {
			case <-call.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if call.err == nil {
				return call.session, nil
			}
			if ctx.Err() == nil && (isContextErr(call.err) || ts.ownBudgetAdmits(ctx, call.err)) {
				continue // the leader gave up or ran out of budget; lead a sign-in ourselves
			}
			return nil, call.err
		}
		call := &loginCall{done: make(chan struct{})}
		ts.inflight = call
		ts.mu.Unlock()

		call.session, call.err = ts.auth.login(ctx, ts.signer, ts.params)
		if call.err != nil {
			call.err = fmt.Errorf("rail0: token source sign-in: %w", call.err)
		}

		ts.mu.Lock()
		ts.inflight = nil
		if call.err == nil {
			ts.session = call.session
			ts.obtained = ts.now()
		}
		ts.mu.Unlock()
		close(call.done)
		if call.err != nil {
			return nil, call.err
		}
		return call.session, nil
	}
}

// ownBudgetAdmits reports whether a sign-in led by another caller failed
// only for that caller's settings or budget: it came back with a 429 (its
// wait did not fit that caller's allowance or deadline, or that caller's
// view does not retry 429s) whose wait fits the allowance of a fresh call
// with this caller's settings (see Client.With) and this caller's deadline.
func (ts *tokenSource) ownBudgetAdmits(ctx context.Context, err error) bool {
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests {
		return false
	}
	c := ts.auth.client.forCaller(ctx)
	if !c.policy.retryOn429 {
		return false
	}
	wait := apiErr.RetryAfter
	return wait <= c.policy.maxRetryWait && wait < timeLeft(ctx, c.now())
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
