package rail0

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func validSIWE() SIWEMessage {
	return SIWEMessage{
		Domain:    "api.rail0.xyz",
		Address:   "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
		Statement: StatementLogin,
		URI:       "https://api.rail0.xyz",
		ChainID:   1,
		Nonce:     "f3a9c1d27b8e4a60",
		IssuedAt:  time.Date(2026, 9, 14, 12, 15, 0, 0, time.FixedZone("CEST", 2*3600)),
	}
}

// The layout of README section 2, byte for byte: lines joined with "\n",
// two blank lines, no trailing newline, Issued At in UTC.
func TestSIWEMessageString(t *testing.T) {
	want := "api.rail0.xyz wants you to sign in with your Ethereum account:\n" +
		"0x5B38Da6a701c568545dCfcB03FcB875f56beddC4\n" +
		"\n" +
		"Sign in to RAIL0\n" +
		"\n" +
		"URI: https://api.rail0.xyz\n" +
		"Version: 1\n" +
		"Chain ID: 1\n" +
		"Nonce: f3a9c1d27b8e4a60\n" +
		"Issued At: 2026-09-14T10:15:00Z"
	m := validSIWE()
	if got := m.String(); got != want {
		t.Fatalf("String() =\n%q\nwant\n%q", got, want)
	}

	m.Statement = StatementAddWallet
	m.ChainID = 84532
	m.IssuedAt = time.Date(2026, 9, 14, 10, 15, 0, 999_000_000, time.UTC) // fraction dropped
	got := m.String()
	for _, line := range []string{"\n\nAdd this wallet to your RAIL0 account\n\n", "\nChain ID: 84532\n", "\nIssued At: 2026-09-14T10:15:00Z"} {
		if !strings.Contains(got, line) {
			t.Errorf("String() = %q, missing %q", got, line)
		}
	}
	if strings.HasSuffix(got, "\n") {
		t.Errorf("String() ends with a newline")
	}
}

func TestSIWEStatements(t *testing.T) {
	if StatementLogin != "Sign in to RAIL0" || StatementAddWallet != "Add this wallet to your RAIL0 account" {
		t.Fatalf("statements changed: %q, %q", StatementLogin, StatementAddWallet)
	}
}

func TestSIWEMessageValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(m *SIWEMessage)
		field  string // "" means valid
	}{
		{"valid", func(_ *SIWEMessage) {}, ""},
		{"lower-case address", func(m *SIWEMessage) { m.Address = strings.ToLower(m.Address) }, ""},
		{"localhost with port in URI only", func(m *SIWEMessage) { m.Domain, m.URI = "localhost", "http://localhost:3000" }, ""},
		{"URI host case differs", func(m *SIWEMessage) { m.URI = "https://API.rail0.xyz/login" }, ""},
		{"empty domain", func(m *SIWEMessage) { m.Domain = "" }, "siwe.domain"},
		{"domain with scheme", func(m *SIWEMessage) { m.Domain = "https://api.rail0.xyz" }, "siwe.domain"},
		{"domain with port", func(m *SIWEMessage) { m.Domain = "api.rail0.xyz:443" }, "siwe.domain"},
		{"domain with path", func(m *SIWEMessage) { m.Domain = "api.rail0.xyz/auth" }, "siwe.domain"},
		{"domain with space", func(m *SIWEMessage) { m.Domain = "api rail0.xyz" }, "siwe.domain"},
		{"domain with newline", func(m *SIWEMessage) { m.Domain = "api.rail0.xyz\nevil" }, "siwe.domain"},
		{"short address", func(m *SIWEMessage) { m.Address = m.Address[:41] }, "siwe.address"},
		{"address without 0x", func(m *SIWEMessage) { m.Address = "00" + m.Address[2:] }, "siwe.address"},
		{"address not hex", func(m *SIWEMessage) { m.Address = "0x" + strings.Repeat("g", 40) }, "siwe.address"},
		{"empty statement", func(m *SIWEMessage) { m.Statement = "" }, "siwe.statement"},
		{"two-line statement", func(m *SIWEMessage) { m.Statement = "Sign in\nto RAIL0" }, "siwe.statement"},
		{"URI on another host", func(m *SIWEMessage) { m.URI = "https://evil.example" }, "siwe.uri"},
		{"relative URI", func(m *SIWEMessage) { m.URI = "/login" }, "siwe.uri"},
		{"URI with newline", func(m *SIWEMessage) { m.URI = "https://api.rail0.xyz\nNonce: 1" }, "siwe.uri"},
		{"zero chain", func(m *SIWEMessage) { m.ChainID = 0 }, "siwe.chain_id"},
		{"empty nonce", func(m *SIWEMessage) { m.Nonce = "" }, "siwe.nonce"},
		{"nonce with space", func(m *SIWEMessage) { m.Nonce = "abc def" }, "siwe.nonce"},
		{"no issued at", func(m *SIWEMessage) { m.IssuedAt = time.Time{} }, "siwe.issued_at"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := validSIWE()
			tt.mutate(&m)
			err := m.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate() = %v, want *ValidationError", err)
			}
			if ve.Field != tt.field {
				t.Errorf("Field = %q, want %q (%v)", ve.Field, tt.field, err)
			}
		})
	}
}
