package signing

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts"
	"github.com/ethereum/go-ethereum/common"
)

// TestSignMessageWeb3Vector checks the example of the web3.js documentation
// for web3.eth.accounts.sign("Some data", key).
func TestSignMessageWeb3Vector(t *testing.T) {
	s := mustSigner(t, web3Key)
	if got := MessageHash("Some data").Hex(); got != "0x1da44b586eb0729ff70a73c326926f6ed5a25f5b056e7f47fbc6e58d86871655" {
		t.Errorf("MessageHash = %s", got)
	}
	sig, err := SignMessage(context.Background(), s, "Some data")
	if err != nil {
		t.Fatal(err)
	}
	const want = "0xb91467e570a6466aa9e9876cbcd013baba02900b8979d43fe208a4a4f339f5fd6007e74cd82e037b800186422fc2da167c747ef045e5d18a5f5d4300f8e1a0291c"
	if sig != want {
		t.Errorf("SignMessage = %s, want %s", sig, want)
	}
	if got, err := RecoverMessageSigner("Some data", sig); err != nil || got.Hex() != web3Addr {
		t.Errorf("RecoverMessageSigner = %s, %v; want %s", got, err, web3Addr)
	}
}

func TestMessageHashMatchesGoEthereum(t *testing.T) {
	// The length prefix counts bytes, not runes.
	for _, m := range []string{"", "a", "Some data", "héllo wörld ✓", strings.Repeat("x", 1000), "line\nbreak"} {
		if got, want := MessageHash(m), common.BytesToHash(accounts.TextHash([]byte(m))); got != want {
			t.Errorf("MessageHash(%q) = %s, accounts.TextHash = %s", m, got, want)
		}
	}
}

// siweLoginMessage lays out a SIWE login exactly as README section 2 shows.
// The SDK's own builder is rail0.SIWEMessage in the root package; this copy
// exists only so this package can prove the end-to-end recovery.
func siweLoginMessage(domain string, address common.Address, uri string, chainID int64, nonce string, issuedAt time.Time) string {
	return strings.Join([]string{
		domain + " wants you to sign in with your Ethereum account:",
		address.Hex(),
		"",
		"Sign in to RAIL0",
		"",
		"URI: " + uri,
		"Version: 1",
		"Chain ID: " + strconv.FormatInt(chainID, 10),
		"Nonce: " + nonce,
		"Issued At: " + issuedAt.UTC().Format(time.RFC3339),
	}, "\n")
}

func TestSIWELoginEndToEnd(t *testing.T) {
	s := mustSigner(t, hardhatKey)
	issued := time.Date(2026, 9, 14, 10, 15, 0, 0, time.UTC)
	msg := siweLoginMessage("api.rail0.xyz", s.Address(), "https://api.rail0.xyz", 1, "n0nce8chars", issued)
	const wantMsg = "api.rail0.xyz wants you to sign in with your Ethereum account:\n" +
		hardhatAddr + "\n\nSign in to RAIL0\n\nURI: https://api.rail0.xyz\nVersion: 1\nChain ID: 1\nNonce: n0nce8chars\nIssued At: 2026-09-14T10:15:00Z"
	if msg != wantMsg {
		t.Fatalf("login message =\n%s\nwant\n%s", msg, wantMsg)
	}
	sig, err := NewAccount(s).SignMessage(context.Background(), msg)
	if err != nil {
		t.Fatal(err)
	}
	if len(sig) != 132 || !strings.HasPrefix(sig, "0x") || (sig[130:] != "1b" && sig[130:] != "1c") {
		t.Fatalf("signature %s: want 0x + 65 bytes with v 27 or 28", sig)
	}
	if got, err := RecoverMessageSigner(msg, sig); err != nil || got != s.Address() {
		t.Fatalf("RecoverMessageSigner = %s, %v; want %s", got, err, s.Address())
	}
	// One changed byte (a missing blank line) recovers to someone else.
	tampered := strings.Replace(msg, "\n\nURI", "\nURI", 1)
	if got, _ := RecoverMessageSigner(tampered, sig); got == s.Address() {
		t.Fatal("a signature must not verify for a different message")
	}
}

func TestRecoverMessageSignerRefusesMalformedSignatures(t *testing.T) {
	sig, err := SignMessage(context.Background(), mustSigner(t, cowKey), "m")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", sig[2:], sig[:131], sig + "0", "0X" + sig[2:], sig[:130] + "02", sig[:130] + "ff"} {
		if _, err := RecoverMessageSigner("m", bad); !errors.Is(err, ErrInvalidSignature) {
			t.Errorf("RecoverMessageSigner(%q) = %v, want ErrInvalidSignature", bad, err)
		}
	}
}
