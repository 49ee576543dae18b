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
		`request 1: 200 {"status":"unsigned"}`,
		`request 2: 200 {"status":"unsigned"}`,
		"request 3: 503 payment service busy; retry later",
		"(Retry-After: 60)",
	} {
		if !bytes.Contains(out.Bytes(), []byte(want)) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
