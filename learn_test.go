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

func TestDistrust(t *testing.T) {
	const s = time.Second
	retry := decision{relevant: true, retry: true, wait: 1100 * time.Millisecond, reason: ReasonRateLimited, rateWait: true}
	tests := []struct {
		name                string
		d                   decision
		fb                  ratelimit.Feedback
		allowance, deadline time.Duration
		want                decision
	}{
		{"trusted: unchanged", retry, ratelimit.Feedback{Cooldown: s}, time.Minute, maxDuration, retry},
		{"distrusted: the lengthened wait plus jitter, and said so", retry, ratelimit.Feedback{Cooldown: 2 * s, Distrusted: true}, time.Minute, maxDuration,
			decision{relevant: true, retry: true, wait: 2100 * time.Millisecond, reason: ReasonRetryAfterDistrusted, rateWait: true}},
		{"does not fit the allowance: refused now", retry, ratelimit.Feedback{Cooldown: 2 * s, Distrusted: true}, 1500 * time.Millisecond, maxDuration,
			decision{relevant: true, reason: ReasonAllowance}},
		{"does not fit the deadline: refused now", retry, ratelimit.Feedback{Cooldown: 2 * s, Distrusted: true}, time.Minute, 1500 * time.Millisecond,
			decision{relevant: true, reason: ReasonDeadline}},
		{"not a retry: unchanged", decision{relevant: true, reason: ReasonAllowance}, ratelimit.Feedback{Cooldown: 2 * s, Distrusted: true}, time.Minute, maxDuration,
			decision{relevant: true, reason: ReasonAllowance}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := distrust(tt.d, tt.fb, policy{maxRetryWait: tt.allowance}, budget{deadline: tt.deadline}, 0.5)
			assert.Equal(t, tt.want, got)
		})
	}
}
