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

func TestExpWindowSaturates(t *testing.T) {
	assert.Equal(t, time.Second, expWindow(time.Second, 0))
	assert.Equal(t, 8*time.Second, expWindow(time.Second, 3))
	assert.Equal(t, maxDuration, expWindow(time.Second, 40))
	assert.Equal(t, maxDuration, expWindow(time.Second, 1000))
	assert.Equal(t, time.Second, expWindow(time.Second, -1))
}
