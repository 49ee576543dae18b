package integration_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0test"
	"github.com/rail0/rail0-go/signing"
)

// The fault storm: 64 goroutines share one buyer client and one merchant
// client and make over 10 000 calls through a hostile proxy (429s with every
// kind of Retry-After, 5xx and HTML pages, garbage 200s, stalled bodies) in front of
// rail0test, whose own faults drop connections before and after the handler
// ran, stall, truncate bodies and send gzip that lies about its length. It
// asserts that nothing panics, that every failure is a typed error, that the
// ledger shows no payment created twice and no capture executed more often
// than the application asked, that no retry went out before the window a 429
// set, and that every connection is released afterwards. go test -race runs
// it in CI; -short runs a tenth of it.

const (
	stormWorkers = 64
	stormCap     = 50 * time.Millisecond // RetryAfterCap, to keep the storm short
)

// hostileProxy answers some requests itself, badly, and passes the rest on.
// For requests it can tell apart (a list with a unique min_amount, or a
// creation with a unique Idempotency-Key) it remembers the window a 429 set
// and counts any retry that arrives before it.
type hostileProxy struct {
	next http.Handler

	mu     sync.Mutex
	rng    *rand.Rand
	window map[string]time.Time

	early, throttled, garbled, stalled atomic.Int64
}

var retryAfterForms = []func(now time.Time) string{
	func(time.Time) string { return "1" },
	func(time.Time) string { return "60" },
	func(time.Time) string { return "0" },
	func(time.Time) string { return "-5" },
	func(time.Time) string { return "soon" },
	func(time.Time) string { return "99999999999999999999999" },
	func(now time.Time) string { return now.Add(-time.Hour).UTC().Format(http.TimeFormat) },
	func(now time.Time) string { return now.Add(2 * time.Second).UTC().Format(http.TimeFormat) },
	func(now time.Time) string { return now.Add(2 * time.Second).UTC().Format(time.RFC850) },
	func(time.Time) string { return "" },
}

// retryAfterOf is what a Retry-After of retryAfterForms asks for, read as
// RFC 9110 says: delta-seconds (a value too large saturates) or an
// HTTP-date after now; false when it gives no instruction.
func retryAfterOf(v string, now time.Time) (time.Duration, bool) {
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err == nil && n > 0:
		return time.Duration(min(n, int64(math.MaxInt64/time.Second))) * time.Second, true
	case err == nil:
		return 0, false
	case errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(v, "-"):
		return math.MaxInt64, true
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now), true
	}
	return 0, false
}

func callIdentity(r *http.Request) string {
	if r.Method == http.MethodPost && r.URL.Path == "/payments" {
		return "POST " + r.Header.Get("Idempotency-Key")
	}
	if r.Method == http.MethodGet && r.URL.Path == "/payments" && r.URL.Query().Get("min_amount") != "" {
		return "GET " + r.URL.RawQuery
	}
	return ""
}

func (h *hostileProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := time.Now()
	id := callIdentity(r)
	h.mu.Lock()
	if until, ok := h.window[id]; ok && id != "" {
		if now.Before(until) {
			h.early.Add(1)
		}
		delete(h.window, id)
	}
	roll := h.rng.Float64()
	form := retryAfterForms[h.rng.IntN(len(retryAfterForms))]
	status := []int{500, 502, 503, 504}[h.rng.IntN(4)]
	h.mu.Unlock()

	switch {
	case id != "" && roll < 0.03:
		ra := form(now)
		if ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		if d, ok := retryAfterOf(ra, now); ok {
			h.mu.Lock()
			h.window[id] = now.Add(min(d, stormCap))
			h.mu.Unlock()
		}
		h.throttled.Add(1)
		if roll < 0.015 {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, "<html><body>Too Many Requests</body></html>")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"code":"rate_limited","title":"Too many requests","detail":"slow down","status":"rate_limited"}`)
	case roll < 0.05:
		h.garbled.Add(1)
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(status)
		fmt.Fprintf(w, "<html><head><title>%d</title></head><body>upstream trouble</body></html>", status)
	case roll < 0.055:
		h.garbled.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"0191f0a2-3c4d`)
	case roll < 0.06:
		h.garbled.Add(1)
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html>maintenance</html>")
	case roll < 0.062:
		// A stalled body: headers and a few bytes, then nothing until the
		// client's timeout gives up on it.
		h.stalled.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "4096")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, `[{"id":`)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(3 * time.Second):
		}
	default:
		h.next.ServeHTTP(w, r)
	}
}

// connTracker counts the server's open connections.
type connTracker struct {
	mu    sync.Mutex
	state map[net.Conn]http.ConnState
}

func (c *connTracker) track(conn net.Conn, s http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s == http.StateClosed || s == http.StateHijacked {
		delete(c.state, conn)
		return
	}
	c.state[conn] = s
}

func (c *connTracker) open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.state)
}

