package rail0test

import (
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/golang-jwt/jwt/v5"
)

// The SIWE statements, one per purpose.
const (
	// loginStatement is the statement of a sign-in message (POST /auth).
	loginStatement = "Sign in to RAIL0"
	// walletStatement is the statement of a wallet ownership proof
	// (POST /accounts/{account_id}/wallets).
	walletStatement = "Add this wallet to your RAIL0 account"
)

// siweFreshness is how far issued_at may be from the server clock.
const siweFreshness = 5 * time.Minute

const jwtIssuer = "rail0test"

type siweMessage struct {
	Domain    string
	Address   common.Address
	Statement string
	URI       string
	Version   string
	ChainID   int64
	Nonce     string
	IssuedAt  time.Time
}

var errSIWELayout = errors.New("the message does not follow the EIP-4361 layout")

// parseSIWE parses the exact ten-line layout of README section 2.
// Anything else is refused, a missing blank line or a trailing newline
// included.
func parseSIWE(msg string) (*siweMessage, error) {
	lines := strings.Split(msg, "\n")
	if len(lines) != 10 {
		return nil, errSIWELayout
	}
	const header = " wants you to sign in with your Ethereum account:"
	domain, ok := strings.CutSuffix(lines[0], header)
	if !ok || domain == "" || strings.ContainsAny(domain, " /:") {
		return nil, errSIWELayout
	}
	addr := lines[1]
	if !common.IsHexAddress(addr) || !strings.HasPrefix(addr, "0x") || common.HexToAddress(addr).Hex() != addr {
		return nil, errors.New("the address is not in EIP-55 checksummed form")
	}
	if lines[2] != "" || lines[3] == "" || lines[4] != "" {
		return nil, errSIWELayout
	}
	field := func(i int, name string) (string, error) {
		v, ok := strings.CutPrefix(lines[i], name+": ")
		if !ok || v == "" {
			return "", fmt.Errorf("line %d must be %q", i+1, name+": ...")
		}
		return v, nil
	}
	m := &siweMessage{Domain: domain, Address: common.HexToAddress(addr), Statement: lines[3]}
	var err error
	if m.URI, err = field(5, "URI"); err != nil {
		return nil, err
	}
	if m.Version, err = field(6, "Version"); err != nil {
		return nil, err
	}
	if m.Version != "1" {
		return nil, errors.New("version must be 1")
	}
	chainID, err := field(7, "Chain ID")
	if err != nil {
		return nil, err
	}
	if m.ChainID, err = strconv.ParseInt(chainID, 10, 64); err != nil {
		return nil, errors.New("chain id must be an integer")
	}
	if m.Nonce, err = field(8, "Nonce"); err != nil {
		return nil, err
	}
	issued, err := field(9, "Issued At")
	if err != nil {
		return nil, err
	}
	if m.IssuedAt, err = time.Parse(time.RFC3339Nano, issued); err != nil {
		return nil, errors.New("issued at must be an RFC 3339 time")
	}
	return m, nil
}

// siweText builds a message in the layout the gateway accepts.
func siweText(domain, address, statement, uri string, chainID int64, nonce string, issuedAt time.Time) string {
	return strings.Join([]string{
		domain + " wants you to sign in with your Ethereum account:",
		address,
		"",
		statement,
		"",
		"URI: " + uri,
		"Version: 1",
		"Chain ID: " + strconv.FormatInt(chainID, 10),
		"Nonce: " + nonce,
		"Issued At: " + issuedAt.UTC().Format(time.RFC3339),
	}, "\n")
}

// SIWEMessage returns a message for address and nonce, in the exact layout
// this server accepts. The message holds:
//   - the first accepted domain: the server's own host, unless
//     WithSIWEDomain says otherwise;
//   - a URI on that host: the server's URL when it matches;
//   - the sign-in chain id and the server clock's current time.
//
// statement is the purpose's. It is "Sign in to RAIL0" (rail0.StatementLogin)
// or "Add this wallet to your RAIL0 account" (rail0.StatementAddWallet).
func (s *Server) SIWEMessage(address, nonce, statement string) string {
	domain, uri := s.domains[0], s.URL
	if u, err := url.Parse(s.URL); err != nil || u.Hostname() != domain {
		uri = "https://" + domain
	}
	return siweText(domain, address, statement, uri, s.cfg.signInChainID, nonce, s.Clock.Now())
}

