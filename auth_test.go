package rail0

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rail0/rail0-go/internal/evm"
	"github.com/rail0/rail0-go/internal/evmtest"
	"github.com/rail0/rail0-go/internal/leaktest"
	"github.com/rail0/rail0-go/internal/secret"
	"github.com/rail0/rail0-go/internal/verify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// siweSigner is a Signer for the root package's tests, which must not link
// go-ethereum: a deterministic test key from internal/evmtest. addr, when
// set, overrides the address it claims.
type siweSigner struct {
	key  *evmtest.Key
	addr string
	err  error // returned by every SignDigest call when set
	msgs atomic.Int32
}

func newSIWESigner() *siweSigner { return newSIWESignerSeed("siwe") }

func newSIWESignerSeed(seed string) *siweSigner {
	k := evmtest.NewKey(seed)
	return &siweSigner{key: k, addr: k.Address()}
}

// siweRecovers reports whether sig is addr's EIP-191 signature of message.
func siweRecovers(addr, message, sig string) bool {
	b, err := hex.DecodeString(strings.TrimPrefix(sig, "0x"))
	if err != nil || len(b) != 65 {
		return false
	}
	got, err := evm.Recover(eip191Digest(message), b)
	return err == nil && strings.EqualFold(verify.Address(got).String(), addr)
}

func (f *siweSigner) Address() string { return f.addr }

func (f *siweSigner) SignDigest(ctx context.Context, digest [32]byte) ([]byte, error) {
	f.msgs.Add(1)
	if f.err != nil {
		return nil, f.err
	}
	return f.key.SignDigest(ctx, digest)
}

// authClock is a settable clock shared by a test's client, token source and
// fake gateway.
type authClock struct {
	mu  sync.Mutex
	now time.Time
}

func newAuthClock() *authClock {
	return &authClock{now: time.Date(2026, 9, 14, 10, 0, 0, 0, time.UTC)}
}

