package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
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
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url+"/health", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
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

// startRun runs the command in process and returns its first stdout line once
// it is serving, and a stop function that waits for run to return.
func startRun(t *testing.T, args ...string) (first string, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), &out, &errOut) }()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "\n") {
		select {
		case err := <-done:
			cancel()
			t.Fatalf("run returned early: %v; %s", err, errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no output; stderr %q", errOut.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	first, _, _ = strings.Cut(out.String(), "\n")
	return first, func() error {
		cancel()
		select {
		case err := <-done:
			if strings.Contains(out.String()+errOut.String(), "never-print-me") {
				t.Error("the JWT secret was printed")
			}
			return err
		case <-time.After(5 * time.Second):
			t.Fatal("run did not return after cancel")
			return nil
		}
	}
}

func TestRunPrintsAJSONRecordAndWritesTheReadyFile(t *testing.T) {
	ready := filepath.Join(t.TempDir(), "gw.json")
	line, stop := startRun(t, "-json", "-ready-file", ready, "-control", "-seed", "0", "-jwt-secret", "never-print-me")
	var rec map[string]any
	if err := json.Unmarshal([]byte(line), &rec); err != nil {
		t.Fatalf("first line %q: %v", line, err)
	}
	for _, k := range []string{"url", "addr", "chain_id", "contract", "token", "tokens", "merchant", "buyer", "siwe", "control"} {
		if rec[k] == nil {
			t.Errorf("record lacks %s: %s", k, line)
		}
	}
	merchant := rec["merchant"].(map[string]any)
	if merchant["private_key"] == "" || merchant["account_id"] == "" || rec["seed"] != float64(0) || rec["jwt_secret"] != "fixed" {
		t.Fatalf("record = %s", line)
	}
	if rec["control"] != rec["url"].(string)+"/_rail0test/" {
		t.Fatalf("control = %v", rec["control"])
	}
	data, err := os.ReadFile(ready)
	if err != nil || strings.TrimSpace(string(data)) != line {
		t.Fatalf("ready file %q (%v), stdout %q", data, err, line)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ready); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ready file left behind: %v", err)
	}
}

func TestRunBannerSaysTheJWTSecretIsRandom(t *testing.T) {
	_, stop := startRun(t, "-no-rate-limit")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	line, stop := startRun(t, "-json")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(line), &rec); err != nil || rec["jwt_secret"] != "random" || rec["seed"] != nil || rec["control"] != nil {
		t.Fatalf("record = %s", line)
	}
}

func TestParseFlagsRefuses(t *testing.T) {
	for _, args := range [][]string{
		{"-public-period", "0s"}, {"-session-period", "-1s"}, {"-authorization-window", "0"}, {"-refund-window", "-5m"},
		{"-session-ttl", "0s"}, {"-confirmation-delay", "-1s"}, {"-public-limit", "-1"}, {"-session-limit", "-3"},
		{"-webhook-attempts", "0"}, {"-webhook-backoff", "-1ms"}, {"-webhook-circuit-threshold", "0"},
		{"-jwt-secret", ""}, {"-fault", "path=/x"}, {"-fault", "status=502,kind=stall"}, {"-seed", "-1"},
		{"stray"}, {"-no-such-flag"},
	} {
		var errOut syncBuffer
		if _, err := parseFlags(args, &errOut); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
	s, err := parseFlags([]string{"-fault", "path=/a,status=502", "-fault", "kind=drop,when=after"}, io.Discard)
	if err != nil || len(s.opts) == 0 {
		t.Fatalf("two faults: %v", err)
	}
}

// flagNames reads the flag names from the -h output.
func flagNames(t *testing.T) (names []string, help string) {
	t.Helper()
	var errOut syncBuffer
	if _, err := parseFlags([]string{"-h"}, &errOut); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	help = errOut.String()
	for _, m := range regexp.MustCompile(`(?m)^  -([a-z-]+)`).FindAllStringSubmatch(help, -1) {
		names = append(names, m[1])
	}
	if len(names) < 20 {
		t.Fatalf("-h lists %d flags: %s", len(names), help)
	}
	return names, help
}

func TestHelpAndDocsDocumentEveryFlag(t *testing.T) {
	names, help := flagNames(t)
	for _, want := range []string{"every=N", "when=before|after", "/_rail0test/clock/advance", "/_rail0test/reset", "/_rail0test/ledger"} {
		if !strings.Contains(help, want) {
			t.Errorf("-h does not explain %s", want)
		}
	}
	page, err := os.ReadFile("../../docs/rail0-gateway.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !strings.Contains(string(page), "`-"+n) {
			t.Errorf("docs/rail0-gateway.md does not document -%s", n)
		}
	}
}
