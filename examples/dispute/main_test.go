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
		"capture confirmed: payment captured, disputed false",
		"dispute confirmed: payment captured, disputed true",
		"merchant sees an open dispute on a captured payment of 30",
		"close dispute confirmed: payment captured, disputed false",
		"dispute closed, closed by payer",
	} {
		if !bytes.Contains(out.Bytes(), []byte(want)) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
