package rail0test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// A bearer token that is not a valid session of the server buys no budget of
// its own: one IP sending a fresh invented token with every request stays on
// its public budget, as the gateway's Rack::Attack keys keep it.
func TestInventedBearersStayOnThePublicBudget(t *testing.T) {
	h := limited(t, 3, 10, time.Minute, WithSessionTTL(time.Hour))
	h.srv.limiter.on.Store(false) // sign in without spending the budgets
	revoked := h.login(h.srv.Buyer)
	expect(t, h.call("POST", "/auth/logout", revoked, nil), http.StatusOK, "")
	expired := h.login(h.srv.Buyer)
	forged, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{
		Issuer: jwtIssuer, Subject: h.srv.Buyer.Address, ExpiresAt: jwt.NewNumericDate(epoch.Add(time.Hour)),
	}).SignedString([]byte("a key the server never used"))
	if err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(59 * time.Minute)
	merchant := h.login(h.srv.Merchant) // valid for another hour
	h.clock.Advance(30 * time.Minute)   // the first buyer session has expired
	h.srv.limiter.on.Store(true)

	// 20 sign-in nonces, each with another bearer that proves no session.
	created := 0
	for i := range 20 {
		tok := fmt.Sprintf("invented-%d", i)
		switch i {
		case 0:
			tok = revoked
		case 1:
			tok = expired
		case 2:
			tok = forged
		}
		res := h.call("POST", "/auth/nonces", tok, nil)
		switch res.status {
		case http.StatusCreated:
			created++
		case http.StatusTooManyRequests:
		default:
			t.Fatalf("nonce %d: status %d", i, res.status)
		}
	}
	if created != 3 {
		t.Fatalf("%d sign-in nonces created in one window, want the public limit of 3", created)
	}
	// A session route with an invented token is refused 401 while the IP has
	// budget, and counted on that budget: here it is spent.
	expect(t, h.call("GET", "/payments", "invented-x", nil), http.StatusTooManyRequests, "rate_limited")
	expect(t, h.call("GET", "/tokens", "", nil), http.StatusTooManyRequests, "rate_limited")
	// A valid session keeps its own budget.
	expect(t, h.call("GET", "/payments", merchant, nil), http.StatusOK, "")

	h.clock.Advance(time.Minute) // a new window
	expect(t, h.call("GET", "/payments", "invented-y", nil), http.StatusUnauthorized, "unauthorized")
	expect(t, h.call("GET", "/payments", expired, nil), http.StatusUnauthorized, "unauthorized")
	expect(t, h.call("GET", "/health", "invented-z", nil), http.StatusOK, "")
	expect(t, h.call("GET", "/tokens", "", nil), http.StatusTooManyRequests, "rate_limited")
	h.srv.limiter.mu.Lock()
	public, session := h.srv.limiter.public.counts["127.0.0.1"], len(h.srv.limiter.session.counts)
	h.srv.limiter.mu.Unlock()
	if public != 4 || session != 1 {
		t.Fatalf("counters: public %d, %d session keys; want 4 and the merchant's 1", public, session)
	}
}
