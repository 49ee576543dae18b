package rail0

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestParseRateLimit(t *testing.T) {
	now := time.Unix(1789381370, 0)
	tests := []struct {
		name   string
		header map[string][]string
		want   RateLimitInfo
		ok     bool
	}{
		{"none", nil, RateLimitInfo{}, false},
		{"IETF structured fields",
			map[string][]string{"RateLimit-Policy": {`"default";q=100;w=60`}, "RateLimit": {`"default";r=42;t=17`}},
			RateLimitInfo{Policy: "default", Limit: 100, Window: time.Minute, Remaining: 42, Reset: 17 * time.Second, HasRemaining: true}, true},
		{"most constrained policy wins",
			map[string][]string{"RateLimit-Policy": {`"burst";q=10;w=1, "day";q=1000;w=86400`}, "RateLimit": {`"burst";r=9;t=1, "day";r=3;t=5000`}},
			RateLimitInfo{Policy: "day", Limit: 1000, Window: 24 * time.Hour, Remaining: 3, Reset: 5000 * time.Second, HasRemaining: true}, true},
		{"token names and unknown params",
			map[string][]string{"RateLimit": {`default;r=0;t=3;pk=:cHJvY2Vzcw==:`}},
			RateLimitInfo{Policy: "default", Remaining: 0, Reset: 3 * time.Second, HasRemaining: true}, true},
		{"policy only",
			map[string][]string{"RateLimit-Policy": {`"default";q=300;w=60`}},
			RateLimitInfo{Policy: "default", Limit: 300, Window: time.Minute}, true},
		{"older draft fields",
			map[string][]string{"RateLimit-Limit": {"100"}, "RateLimit-Remaining": {"7"}, "RateLimit-Reset": {"30"}},
			RateLimitInfo{Limit: 100, Remaining: 7, Reset: 30 * time.Second, HasRemaining: true}, true},
		{"X- family with Unix reset",
			map[string][]string{"X-RateLimit-Limit": {"60"}, "X-RateLimit-Remaining": {"0"}, "X-RateLimit-Reset": {"1789381400"}},
			RateLimitInfo{Limit: 60, Remaining: 0, Reset: 30 * time.Second, HasRemaining: true}, true},
		{"malformed remaining ignored",
			map[string][]string{"RateLimit": {`"default";r=-1;t=3`}, "RateLimit-Remaining": {"lots"}},
			RateLimitInfo{}, false},
		{"malformed member dropped, others kept",
			map[string][]string{"RateLimit": {`bad item;r=1, "ok";r=2;t=4`}},
			RateLimitInfo{Policy: "ok", Remaining: 2, Reset: 4 * time.Second, HasRemaining: true}, true},
		{"garbage",
			map[string][]string{"RateLimit": {`;;;==,,"`}, "RateLimit-Policy": {`q=`}},
			RateLimitInfo{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				for _, x := range v {
					h.Add(k, x)
				}
			}
			got, ok := parseRateLimit(h, now)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestRateLimitExhausted(t *testing.T) {
	var nilInfo *RateLimitInfo
	assert.False(t, nilInfo.Exhausted())
	assert.True(t, (&RateLimitInfo{HasRemaining: true, Remaining: 0, Reset: time.Second}).Exhausted())
	assert.False(t, (&RateLimitInfo{HasRemaining: true, Remaining: 1, Reset: time.Second}).Exhausted())
	assert.False(t, (&RateLimitInfo{Limit: 5}).Exhausted())
}

func FuzzParseRateLimit(f *testing.F) {
	f.Add(`"default";q=100;w=60`, `"default";r=1;t=2`, "5", "1789381400")
	f.Add(`,,;"`, `x;r=99999999999999999999`, "-1", "")
	f.Fuzz(func(t *testing.T, policy, rl, remaining, reset string) {
		h := http.Header{}
		h.Set("RateLimit-Policy", policy)
		h.Set("RateLimit", rl)
		h.Set("X-RateLimit-Remaining", remaining)
		h.Set("X-RateLimit-Reset", reset)
		info, ok := parseRateLimit(h, time.Unix(1789381370, 0))
		if !ok && info != (RateLimitInfo{}) {
			t.Fatalf("no info must be zero, got %+v", info)
		}
		if info.Remaining < 0 || info.Reset < 0 || info.Limit < 0 || info.Window < 0 {
			t.Fatalf("negative field: %+v", info)
		}
	})
}
