package rail0

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/rail0/rail0-go/internal/verify"
)

// What SIWE messages say. The gateway ties each statement to one purpose
// and refuses the other with siwe_purpose_mismatch.
const (
	// StatementLogin is the statement of a sign-in message (POST /auth).
	StatementLogin = "Sign in to RAIL0"
	// StatementAddWallet is the statement of a wallet ownership proof
	// (POST /accounts/{account_id}/wallets).
	StatementAddWallet = "Add this wallet to your RAIL0 account"
	// DefaultSIWEChainID is the chain id of sign-in messages when none is
	// given. The gateway's sign-in chain is 1 unless its operator
	// configured another.
	DefaultSIWEChainID int64 = 1
)

// SIWEMessage is a Sign-In with Ethereum (EIP-4361) message in the exact
// layout the gateway parses. Build one and check it with Validate. Have
// the account sign String() with EIP-191 personal_sign. Then trade it with
// Auth.Verify. A client created WithSigner, and Auth.WalletProof, do all
// of this.
type SIWEMessage struct {
	// Domain is the bare host the gateway accepts, such as
	// "api.rail0.xyz". It has no scheme, no port, no path.
	Domain string
	// Address is the signing account in EIP-55 checksummed form. The root
	// package does not compute checksums: it does not link go-ethereum. So
	// the Signer must supply it.
	Address string
	// Statement is StatementLogin or StatementAddWallet.
	Statement string
	// URI is the origin the request is for; its host must equal Domain,
	// such as "https://api.rail0.xyz".
	URI string
	// ChainID follows the gateway's sign-in chain policy (usually 1).
	ChainID int64
	// Nonce is a fresh nonce from Auth.CreateNonce; each signs in once.
	Nonce string
	// IssuedAt is the current time; the gateway refuses stale or future
	// values. It is written in UTC with second precision.
	IssuedAt time.Time
}

// String returns the message text to sign. It is the EIP-4361 layout,
// lines joined with "\n", with no trailing newline. It does not validate;
// call Validate first.
func (m SIWEMessage) String() string {
	var b strings.Builder
	b.WriteString(m.Domain)
	b.WriteString(" wants you to sign in with your Ethereum account:\n")
	b.WriteString(m.Address)
	b.WriteString("\n\n")
	b.WriteString(m.Statement)
	b.WriteString("\n\nURI: ")
	b.WriteString(m.URI)
	b.WriteString("\nVersion: 1\nChain ID: ")
	b.WriteString(strconv.FormatInt(m.ChainID, 10))
	b.WriteString("\nNonce: ")
	b.WriteString(m.Nonce)
	b.WriteString("\nIssued At: ")
	b.WriteString(m.IssuedAt.UTC().Format(time.RFC3339))
	return b.String()
}

// Validate checks the fields the gateway parses strictly. A layout slip is
// then reported here with the field at fault. It is not left to the
// gateway's bare invalid_siwe. Each problem is a *ValidationError whose
// Field is "siwe.<field>".
func (m SIWEMessage) Validate() error {
	fail := func(field, reason string) error {
		return &ValidationError{Field: "siwe." + field, Reason: reason}
	}
	if err := checkDomain(m.Domain); err != nil {
		return fail("domain", err.Error())
	}
	if !isAddress(m.Address) {
		return fail("address", "must be 0x followed by 40 hex digits")
	}
	if m.Statement == "" {
		return fail("statement", "is required")
	}
	if strings.ContainsAny(m.Statement, "\r\n") {
		return fail("statement", "must be one line")
	}
	if err := checkURI(m.URI, m.Domain); err != nil {
		return fail("uri", err.Error())
	}
	if m.ChainID <= 0 {
		return fail("chain_id", "must be positive")
	}
	if m.Nonce == "" {
		return fail("nonce", "is required")
	}
	if strings.ContainsFunc(m.Nonce, isSpaceOrControl) {
		return fail("nonce", "must not contain spaces or line breaks")
	}
	if m.IssuedAt.IsZero() {
		return fail("issued_at", "is required")
	}
	return nil
}

// siweReason is the reason a field is refused, wrapped into a
// *ValidationError by Validate.
type siweReason string

func (r siweReason) Error() string { return string(r) }

// checkDomain accepts a bare DNS name or IPv4 address.
func checkDomain(d string) error {
	switch {
	case d == "":
		return siweReason("is required")
	case strings.Contains(d, "://"):
		return siweReason("must be a bare host, without a scheme")
	case strings.Contains(d, ":"):
		return siweReason("must be a bare host, without a port")
	case strings.ContainsAny(d, "/?#@"):
		return siweReason("must be a bare host, without a path, query or user")
	case d[0] == '.' || d[0] == '-' || d[len(d)-1] == '.':
		return siweReason("is not a host name")
	}
	for _, r := range d {
		if !(r == '.' || r == '-' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
			return siweReason("is not a host name")
		}
	}
	return nil
}

func checkURI(raw, domain string) error {
	if raw == "" {
		return siweReason("is required")
	}
	if strings.ContainsFunc(raw, isSpaceOrControl) {
		return siweReason("must not contain spaces or line breaks")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return siweReason("must be an absolute URI such as https://" + domain)
	}
	if !strings.EqualFold(u.Hostname(), domain) {
		return siweReason("host " + strconv.Quote(u.Hostname()) + " must equal the domain " + strconv.Quote(domain))
	}
	return nil
}

func isSpaceOrControl(r rune) bool { return r <= ' ' || r == 0x7f }

// isAddress reports whether s is "0x" followed by 40 hex digits (any case).
func isAddress(s string) bool {
	_, err := verify.ParseAddress(s)
	return err == nil
}
