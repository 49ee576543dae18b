package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rail0 "github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/signing"
)

// gateway is a running rail0-gateway process, driven over HTTP only.
type gateway struct {
	t      *testing.T
	rec    record
	client *http.Client
}

// buildGateway compiles the command into a temporary directory, as a user of
// another language would install it.
func buildGateway(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not installed")
	}
	bin := filepath.Join(t.TempDir(), "rail0-gateway")
	out, err := exec.CommandContext(t.Context(), goTool, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startGateway runs bin with args on a free loopback port and reads its JSON
// start-up record. Cleanup stops it with SIGINT and checks it exits cleanly.
func startGateway(t *testing.T, bin string, args ...string) *gateway {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-addr", "127.0.0.1:0", "-json"}, args...)...)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, stdout)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("rail0-gateway exited with %v; stderr: %s", err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("rail0-gateway did not stop on SIGINT (killed: %v)", <-exited)
		}
	})
	var line string
	select {
	case line = <-lines:
	case <-time.After(30 * time.Second):
		t.Fatalf("no start-up record; stderr: %s", stderr.String())
	}
	g := &gateway{t: t}
	if err := json.Unmarshal([]byte(line), &g.rec); err != nil || g.rec.URL == "" {
		t.Fatalf("start-up record %q: %v; stderr: %s", line, err, stderr.String())
	}
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	g.client = &http.Client{Transport: tr}
	return g
}

// reply is a response as a client in any language sees it.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) code(t *testing.T) string {
	t.Helper()
	var env struct {
		Code string `json:"code"`
	}
	if err := json.Unmarshal(r.body, &env); err != nil {
		t.Fatalf("error body %q: %v", r.body, err)
	}
	return env.Code
}

