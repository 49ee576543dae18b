package rail0test

import (
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// limited builds a harness with rate limits on; the clock starts at epoch, a
// multiple of every period used here.
func limited(t *testing.T, public, session int, period time.Duration, opts ...Option) *harness {
	t.Helper()
	return newHarness(t, append([]Option{WithRateLimits(Limit{Requests: public}, Limit{Requests: session}), WithRateLimitPeriod(period)}, opts...)...)
}

func TestRateLimitWindowsAlignToEpochMultiples(t *testing.T) {
	h := limited(t, 2, 10, 10*time.Second)
	// 9.5 s into the window [epoch, epoch+10s): two requests pass, the third is throttled.
	h.clock.Set(epoch.Add(9500 * time.Millisecond))
	expect(t, h.call("GET", "/tokens", "", nil), http.StatusOK, "")
	expect(t, h.call("GET", "/tokens", "", nil), http.StatusOK, "")
	expect(t, h.call("GET", "/tokens", "", nil), http.StatusTooManyRequests, "rate_limited")
	// Half a second later a new window starts at the next multiple of 10 s, although
	// the first request of the old one was only 0.5 s ago: windows are not anchored
	// on the first request.
	h.clock.Advance(500 * time.Millisecond)
	expect(t, h.call("GET", "/tokens", "", nil), http.StatusOK, "")
	expect(t, h.call("GET", "/tokens", "", nil), http.StatusOK, "")
	expect(t, h.call("GET", "/tokens", "", nil), http.StatusTooManyRequests, "rate_limited")
	// 9.9 s later we are still in that window.
	h.clock.Advance(9900 * time.Millisecond)
	expect(t, h.call("GET", "/tokens", "", nil), http.StatusTooManyRequests, "rate_limited")
}

func TestRateLimitCountsThrottledRequests(t *testing.T) {
	h := limited(t, 2, 10, 2*time.Second, WithRateLimitHeaders())
	for i := 1; i <= 5; i++ {
		res := h.call("GET", "/tokens", "", nil)
		if want := i <= 2; (res.status == http.StatusOK) != want {
			t.Fatalf("request %d: status %d", i, res.status)
		}
	}
	// Every request is counted, the three throttled ones included, as Rack::Attack's
	// cache counter does.
	h.srv.limiter.mu.Lock()
	count := h.srv.limiter.public.counts["127.0.0.1"]
	h.srv.limiter.mu.Unlock()
	if count != 5 {
		t.Fatalf("counter = %d, want 5", count)
	}
}

func TestRateLimitRetryAfterIsWholePeriod(t *testing.T) {
	h := limited(t, 1, 10, 60*time.Second)
	h.clock.Set(epoch.Add(59 * time.Second)) // one second before the window ends
	expect(t, h.call("GET", "/blockchains", "", nil), http.StatusOK, "")
	res := h.call("GET", "/blockchains", "", nil)
	expect(t, res, http.StatusTooManyRequests, "rate_limited")
	if got := res.header.Get("Retry-After"); got != "60" {
		t.Fatalf("Retry-After = %q, want the whole period \"60\"", got)
	}
	body := res.json(t)
	if body["status"] != "rate_limited" || body["title"] != "Too many requests" || body["detail"] == "" {
		t.Fatalf("429 body = %s", res.body)
	}
	if res.header.Get("RateLimit-Policy") != "" {
		t.Fatal("RateLimit headers sent without WithRateLimitHeaders")
	}
}

func TestRateLimitSurfacesAreIndependent(t *testing.T) {
	h := limited(t, 3, 2, 60*time.Second)
	h.srv.limiter.on.Store(false) // sign in without spending the budgets
	buyer := h.login(h.srv.Buyer)
	merchant := h.login(h.srv.Merchant)
	h.srv.limiter.on.Store(true)

	for i := 0; i < 3; i++ {
		expect(t, h.call("GET", "/tokens", "", nil), http.StatusOK, "")
	}
	expect(t, h.call("GET", "/tokens", "", nil), http.StatusTooManyRequests, "rate_limited")
	// The public budget of this IP is spent; the session surface is untouched.
	expect(t, h.call("GET", "/payments", buyer, nil), http.StatusOK, "")
	expect(t, h.call("GET", "/payments", buyer, nil), http.StatusOK, "")
	expect(t, h.call("GET", "/payments", buyer, nil), http.StatusTooManyRequests, "rate_limited")
	// Sessions are keyed by token: another token has its own budget.
	expect(t, h.call("GET", "/payments", merchant, nil), http.StatusOK, "")
	// A bearer request counts on the session surface even on a public route.
	expect(t, h.call("GET", "/health", merchant, nil), http.StatusOK, "")
	expect(t, h.call("GET", "/health", merchant, nil), http.StatusTooManyRequests, "rate_limited")
}

func TestRateLimitThrottledRequestNeverReachesHandler(t *testing.T) {
	h := limited(t, 100, 1, 60*time.Second)
	h.srv.limiter.on.Store(false) // sign in without spending the budgets
	buyer := h.login(h.srv.Buyer)
	h.srv.limiter.on.Store(true)
	h.srv.Ledger.Reset()
	body := map[string]any{"chain_id": h.srv.ChainID, "mode": "charge", "amount": "1.00", "token": h.srv.Token,
		"payer": h.srv.Buyer.Address, "payee": h.srv.Merchant.Address}
	expect(t, h.call("POST", "/payments", buyer, body, withHeader("Idempotency-Key", "k1")), http.StatusCreated, "")
	expect(t, h.call("POST", "/payments", buyer, body, withHeader("Idempotency-Key", "k2")), http.StatusTooManyRequests, "rate_limited")
	if n := h.srv.Ledger.Count(routeCreatePayment, ""); n != 1 {
		t.Fatalf("create handler ran %d times, want 1", n)
	}
	if n := h.srv.Ledger.Count("", "k2"); n != 0 {
		t.Fatalf("the throttled request is in the ledger %d times", n)
	}
	h.clock.Advance(time.Minute)
	if l := h.call("GET", "/payments", buyer, nil).list(t); len(l) != 1 {
		t.Fatalf("payments = %d, want 1", len(l))
	}
}

func TestRateLimitHeaders(t *testing.T) {
	h := limited(t, 100, 300, 60*time.Second, WithRateLimitHeaders())
	h.clock.Set(epoch.Add(45 * time.Second))
	res := h.call("GET", "/tokens", "", nil)
	want := map[string]string{
		"RateLimit-Policy":    `"default";q=100;w=60`,
		"RateLimit":           `"default";r=99;t=15`,
		"RateLimit-Limit":     "100",
		"RateLimit-Remaining": "99",
		"RateLimit-Reset":     "15",
	}
	for k, v := range want {
		if got := res.header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

func TestRateLimitDefaultsAndOff(t *testing.T) {
	h := limited(t, 100, 300, 60*time.Second)
	for i := 0; i < 100; i++ {
		if res, _ := h.send("GET", "/tokens", "", nil); res.status != http.StatusOK {
			t.Fatalf("request %d: %d", i+1, res.status)
		}
	}
	expect(t, h.call("GET", "/tokens", "", nil), http.StatusTooManyRequests, "rate_limited")

	off := newHarness(t) // the harness default is WithoutRateLimits
	for i := 0; i < 150; i++ {
		if res, _ := off.send("GET", "/tokens", "", nil); res.status != http.StatusOK {
			t.Fatalf("request %d without limits: %d", i+1, res.status)
		}
	}
	if d := defaultConfig(); d.publicLimit.Requests != 100 || d.sessionLimit.Requests != 300 || d.ratePeriod != time.Minute || !d.rateLimits {
		t.Fatalf("defaults = %+v", d)
	}
}

// staleClock is an adversarial Clock: every read moves time forward by step, and
// the reader is held (other goroutines run) between reading the time and
// returning it, so the time it returns is already stale, often from the previous
// window.
type staleClock struct {
	now  atomic.Int64 // Unix nanoseconds
	step time.Duration
}

func (c *staleClock) Now() time.Time {
	t := c.now.Add(int64(c.step)) - int64(c.step)
	for range 3 {
		runtime.Gosched()
	}
	return time.Unix(0, t)
}

// TestRateLimitNeverAdmitsMoreThanLimitPerWindow is the throttle's property: with
// many goroutines on one key and a clock whose readers are held across window
// boundaries, no window admits more than the limit, and no request is counted in
// a window its clock read had not reached or the clock had already left.
func TestRateLimitNeverAdmitsMoreThanLimitPerWindow(t *testing.T) {
	const (
		limit      = 5
		goroutines = 16
		requests   = 400
		period     = time.Second
	)
	for _, surface := range []bool{false, true} {
		clock := &staleClock{step: period / 40} // about 40 reads per window: every window fills up
		clock.now.Store(epoch.UnixNano())
		cfg := defaultConfig()
		cfg.publicLimit, cfg.sessionLimit, cfg.ratePeriod = Limit{Requests: limit}, Limit{Requests: limit}, period
		l := newRateLimiter(cfg, clock)

		var mu sync.Mutex
		admitted := map[int64]int{}
		var wrong []string
		var wg sync.WaitGroup
		for range goroutines {
			wg.Go(func() {
				for range requests {
					v := l.count(surface, "k")
					after := floorDiv(clock.now.Load(), int64(period))
					mu.Lock()
					if v.window < floorDiv(v.now.UnixNano(), int64(period)) || v.window > after {
						wrong = append(wrong, fmt.Sprintf("counted in window %d, read %v, clock now in window %d", v.window, v.now, after))
					}
					if v.admitted() {
						admitted[v.window]++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(wrong) > 0 {
			t.Fatalf("session=%v: %d requests counted in the wrong window, e.g. %s", surface, len(wrong), wrong[0])
		}
		if len(admitted) < 10 {
			t.Fatalf("session=%v: only %d windows seen; the clock did not cross boundaries", surface, len(admitted))
		}
		for w, n := range admitted {
			if n > limit {
				t.Errorf("session=%v: window %d admitted %d requests, limit %d", surface, w, n, limit)
			}
		}
	}
}

func TestRateLimitBackwardClockNeverReopensAWindow(t *testing.T) {
	clock := NewManualClock(epoch)
	cfg := defaultConfig()
	cfg.publicLimit, cfg.ratePeriod = Limit{Requests: 2}, time.Second
	l := newRateLimiter(cfg, clock)
	clock.Set(epoch.Add(1500 * time.Millisecond)) // window epoch+1
	for i := range 2 {
		if v := l.count(false, "k"); !v.admitted() {
			t.Fatalf("request %d refused", i+1)
		}
	}
	// The clock jumps back into the previous window: the request still counts in
	// the latest one, which is full, instead of opening a fresh budget.
	clock.Set(epoch.Add(900 * time.Millisecond))
	if v := l.count(false, "k"); v.admitted() || v.window != floorDiv(epoch.Add(1500*time.Millisecond).UnixNano(), int64(time.Second)) {
		t.Fatalf("a backward clock reopened a window: %+v", v)
	}
	l.reset()
	if v := l.count(false, "k"); !v.admitted() || v.count != 1 {
		t.Fatalf("after reset: %+v", v)
	}
}

func TestRateLimitPeriodPerSurface(t *testing.T) {
	h := newHarness(t, WithRateLimits(Limit{Requests: 1, Period: time.Second}, Limit{Requests: 1, Period: time.Hour}))
	h.srv.limiter.on.Store(false) // sign in without spending the budgets
	buyer := h.login(h.srv.Buyer)
	h.srv.limiter.on.Store(true)

	expect(t, h.call("GET", "/tokens", "", nil), http.StatusOK, "")
	res := h.call("GET", "/tokens", "", nil)
	expect(t, res, http.StatusTooManyRequests, "rate_limited")
	if got := res.header.Get("Retry-After"); got != "1" {
		t.Fatalf("public Retry-After = %q, want 1", got)
	}
	expect(t, h.call("GET", "/payments", buyer, nil), http.StatusOK, "")
	res = h.call("GET", "/payments", buyer, nil)
	expect(t, res, http.StatusTooManyRequests, "rate_limited")
	if got := res.header.Get("Retry-After"); got != "3600" {
		t.Fatalf("session Retry-After = %q, want 3600", got)
	}
	// A second later the public window reopens; the session one stays closed.
	h.clock.Advance(time.Second)
	expect(t, h.call("GET", "/tokens", "", nil), http.StatusOK, "")
	expect(t, h.call("GET", "/payments", buyer, nil), http.StatusTooManyRequests, "rate_limited")
}

func TestFloorDiv(t *testing.T) {
	for _, c := range []struct{ a, b, want int64 }{{7, 2, 3}, {-7, 2, -4}, {-8, 2, -4}, {0, 5, 0}, {-1, 5, -1}} {
		if got := floorDiv(c.a, c.b); got != c.want {
			t.Errorf("floorDiv(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
