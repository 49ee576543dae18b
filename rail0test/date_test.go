package rail0test

import (
	"net/http"
	"testing"
	"time"
)

// Every answer's Date is the server's clock, as a real gateway's is: an SDK
// learns the gateway's time from it (net/http would write the system
// clock).
func TestDateFollowsTheClock(t *testing.T) {
	at := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	s := NewServer(WithClock(NewManualClock(at)))
	defer s.Close()
	hc := s.HTTPClient()
	for _, path := range []string{"/health", "/no-such-route"} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got, want := resp.Header.Get("Date"), at.Format(http.TimeFormat); got != want {
			t.Errorf("GET %s: Date %q, want %q", path, got, want)
		}
	}
}