func (g *gateway) do(method, path, body string) reply {
	g.t.Helper()
	req, err := http.NewRequestWithContext(g.t.Context(), method, g.rec.URL+path, strings.NewReader(body))
	if err != nil {
		g.t.Fatal(err)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		g.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		g.t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// ledger reads the control surface's ledger with the given filters.
func (g *gateway) ledger(filters url.Values) []map[string]any {
	g.t.Helper()
	r := g.do("GET", "/_rail0test/ledger?"+filters.Encode(), "")
	var list []map[string]any
	if err := json.Unmarshal(r.body, &list); err != nil || r.status != http.StatusOK {
		g.t.Fatalf("ledger: %d %s", r.status, r.body)
	}
	return list
}

// TestConformance builds the command and checks what a client in another
// language sees, using nothing but flags and HTTP.
func TestConformance(t *testing.T) {
	bin := buildGateway(t)

	t.Run("throttle with a 1s period", func(t *testing.T) {
		g := startGateway(t, bin, "-public-limit", "2", "-public-period", "1s", "-rate-limit-headers", "-control")
		// Send until throttled: a burst of 3 normally gets 200, 200, 429, but the
		// real clock may cross a 1 s boundary during it.
		var throttled reply
		for i := 0; i < 10 && throttled.status == 0; i++ {
			if r := g.do("GET", "/tokens", ""); r.status == http.StatusTooManyRequests {
				throttled = r
			} else if r.status != http.StatusOK {
				t.Fatalf("GET /tokens: %d %s", r.status, r.body)
			}
		}
		if throttled.status != http.StatusTooManyRequests || throttled.code(t) != "rate_limited" ||
			throttled.header.Get("Retry-After") != "1" || throttled.header.Get("RateLimit-Policy") != `"default";q=2;w=1` {
			t.Fatalf("throttled answer: %d %v %s", throttled.status, throttled.header, throttled.body)
		}
		// Moving the clock one period opens a fresh window at once.
		if r := g.do("POST", "/_rail0test/clock/advance?by=1s", ""); r.status != http.StatusOK {
			t.Fatalf("advance: %d %s", r.status, r.body)
		}
		if r := g.do("GET", "/tokens", ""); r.status != http.StatusOK {
			t.Fatalf("after advancing the clock: %d %s", r.status, r.body)
		}
		// The 429s never reached a handler.
		for _, e := range g.ledger(url.Values{"path": {"/tokens"}}) {
			if e["status"] != float64(http.StatusOK) {
				t.Fatalf("ledger holds a throttled request: %v", e)
			}
		}
	})

	t.Run("injected 502", func(t *testing.T) {
		g := startGateway(t, bin, "-no-rate-limit", "-control", "-fault", "path=/blockchains,status=502,every=2")
		var got []int
		for range 4 {
			r := g.do("GET", "/blockchains", "")
			got = append(got, r.status)
			if r.status == http.StatusBadGateway && (r.code(t) != "injected_fault" || r.header.Get("X-Request-Id") == "") {
				t.Fatalf("502 answer: %v %s", r.header, r.body)
			}
		}
		if want := []int{200, 502, 200, 502}; !equalInts(got, want) {
			t.Fatalf("statuses %v, want %v", got, want)
		}
		if n := len(g.ledger(url.Values{"route": {"GET /blockchains"}})); n != 2 {
			t.Fatalf("GET /blockchains executed %d times, want 2 (a fault before the handler is not an execution)", n)
		}
		// A fault added at run time, after the handler: executed, yet answered 502.
		if r := g.do("POST", "/_rail0test/faults", "path=/tokens,status=502,when=after,times=1"); r.status != http.StatusCreated {
			t.Fatalf("add fault: %d %s", r.status, r.body)
		}
		if r := g.do("GET", "/tokens", ""); r.status != http.StatusBadGateway {
			t.Fatalf("GET /tokens: %d", r.status)
		}
		if l := g.ledger(url.Values{"path": {"/tokens"}, "status": {"200"}}); len(l) != 1 {
			t.Fatalf("ledger for /tokens: %v", l)
		}
	})

	t.Run("release after authorization_expiry", func(t *testing.T) {
		readyFile := filepath.Join(t.TempDir(), "ready.json")
		g := startGateway(t, bin, "-no-rate-limit", "-control", "-authorization-window", "1h", "-seed", "7",
			"-ready-file", readyFile)
		data, err := os.ReadFile(readyFile)
		var fromFile record
		if err != nil || json.Unmarshal(data, &fromFile) != nil || fromFile.URL != g.rec.URL || fromFile.Merchant != g.rec.Merchant {
			t.Fatalf("ready file %s (%v) disagrees with stdout %+v", data, err, g.rec)
		}
		releaseAfterExpiry(t, g)
	})
}

// releaseAfterExpiry runs an escrow to its release with the SDK against g, moving
// the clock past authorization_expiry through the control surface, and checks the
// release executed once.
func releaseAfterExpiry(t *testing.T, g *gateway) {
	ctx := context.Background()
	session := func(key string) *rail0.Client {
		t.Helper()
		k, err := signing.NewPrivateKeySigner(key)
		if err != nil {
			t.Fatal(err)
		}
		// The gateway's contract is rail0test's, not the published one:
		// the start-up record says which, and the client pins it.
		trust := rail0.WithTrustedContracts(map[int64]string{g.rec.ChainID: g.rec.Contract})
		c, err := rail0.NewClient(g.rec.URL, rail0.WithHTTPClient(g.client), rail0.WithSigner(k), trust)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	buyer := session(g.rec.Buyer.PrivateKey)
	merchant := session(g.rec.Merchant.PrivateKey)
	p, err := buyer.Payments.Create(ctx, rail0.PaymentCreateParams{ChainID: g.rec.ChainID, Mode: "authorize",
		Amount: "10.00", Token: g.rec.Token, Payer: g.rec.Buyer.Address, Payee: g.rec.Merchant.Address})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := buyer.Payments.PayerSign(ctx, p.ID, rail0.PaymentPayerSignParams{}); err != nil {
		t.Fatalf("PayerSign: %v", err)
	}
	tx, err := merchant.Payments.Authorize(ctx, p.ID, rail0.PaymentAuthorizeParams{})
	if err != nil {
		t.Fatalf("Authorize: %v", err)
	}
	if _, err := merchant.Payments.WaitForTransaction(ctx, p.ID, tx.ID, rail0.PaymentWaitForTransactionParams{}); err != nil {
		t.Fatal(err)
	}
	var apiErr *rail0.APIError
	if _, err := buyer.Payments.Release(ctx, p.ID, rail0.PaymentReleaseParams{}); !errors.As(err, &apiErr) || apiErr.Code != "authorization_not_expired" {
		t.Fatalf("release before the expiry: %v", err)
	}

	if r := g.do("POST", "/_rail0test/clock/advance", `{"by":"61m"}`); r.status != http.StatusOK {
		t.Fatalf("advance: %d %s", r.status, r.body)
	}
	tx, err = buyer.Payments.Release(ctx, p.ID, rail0.PaymentReleaseParams{})
	if err != nil {
		t.Fatalf("release after the expiry: %v", err)
	}
	if _, err := buyer.Payments.WaitForTransaction(ctx, p.ID, tx.ID, rail0.PaymentWaitForTransactionParams{}); err != nil {
		t.Fatal(err)
	}
	got, err := buyer.Payments.Get(ctx, p.ID)
	if err != nil || got.Status != "released" {
		t.Fatalf("payment after release: %v %v", got, err)
	}
	submits := g.ledger(url.Values{"payment_id": {p.ID}, "operation": {"release"}, "route": {"POST /payments/{id}/{operation}"}})
	if len(submits) != 1 || submits[0]["status"] != float64(http.StatusAccepted) {
		t.Fatalf("release submitted %d times: %v", len(submits), submits)
	}

	oldSession, err := buyer.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Reset: the payment and the session are gone, the demo account is the same.
	if r := g.do("POST", "/_rail0test/reset", ""); r.status != http.StatusOK {
		t.Fatalf("reset: %d %s", r.status, r.body)
	}
	if n := len(g.ledger(nil)); n != 0 {
		t.Fatalf("ledger after reset: %d executions", n)
	}
	// The old session is refused: a client with that fixed token gets a 401
	// (a WithSigner client would sign in again), and the payment is gone.
	old, err := rail0.NewClient(g.rec.URL, rail0.WithHTTPClient(g.client), rail0.WithToken(oldSession.Token()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Payments.Get(ctx, p.ID); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
		t.Fatalf("old session after reset: %v", err)
	}
	if _, err := buyer.Payments.Get(ctx, p.ID); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
		t.Fatalf("payment after reset: %v", err)
	}
	// Sign in again after the reset: the demo account kept the id the start-up
	// record names.
	acc, err := signing.NewPrivateKeySigner(g.rec.Merchant.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := rail0.NewClient(g.rec.URL, rail0.WithHTTPClient(g.client), rail0.WithSigner(acc))
	if err != nil {
		t.Fatal(err)
	}
	s, err := signer.Session(ctx)
	if err != nil || s.AccountID == nil || *s.AccountID != g.rec.Merchant.AccountID {
		t.Fatalf("merchant login after reset: %+v %v", s, err)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
