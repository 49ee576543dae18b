package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// Over TCP, one client sending a fresh invented bearer token with every
// sign-in nonce request stays on its IP's public budget: 3 nonces in a window
// whose public limit is 3, not 20.
func TestInventedBearersStayOnThePublicBudgetOverTCP(t *testing.T) {
	const period = 24 * time.Hour // a window the test cannot straddle, but see below
	line, stop := startRun(t, "-json", "-control", "-public-limit", "3", "-public-period", period.String())
	defer func() {
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}()
	var rec struct{ URL, Control string }
	if err := json.Unmarshal([]byte(line), &rec); err != nil {
		t.Fatalf("record %q: %v", line, err)
	}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	do := func(method, url, bearer string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	window := func() int64 {
		t.Helper()
		_, body := do("GET", rec.Control+"clock", "")
		var c struct{ Now time.Time }
		if err := json.Unmarshal(body, &c); err != nil {
			t.Fatalf("clock %s: %v", body, err)
		}
		return c.Now.UnixNano() / int64(period)
	}

	first := window()
	created := 0
	for i := range 20 {
		switch code, body := do("POST", rec.URL+"/auth/nonces", fmt.Sprintf("invented-%d", i)); code {
		case http.StatusCreated:
			created++
		case http.StatusTooManyRequests:
		default:
			t.Fatalf("nonce %d: %d %s", i, code, body)
		}
	}
	if code, _ := do("GET", rec.URL+"/payments", "invented-x"); code != http.StatusTooManyRequests {
		t.Errorf("a session route with an invented token on a spent public budget answered %d, want 429", code)
	}
	want := 3
	if window() != first { // the run crossed a window boundary: two windows' worth at most
		want = 6
	}
	if created > want || created < 3 {
		t.Fatalf("%d sign-in nonces created, want the public limit of 3", created)
	}
}
