package rail0test

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// rateLimiter reproduces Rack::Attack's throttle. Each surface has:
//   - a fixed window, numbered floor(now / period) since the Unix epoch;
//   - a counter per (discriminator, window), incremented for every request,
//     throttled ones included.
//
// A request is throttled when the counter exceeds the limit.
//
// The clock is read under the same lock as the counters. So a request is
// counted in the window of the time it was counted at. Take a request that
// read the clock just before a boundary. It cannot reach the counters after
// another request opened the next window, and reopen the old one. A clock
// that moves backwards never reopens an older window either. Neither does a
// Clock whose Now returns a time it read long before. Such a request is
// counted in the latest window. Both guarantee that no window admits more
// than its limit.
type rateLimiter struct {
	on      atomic.Bool
	clock   Clock
	headers bool

	mu      sync.Mutex
	public  surfaceCounter
	session surfaceCounter
}

// surfaceCounter is the throttle of one surface.
// Its mutable fields are guarded by rateLimiter.mu.
type surfaceCounter struct {
	name   string
	limit  int
	period time.Duration
	opened bool  // window holds a window number
	window int64 // the latest window counted
	counts map[string]int
}

// verdict is the outcome of counting one request.
type verdict struct {
	surface string
	limit   int
	period  time.Duration
	count   int       // the request's place in its window, 1-based
	window  int64     // the window it was counted in
	now     time.Time // the clock's time when it was counted
}

// admitted reports whether the request is within the limit.
func (v verdict) admitted() bool { return v.count <= v.limit }

func newRateLimiter(cfg config, clock Clock) *rateLimiter {
	period := func(l Limit) time.Duration {
		if l.Period > 0 {
			return l.Period
		}
		return cfg.ratePeriod
	}
	l := &rateLimiter{
		clock:   clock,
		headers: cfg.rateHeaders,
		public:  surfaceCounter{name: "public", limit: cfg.publicLimit.Requests, period: period(cfg.publicLimit), counts: map[string]int{}},
		session: surfaceCounter{name: "session", limit: cfg.sessionLimit.Requests, period: period(cfg.sessionLimit), counts: map[string]int{}},
	}
	l.on.Store(cfg.rateLimits)
	return l
}

func (l *rateLimiter) enabled() bool { return l.on.Load() }

// reset forgets every counter, as after a restart.
func (l *rateLimiter) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, sc := range []*surfaceCounter{&l.public, &l.session} {
		sc.opened, sc.window = false, 0
		clear(sc.counts)
	}
}

// count counts one request of key, reading the clock under the lock.
// With session true it counts on the session surface, else on the public
// one.
func (l *rateLimiter) count(session bool, key string) verdict {
	l.mu.Lock()
	defer l.mu.Unlock()
	sc := &l.public
	if session {
		sc = &l.session
	}
	now := l.clock.Now()
	window := floorDiv(now.UnixNano(), int64(sc.period))
	switch {
	case !sc.opened || window > sc.window: // a new window: older counters can never be read again
		sc.opened, sc.window = true, window
		clear(sc.counts)
	case window < sc.window: // a stale or backward time: count it in the latest window
		window = sc.window
	}
	sc.counts[key]++
	return verdict{surface: sc.name, limit: sc.limit, period: sc.period, count: sc.counts[key], window: window, now: now}
}

// floorDiv is a / b rounded towards negative infinity (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// seconds is d in whole seconds, rounded up, at least 1.
func seconds(d time.Duration) int64 {
	return max(1, int64((d+time.Second-1)/time.Second))
}

// check counts r and, when it is over the limit, answers 429 and returns
// true. session is the bearer token when r carries a valid session, and ""
// otherwise. A request counts against its session's budget only when the
// token proves one. Otherwise it counts against its IP's public budget, as
// the gateway's Rack::Attack keys do. Keying on any bearer text instead
// would give every invented token a fresh budget.
func (l *rateLimiter) check(w http.ResponseWriter, r *http.Request, session string) bool {
	key := clientIP(r)
	if session != "" {
		key = session
	}
	v := l.count(session != "", key)

	if l.headers {
		windowEnd := time.Unix(0, (v.window+1)*int64(v.period))
		reset := seconds(windowEnd.Sub(v.now))
		remaining := max(0, v.limit-v.count)
		h := w.Header()
		h.Set("RateLimit-Policy", fmt.Sprintf(`"default";q=%d;w=%d`, v.limit, seconds(v.period)))
		h.Set("RateLimit", fmt.Sprintf(`"default";r=%d;t=%d`, remaining, reset))
		h.Set("RateLimit-Limit", strconv.Itoa(v.limit))
		h.Set("RateLimit-Remaining", strconv.Itoa(remaining))
		h.Set("RateLimit-Reset", strconv.FormatInt(reset, 10))
	}
	if v.admitted() {
		return false
	}
	w.Header().Set("Retry-After", strconv.FormatInt(seconds(v.period), 10))
	writeJSON(w, http.StatusTooManyRequests, map[string]any{
		"code":   "rate_limited",
		"title":  "Too many requests",
		"detail": "Request limit reached for this period; retry after the Retry-After delay.",
		"status": "rate_limited",
	})
	return true
}

// clientIP is the host part of RemoteAddr.
// That is what Rack's request.ip is behind no proxy.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
