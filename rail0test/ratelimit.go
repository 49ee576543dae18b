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

// rateLimiter reproduces Rack::Attack's throttle: a fixed window numbered
// floor(now / period) since the Unix epoch, a counter per (surface, discriminator,
// window) incremented for every request (throttled ones included), and a request
// throttled when the counter exceeds the limit.
type rateLimiter struct {
	on      atomic.Bool
	public  int
	session int
	period  time.Duration
	headers bool

	mu     sync.Mutex
	window int64
	counts map[string]int
}

func newRateLimiter(cfg config) *rateLimiter {
	l := &rateLimiter{
		public:  cfg.publicLimit.Requests,
		session: cfg.sessionLimit.Requests,
		period:  cfg.ratePeriod,
		headers: cfg.rateHeaders,
		counts:  map[string]int{},
	}
	l.on.Store(cfg.rateLimits)
	return l
}

func (l *rateLimiter) enabled() bool { return l.on.Load() }

// periodSeconds is the period in whole seconds, rounded up, at least 1.
func (l *rateLimiter) periodSeconds() int64 {
	return max(1, int64((l.period+time.Second-1)/time.Second))
}

// check counts r and, when it is over the limit, answers 429 and returns true.
func (l *rateLimiter) check(w http.ResponseWriter, r *http.Request, now time.Time) bool {
	surface, limit := "public", l.public
	key := clientIP(r)
	if tok, ok := bearer(r); ok {
		surface, limit, key = "session", l.session, tok
	}
	window := now.UnixNano() / int64(l.period)
	l.mu.Lock()
	if window != l.window { // a new window: older counters can never be read again
		l.window = window
		clear(l.counts)
	}
	k := surface + "\x00" + key
	l.counts[k]++
	count := l.counts[k]
	l.mu.Unlock()

	if l.headers {
		windowEnd := time.Unix(0, (window+1)*int64(l.period))
		reset := max(1, int64((windowEnd.Sub(now)+time.Second-1)/time.Second))
		remaining := max(0, limit-count)
		secs := l.periodSeconds()
		h := w.Header()
		h.Set("RateLimit-Policy", fmt.Sprintf(`"default";q=%d;w=%d`, limit, secs))
		h.Set("RateLimit", fmt.Sprintf(`"default";r=%d;t=%d`, remaining, reset))
		h.Set("RateLimit-Limit", strconv.Itoa(limit))
		h.Set("RateLimit-Remaining", strconv.Itoa(remaining))
		h.Set("RateLimit-Reset", strconv.FormatInt(reset, 10))
	}
	if count <= limit {
		return false
	}
	w.Header().Set("Retry-After", strconv.FormatInt(l.periodSeconds(), 10))
	writeJSON(w, http.StatusTooManyRequests, map[string]any{
		"code":   "rate_limited",
		"title":  "Too many requests",
		"detail": "Request limit reached for this period; retry after the Retry-After delay.",
		"status": "rate_limited",
	})
	return true
}

// clientIP is the host part of RemoteAddr, as Rack's request.ip is behind no proxy.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
