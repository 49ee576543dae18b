package rail0test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// browserRequest is a control request as a browser sends it for a page: the
// headers it sets itself (Sec-Fetch-*, Origin) and the content type of a
// form post or a no-cors fetch.
type browserRequest struct {
	name        string
	site        string // Sec-Fetch-Site; "" when the browser predates it
	origin      string // Origin; "" when not sent, "self" for the server's own
	contentType string
}

// TestControlRefusesCrossSiteRequests sends every control write (and a read)
// the way a browser would on behalf of a page of another origin, and checks
// that each is refused and changes nothing; then the same requests from curl,
// a same-origin page and the address bar are served.
func TestControlRefusesCrossSiteRequests(t *testing.T) {
	h := newHarness(t, WithControl())
	self := h.srv.URL // http://127.0.0.1:port

	refused := []browserRequest{
		{"no-cors fetch from another site", "cross-site", "https://evil.example", "text/plain;charset=UTF-8"},
		{"form post from another site", "cross-site", "https://evil.example", "application/x-www-form-urlencoded"},
		{"page on localhost reaching 127.0.0.1", "cross-site", "http://localhost:3000", "text/plain;charset=UTF-8"},
		{"page on another loopback port (same site)", "same-site", "http://127.0.0.1:3000", "multipart/form-data; boundary=x"},
		{"older browser: Origin only, another port", "", "http://127.0.0.1:3000", "application/x-www-form-urlencoded"},
		{"older browser: Origin of another site", "", "https://evil.example", "text/plain"},
		{"sandboxed frame: Origin null", "cross-site", "null", "text/plain"},
		{"Origin null alone", "", "null", ""},
		{"same host, other scheme", "", "https://" + strings.TrimPrefix(self, "http://"), ""},
		{"cross-site request without Origin (an image or script tag)", "cross-site", "", ""},
	}
	allowed := []browserRequest{
		{"curl or a test client", "", "", ""},
		{"same-origin page", "same-origin", "self", "text/plain;charset=UTF-8"},
		{"older browser, same-origin page", "", "self", "application/x-www-form-urlencoded"},
		{"address bar", "none", "", ""},
	}
	writes := []struct{ method, path, body string }{
		{"POST", "/_rail0test/reset", ""},
		{"POST", "/_rail0test/clock/advance?by=2h", ""},
		{"POST", "/_rail0test/faults", "status=502"},
		{"DELETE", "/_rail0test/ledger", ""},
		{"DELETE", "/_rail0test/faults", ""},
		{"GET", "/_rail0test/ledger", ""},
	}
	send := func(b browserRequest, method, path, body string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, self+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if b.site != "" {
			req.Header.Set("Sec-Fetch-Site", b.site)
			req.Header.Set("Sec-Fetch-Mode", "no-cors")
		}
		switch b.origin {
		case "":
		case "self":
			req.Header.Set("Origin", self)
		default:
			req.Header.Set("Origin", b.origin)
		}
		if b.contentType != "" {
			req.Header.Set("Content-Type", b.contentType)
		}
		resp, err := h.srv.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}

	// State to watch: a payment created, a fault installed, a ledger entry.
	merchant := h.login(h.srv.Merchant)
	expect(t, h.call("GET", "/payments", merchant, nil), http.StatusOK, "")
	h.srv.Faults.Add(Fault{Path: "/nowhere", Kind: FaultStatus, Status: 502})
	start, ledger := h.srv.Clock.Now(), len(h.srv.Ledger.Executions())

	for _, b := range refused {
		for _, w := range writes {
			if code := send(b, w.method, w.path, w.body); code != http.StatusForbidden {
				t.Errorf("%s: %s %s answered %d, want 403", b.name, w.method, w.path, code)
			}
		}
	}
	if now := h.srv.Clock.Now(); !now.Equal(start) {
		t.Errorf("the clock moved to %v", now)
	}
	if n := h.srv.Faults.Pending(); n != 1 {
		t.Errorf("%d faults installed, want the 1 of the test", n)
	}
	if n := len(h.srv.Ledger.Executions()); n != ledger {
		t.Errorf("ledger holds %d executions, want %d (reset or cleared)", n, ledger)
	}
	expect(t, h.call("GET", "/payments", merchant, nil), http.StatusOK, "") // the session survived: no reset

	for _, b := range allowed {
		if code := send(b, "POST", "/_rail0test/clock/advance?by=1h", ""); code != http.StatusOK {
			t.Errorf("%s: clock advance answered %d, want 200", b.name, code)
		}
		if code := send(b, "GET", "/_rail0test/ledger", ""); code != http.StatusOK {
			t.Errorf("%s: ledger answered %d, want 200", b.name, code)
		}
	}
	if got := h.srv.Clock.Now().Sub(start); got != time.Duration(len(allowed))*time.Hour {
		t.Errorf("clock moved %v, want %d h", got, len(allowed))
	}
}
