package rail0

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"time"

	"github.com/rail0/rail0-go/internal/ops"
	"github.com/rail0/rail0-go/internal/secret"
)

// Signer is an Ethereum account. It is the one interface through which the
// SDK signs sign-in messages, payment authorizations and transactions.
//
// It signs 32-byte digests only. The SDK builds every digest itself, from
// artifacts it has checked against the caller's request (see VerifyPayload
// and VerifyTransaction). So a signer never sees anything else, and cannot
// be tricked into signing it.
//
// Package signing provides one backed by a private key. An HSM or KMS
// adapter implements the same two methods. The root package does not
// import go-ethereum.
//
// Implementations must be safe for concurrent use and must never put key
// material in an error.
type Signer interface {
	// Address returns the account's address, 0x + 40 hex digits. The
	// EIP-55 checksummed form is preferred: SIWE messages carry it as
	// given.
	Address() string
	// SignDigest signs digest as is, without hashing it again. It returns
	// 65 bytes r ‖ s ‖ v:
	//   - r and s big-endian;
	//   - s in the lower half of the curve order;
	//   - v the recovery id (0/1 or 27/28).
	//
	// The SDK checks that the signature recovers to Address before using
	// it.
	SignDigest(ctx context.Context, digest [32]byte) ([]byte, error)
}

// Nonce is a single-use sign-in nonce.
type Nonce struct {
	Nonce     string    `json:"nonce"`
	ExpiresAt time.Time `json:"expires_at"`
	// Response is the metadata of the call that returned this value. It is
	// nil on a value nested in another call's result.
	Response *Response `json:"-"`
}

// Session is a signed-in session. Its bearer token is read with Token and
// is never printed. String, Format (every fmt verb) and LogValue show the
// address, account and expiry only.
//
// The token is held where no reflection-based printer or encoder reaches
// it. So no token shows in two more cases:
//   - a Session kept in an unexported field of the application's own
//     struct. fmt and slog's text handler walk such a field by field,
//     without calling those methods.
//   - a Session encoded with encoding/json, encoding/xml or gob.
type Session struct {
	// token is the bearer JWT (Authorization: Bearer <token>).
	token *secret.Value
	// Address is the signed-in address.
	Address string `json:"address"`
	// AccountID is the merchant account of the address. It is nil for an
	// account-less session, typically a buyer's. Such a session can act on
	// its own payments. It gets 403 account_required from account
	// endpoints such as analytics, wallets and webhooks.
	AccountID *string `json:"account_id"`
	// Name is the account's name, nil for an account-less session.
	Name *string `json:"name"`
	// ExpiresAt is when the token stops working. There is no refresh call.
	// Sign in again before then; a client created WithSigner does.
	ExpiresAt time.Time `json:"expires_at"`
	// Response is the metadata of the call that returned this value. It is
	// nil on a value nested in another call's result.
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

// Format implements fmt.Formatter so that every verb prints String. A
// struct printed with %d or %x would otherwise show the token's bytes.
func (s Session) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, s.String()) }

// Token returns the bearer JWT to send as Authorization: Bearer <token>.
// It is the one way to read it. Persist it explicitly if you must.
func (s Session) Token() string { return s.token.Reveal() }

// UnmarshalJSON decodes the gateway's session answer. Its fields are
// "token", "address", "account_id", "name" and "expires_at". It keeps the
// token behind a value no printer can open. Encoding a Session writes no
// token.
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

var createNonce = declare(ops.CreateNonce)

// CreateNonce asks for a single-use sign-in nonce.
//
// POST /auth/nonces — public. It is sent without a token, so it never
// calls the client's token source.
func (s *AuthService) CreateNonce(ctx context.Context) (*Nonce, error) {
	return s.createNonce(ctx, nil)
}

// createNonce is CreateNonce, telling onRateWait of every wait for a rate
// limit it starts (see tokenSource.await). onRateWait may be nil.
func (s *AuthService) createNonce(ctx context.Context, onRateWait func(rateWait)) (*Nonce, error) {
	var n Nonce
	resp, err := s.client.do(ctx, &request{op: createNonce, anonymous: true, onRateWait: onRateWait}, &n)
	if err != nil {
		return nil, err
	}
	n.Response = resp
	return &n, nil
}

var verifySiwe = declare(ops.VerifySiwe)

// AuthVerifyParams is a signed SIWE message.
type AuthVerifyParams struct {
	// Message is the exact text that was signed (SIWEMessage.String).
	Message string `json:"message"`
	// Signature is its EIP-191 signature as 0x hex.
	Signature string `json:"signature"`
}