// personalHash is the EIP-191 digest personal_sign signs.
func personalHash(msg []byte) []byte {
	return crypto.Keccak256([]byte(fmt.Sprintf("\x19Ethereum Signed Message:\n%d", len(msg))), msg)
}

// recoverSigner recovers the address that produced a 65-byte r||s||v
// signature over digest. v may be 27/28 or 0/1.
func recoverSigner(digest []byte, sigHex string) (common.Address, error) {
	sig, err := hex.DecodeString(strings.TrimPrefix(sigHex, "0x"))
	if err != nil || len(sig) != 65 {
		return common.Address{}, errors.New("the signature must be 65 bytes of 0x hex")
	}
	sig = slices.Clone(sig)
	if sig[64] >= 27 {
		sig[64] -= 27
	}
	if sig[64] > 1 {
		return common.Address{}, errors.New("the signature's v must be 27 or 28")
	}
	pub, err := crypto.SigToPub(digest, sig)
	if err != nil {
		return common.Address{}, err
	}
	return crypto.PubkeyToAddress(*pub), nil
}

// verifySIWE checks a SIWE proof for purpose: loginStatement or
// walletStatement. It consumes the proof's nonce and returns the proven
// address.
func (s *Server) verifySIWE(message, signature, purpose string) (common.Address, *apiError) {
	invalid := func(detail string) *apiError {
		return errUnprocessable("invalid_siwe", "Invalid sign-in message", detail)
	}
	m, err := parseSIWE(message)
	if err != nil {
		return common.Address{}, invalid("The sign-in message does not parse: " + err.Error() + ".")
	}
	if m.Statement != purpose {
		if m.Statement == loginStatement || m.Statement == walletStatement {
			return common.Address{}, errUnprocessable("siwe_purpose_mismatch", "Wrong sign-in purpose",
				"This message was signed for another purpose; its statement must be "+strconv.Quote(purpose)+".")
		}
		return common.Address{}, invalid("The statement must be " + strconv.Quote(purpose) + ".")
	}
	if !slices.Contains(s.domains, m.Domain) {
		return common.Address{}, invalid("The domain " + strconv.Quote(m.Domain) + " is not accepted by this gateway.")
	}
	u, err := url.Parse(m.URI)
	if err != nil || u.Hostname() != m.Domain {
		return common.Address{}, invalid("The URI's host must be the message's domain.")
	}
	if m.ChainID != s.cfg.signInChainID {
		return common.Address{}, invalid(fmt.Sprintf("The chain id must be %d.", s.cfg.signInChainID))
	}
	if d := s.Clock.Now().Sub(m.IssuedAt); d > siweFreshness || d < -siweFreshness {
		return common.Address{}, invalid("Issued At is too far from the current time.")
	}
	signer, err := recoverSigner(personalHash([]byte(message)), signature)
	if err != nil || signer != m.Address {
		return common.Address{}, errUnprocessable("signer_mismatch", "Signature mismatch",
			"The signature does not recover to the address in the message.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.st.nonces[m.Nonce]
	switch {
	case !ok || !s.Clock.Now().Before(rec.ExpiresAt):
		return common.Address{}, errUnprocessable("invalid_nonce", "Invalid nonce", "The nonce is unknown or has expired; request a new one.")
	case rec.Used:
		return common.Address{}, errUnprocessable("nonce_used", "Nonce already used", "This nonce was already used; request a new one.")
	}
	rec.Used = true
	return m.Address, nil
}

// session is an authenticated caller.
type session struct {
	address   common.Address
	accountID string // "" for an account-less session
	jti       string
}

type sessionClaims struct {
	jwt.RegisteredClaims
}

// authenticate validates the bearer token.
// It checks the signature, the expiry on the server clock, and revocation.
func (s *Server) authenticate(r *http.Request) (*session, *apiError) {
	raw, ok := bearer(r)
	if !ok {
		return nil, errUnauthorized("Send a session token as Authorization: Bearer <token>.")
	}
	var claims sessionClaims
	_, err := jwt.ParseWithClaims(raw, &claims, func(*jwt.Token) (any, error) { return s.jwtKey(), nil },
		jwt.WithValidMethods([]string{"HS256"}),
		jwt.WithTimeFunc(s.Clock.Now),
		jwt.WithExpirationRequired(),
		jwt.WithIssuer(jwtIssuer),
	)
	if err != nil || !common.IsHexAddress(claims.Subject) {
		return nil, errUnauthorized("The session token is malformed, expired or was not issued by this gateway.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.revoked[claims.ID] {
		return nil, errUnauthorized("The session token was revoked.")
	}
	sess := &session{address: common.HexToAddress(claims.Subject), jti: claims.ID}
	if acc := s.st.accountOf(sess.address); acc != nil {
		sess.accountID = acc.ID
	}
	return sess, nil
}

// sessionToken returns r's bearer token when it is a valid session of this
// server: signed, unexpired, not revoked. Otherwise it returns "". An
// invented or stale token is no session. So it must not buy its sender a
// budget of its own.
func (s *Server) sessionToken(r *http.Request) string {
	if _, e := s.authenticate(r); e != nil {
		return ""
	}
	tok, _ := bearer(r)
	return tok
}

// bearer extracts the token of an Authorization: Bearer header.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// authed wraps a handler that needs a session.
func (s *Server) authed(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess, e := s.authenticate(r)
		if e != nil {
			writeError(w, e)
			return
		}
		h(w, r, sess)
	}
}

// withAccount wraps a handler that needs a session with a merchant account.
func (s *Server) withAccount(h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return s.authed(func(w http.ResponseWriter, r *http.Request, sess *session) {
		if sess.accountID == "" {
			writeError(w, errForbidden("account_required", "This endpoint needs a session of a merchant account."))
			return
		}
		h(w, r, sess)
	})
}

func (s *Server) handleNonce(w http.ResponseWriter, _ *http.Request) {
	now := s.Clock.Now()
	nonce := s.ent.hex(16)
	exp := now.Add(s.cfg.nonceTTL)
	s.mu.Lock()
	for n, rec := range s.st.nonces { // drop expired nonces so the map stays small
		if !now.Before(rec.ExpiresAt) {
			delete(s.st.nonces, n)
		}
	}
	s.st.nonces[nonce] = &nonceRecord{ExpiresAt: exp}
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"nonce": nonce, "expires_at": ts(exp)})
}

