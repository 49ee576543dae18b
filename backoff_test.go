package rail0

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 9, 14, 10, 0, 0, 0, time.UTC)
	ahead := now.Add(90 * time.Second)
	past := now.Add(-90 * time.Second)
	tests := []struct {
		name  string
		value string
		want  time.Duration
		ok    bool
	}{
		{"delta seconds", "60", 60 * time.Second, true},
		{"one second", "1", time.Second, true},
		{"surrounding spaces", "  7 ", 7 * time.Second, true},
		{"leading zeros", "007", 7 * time.Second, true},
		{"IMF-fixdate ahead", ahead.Format(http.TimeFormat), 90 * time.Second, true},
		{"RFC 850 ahead", ahead.Format(time.RFC850), 90 * time.Second, true},
		{"asctime ahead", ahead.Format(time.ANSIC), 90 * time.Second, true},
		{"IMF-fixdate past", past.Format(http.TimeFormat), 0, false},
		{"RFC 850 past", past.Format(time.RFC850), 0, false},
		{"asctime past", past.Format(time.ANSIC), 0, false},
		{"date equal to now", now.Format(http.TimeFormat), 0, false},
		{"zero", "0", 0, false},
		{"negative", "-5", 0, false},
		{"plus sign", "+5", 0, false},
		{"fraction", "1.5", 0, false},
		{"garbage", "soon", 0, false},
		{"empty", "", 0, false},
		{"blank", "   ", 0, false},
		{"overflow int64", "99999999999999999999999", maxDuration, true},
		{"overflow duration", "9223372036854775807", maxDuration, true},
		{"largest exact", "9223372036", 9223372036 * time.Second, true},
		{"far future date", "Fri, 31 Dec 9999 23:59:59 GMT", maxDuration, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseRetryAfter(tt.value, now)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	now := time.Date(2026, 9, 14, 10, 0, 0, 0, time.UTC)
	for _, s := range []string{"60", "0", "-1", "", "Sun, 06 Nov 1994 08:49:37 GMT", "99999999999999999999", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := parseRetryAfter(v, now)
		if ok && d <= 0 {
			t.Fatalf("parseRetryAfter(%q) = %v, true: an instruction must be positive", v, d)
		}
		if !ok && d != 0 {
			t.Fatalf("parseRetryAfter(%q) = %v, false: no instruction must be zero", v, d)
		}
	})
}

