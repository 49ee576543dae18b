package rail0test

import (
	"context"
	"net/http"
	"testing"
)

// TestSeedDoesNotDeriveTheJWTSecret: two servers with the same seed have the same
// ids, but a token of one is refused by the other, so knowing the seed does not
// let anyone mint sessions. A fixed WithJWTSecret is shared on purpose.
func TestSeedDoesNotDeriveTheJWTSecret(t *testing.T) {
	a := NewServer(WithSeed(42), WithoutRateLimits())
	defer a.Close()
	b := NewServer(WithSeed(42), WithoutRateLimits())
	defer b.Close()
	if a.Merchant.AccountID != b.Merchant.AccountID {
		t.Fatal("the seed no longer makes ids reproducible")
	}
	if string(a.jwtKey()) == string(b.jwtKey()) {
		t.Fatal("two servers with the same seed share a JWT secret")
	}
	tok, err := a.Login(context.Background(), a.Buyer.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	hb := &harness{t: t, srv: b}
	expect(t, hb.call("GET", "/payments", tok, nil), http.StatusUnauthorized, "unauthorized")
	ha := &harness{t: t, srv: a}
	expect(t, ha.call("GET", "/payments", tok, nil), http.StatusOK, "")
}
