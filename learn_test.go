package rail0

import (
	"testing"
	"time"

	"github.com/rail0/rail0-go/ratelimit"
	"github.com/stretchr/testify/assert"
)

func TestMarginFrom(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name   string
		rtts   []time.Duration
		period time.Duration
		want   time.Duration
	}{
		{"nothing observed: the old default", nil, 60 * time.Second, 1200 * ms},
		{"nothing observed, short period", nil, 500 * ms, 20 * ms},
		{"the longest round trip", []time.Duration{2 * ms, 7 * ms, 3 * ms}, 2 * time.Second, 7 * ms},
		{"at least a millisecond", []time.Duration{50 * time.Microsecond}, 2 * time.Second, ms},
		{"at most a tenth of the period", []time.Duration{900 * ms}, 2 * time.Second, 200 * ms},
		{"period unknown: unbounded", []time.Duration{900 * ms}, 0, 900 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, marginFrom(tt.rtts, tt.period))
		})
	}
	var d delayLog
	for i := range 100 {
		d.add(time.Duration(i) * ms)
	}
	assert.Equal(t, 99*ms, d.margin(10*time.Second))
	d.add(-time.Second)
	assert.Equal(t, 99*ms, d.margin(10*time.Second), "a negative round trip (clock step) is ignored")
}

// The median paces the probe rounds (Reservation.Step): the typical round
// trip, which one slow answer in 32 does not move, where the margin is the
// longest one.
func TestDelayLogMedian(t *testing.T) {
	ms := time.Millisecond
	var d delayLog
	median := func() time.Duration {
		m, med := d.timing(time.Hour)
		assert.Equal(t, d.margin(time.Hour), m, "one reading gives the margin too")
		return med
	}
	assert.Zero(t, median(), "nothing observed: the margin paces")
	for _, rtt := range []time.Duration{9 * ms, 2 * ms, 5 * ms} {
		d.add(rtt)
	}
	assert.Equal(t, 5*ms, median(), "odd count: the middle one")
	d.add(7 * ms)
	assert.Equal(t, 7*ms, median(), "even count: the upper middle one")
	for range 31 {
		d.add(3 * ms)
	}
	d.add(400 * ms)
	assert.Equal(t, 3*ms, median(), "the last 32 only, and a tail draw does not move it")
	assert.Equal(t, 400*ms, d.margin(time.Hour), "where it sets the margin")
}

// A short Retry-After's lesson applied to a 429's retry: the lengthened
// cooldown plus jitter when it fits, else (issue 22, item 3) the wait
// clamped to what is left of the allowance, or of the deadline less a
// round trip for the retry's answer, never below the wait decided on the
// server's instruction.
func TestDistrust(t *testing.T) {
	const s, ms = time.Second, time.Millisecond
	retry := decision{relevant: true, retry: true, wait: 1100 * ms, reason: ReasonRateLimited, rateWait: true}
	clamped := func(w time.Duration) decision {
		return decision{relevant: true, retry: true, wait: w, reason: ReasonRetryAfterDistrustedClamped, rateWait: true}
	}
	tests := []struct {
		name                     string
		d                        decision
		fb                       ratelimit.Feedback
		allowance, deadline, rtt time.Duration
		want                     decision
	}{
		{"trusted: unchanged", retry, ratelimit.Feedback{Cooldown: s}, time.Minute, maxDuration, 0, retry},
		{"trusted, a cooldown shorter than the wait (a learned window reopens sooner): unchanged", retry, ratelimit.Feedback{Cooldown: 400 * ms},
			time.Minute, maxDuration, 0, retry},
		{"distrusted: the lengthened wait plus jitter, and said so", retry, ratelimit.Feedback{Cooldown: 2 * s, Distrusted: true}, time.Minute, maxDuration, 0,
			decision{relevant: true, retry: true, wait: 2100 * ms, reason: ReasonRetryAfterDistrusted, rateWait: true}},
		{"the jitter shrinks to fit", retry, ratelimit.Feedback{Cooldown: 2 * s, Distrusted: true}, 2050 * ms, maxDuration, 0,
			decision{relevant: true, retry: true, wait: 2050 * ms, reason: ReasonRetryAfterDistrusted, rateWait: true}},
		{"does not fit the allowance: clamped to what is left", retry, ratelimit.Feedback{Cooldown: 2 * s, Distrusted: true}, 1500 * ms, maxDuration, 100 * ms,
			clamped(1500 * ms)},
		{"does not fit the deadline: clamped to what is left, less a round trip", retry, ratelimit.Feedback{Cooldown: 2 * s, Distrusted: true}, time.Minute, 1500 * ms, 100 * ms,
			clamped(1400 * ms)},
		{"the deadline less a round trip is below the instruction: the instruction", retry, ratelimit.Feedback{Cooldown: 2 * s, Distrusted: true}, time.Minute, 1150 * ms, 100 * ms,
			clamped(1100 * ms)},
		{"the seed: 1 s asked, 2 s distrusted, 1.45 s left", decision{relevant: true, retry: true, wait: 1050 * ms, reason: ReasonRateLimited, rateWait: true},
			ratelimit.Feedback{Cooldown: 2 * s, Distrusted: true}, 1450 * ms, maxDuration, 0, clamped(1450 * ms)},
		{"not a retry: unchanged", decision{relevant: true, reason: ReasonAllowance}, ratelimit.Feedback{Cooldown: 2 * s, Distrusted: true}, time.Minute, maxDuration, 0,
			decision{relevant: true, reason: ReasonAllowance}},
		{"a guessed wait: unchanged", decision{relevant: true, retry: true, wait: 300 * ms, reason: ReasonServerError}, ratelimit.Feedback{Cooldown: 2 * s, Distrusted: true}, time.Minute, maxDuration, 0,
			decision{relevant: true, retry: true, wait: 300 * ms, reason: ReasonServerError}},
		{"a 429's guessed wait: unchanged (a header informs only its own attempt)",
			decision{relevant: true, retry: true, wait: 300 * ms, reason: ReasonRateLimitedGuess, rateWait: true, guess: true},
			ratelimit.Feedback{Cooldown: 2 * s, Distrusted: true}, time.Minute, maxDuration, 0,
			decision{relevant: true, retry: true, wait: 300 * ms, reason: ReasonRateLimitedGuess, rateWait: true, guess: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := distrust(tt.d, tt.fb, policy{maxRetryWait: tt.allowance}, budget{deadline: tt.deadline, rtt: tt.rtt}, 0.5)
			assert.Equal(t, tt.want, got)
		})
	}
}