func (s *Server) handleVerify(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Message   *string `json:"message"`
		Signature *string `json:"signature"`
	}
	if e := decodeBody(r, &body); e != nil {
		writeError(w, e)
		return
	}
	if body.Message == nil {
		writeError(w, errMissing("message", http.StatusUnprocessableEntity))
		return
	}
	if body.Signature == nil {
		writeError(w, errMissing("signature", http.StatusUnprocessableEntity))
		return
	}
	addr, e := s.verifySIWE(*body.Message, *body.Signature, loginStatement)
	if e != nil {
		writeError(w, e)
		return
	}
	now := s.Clock.Now()
	exp := now.Add(s.cfg.sessionTTL)
	claims := sessionClaims{jwt.RegisteredClaims{
		Issuer:    jwtIssuer,
		Subject:   addr.Hex(),
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(exp),
		ID:        s.ent.uuid(),
	}}
	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(s.jwtKey())
	if err != nil {
		writeError(w, &apiError{status: http.StatusInternalServerError, code: "error", title: "Internal error", detail: "The session could not be signed."})
		return
	}
	var accountID, name *string
	s.mu.Lock()
	if acc := s.st.accountOf(addr); acc != nil {
		accountID, name = &acc.ID, &acc.Name
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{
		"token":      token,
		"address":    addr.Hex(),
		"account_id": accountID,
		"name":       name,
		"expires_at": ts(exp.Truncate(time.Second)),
	})
}

func (s *Server) handleLogout(w http.ResponseWriter, _ *http.Request, sess *session) {
	s.mu.Lock()
	s.st.revoked[sess.jti] = true
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"revoked": true})
}
