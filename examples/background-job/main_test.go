package main

import (
	"bytes"
	"context"
	"regexp"
	"testing"
)

func TestRun(t *testing.T) {
	t.Setenv("RAIL0_BASE_URL", "")
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`retry on 429 with cooldown: +12 reads done, 0 failed, [1-9]\d* answered 429`),
		regexp.MustCompile(`paced under the budget: +12 reads done, 0 failed, 0 answered 429`),
		// The transcript summary: the 429 job waited on Retry-After, the
		// paced one in the limiter, and each prints its slowest call.
		regexp.MustCompile(`answered 429, .*s\n  waited [1-9][\d.]*s on Retry-After and [\d.]+s in the limiter; the slowest call:\n  call \d+ GET /payments \(listPayments\): ok after \d attempt`),
		regexp.MustCompile(`\n  waited 0\.0s on Retry-After and [\d.]*[1-9][\d.]*s in the limiter; the slowest call:\n  call \d+ GET /payments \(listPayments\): ok after 1 attempt`),
		regexp.MustCompile(`\n    #1 \d\d:\d\d:\d\d\.\d{3} \d{3} in \S+ request_id=\S+ `),
	} {
		if !want.Match(out.Bytes()) {
			t.Errorf("output does not match %q:\n%s", want, out.String())
		}
	}
}
