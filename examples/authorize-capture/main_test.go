package main

import (
	"bytes"
	"context"
	"testing"
)

func TestRun(t *testing.T) {
	t.Setenv("RAIL0_BASE_URL", "")
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"payer signed: signed",
		"authorize confirmed: payment authorized, capturable 25, refundable 0",
		"capture 10.00 confirmed: payment partially_captured, capturable 15, refundable 10",
		"refund 4.00 confirmed: payment partially_captured, capturable 15, refundable 6",
		"done",
	} {
		if !bytes.Contains(out.Bytes(), []byte(want)) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