// stormOutcome classifies a call's result; an untyped error fails the test.
func stormOutcome(err error) (string, bool) {
	var apiErr *rail0.APIError
	var unknown *rail0.OutcomeUnknownError
	var transport *rail0.TransportError
	var decode *rail0.DecodeError
	switch {
	case err == nil:
		return "ok", true
	case errors.As(err, &unknown):
		return "outcome_unknown", true
	case errors.As(err, &apiErr):
		return "api_" + strconv.Itoa(apiErr.StatusCode), true
	case errors.As(err, &transport):
		return "transport", true
	case errors.As(err, &decode):
		return "decode", true
	}
	return "untyped", false
}

func TestFaultStorm(t *testing.T) {
	callsPerWorker := 160 // 64 × 160 = 10 240 calls
	if testing.Short() {
		callsPerWorker = 16
	}
	gw := rail0test.NewServer(rail0test.WithoutRateLimits(), rail0test.WithSeed(7))
	defer gw.Close()
	proxy := &hostileProxy{next: gw.Handler(), rng: rand.New(rand.NewPCG(1, 2)), window: map[string]time.Time{}}
	conns := &connTracker{state: map[net.Conn]http.ConnState{}}
	front := httptest.NewUnstartedServer(proxy)
	front.Config.ConnState = conns.track
	front.Start()
	defer front.Close()

	ctx := context.Background()
	buyerKey, err := signing.NewPrivateKeySigner(gw.Buyer.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	merchantKey, err := signing.NewPrivateKeySigner(gw.Merchant.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	// Sign in and set up one authorized payment per worker straight on the
	// gateway, before the faults start.
	login := func(acct *signing.PrivateKeySigner) string {
		c, err := gw.Client(rail0.WithSigner(acct))
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.Session(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s.Token()
	}
	buyerToken, merchantToken := login(buyerKey), login(merchantKey)
	direct := func(token string, key rail0.Signer) *rail0.Client {
		c, err := gw.Client(rail0.WithToken(token), rail0.WithSigner(key))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	payments := make([]string, stormWorkers)
	var setup sync.WaitGroup
	for i := range payments {
		setup.Add(1)
		go func() {
			defer setup.Done()
			b, m := direct(buyerToken, buyerKey), direct(merchantToken, merchantKey)
			p, err := b.Payments.Create(ctx, rail0.PaymentCreateParams{ChainID: gw.ChainID, Mode: rail0.ModeAuthorize,
				Amount: "5.00", Token: gw.Token, Payer: gw.Buyer.Address, Payee: gw.Merchant.Address})
			if err == nil {
				_, err = b.Payments.PayerSign(ctx, p.ID, rail0.PaymentPayerSignParams{})
			}
			if err == nil {
				_, err = m.Payments.Authorize(ctx, p.ID, rail0.PaymentAuthorizeParams{})
			}
			if err == nil {
				_, err = m.Payments.WaitForStatus(ctx, p.ID, rail0.PaymentWaitForStatusParams{Statuses: []rail0.PaymentStatus{rail0.StatusAuthorized}, PollInterval: 200 * time.Millisecond, MaxPollInterval: 200 * time.Millisecond})
			}
			if err != nil {
				t.Errorf("setup: %v", err)
				return
			}
			payments[i] = p.ID
		}()
	}
	setup.Wait()
	if t.Failed() {
		return
	}
	gw.Ledger.Reset()

	// rail0test's own faults, drawn from its seeded source.
	var faultIDs []int
	for _, f := range []rail0test.Fault{
		{Kind: rail0test.FaultDropBefore, Rate: 0.01},
		{Kind: rail0test.FaultDropAfter, Rate: 0.01},
		{Kind: rail0test.FaultStatusAfter, Status: http.StatusBadGateway, Body: "<html>bad gateway</html>", ContentType: "text/html", Rate: 0.005},
		{Kind: rail0test.FaultTruncate, Rate: 0.005},
		{Kind: rail0test.FaultGzipLie, Rate: 0.005},
		{Kind: rail0test.FaultStall, Delay: 1500 * time.Millisecond, Rate: 0.001},
	} {
		faultIDs = append(faultIDs, gw.Faults.Add(f))
	}

	hc := &http.Client{Timeout: time.Second, Transport: http.DefaultTransport.(*http.Transport).Clone()}
	opts := []rail0.Option{
		rail0.WithHTTPClient(hc), rail0.WithRetryOn429(true), rail0.WithRetryAfterCap(stormCap), rail0.WithMaxRetries(3),
	}
	buyer, err := rail0.NewClient(front.URL, append(opts, rail0.WithToken(buyerToken))...)
	if err != nil {
		t.Fatal(err)
	}
	merchant, err := rail0.NewClient(front.URL, append(opts, rail0.WithToken(merchantToken))...)
	if err != nil {
		t.Fatal(err)
	}

	var (
		calls, untyped  atomic.Int64
		createCalls     atomic.Int64
		outcomes        sync.Map // outcome → *atomic.Int64
		submitsAsked    = make([]atomic.Int64, stormWorkers)
		panicked        atomic.Value
		wg              sync.WaitGroup
		createdWithKeys sync.Map
	)
	count := func(err error) {
		calls.Add(1)
		o, ok := stormOutcome(err)
		if !ok {
			if untyped.Add(1) <= 5 {
				t.Errorf("untyped error: %T %v", err, err)
			}
		}
		n, _ := outcomes.LoadOrStore(o, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
	}
	start := time.Now()
	for w := range stormWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					panicked.Store(fmt.Sprint(r))
				}
			}()
			rng := rand.New(rand.NewPCG(uint64(w), 99))
			for i := range callsPerWorker {
				switch roll := rng.IntN(100); {
				case roll < 55:
					_, err := buyer.Payments.List(ctx, rail0.PaymentListParams{
						ListOptions: rail0.ListOptions{PerPage: 1},
						MinAmount:   strconv.Itoa(w*1_000_000 + i),
					})
					count(err)
				case roll < 75:
					_, err := buyer.Payments.Get(ctx, payments[w])
					count(err)
				case roll < 92:
					key := fmt.Sprintf("storm-%d-%d", w, i)
					createdWithKeys.Store(key, true)
					createCalls.Add(1)
					_, err := buyer.Payments.Create(ctx, rail0.PaymentCreateParams{ChainID: gw.ChainID, Mode: rail0.ModeCharge,
						Amount: "0.01", Token: gw.Token, Payer: gw.Buyer.Address, Payee: gw.Merchant.Address, IdempotencyKey: key})
					count(err)
				default:
					// A partial capture, prepare → sign → submit, by hand so
					// that the test knows how many submits it asked for.
					prep, err := merchant.Payments.Prepare(ctx, payments[w], rail0.OpCapture, rail0.PaymentPrepareParams{Amount: "0.01"})
					count(err)
					if err != nil || prep.UnsignedTransaction == nil {
						continue
					}
					raw, err := signRaw(gw.Merchant.PrivateKey, *prep.UnsignedTransaction)
					if err != nil {
						t.Errorf("signing: %v", err)
						continue
					}
					submitsAsked[w].Add(1)
					_, err = merchant.Payments.Submit(ctx, payments[w], rail0.OpCapture, rail0.PaymentSubmitParams{SignedTransaction: raw})
					count(err)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if p := panicked.Load(); p != nil {
		t.Fatalf("a call panicked: %v", p)
	}

	faultHits := 0
	for _, id := range faultIDs {
		faultHits += gw.Faults.Hits(id)
	}
	summary := map[string]int64{}
	outcomes.Range(func(k, v any) bool { summary[k.(string)] = v.(*atomic.Int64).Load(); return true })
	t.Logf("%d calls in %v: %v; proxy sent %d 429s, %d garbled answers and %d stalled bodies; rail0test faults hit %d times",
		calls.Load(), elapsed.Round(time.Millisecond), summary, proxy.throttled.Load(), proxy.garbled.Load(), proxy.stalled.Load(), faultHits)
	if !testing.Short() && calls.Load() < 10_000 {
		t.Errorf("only %d calls", calls.Load())
	}
	if untyped.Load() > 0 {
		t.Errorf("%d untyped errors", untyped.Load())
	}
	if n := proxy.early.Load(); n > 0 {
		t.Errorf("%d retries went out before the window their 429 set", n)
	}
	if proxy.throttled.Load() == 0 || proxy.stalled.Load() == 0 || faultHits == 0 || summary["ok"] == 0 {
		t.Errorf("the storm did not storm: %v", summary)
	}

	// The ledger: no key created a payment twice, and no capture ran more
	// often than the application submitted one.
	created := map[string]int{}
	for _, e := range gw.Ledger.Executions() {
		if e.Route == "POST /payments" && e.Status == http.StatusCreated {
			created[e.IdempotencyKey]++
		}
	}
	for key, n := range created {
		if n > 1 {
			t.Errorf("key %s created %d payments", key, n)
		}
		if _, ok := createdWithKeys.Load(key); !ok {
			t.Errorf("a payment was created with unknown key %q", key)
		}
	}
	if int64(len(created)) > createCalls.Load() {
		t.Errorf("%d payments created for %d create calls", len(created), createCalls.Load())
	}
	for w, id := range payments {
		ran := gw.Ledger.CountOperation(id, "capture")
		if asked := submitsAsked[w].Load(); int64(ran) > asked {
			t.Errorf("payment %s: capture submit ran %d times for %d submits", id, ran, asked)
		}
	}

	// Every response body was closed: once idle connections are closed, the
	// server holds none.
	hc.CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	for conns.open() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		hc.CloseIdleConnections()
	}
	if n := conns.open(); n > 0 {
		t.Errorf("%d connections still open after the storm: a response body was left unclosed", n)
	}
}
