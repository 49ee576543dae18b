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
	} {
		if !want.Match(out.Bytes()) {
			t.Errorf("output does not match %q:\n%s", want, out.String())
		}
	}
}
