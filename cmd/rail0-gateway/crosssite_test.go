package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The command's control surface, reached over TCP as a developer's browser
// would on behalf of a page of another origin: a no-cors fetch, a form post
// and a post from a page on another loopback port are refused and change
// nothing, while curl's request is served.
func TestControlRefusesCrossSiteRequestsOverTCP(t *testing.T) {
	line, stop := startRun(t, "-json", "-control", "-no-rate-limit")
	defer func() {
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}()
	var rec struct{ URL, Control string }
	if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Control == "" {
		t.Fatalf("record %q: %v", line, err)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	do := func(method, path, body string, header map[string]string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, rec.Control+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// The simulated clock runs with the system clock: an advance shows as a
	// jump of hours, the test's own time as milliseconds.
	now := func() time.Time {
		t.Helper()
		_, body := do("GET", "clock", "", nil)
		var c struct{ Now time.Time }
		if err := json.Unmarshal([]byte(body), &c); err != nil {
			t.Fatalf("clock %q: %v", body, err)
		}
		return c.Now
	}
	before := now()

	for _, page := range []map[string]string{
		{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Origin": "https://evil.example", "Content-Type": "text/plain;charset=UTF-8"},
		{"Sec-Fetch-Site": "same-site", "Sec-Fetch-Mode": "navigate", "Origin": "http://127.0.0.1:3000", "Content-Type": "application/x-www-form-urlencoded"},
		{"Origin": "http://localhost:3000", "Content-Type": "application/x-www-form-urlencoded"}, // a browser without Sec-Fetch-Site
	} {
		for _, w := range []struct{ method, path, body string }{
			{"POST", "clock/advance?by=48h", ""}, {"POST", "reset", ""}, {"POST", "faults", "status=500"},
		} {
			if code, body := do(w.method, w.path, w.body, page); code != http.StatusForbidden {
				t.Errorf("%v: %s %s answered %d %s, want 403", page, w.method, w.path, code, body)
			}
		}
	}
	if moved := now().Sub(before); moved >= time.Hour {
		t.Errorf("the clock moved %v", moved)
	}
	if code, body := do("GET", "faults/1", "", nil); code != http.StatusOK || !strings.Contains(body, `"installed":false`) {
		t.Errorf("fault 1: %d %s, want none installed", code, body)
	}
	if code, body := do("POST", "clock/advance?by=1h", "", nil); code != http.StatusOK || now().Sub(before) < time.Hour {
		t.Errorf("curl's advance: %d %s", code, body)
	}
	if code, _ := do("POST", "reset", "", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": rec.URL}); code != http.StatusOK {
		t.Errorf("a same-origin reset answered %d", code)
	}
}
