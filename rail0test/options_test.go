package rail0test

import (
	"net/http"
	"testing"
	"time"
)

// TestRateLimitOfOneSurfaceKeepsTheOther: WithPublicRateLimit and
// WithSessionRateLimit change one surface's budget, and the other keeps
// its own (the default, or what an earlier option set).
func TestRateLimitOfOneSurfaceKeepsTheOther(t *testing.T) {
	t.Run("session only", func(t *testing.T) {
		h := newHarness(t, WithSessionRateLimit(Limit{Requests: 1}))
		h.srv.limiter.on.Store(false) // sign in without spending the budgets
		buyer := h.login(h.srv.Buyer)
		h.srv.limiter.on.Store(true)
		for range 5 { // the public default, 100, is untouched
			expect(t, h.call("GET", "/tokens", "", nil), http.StatusOK, "")
		}
		expect(t, h.call("GET", "/payments", buyer, nil), http.StatusOK, "")
		expect(t, h.call("GET", "/payments", buyer, nil), http.StatusTooManyRequests, "rate_limited")
	})
	t.Run("public only, after both", func(t *testing.T) {
		h := newHarness(t, WithRateLimits(Limit{Requests: 1}, Limit{Requests: 3, Period: time.Hour}),
			WithPublicRateLimit(Limit{Requests: 2}))
		h.srv.limiter.on.Store(false)
		buyer := h.login(h.srv.Buyer)
		h.srv.limiter.on.Store(true)
		expect(t, h.call("GET", "/tokens", "", nil), http.StatusOK, "")
		expect(t, h.call("GET", "/tokens", "", nil), http.StatusOK, "")
		expect(t, h.call("GET", "/tokens", "", nil), http.StatusTooManyRequests, "rate_limited")
		for range 3 { // the session budget WithRateLimits set stands
			expect(t, h.call("GET", "/payments", buyer, nil), http.StatusOK, "")
		}
		res := h.call("GET", "/payments", buyer, nil)
		expect(t, res, http.StatusTooManyRequests, "rate_limited")
		if got := res.header.Get("Retry-After"); got != "3600" {
			t.Errorf("session Retry-After = %q, want 3600", got)
		}
	})
}

// TestZeroLimitThrottlesEverything: a Limit of zero Requests is not the
// default: its surface admits nothing, as rail0-gateway's -public-limit 0.
func TestZeroLimitThrottlesEverything(t *testing.T) {
	h := newHarness(t, WithPublicRateLimit(Limit{}))
	expect(t, h.call("GET", "/tokens", "", nil), http.StatusTooManyRequests, "rate_limited")
}