func TestServerWait(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name       string
		retryAfter time.Duration
		cap        time.Duration
		room       time.Duration
		u          float64
		want       time.Duration
		ok         bool
	}{
		{"no jitter drawn", 10 * s, 60 * s, time.Hour, 0, 10 * s, true},
		{"additive jitter", 10 * s, 60 * s, time.Hour, 0.5, 10*s + 500*time.Millisecond, true},
		{"jitter below 10%", 10 * s, 60 * s, time.Hour, 0.999999, 10*s + 999999*time.Microsecond, true},
		{"u of 1 stays below 10%", 10 * s, 60 * s, time.Hour, 1, 11*s - 1, true},
		{"cap clamps before jitter", 600 * s, 60 * s, time.Hour, 0.5, 63 * s, true},
		{"cap clamps a saturated value", maxDuration, 60 * s, maxDuration, 0, 60 * s, true},
		{"jitter shrinks to fit room", 10 * s, 60 * s, 10*s + 200*time.Millisecond, 0.9, 10*s + 200*time.Millisecond, true},
		{"exact fit", 10 * s, 60 * s, 10 * s, 0.9, 10 * s, true},
		{"does not fit", 10 * s, 60 * s, 9 * s, 0, 0, false},
		// Issue 12, item 9: the uncapped instruction decides the fit.
		{"uncapped value decides the fit", 600 * s, 60 * s, 61 * s, 0, 0, false},
		{"cap applies when the room admits the instruction", 100 * s, 60 * s, 100 * s, 0.5, 63 * s, true},
		{"saturated value never fits", maxDuration, 60 * s, time.Hour, 0, 0, false},
		{"no room", 1 * s, 60 * s, 0, 0, 0, false},
		{"negative room", 1 * s, 60 * s, -s, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := serverWait(tt.retryAfter, tt.cap, tt.room, tt.u)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestGuessWait(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name string
		n    int
		cap  time.Duration
		room time.Duration
		u    float64
		want time.Duration
		ok   bool
	}{
		{"first window", 0, time.Minute, time.Hour, 0.5, 250 * ms, true},
		{"doubles", 1, time.Minute, time.Hour, 0.5, 500 * ms, true},
		{"doubles again", 3, time.Minute, time.Hour, 0.5, 2000 * ms, true},
		{"zero draw", 3, time.Minute, time.Hour, 0, 0, true},
		{"cap bounds the window", 20, 10 * time.Second, time.Hour, 0.5, 5 * time.Second, true},
		{"huge n saturates, cap bounds", 500, 10 * time.Second, time.Hour, 0.5, 5 * time.Second, true},
		{"room bounds the window", 3, time.Minute, 1000 * ms, 0.5, 500 * ms, true},
		{"no room", 0, time.Minute, 0, 0.5, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := guessWait(500*ms, tt.cap, tt.n, tt.room, tt.u)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

// The drawn jitter is random (it follows the injected draw) and never puts
// the wait below the instruction or at/above instruction + 10%.
func TestServerWaitJitterIsRandomAndNeverEarly(t *testing.T) {
	ra := 30 * time.Second
	seen := map[time.Duration]bool{}
	for i := 0; i < 1000; i++ {
		u := float64(i) / 1000
		w, ok := serverWait(ra, time.Minute, time.Hour, u)
		require.True(t, ok)
		require.GreaterOrEqual(t, w, ra, "u=%v", u)
		require.Less(t, w, ra+ra/10, "u=%v", u)
		seen[w] = true
	}
	assert.Greater(t, len(seen), 900, "different draws must give different waits")
	// Bad draws from an injected source are clamped, never early.
	for _, u := range []float64{-1, math.NaN(), math.Inf(1), 2} {
		w, ok := serverWait(ra, time.Minute, time.Hour, u)
		require.True(t, ok)
		assert.GreaterOrEqual(t, w, ra)
		assert.Less(t, w, ra+ra/10)
	}
}

func TestDecide(t *testing.T) {
	const s = time.Second
	const ms = time.Millisecond
	on := policy{retryOn429: true, retryAfterCap: 60 * s, maxRetryWait: 180 * s, maxRetries: 2, base: 500 * ms}
	off := on
	off.retryOn429 = false
	full := retryBudgetSize
	fresh := budget{attempts: 1, deadline: maxDuration, tokens: full}
	tests := []struct {
		name string
		p    policy
		o    outcome
		b    budget
		want decision
	}{
		{"success", on, outcome{op: opRead, status: 200}, fresh, decision{}},
		{"4xx is definitive", on, outcome{op: opOnce, status: 422}, fresh, decision{}},
		// Issue 12, item 17: reported, not silent.
		{"429 with retries off is reported", off, outcome{op: opRead, status: 429, retryAfter: 60 * s, hasRetryAfter: true}, fresh,
			decision{relevant: true, reason: ReasonRetryOn429Off}},
		{"429 server wait, additive jitter", on,
			outcome{op: opRead, status: 429, retryAfter: 10 * s, hasRetryAfter: true}, fresh,
			decision{relevant: true, retry: true, wait: 10*s + 500*ms, reason: ReasonRateLimited, rateWait: true}},
		{"429 on POST without key is retried", on,
			outcome{op: opOnce, status: 429, retryAfter: 10 * s, hasRetryAfter: true}, fresh,
			decision{relevant: true, retry: true, wait: 10*s + 500*ms, reason: ReasonRateLimited, rateWait: true}},
		// Issue 12, item 9: the cap bounds waits the allowance admits...
		{"429 capped when the allowance admits the instruction", on,
			outcome{op: opRead, status: 429, retryAfter: 100 * s, hasRetryAfter: true}, fresh,
			decision{relevant: true, retry: true, wait: 63 * s, reason: ReasonRateLimited, rateWait: true}},
		// ... and an instruction longer than the allowance is refused at once.
		{"429 asking longer than the allowance: refused", on,
			outcome{op: opRead, status: 429, retryAfter: 600 * s, hasRetryAfter: true}, fresh,
			decision{relevant: true, reason: ReasonAllowance}},
		{"429 asking longer than what is left of the allowance", on,
			outcome{op: opRead, status: 429, retryAfter: 100 * s, hasRetryAfter: true}, budget{attempts: 2, waited: 90 * s, deadline: maxDuration},
			decision{relevant: true, reason: ReasonAllowance}},
		{"429 asking longer than the deadline, capped wait would fit", on,
			outcome{op: opRead, status: 429, retryAfter: 120 * s, hasRetryAfter: true}, budget{attempts: 1, deadline: 90 * s},
			decision{relevant: true, reason: ReasonDeadline}},
		{"429 without instruction is a guess", on,
			outcome{op: opRead, status: 429}, budget{attempts: 2, deadline: maxDuration, guesses429: 1},
			decision{relevant: true, retry: true, wait: 500 * ms, reason: ReasonRateLimitedGuess, rateWait: true, guess: true}},
		{"429 allowance does not fit", on,
			outcome{op: opRead, status: 429, retryAfter: 60 * s, hasRetryAfter: true}, budget{attempts: 3, waited: 150 * s, deadline: maxDuration},
			decision{relevant: true, reason: ReasonAllowance}},
		{"429 deadline does not fit", on,
			outcome{op: opRead, status: 429, retryAfter: 60 * s, hasRetryAfter: true}, budget{attempts: 1, deadline: 30 * s},
			decision{relevant: true, reason: ReasonDeadline}},
		{"429 jitter shrinks to the deadline", on,
			outcome{op: opRead, status: 429, retryAfter: 10 * s, hasRetryAfter: true}, budget{attempts: 1, deadline: 10*s + 100*ms},
			decision{relevant: true, retry: true, wait: 10*s + 100*ms, reason: ReasonRateLimited, rateWait: true}},
		{"429 guess with allowance gone", on,
			outcome{op: opRead, status: 429}, budget{attempts: 1, waited: 180 * s, deadline: maxDuration},
			decision{relevant: true, reason: ReasonAllowance}},
		// Issue 12, item 12: 429s do not need the retry budget.
		{"429 retried with the retry budget empty", on,
			outcome{op: opRead, status: 429, retryAfter: 1 * s, hasRetryAfter: true}, budget{attempts: 1, deadline: maxDuration},
			decision{relevant: true, retry: true, wait: s + 50*ms, reason: ReasonRateLimited, rateWait: true}},
		{"502 on GET retried with a guess", on,
			outcome{op: opRead, status: 502}, fresh,
			decision{relevant: true, retry: true, wait: 250 * ms, reason: ReasonServerError, cost: retryCost, guess: true}},
		{"502 on POST without key: outcome unknown", on,
			outcome{op: opOnce, status: 502}, fresh,
			decision{relevant: true, reason: ReasonUnsafe, unknown: true}},
		{"502 on POST with key retried", on,
			outcome{op: opKeyed, status: 502, idempotencyKey: true}, fresh,
			decision{relevant: true, retry: true, wait: 250 * ms, reason: ReasonServerError, cost: retryCost, guess: true}},
		{"502 on POST /payments without key: outcome unknown", on,
			outcome{op: opKeyed, status: 502}, fresh,
			decision{relevant: true, reason: ReasonUnsafe, unknown: true}},
		// Issue 12, item 13: every 5xx may have run.
		{"520 on a submit: outcome unknown", on, outcome{op: opOnce, status: 520}, fresh,
			decision{relevant: true, reason: ReasonUnsafe, unknown: true}},
		{"524 on a submit: outcome unknown", on, outcome{op: opOnce, status: 524}, fresh,
			decision{relevant: true, reason: ReasonUnsafe, unknown: true}},
		{"507 on a submit: outcome unknown", on, outcome{op: opOnce, status: 507}, fresh,
			decision{relevant: true, reason: ReasonUnsafe, unknown: true}},
		{"507 on a keyed create: not repeated, outcome unknown", on, outcome{op: opKeyed, status: 507, idempotencyKey: true}, fresh,
			decision{relevant: true, reason: ReasonUnsafe, unknown: true}},
		{"507 on a read is definitive", on, outcome{op: opRead, status: 507}, fresh, decision{}},
		{"502 on a repeatable write retried", on, outcome{op: opRepeatable, status: 502}, fresh,
			decision{relevant: true, retry: true, wait: 250 * ms, reason: ReasonServerError, cost: retryCost, guess: true}},
		{"502 on a repeatable write past MaxRetries: known", on, outcome{op: opRepeatable, status: 502},
			budget{attempts: 3, otherRetries: 2, deadline: maxDuration, tokens: full},
			decision{relevant: true, reason: ReasonMaxRetries}},
		// Issue 12, item 11: a 503's Retry-After is a server wait.
		{"503 with Retry-After is a server wait", on,
			outcome{op: opRead, status: 503, retryAfter: 2 * s, hasRetryAfter: true}, fresh,
			decision{relevant: true, retry: true, wait: 2*s + 100*ms, reason: ReasonServerError, rateWait: true, cost: retryCost}},
		{"503 Retry-After capped", on,
			outcome{op: opRead, status: 503, retryAfter: 120 * s, hasRetryAfter: true}, fresh,
			decision{relevant: true, retry: true, wait: 63 * s, reason: ReasonServerError, rateWait: true, cost: retryCost}},
		{"503 Retry-After longer than the allowance: refused", on,
			outcome{op: opRead, status: 503, retryAfter: 600 * s, hasRetryAfter: true}, fresh,
			decision{relevant: true, reason: ReasonAllowance}},
		{"503 Retry-After past the deadline: refused", on,
			outcome{op: opRead, status: 503, retryAfter: 20 * s, hasRetryAfter: true}, budget{attempts: 1, deadline: 10 * s, tokens: full},
			decision{relevant: true, reason: ReasonDeadline}},
		{"503 Retry-After past the deadline on a keyed create: unknown too", on,
			outcome{op: opKeyed, idempotencyKey: true, status: 503, retryAfter: 20 * s, hasRetryAfter: true}, budget{attempts: 1, deadline: 10 * s, tokens: full},
			decision{relevant: true, reason: ReasonDeadline, unknown: true}},
		{"503 Retry-After still bound by MaxRetries", on,
			outcome{op: opRead, status: 503, retryAfter: 2 * s, hasRetryAfter: true}, budget{attempts: 3, otherRetries: 2, deadline: maxDuration, tokens: full},
			decision{relevant: true, reason: ReasonMaxRetries}},
		{"502 with Retry-After is still a guess", on,
			outcome{op: opRead, status: 502, retryAfter: 60 * s, hasRetryAfter: true}, fresh,
			decision{relevant: true, retry: true, wait: 250 * ms, reason: ReasonServerError, cost: retryCost, guess: true}},
		{"PATCH reset: outcome unknown", on,
			outcome{op: opOnce, failed: true}, fresh,
			decision{relevant: true, reason: ReasonUnsafe, unknown: true}},
		{"PUT reset retried", on,
			outcome{op: opRepeatable, failed: true}, fresh,
			decision{relevant: true, retry: true, wait: 250 * ms, reason: ReasonTransport, cost: retryCost, guess: true}},
		{"timeout costs more", on,
			outcome{op: opRead, failed: true, timeout: true}, fresh,
			decision{relevant: true, retry: true, wait: 250 * ms, reason: ReasonTransport, cost: timeoutRetryCost, guess: true}},
		{"dial refused on POST retried", on,
			outcome{op: opOnce, failed: true, notSent: true}, fresh,
			decision{relevant: true, retry: true, wait: 250 * ms, reason: ReasonNotSent, cost: retryCost, guess: true}},
		// Issue 12, item 12: an empty retry budget returns failures at once.
		{"retry budget empty: 503 returned", on,
			outcome{op: opRead, status: 503}, budget{attempts: 1, deadline: maxDuration, tokens: retryCost - 1},
			decision{relevant: true, reason: ReasonRetryBudget}},
		{"retry budget short of a timeout's cost", on,
			outcome{op: opRead, failed: true, timeout: true}, budget{attempts: 1, deadline: maxDuration, tokens: timeoutRetryCost - 1},
			decision{relevant: true, reason: ReasonRetryBudget}},
		{"retry budget empty on a keyed create: unknown", on,
			outcome{op: opKeyed, idempotencyKey: true, status: 500}, budget{attempts: 1, deadline: maxDuration},
			decision{relevant: true, reason: ReasonRetryBudget, unknown: true}},
		{"retry budget empty on a never-sent POST: known", on,
			outcome{op: opOnce, failed: true, notSent: true}, budget{attempts: 1, deadline: maxDuration},
			decision{relevant: true, reason: ReasonRetryBudget}},
		{"max retries on GET", on,
			outcome{op: opRead, status: 500}, budget{attempts: 3, otherRetries: 2, deadline: maxDuration, tokens: full},
			decision{relevant: true, reason: ReasonMaxRetries}},
		{"max retries on keyed POST: still unknown", on,
			outcome{op: opKeyed, status: 500, idempotencyKey: true}, budget{attempts: 3, otherRetries: 2, deadline: maxDuration, tokens: full},
			decision{relevant: true, reason: ReasonMaxRetries, unknown: true}},
		{"max retries on never-sent POST: known", on,
			outcome{op: opOnce, failed: true, notSent: true}, budget{attempts: 3, otherRetries: 2, deadline: maxDuration, tokens: full},
			decision{relevant: true, reason: ReasonMaxRetries}},
		{"zero max retries", policy{retryAfterCap: 60 * s, maxRetryWait: 180 * s, base: 500 * ms},
			outcome{op: opRead, status: 503}, fresh,
			decision{relevant: true, reason: ReasonMaxRetries}},
		{"context done", on, outcome{op: opRead, status: 429, retryAfter: s, hasRetryAfter: true, ctxDone: true}, fresh, decision{}},
		{"safety net on endless 429s", on,
			outcome{op: opRead, status: 429}, budget{attempts: maxAttempts, deadline: maxDuration},
			decision{relevant: true, reason: ReasonMaxRetries}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, decide(tt.p, tt.o, tt.b, 0.5))
		})
	}
}

// MaxRetries does not gate 429 retries: RetryOn429 works on its own.
func TestDecide429IgnoresMaxRetries(t *testing.T) {
	p := policy{retryOn429: true, retryAfterCap: time.Minute, maxRetryWait: time.Hour, maxRetries: 0, base: time.Second}
	d := decide(p, outcome{op: opOnce, status: 429, retryAfter: time.Second, hasRetryAfter: true},
		budget{attempts: 5, otherRetries: 0, deadline: maxDuration}, 0)
	assert.True(t, d.retry)
	assert.Equal(t, time.Second, d.wait)
}

func TestExpWindowSaturates(t *testing.T) {
	assert.Equal(t, time.Second, expWindow(time.Second, 0))
	assert.Equal(t, 8*time.Second, expWindow(time.Second, 3))
	assert.Equal(t, maxDuration, expWindow(time.Second, 40))
	assert.Equal(t, maxDuration, expWindow(time.Second, 1000))
	assert.Equal(t, time.Second, expWindow(time.Second, -1))
}
