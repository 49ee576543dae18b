package rail0test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// proof builds a SIWE message for p with a fresh nonce, optionally edited, and its
// signature.
func (h *harness) proof(p Party, statement string, edit func(string) string) (msg, sig string) {
	h.t.Helper()
	n := h.call("POST", "/auth/nonces", "", nil).json(h.t)["nonce"].(string)
	msg = h.srv.SIWEMessage(p.Address, n, statement)
	if edit != nil {
		msg = edit(msg)
	}
	return msg, personalSign(h.t, p.Key(), msg)
}

func TestSIWEVerificationCodes(t *testing.T) {
	h := newHarness(t)
	buyer := h.srv.Buyer
	cases := []struct {
		name      string
		statement string
		edit      func(string) string
		code      string
	}{
		{"missing blank line", loginStatement, func(m string) string { return strings.Replace(m, "\n\nSign in", "\nSign in", 1) }, "invalid_siwe"},
		{"trailing newline", loginStatement, func(m string) string { return m + "\n" }, "invalid_siwe"},
		{"lowercase address", loginStatement, func(m string) string { return strings.Replace(m, buyer.Address, strings.ToLower(buyer.Address), 1) }, "invalid_siwe"},
		{"foreign domain", loginStatement, func(m string) string { return strings.Replace(m, "127.0.0.1 wants", "evil.example wants", 1) }, "invalid_siwe"},
		{"wrong chain", loginStatement, func(m string) string { return strings.Replace(m, "Chain ID: 1\n", "Chain ID: 5\n", 1) }, "invalid_siwe"},
		{"other statement", "Hello", nil, "invalid_siwe"},
		{"wallet proof at login", walletStatement, nil, "siwe_purpose_mismatch"},
		{"unknown nonce", loginStatement, func(m string) string {
			i := strings.Index(m, "Nonce: ")
			return m[:i] + "Nonce: 0000000000000000" + m[i+len("Nonce: ")+32:]
		}, "invalid_nonce"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg, sig := h.proof(buyer, c.statement, c.edit)
			expect(t, h.call("POST", "/auth", "", map[string]string{"message": msg, "signature": sig}), http.StatusUnprocessableEntity, c.code)
		})
	}

	t.Run("signer mismatch", func(t *testing.T) {
		msg, _ := h.proof(buyer, loginStatement, nil)
		sig := personalSign(t, h.srv.Merchant.Key(), msg)
		expect(t, h.call("POST", "/auth", "", map[string]string{"message": msg, "signature": sig}), http.StatusUnprocessableEntity, "signer_mismatch")
	})
	t.Run("nonce single use", func(t *testing.T) {
		msg, sig := h.proof(buyer, loginStatement, nil)
		expect(t, h.call("POST", "/auth", "", map[string]string{"message": msg, "signature": sig}), http.StatusCreated, "")
		expect(t, h.call("POST", "/auth", "", map[string]string{"message": msg, "signature": sig}), http.StatusUnprocessableEntity, "nonce_used")
	})
	t.Run("nonce expires", func(t *testing.T) {
		n := h.call("POST", "/auth/nonces", "", nil).json(t)["nonce"].(string)
		h.clock.Advance(5*time.Minute + time.Second)
		msg := h.srv.SIWEMessage(buyer.Address, n, loginStatement)
		expect(t, h.call("POST", "/auth", "", map[string]string{"message": msg, "signature": personalSign(t, buyer.Key(), msg)}),
			http.StatusUnprocessableEntity, "invalid_nonce")
	})
	t.Run("stale issued at", func(t *testing.T) {
		msg, _ := h.proof(buyer, loginStatement, nil)
		h.clock.Advance(6 * time.Minute)
		expect(t, h.call("POST", "/auth", "", map[string]string{"message": msg, "signature": personalSign(t, buyer.Key(), msg)}),
			http.StatusUnprocessableEntity, "invalid_siwe")
	})
}

func TestSessionsAndTokens(t *testing.T) {
	h := newHarness(t, WithSessionTTL(time.Hour))
	res := h.call("POST", "/auth", "", nil)
	expect(t, res, http.StatusUnprocessableEntity, "missing_param")

	msg, sig := h.proof(h.srv.Buyer, loginStatement, nil)
	sess := h.call("POST", "/auth", "", map[string]string{"message": msg, "signature": sig}).json(t)
	if sess["account_id"] != nil || sess["name"] != nil || sess["address"] != h.srv.Buyer.Address {
		t.Fatalf("buyer session = %v", sess)
	}
	token := sess["token"].(string)
	claims := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(token, claims); err != nil {
		t.Fatal(err)
	}
	if claims["sub"] != h.srv.Buyer.Address || claims["exp"] == nil {
		t.Fatalf("claims = %v", claims)
	}
	merchant := h.login(h.srv.Merchant)
	if got := h.call("GET", "/accounts/"+h.srv.Merchant.AccountID+"/wallets", merchant, nil); got.status != http.StatusOK {
		t.Fatalf("merchant wallets: %d", got.status)
	}

	// Logout revokes only the token presented.
	other, err := h.srv.Login(context.Background(), h.srv.Buyer.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, h.call("POST", "/auth/logout", token, nil), http.StatusOK, "")
	expect(t, h.call("GET", "/payments", token, nil), http.StatusUnauthorized, "unauthorized")
	expect(t, h.call("GET", "/payments", other, nil), http.StatusOK, "")

	// Expiry on the server clock.
	h.clock.Advance(time.Hour + time.Second)
	expect(t, h.call("GET", "/payments", other, nil), http.StatusUnauthorized, "unauthorized")
	// An invalid token on /health is treated as no token.
	if body := h.call("GET", "/health", other, nil).json(t); body["api_version"] != nil {
		t.Fatalf("health with an expired token = %v", body)
	}

	// A token from another gateway (another key) is refused; so is garbage.
	elsewhere := NewServer(WithoutRateLimits())
	defer elsewhere.Close()
	foreign, err := elsewhere.Login(context.Background(), elsewhere.Buyer.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, h.call("GET", "/payments", foreign, nil), http.StatusUnauthorized, "unauthorized")
	expect(t, h.call("GET", "/payments", "not-a-jwt", nil), http.StatusUnauthorized, "unauthorized")
	expect(t, h.call("GET", "/payments", "", nil), http.StatusUnauthorized, "unauthorized")
}

func TestLoginHelperAndDeterminism(t *testing.T) {
	a := NewServer(WithSeed(42), WithoutRateLimits())
	defer a.Close()
	b := NewServer(WithSeed(42), WithoutRateLimits())
	defer b.Close()
	if a.Merchant.AccountID != b.Merchant.AccountID || a.Merchant.Address != b.Merchant.Address {
		t.Fatal("servers with the same seed differ")
	}
	if _, err := a.Login(context.Background(), "zz"); err == nil || strings.Contains(err.Error(), "zz") {
		t.Fatalf("bad key error = %v", err)
	}
	tok, err := a.Login(context.Background(), "0x"+a.Merchant.PrivateKey)
	if err != nil || tok == "" {
		t.Fatalf("Login = %q, %v", tok, err)
	}
	if strings.Contains(a.Merchant.String(), a.Merchant.PrivateKey) {
		t.Fatal("Party.String leaks the private key")
	}
}
