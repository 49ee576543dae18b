package main

import (
	"io"
	"os"
	"strings"
	"testing"
)

// TestQuickstart runs the README's quickstart as it is and checks that the
// capture went out.
func TestQuickstart(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	defer func() { os.Stdout = stdout }()
	main()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := "authorized 25.00, capture of 10.00: submitted"; !strings.Contains(string(out), want) {
		t.Errorf("the quickstart printed %q, want %q", out, want)
	}
}
