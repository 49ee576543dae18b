package rail0

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rail0/rail0-go/internal/jitter"
)

// This file computes the waits the retry rules decide. One is a
// server-given wait (serverWait, from the parsed Retry-After). The other is
// a guess (guessWait).

const (
	// defaultBackoffBase is the first full-jitter window of a guessed wait.
	defaultBackoffBase = 500 * time.Millisecond
	// serverJitter is the additive jitter on a server-given wait, as a
	// fraction of the capped wait.
	serverJitter = 0.10
)

// parseRetryAfter parses a Retry-After value, relative to now. The value is
// delta-seconds, or an HTTP-date in any of the three forms http.ParseTime
// accepts. It reports false ("no instruction") for an empty, zero, negative
// or malformed value, and for a date that is not in the future. A value too
// large to represent saturates at the largest time.Duration. It is still an
// instruction, and RetryAfterCap bounds the wait.
func parseRetryAfter(value string, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(value)
	if v == "" {
		return 0, false
	}
	if isDigits(v) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n > int64(maxDuration/time.Second) {
			return maxDuration, true // only digits, so the error is overflow
		}
		if n == 0 {
			return 0, false
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := t.Sub(now) // Sub saturates instead of overflowing
	if d <= 0 {
		return 0, false
	}
	return d, true
}

// retryAfterOf reads the Retry-After of an answer. gatewayNow is the
// client's estimate of the gateway's clock (gatewayClock), and the only
// "now" delta-seconds need. An HTTP-date is read against the earlier of
// gatewayNow and the answer's own Date header. So a server whose clock is
// ahead of or behind the local one still gets the wait it asked for. And a
// Date rewritten later than the gateway's clock cannot shorten the wait.
func retryAfterOf(h http.Header, gatewayNow time.Time) (time.Duration, bool) {
	v := h.Get("Retry-After")
	if v == "" || isDigits(strings.TrimSpace(v)) {
		return parseRetryAfter(v, gatewayNow) // no date to read against: skip parsing Date
	}
	now := gatewayNow
	if t, err := http.ParseTime(h.Get("Date")); err == nil && t.Before(now) {
		now = t
	}
	return parseRetryAfter(v, now)
}

// serverWait is the wait before retrying a server-given instruction. It is
// min(retryAfter, cap) plus additive jitter drawn from U[0, 10%) of that.
// So clients told the same number do not wake together, and none wakes
// before the instruction. u is a uniform draw from [0, 1).
//
// room is what is left of the allowance and of the context deadline. When
// the server's instruction, uncapped, does not fit in room, ok is false.
// The server said the window stays closed longer than the call may wait,
// so the call must not wait at all. The cap only shortens waits the room
// admits. Otherwise the jitter shrinks to fit, and the wait never goes
// below the capped instruction.
func serverWait(retryAfter, cap, room time.Duration, u float64) (wait time.Duration, ok bool) {
	if retryAfter > room {
		return 0, false
	}
	lower := min(retryAfter, cap)
	spread := time.Duration(float64(lower) * serverJitter * jitter.Clamp(u))
	if spread > room-lower {
		spread = room - lower
	}
	return lower + spread, true
}

// guessWait is the wait when the server gave no instruction: a 429 without
// a usable Retry-After, a 5xx, a transport error. It is full jitter,
// U[0, min(cap, base·2ⁿ)), where n counts the guesses already made in this
// call. The window shrinks to fit room. ok is false only when room is gone.
func guessWait(base, cap time.Duration, n int, room time.Duration, u float64) (wait time.Duration, ok bool) {
	if room <= 0 {
		return 0, false
	}
	window := min(expWindow(base, n), cap, room)
	return time.Duration(float64(window) * jitter.Clamp(u)), true
}

// expWindow is base·2ⁿ, saturating instead of overflowing.
func expWindow(base time.Duration, n int) time.Duration {
	if n < 0 {
		n = 0
	}
	if n >= 62 || base > maxDuration>>uint(n) {
		return maxDuration
	}
	return base << uint(n)
}