// Verify trades a signed SIWE message for a session. A client created
// WithSigner builds, signs and verifies the message by itself (see
// Client.Session). Verify is for a message signed elsewhere.
//
// POST /auth — public (sent without a token). A refused proof is a 422
// *APIError. Its code is invalid_siwe, invalid_nonce, nonce_used,
// signer_mismatch or siwe_purpose_mismatch.
func (s *AuthService) Verify(ctx context.Context, params AuthVerifyParams) (*Session, error) {
	return s.verify(ctx, params, nil)
}

// verify is Verify, telling onRateWait of every wait for a rate limit it
// starts (see tokenSource.await). onRateWait may be nil.
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

var logout = declare(ops.Logout)

// Logout revokes the token the client sends. It only revokes that token;
// other tokens of the same address stay valid.
//
// Revoked false means the gateway could not store the revocation. The
// token then keeps working until it expires: discard it and treat it as
// exposed. A client created WithSigner drops its session once Logout is
// answered, revoked or not. Its next call signs in again. A 401 to Logout
// itself is returned as it is: the session is already refused.
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

// SignIn says where the SIWE messages a client signs are used. They are
// its own sign-in (WithSigner) and the wallet proofs it builds
// (Auth.WalletProof). Zero fields take defaults from the client's base URL
// and the gateway's usual chain policy. These suit a client talking to the
// gateway directly. Set them with WithSignIn for a gateway that accepts
// another domain or follows another sign-in chain.
type SignIn struct {
	// Domain is the bare host the gateway accepts. The default is the base
	// URL's host name without port.
	Domain string
	// URI is the origin. The default is the base URL's scheme and host
	// (with port, if any).
	URI string
	// ChainID follows the gateway's sign-in chain policy. The default is
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

// signedMessage runs nonce → message → signature. It returns the signer's
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

// login signs in with Ethereum and returns the session. It asks for a
// nonce and builds the login message (StatementLogin) for signer's
// address. It has signer sign it, then verifies it. onRateWait, when not
// nil, hears of every wait for a rate limit its two calls start.
//
// POST /auth/nonces, then POST /auth — public.
func (s *AuthService) login(ctx context.Context, signer Signer, params SignIn, onRateWait func(rateWait)) (*Session, error) {
	signed, err := s.signedMessage(ctx, signer, params, StatementLogin, onRateWait)
	if err != nil {
		return nil, err
	}
	return s.verify(ctx, AuthVerifyParams{Message: signed.Message, Signature: signed.Signature}, onRateWait)
}

// WalletProof is a signed SIWE proof that the holder of Address controls
// it. Wallets.Create needs it to register the wallet. It is single-use,
// as its nonce is, and expires with its nonce.
type WalletProof struct {
	Address   string `json:"address"`
	Message   string `json:"message"`
	Signature string `json:"signature"`
	// Response is the metadata of the nonce call WalletProof made. It is
	// never sent.
	Response *Response `json:"-"`
}

// AuthWalletProofParams names the wallet whose ownership WalletProof
// proves.
type AuthWalletProofParams struct {
	// Wallet signs the proof. It is the wallet being registered, which may
	// differ from the client's signer.
	Wallet Signer
}

// WalletProof builds the ownership proof of params.Wallet for
// Wallets.Create. The proof is:
//   - a fresh nonce;
//   - a message with StatementAddWallet, for where the client's sign-in
//     messages are used (WithSignIn);
//   - the wallet's signature.
//
// The wallet may differ from the session's address. A merchant account
// can own several.
//
// POST /auth/nonces — public.
func (s *AuthService) WalletProof(ctx context.Context, params AuthWalletProofParams) (*WalletProof, error) {
	if params.Wallet == nil {
		return nil, &ValidationError{Field: "wallet", Reason: "is required: the signer of the wallet to register"}
	}
	return s.signedMessage(ctx, params.Wallet, s.client.signIn, StatementAddWallet, nil)
}

// notASession is the identify check of POST /auth. A 2xx without a token
// or an expiry (a proxy's {} or message) is no session. Taken as one, the
// token source would find it never fresh. It would have the signer sign a
// new SIWE message on every later call. Each call would go out without a
// token.
func notASession(s *Session) string {
	if s.Token() == "" {
		return "carries no token"
	}
	if s.ExpiresAt.IsZero() {
		return "carries no expires_at"
	}
	return ""
}