func (c *authClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *authClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// siweLayout is the README's EIP-4361 layout; the fake gateway parses
// strictly, as the real one does.
var siweLayout = regexp.MustCompile(`\A(\S+) wants you to sign in with your Ethereum account:\n` +
	`(0x[0-9a-fA-F]{40})\n\n([^\n]+)\n\nURI: (\S+)\nVersion: 1\nChain ID: ([0-9]+)\nNonce: (\S+)\nIssued At: (\S+)\z`)

// authGateway implements the sign-in routes (and one protected route,
// GET /webhooks/{id}) under muxBasePath with a settable clock. It refuses
// expired tokens with 401, like the real gateway.
type authGateway struct {
	t        *testing.T
	clock    *authClock
	lifetime time.Duration
	// blockVerify, when set, is received from before answering POST /auth.
	blockVerify chan struct{}
	verifyBegan chan struct{} // signalled (non-blocking) when POST /auth starts

	mu        sync.Mutex
	nonces    map[string]bool // nonce -> used
	tokens    map[string]time.Time
	messages  []string
	nonceHits int
	verifies  int
	logins    int
	protected int
	authHdrs  []string // Authorization of every sign-in request
}

func newAuthGateway(t *testing.T, clock *authClock) (*authGateway, *httptest.Server) {
	g := &authGateway{t: t, clock: clock, lifetime: 10 * time.Minute,
		nonces: map[string]bool{}, tokens: map[string]time.Time{}, verifyBegan: make(chan struct{}, 16)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+muxBasePath+"/auth/nonces", g.nonce)
	mux.HandleFunc("POST "+muxBasePath+"/auth", g.verify)
	mux.HandleFunc("GET "+muxBasePath+"/webhooks/{id}", g.webhook)
	mux.HandleFunc("POST "+muxBasePath+"/auth/logout", g.logout)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return g, srv
}

func authWriteJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func (g *authGateway) nonce(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	g.nonceHits++
	n := fmt.Sprintf("nonce%04d", g.nonceHits)
	g.nonces[n] = false
	g.authHdrs = append(g.authHdrs, r.Header.Get("Authorization"))
	g.mu.Unlock()
	exp := g.clock.Now().Add(5 * time.Minute).Format(time.RFC3339)
	authWriteJSON(w, http.StatusCreated, `{"nonce":"`+n+`","expires_at":"`+exp+`"}`)
}

func (g *authGateway) verify(w http.ResponseWriter, r *http.Request) {
	select {
	case g.verifyBegan <- struct{}{}:
	default:
	}
	if g.blockVerify != nil {
		select {
		case <-g.blockVerify:
		case <-r.Context().Done():
			return
		}
	}
	var body struct{ Message, Signature string }
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		authWriteJSON(w, http.StatusBadRequest, `{"code":"missing_param","title":"Bad","detail":"Bad body","status":"missing_param"}`)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.verifies++
	g.messages = append(g.messages, body.Message)
	g.authHdrs = append(g.authHdrs, r.Header.Get("Authorization"))
	refuse := func(code string) {
		authWriteJSON(w, http.StatusUnprocessableEntity, `{"code":"`+code+`","title":"Refused","detail":"Sign-in refused.","status":"`+code+`"}`)
	}
	m := siweLayout.FindStringSubmatch(body.Message)
	if m == nil {
		refuse("invalid_siwe")
		return
	}
	address, statement, nonce, issued := m[2], m[3], m[6], m[7]
	if statement != StatementLogin {
		refuse("siwe_purpose_mismatch")
		return
	}
	used, known := g.nonces[nonce]
	switch {
	case !known:
		refuse("invalid_nonce")
		return
	case used:
		refuse("nonce_used")
		return
	}
	g.nonces[nonce] = true
	at, err := time.Parse(time.RFC3339, issued)
	if err != nil || at.Sub(g.clock.Now()).Abs() > 5*time.Minute {
		refuse("invalid_siwe")
		return
	}
	if !siweRecovers(address, body.Message, body.Signature) {
		refuse("signer_mismatch")
		return
	}
	g.logins++
	tok := fmt.Sprintf("jwt-%d", g.logins)
	exp := g.clock.Now().Add(g.lifetime)
	g.tokens[tok] = exp
	authWriteJSON(w, http.StatusCreated, fmt.Sprintf(
		`{"token":%q,"address":%q,"account_id":"0190c7d1-aa01-7b02-8c03-d4e5f6a7b8c9","name":"Acme","expires_at":%q}`,
		tok, address, exp.Format(time.RFC3339)))
}

// logout revokes the token presented.
func (g *authGateway) logout(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	delete(g.tokens, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	g.mu.Unlock()
	authWriteJSON(w, http.StatusOK, `{"revoked":true}`)
}

func (g *authGateway) webhook(w http.ResponseWriter, r *http.Request) {
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	g.mu.Lock()
	g.protected++
	exp, ok := g.tokens[tok]
	g.mu.Unlock()
	if !ok || !g.clock.Now().Before(exp) {
		g.t.Errorf("request at %s with token %q expiring %s", g.clock.Now().Format(time.RFC3339), tok, exp.Format(time.RFC3339))
		authWriteJSON(w, http.StatusUnauthorized, `{"code":"unauthorized","title":"Unauthorized","detail":"Token expired.","status":"unauthorized"}`)
		return
	}
	authWriteJSON(w, http.StatusOK, `{"id":"`+r.PathValue("id")+`","name":"orders","topic":"payments.captured","active":true}`)
}

func (g *authGateway) counts() (nonces, verifies, logins int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.nonceHits, g.verifies, g.logins
}

// newAuthClient returns a client for srv whose clock is clock.
func newAuthClient(t *testing.T, srv *httptest.Server, clock *authClock, opts ...Option) *Client {
	t.Helper()
	c, err := NewClient(srv.URL+muxBasePath, opts...)
	if err != nil {
		t.Fatal(err)
	}
	c.now = clock.Now
	return c
}

// A client created WithSigner signs in by itself, its messages placed by
// WithSignIn, and Session returns the session.
func TestSignIn(t *testing.T) {
	t.Parallel()
	clock := newAuthClock()
	g, srv := newAuthGateway(t, clock)
	signer := newSIWESigner()
	c := newAuthClient(t, srv, clock, WithSigner(signer), WithSignIn(SignIn{Domain: "127.0.0.1", URI: srv.URL, ChainID: 84532}))

	sess, err := c.Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sess.Token() != "jwt-1" || sess.Address != signer.addr || !sess.HasAccount() || *sess.AccountID != "0190c7d1-aa01-7b02-8c03-d4e5f6a7b8c9" ||
		sess.Name == nil || *sess.Name != "Acme" || !sess.ExpiresAt.Equal(clock.Now().Add(10*time.Minute)) {
		t.Errorf("session = %+v (token %q)", sess, sess.Token())
	}
	want := "127.0.0.1 wants you to sign in with your Ethereum account:\n" + signer.addr + "\n\nSign in to RAIL0\n\n" +
		"URI: " + srv.URL + "\nVersion: 1\nChain ID: 84532\nNonce: nonce0001\nIssued At: 2026-09-14T10:00:00Z"
	if len(g.messages) != 1 || g.messages[0] != want {
		t.Fatalf("signed message = %q\nwant %q", g.messages, want)
	}
}

// With zero SignIn the domain, URI and chain come from the base URL.
func TestLoginDefaultsFromBaseURL(t *testing.T) {
	t.Parallel()
	clock := newAuthClock()
	g, srv := newAuthGateway(t, clock)
	c := newAuthClient(t, srv, clock)
	if _, err := c.Auth.login(context.Background(), newSIWESigner(), SignIn{}, nil); err != nil {
		t.Fatal(err)
	}
	m := siweLayout.FindStringSubmatch(g.messages[0])
	if m == nil {
		t.Fatalf("message %q does not parse", g.messages[0])
	}
	// srv.URL is http://127.0.0.1:port: the domain drops the port, the
	// URI keeps it, and the base path is not part of either.
	if m[1] != "127.0.0.1" || m[4] != srv.URL || m[5] != "1" {
		t.Errorf("domain %q, uri %q, chain %q; want 127.0.0.1, %s, 1", m[1], m[4], m[5], srv.URL)
	}
}

// Sign-in requests must never consult the token source (it may itself be
// signing in), and must not send a token; Logout must.
func TestAuthAnonymousRequestsSkipTheTokenSource(t *testing.T) {
	t.Parallel()
	clock := newAuthClock()
	g, srv := newAuthGateway(t, clock)
	var sourceCalls atomic.Int32
	c := newAuthClient(t, srv, clock, WithTokenSource(func(context.Context) (string, error) {
		sourceCalls.Add(1)
		return "should-not-be-sent", nil
	}))
	ctx := context.Background()
	if _, err := c.Auth.CreateNonce(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Auth.login(ctx, newSIWESigner(), SignIn{}, nil); err != nil {
		t.Fatal(err)
	}
	if n := sourceCalls.Load(); n != 0 {
		t.Errorf("token source called %d times by sign-in", n)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.authHdrs) != 3 {
		t.Fatalf("saw %d sign-in requests, want 3", len(g.authHdrs))
	}
	for i, h := range g.authHdrs {
		if h != "" {
			t.Errorf("sign-in request %d sent Authorization %q", i, h)
		}
	}
}

func TestAuthRequests(t *testing.T) {
	t.Parallel()
	runMuxCases(t, []muxCase{
		{
			name:   "Logout revoked",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Auth.Logout(ctx) },
			method: "POST", path: "/auth/logout",
			reply: muxOK(`{"revoked": true}`),
			check: func(t *testing.T, got any) {
				if r := got.(*AuthLogoutResult); !r.Revoked || r.Response.StatusCode != http.StatusOK {
					t.Errorf("revoked = %v, want true", got)
				}
			},
		},
		{
			name:   "Logout not stored",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Auth.Logout(ctx) },
			method: "POST", path: "/auth/logout",
			reply: muxOK(`{"revoked": false}`),
			check: func(t *testing.T, got any) {
				if got.(*AuthLogoutResult).Revoked {
					t.Errorf("revoked = %v, want false", got)
				}
			},
		},
	})
}

// Nonce and Verify wire format, on the scripted server (which also records
// that no Authorization header is sent even though the client has a token).
func TestAuthNonceAndVerifyWire(t *testing.T) {
	t.Parallel()
	srv, c := newMuxServer(t)
	srv.on("POST /auth/nonces", muxReply{status: http.StatusCreated, body: `{"nonce":"a1b2c3d4e5f60718","expires_at":"2026-09-14T10:05:00Z"}`})
	srv.on("POST /auth", muxReply{status: http.StatusCreated, body: `{"token":"jwt","address":"0x5B38Da6a701c568545dCfcB03FcB875f56beddC4","account_id":null,"name":null,"expires_at":"2026-09-15T10:00:00Z"}`})
	ctx := context.Background()
	n, err := c.Auth.CreateNonce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n.Nonce != "a1b2c3d4e5f60718" || !n.ExpiresAt.Equal(time.Date(2026, 9, 14, 10, 5, 0, 0, time.UTC)) {
		t.Errorf("nonce = %+v", n)
	}
	sess, err := c.Auth.Verify(ctx, AuthVerifyParams{Message: "the message", Signature: "0xsig"})
	if err != nil {
		t.Fatal(err)
	}
	if sess.Token() != "jwt" || sess.HasAccount() || sess.AccountID != nil || sess.Name != nil {
		t.Errorf("account-less session = %+v", sess)
	}
	reqs := srv.requests()
	if len(reqs) != 2 {
		t.Fatalf("requests = %v", srv.routes())
	}
	for _, r := range reqs {
		if h := r.Header.Get("Authorization"); h != "" {
			t.Errorf("%s %s sent Authorization %q", r.Method, r.Path, h)
		}
	}
	assertMuxBody(t, reqs[0], "")
	assertMuxBody(t, reqs[1], `{"message":"the message","signature":"0xsig"}`)
}

func TestLoginFailures(t *testing.T) {
	t.Parallel()
	signErr := errors.New("hsm offline")
	tests := []struct {
		name         string
		signer       Signer
		params       SignIn
		wantField    string // *ValidationError field
		wantErr      error
		wantCode     ErrorCode
		wantNonces   int
		wantVerifies int
	}{
		{name: "nil signer", signer: nil, wantField: "signer"},
		{name: "domain with port", signer: newSIWESigner(), params: SignIn{Domain: "127.0.0.1:80"}, wantField: "siwe.domain"},
		{name: "URI on another host", signer: newSIWESigner(), params: SignIn{URI: "https://evil.example"}, wantField: "siwe.uri"},
		{name: "bad signer address", signer: &siweSigner{key: evmtest.NewKey("x"), addr: "0x1234"}, wantField: "siwe.address"},
		{name: "signer fails", signer: &siweSigner{key: evmtest.NewKey("x"), addr: newSIWESigner().addr, err: signErr}, wantErr: signErr, wantNonces: 1},
		// A signature by another key than the signer's address is caught
		// before it is sent.
		{name: "signer signs with another key", signer: &wrongSigner{newSIWESigner()}, wantErr: ErrBadSignature, wantNonces: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := newAuthClock()
			g, srv := newAuthGateway(t, clock)
			c := newAuthClient(t, srv, clock)
			sess, err := c.Auth.login(context.Background(), tt.signer, tt.params, nil)
			if err == nil || sess != nil {
				t.Fatalf("Login = %+v, %v; want an error", sess, err)
			}
			if tt.wantField != "" {
				var ve *ValidationError
				if !errors.As(err, &ve) || ve.Field != tt.wantField {
					t.Errorf("err = %v, want *ValidationError on %s", err, tt.wantField)
				}
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantCode != "" {
				var ae *APIError
				if !errors.As(err, &ae) || ae.Code != tt.wantCode || ae.StatusCode != http.StatusUnprocessableEntity {
					t.Errorf("err = %v, want a 422 %s", err, tt.wantCode)
				}
			}
			nonces, verifies, _ := g.counts()
			if nonces != tt.wantNonces || verifies != tt.wantVerifies {
				t.Errorf("gateway saw %d nonce and %d verify requests, want %d and %d", nonces, verifies, tt.wantNonces, tt.wantVerifies)
			}
		})
	}
}

// wrongSigner signs with another key than the address it claims.
type wrongSigner struct{ *siweSigner }

func (w *wrongSigner) SignDigest(ctx context.Context, digest [32]byte) ([]byte, error) {
	return evmtest.NewKey("someone else").SignDigest(ctx, digest)
}

// A client created WithSigner drops its session once Logout is answered:
// its next call signs in again, instead of sending the revoked token and
// learning from a 401.
func TestLogoutDropsTheClientsSession(t *testing.T) {
	t.Parallel()
	clock := newAuthClock()
	g, srv := newAuthGateway(t, clock) // a 401 on GET /webhooks/{id} fails the test
	c := newAuthClient(t, srv, clock, WithSigner(newSIWESigner()))
	ctx := context.Background()
	if _, err := c.Webhooks.Get(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	out, err := c.Auth.Logout(ctx)
	if err != nil || !out.Revoked {
		t.Fatalf("Logout = %+v, %v", out, err)
	}
	if _, err := c.Webhooks.Get(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	if _, _, logins := g.counts(); logins != 2 {
		t.Errorf("%d sign-ins, want 2: the call after Logout signs in again", logins)
	}
	if s, err := c.Session(ctx); err != nil || s.Token() != "jwt-2" {
		t.Errorf("Session after Logout = %v, %v; want the new session", s, err)
	}
}

func TestWalletProof(t *testing.T) {
	t.Parallel()
	clock := newAuthClock()
	g, srv := newAuthGateway(t, clock)
	c := newAuthClient(t, srv, clock)
	wallet := newSIWESignerSeed("wallet")
	proof, err := c.Auth.WalletProof(context.Background(), AuthWalletProofParams{Wallet: wallet})
	if err != nil {
		t.Fatal(err)
	}
	m := siweLayout.FindStringSubmatch(proof.Message)
	if m == nil || m[2] != wallet.addr || m[3] != StatementAddWallet || m[5] != "1" || m[6] != "nonce0001" {
		t.Fatalf("proof message = %q", proof.Message)
	}
	// The proof is placed where the client's sign-in messages are.
	placed := newAuthClient(t, srv, clock, WithSignIn(SignIn{ChainID: 84532}))
	proof, err = placed.Auth.WalletProof(context.Background(), AuthWalletProofParams{Wallet: wallet})
	if err != nil {
		t.Fatal(err)
	}
	if m := siweLayout.FindStringSubmatch(proof.Message); m == nil || m[5] != "84532" {
		t.Fatalf("proof message under WithSignIn = %q, want chain 84532", proof.Message)
	}
	var ve *ValidationError
	if _, err := c.Auth.WalletProof(context.Background(), AuthWalletProofParams{}); !errors.As(err, &ve) || ve.Field != "wallet" {
		t.Fatalf("WalletProof without a wallet = %v, want a *ValidationError", err)
	}
	if proof.Response == nil || proof.Response.Call.Operation != "createNonce" {
		t.Errorf("proof.Response = %+v, want the nonce call's", proof.Response)
	}
	if proof.Address != wallet.addr || !siweRecovers(wallet.addr, proof.Message, proof.Signature) {
		t.Errorf("proof = %+v", proof)
	}
	if _, verifies, _ := g.counts(); verifies != 0 {
		t.Errorf("WalletProof called POST /auth %d times; the proof is for wallet registration", verifies)
	}
}

func TestSessionNeverPrintsToken(t *testing.T) {
	t.Parallel()
	acct := "0190c7d1-aa01-7b02-8c03-d4e5f6a7b8c9"
	s := Session{token: secret.New("eyJ.secret-token.sig"), Address: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4", AccountID: &acct,
		ExpiresAt: time.Date(2026, 9, 15, 0, 0, 0, 0, time.UTC)}
	for _, format := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		for _, v := range []any{s, &s, []Session{s}, struct{ S Session }{s}} {
			out := fmt.Sprintf(format, v)
			if strings.Contains(out, "secret-token") || strings.Contains(out, hex.EncodeToString([]byte("secret-token"))) {
				t.Errorf("Sprintf(%q, %T) leaks the token: %s", format, v, out)
			}
		}
	}
	if got := s.String(); !strings.Contains(got, s.Address) || !strings.Contains(got, acct) {
		t.Errorf("String() = %s, want the address and account", got)
	}
	var buf strings.Builder
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("signed in", "session", s)
	if strings.Contains(buf.String(), "secret-token") || !strings.Contains(buf.String(), s.Address) {
		t.Errorf("slog output = %s", buf.String())
	}
}

// A sign-in answered 2xx by something that is not a session ({} from a
// proxy, a session without its expiry) is refused, its body dropped: taken
// as a session it would never be fresh, and a client WithSigner would have
// its key sign a new SIWE message on every later call.
func TestSignInAnswerThatIsNotASession(t *testing.T) {
	ctx := context.Background()
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for _, tc := range []struct {
		body string
		ok   bool
	}{
		{`{"token":"tok-SECRET","address":"0x5B38Da6a701c568545dCfcB03FcB875f56beddC4","expires_at":"` + future + `"}`, true},
		{`{}`, false},
		{`{"message":"OK"}`, false},
		{`{"token":"","expires_at":"` + future + `"}`, false},
		{`{"token":"tok-SECRET","address":"0x5B38Da6a701c568545dCfcB03FcB875f56beddC4"}`, false},
	} {
		t.Run(tc.body, func(t *testing.T) {
			srv := newScriptServer(t, step{status: 200, body: tc.body})
			c := newTestClient(t, srv.URL)
			sess, err := c.Auth.Verify(ctx, AuthVerifyParams{Message: "m", Signature: "0x01"})
			if tc.ok {
				require.NoError(t, err)
				assert.Equal(t, "tok-SECRET", sess.Token())
				return
			}
			var decodeErr *DecodeError
			require.ErrorAs(t, err, &decodeErr)
			assert.Contains(t, err.Error(), "not the resource the operation promises")
			assert.Empty(t, decodeErr.Body)
			assert.NotContains(t, err.Error(), "tok-SECRET")
		})
	}
}

// shop is an application's own struct holding the SDK's secret holders, in
// unexported fields (which fmt and slog's text handler walk without calling
// the holders' String, Format or LogValue) and in exported ones (which
// encoding/json, encoding/xml and gob encode).
type shop struct {
	name    string
	session Session
	hook    WebhookWithSecret
	tokens  *tokenSource
	client  *Client
	Session Session
	Hook    WebhookWithSecret
}

// Every value of the root package that holds a secret prints, logs and
// encodes without it, under every verb and flag, on its own and inside the
// application's own struct: String and GoString alone leave %d, %x, %X and
// %o to walk the fields and print the secret or its bytes, and no method
// is called on a value in an unexported field.
func TestSecretHoldersSafeUnderEveryVerb(t *testing.T) {
	const (
		tokenSecret   = "eyJhbGciOiJIUzI1NiJ9.TOKEN-SECRET.sig"
		webhookSecret = "WEBHOOK-SECRET-c0ffee"
		oldSecret     = "OLD-WEBHOOK-SECRET-beef"
	)
	_, srv, clock, ts := newTokenSourceSetup(t)
	liveToken, err := ts.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fixed := newTestClient(t, "https://api.rail0.xyz", WithToken(tokenSecret))
	sourced := newAuthClient(t, srv, clock, WithTokenSource(ts.Token))
	account, name := "0190c7d1-aa01-7b02-8c03-d4e5f6a7b8c9", "Acme"
	session := Session{token: secret.New(tokenSecret), Address: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4", AccountID: &account, Name: &name, ExpiresAt: time.Unix(1789381370, 0)}
	hook := WebhookWithSecret{Webhook: Webhook{ID: "wh-1", Name: "orders"}, sharedSecret: secret.New(webhookSecret)}

	values := map[string]any{
		"Session": session, "*Session": &session,
		"WebhookWithSecret": hook, "*WebhookWithSecret": &hook,
		"*tokenSource": ts, "*Client with a token": fixed, "*Client with a token source": sourced,
		"struct of them": struct {
			S Session
			H WebhookWithSecret
			T *tokenSource
		}{session, hook, ts},
		"slice of them": []any{session, &hook, ts},
		"caller's struct": shop{name: "acme", session: session, hook: hook, tokens: ts, client: sourced,
			Session: session, Hook: hook},
		"*caller's struct": &shop{session: session, hook: hook, Session: session, Hook: hook},
	}
	secrets := []string{tokenSecret, "TOKEN-SECRET", webhookSecret, oldSecret, liveToken}
	leaktest.NoSecret(t, values, leaktest.Forms(secrets...))
}
