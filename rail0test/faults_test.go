package rail0test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawClient sends requests on fresh connections without the transport's own
// retries, so a dropped connection surfaces as an error.
func rawClient(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func rawDo(t *testing.T, c *http.Client, method, url, token, body string) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func TestFaultStatusWithRawRetryAfterAndBody(t *testing.T) {
	h := newHarness(t)
	id := h.srv.Faults.Add(Fault{Route: "GET /tokens", Times: 2, Kind: FaultStatus, Status: 502,
		RetryAfter: "soon-ish", Body: "<html>Bad gateway</html>", ContentType: "text/html"})
	for i := 0; i < 2; i++ {
		res, _ := h.send("GET", "/tokens", "", nil)
		if res.status != 502 || res.header.Get("Retry-After") != "soon-ish" || string(res.body) != "<html>Bad gateway</html>" ||
			res.header.Get("Content-Type") != "text/html" || res.header.Get("X-Request-Id") == "" {
			t.Fatalf("fault response %d: %d %v %q", i, res.status, res.header, res.body)
		}
	}
	expect(t, h.call("GET", "/tokens", "", nil), http.StatusOK, "") // the fault retired after two hits
	if h.srv.Faults.Hits(id) != 2 || h.srv.Faults.Pending() != 0 {
		t.Fatalf("hits = %d, pending = %d", h.srv.Faults.Hits(id), h.srv.Faults.Pending())
	}
	if n := h.srv.Ledger.Count("GET /tokens", ""); n != 1 {
		t.Fatalf("handler ran %d times, want 1 (faulted requests never reach it)", n)
	}
	// Without a body the fault answers a valid JSON error envelope.
	h.srv.Faults.Add(Fault{Path: "/blockchains", Times: 1, Kind: FaultStatus, Status: 503, RetryAfter: "-1"})
	res := h.call("GET", "/blockchains", "", nil)
	if res.status != 503 || res.json(t)["code"] != "injected_fault" {
		t.Fatalf("default fault body: %d %s", res.status, res.body)
	}
}

func TestFaultDropBeforeAndAfterHandler(t *testing.T) {
	h := newHarness(t)
	buyer := h.login(h.srv.Buyer)
	c := rawClient(t)
	body := `{"chain_id":84532,"mode":"charge","amount":"1","token":"USDC","payer":"` + h.srv.Buyer.Address +
		`","payee":"` + h.srv.Merchant.Address + `"}`

	h.srv.Faults.Add(Fault{Method: "POST", Route: routeCreatePayment, Times: 1, Kind: FaultDropBefore})
	if _, _, err := rawDo(t, c, "POST", h.srv.URL+"/payments", buyer, body); err == nil {
		t.Fatal("drop before: the request succeeded")
	}
	if n := h.srv.Ledger.Count(routeCreatePayment, ""); n != 0 {
		t.Fatalf("drop before: handler ran %d times", n)
	}

	h.srv.Faults.Add(Fault{Method: "POST", Route: routeCreatePayment, Times: 1, Kind: FaultDropAfter})
	if _, _, err := rawDo(t, c, "POST", h.srv.URL+"/payments", buyer, body); err == nil {
		t.Fatal("drop after: the request succeeded")
	}
	if n := h.srv.Ledger.Count(routeCreatePayment, ""); n != 1 {
		t.Fatalf("drop after: handler ran %d times, want 1", n)
	}
	if l := h.call("GET", "/payments", buyer, nil).list(t); len(l) != 1 {
		t.Fatalf("drop after: %d payments exist, want 1 (the write happened)", len(l))
	}

	h.srv.Faults.Add(Fault{Route: routeCreatePayment, Times: 1, Kind: FaultStatusAfter, Status: 504})
	resp, _, err := rawDo(t, c, "POST", h.srv.URL+"/payments", buyer, body)
	if err != nil || resp.StatusCode != 504 {
		t.Fatalf("status after: %v %v", resp, err)
	}
	if l := h.call("GET", "/payments", buyer, nil).list(t); len(l) != 2 {
		t.Fatalf("status after: %d payments, want 2", len(l))
	}
}

func TestFaultTruncatedAndLyingGzipBodies(t *testing.T) {
	h := newHarness(t)
	c := rawClient(t)
	h.srv.Faults.Add(Fault{Route: "GET /tokens", Times: 1, Kind: FaultTruncate})
	resp, b, err := rawDo(t, c, "GET", h.srv.URL+"/tokens", "", "")
	if !errors.Is(err, io.ErrUnexpectedEOF) || resp.StatusCode != 200 {
		t.Fatalf("truncate: resp %v, %d bytes, err %v", resp, len(b), err)
	}
	h.srv.Faults.Add(Fault{Route: "GET /tokens", Times: 1, Kind: FaultGzipLie})
	resp, b, err = rawDo(t, c, "GET", h.srv.URL+"/tokens", "", "")
	if err == nil || resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("gzip lie: resp %v, err %v", resp, err)
	}
	// What did arrive is a complete gzip stream of the real answer: only the
	// length lies.
	zr, zerr := gzip.NewReader(bytes.NewReader(b))
	if zerr != nil {
		t.Fatal(zerr)
	}
	plain, _ := io.ReadAll(zr)
	if !strings.Contains(string(plain), `"symbol":"USDC"`) {
		t.Fatalf("gzip lie body = %q", plain)
	}
	if n := h.srv.Ledger.Count("GET /tokens", ""); n != 2 {
		t.Fatalf("handler ran %d times, want 2", n)
	}
}

