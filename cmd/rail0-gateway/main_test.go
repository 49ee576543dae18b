package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// syncBuffer is a bytes.Buffer safe to read while run writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRunServesAndShutsDown(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-no-rate-limit"}, &out, &errOut) }()

	re := regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)
	var url string
	deadline := time.Now().Add(time.Second)
	for url == "" {
		if m := re.FindStringSubmatch(out.String()); m != nil && strings.Contains(out.String(), "buyer") {
			url = m[1]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no banner: %q %q", out.String(), errOut.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !strings.Contains(out.String(), "private key") || !strings.Contains(out.String(), "TEST ONLY") {
		t.Fatalf("banner lacks the demo keys: %s", out.String())
	}

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var h map[string]any
	if err := json.Unmarshal(body, &h); err != nil || h["status"] != "ok" || resp.Header.Get("X-Request-Id") == "" {
		t.Fatalf("health: %d %s", resp.StatusCode, body)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(time.Second):
		t.Fatal("run did not return after cancel")
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	var out, errOut syncBuffer
	if err := run(context.Background(), []string{"-confirmation-delay", "soon"}, &out, &errOut); err == nil {
		t.Fatal("a bad flag was accepted")
	}
}
