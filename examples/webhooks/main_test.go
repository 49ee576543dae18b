package main

import (
	"bytes"
	"context"
	"testing"
)

func TestRun(t *testing.T) {
	t.Setenv("RAIL0_BASE_URL", "")
	t.Setenv("RAIL0_CALLBACK_URL", "")
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		`registered for payments.charged`,
		"verified delivery: payments.charged for our payment: true, status charged",
		"redelivery has the same event id: true (seen 2 times",
	} {
		if !bytes.Contains(out.Bytes(), []byte(want)) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if !bytes.Contains(out.Bytes(), []byte("shared_secret: [redacted]")) {
		t.Errorf("the secret must print redacted:\n%s", out.String())
	}
}