func TestFaultStallHonoursContext(t *testing.T) {
	h := newHarness(t)
	c := rawClient(t)
	h.srv.Faults.Add(Fault{Route: "GET /tokens", Times: 1, Kind: FaultStall, Delay: 10 * time.Millisecond})
	if resp, _, err := rawDo(t, c, "GET", h.srv.URL+"/tokens", "", ""); err != nil || resp.StatusCode != 200 {
		t.Fatalf("short stall: %v %v", resp, err)
	}
	h.srv.Faults.Add(Fault{Route: "GET /tokens", Times: 1, Kind: FaultStall, Delay: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", h.srv.URL+"/tokens", nil)
	resp, err := c.Do(req)
	if err == nil {
		resp.Body.Close()
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("long stall: err = %v", err)
	}
	// Close must not wait an hour: the stall ends with the server.
}

func TestFaultRateIsSeededAndMatchesOnlyItsRoute(t *testing.T) {
	count := func() int {
		h := newHarness(t, WithSeed(99))
		h.srv.Faults.Add(Fault{Route: "GET /tokens", Rate: 0.3, Kind: FaultStatus, Status: 500})
		hits := 0
		for i := 0; i < 200; i++ {
			res, _ := h.send("GET", "/tokens", "", nil)
			if res.status == 500 {
				hits++
			}
		}
		expect(t, h.call("GET", "/blockchains", "", nil), http.StatusOK, "")
		return hits
	}
	a, b := count(), count()
	if a != b {
		t.Fatalf("the same seed gave %d and %d hits", a, b)
	}
	if a < 30 || a > 90 {
		t.Fatalf("rate 0.3 hit %d of 200", a)
	}
}

// TestConcurrentRetriesNeverDoubleCreate is a small storm: creates whose
// connection drops after the handler ran are retried with the same
// Idempotency-Key, concurrently; every key creates exactly one payment.
func TestConcurrentRetriesNeverDoubleCreate(t *testing.T) {
	h := newHarness(t, WithSeed(3))
	buyer := h.login(h.srv.Buyer)
	h.srv.Faults.Add(Fault{Route: routeCreatePayment, Rate: 0.4, Kind: FaultDropAfter})
	c := rawClient(t)
	body := `{"chain_id":84532,"mode":"charge","amount":"1","token":"USDC","payer":"` + h.srv.Buyer.Address +
		`","payee":"` + h.srv.Merchant.Address + `"}`
	const workers, perWorker = 4, 5
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < perWorker; k++ {
				key := fmt.Sprintf("order-%d-%d", w, k)
				for attempt := 0; ; attempt++ {
					if attempt == 30 {
						t.Errorf("%s: no answer after 30 attempts", key)
						return
					}
					req, _ := http.NewRequestWithContext(t.Context(), "POST", h.srv.URL+"/payments", strings.NewReader(body))
					req.Header.Set("Authorization", "Bearer "+buyer)
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Idempotency-Key", key)
					resp, err := c.Do(req)
					if err != nil {
						continue // outcome unknown: retry with the same key
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
						t.Errorf("%s: status %d", key, resp.StatusCode)
					}
					break
				}
			}
		}()
	}
	wg.Wait()
	h.srv.Faults.Clear()
	list := h.call("GET", "/payments?per_page=100", buyer, nil)
	if got := list.header.Get("X-Total-Count"); got != strconv.Itoa(workers*perWorker) {
		t.Fatalf("payments = %s, want %d", got, workers*perWorker)
	}
	created := h.srv.Ledger.CountFunc(func(e Execution) bool { return e.Route == routeCreatePayment && e.Status == http.StatusCreated })
	if created != workers*perWorker {
		t.Fatalf("201s in the ledger = %d", created)
	}
	if total := h.srv.Ledger.Count(routeCreatePayment, ""); total <= created {
		t.Fatalf("no retries happened (%d executions): the storm did not storm", total)
	}
}
