// Command rail0-gateway serves the in-process RAIL0 gateway of package
// rail0test on a TCP address. Clients in any language can then run against
// a faithful gateway with a simulated chain, offline.
//
// Usage:
//
//	rail0-gateway [flags]
//
// Every simulator setting a test needs is a flag. The flags cover:
//   - throttle limits and periods per surface, and RateLimit headers;
//   - payment windows, confirmation delay and session lifetime;
//   - the seed, the JWT secret and the webhook retry schedule;
//   - fault rules (-fault, in the syntax of rail0test.ParseFault).
//
// -control mounts the loopback-only control surface under /_rail0test/.
// It moves the simulated clock, resets the simulator and reads the
// execution ledger. -json prints one JSON start-up record on stdout.
// -ready-file writes that record to a file. Otherwise a banner is printed.
// Run rail0-gateway -h for the list. docs/rail0-gateway.md describes every
// flag.
//
// The demo keys are derived from fixed public seeds. They are test keys and
// must never hold real funds. -seed makes ids reproducible but does not
// derive the JWT secret. That stays random unless -jwt-secret fixes it. The
// command serves until SIGINT or SIGTERM, then shuts down gracefully.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/rail0/rail0-go/rail0test"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "rail0-gateway:", err)
		os.Exit(1)
	}
}

// faultFlags collects repeated -fault rules.
// Each is parsed as it is read, so a typo fails at start-up.
type faultFlags []rail0test.Fault

func (f *faultFlags) String() string { return fmt.Sprintf("%d fault(s)", len(*f)) }

func (f *faultFlags) Set(spec string) error {
	fault, err := rail0test.ParseFault(spec)
	if err != nil {
		return err
	}
	*f = append(*f, fault)
	return nil
}

// settings are the parsed flags.
type settings struct {
	addr        string
	jsonOut     bool
	readyFile   string
	control     bool
	seed        *uint64
	fixedSecret bool
	opts        []rail0test.Option
}

const usageHeader = `Usage: rail0-gateway [flags]

Serves the RAIL0 test gateway (package rail0test): the whole contract except
/sync/*, with a simulated chain, for clients in any language.

Fault rules (-fault, repeatable) are comma-separated key=value pairs:
  which requests  method=POST  route=POST /payments/{id}/{operation}  path=/payments/*/capture
  how often       every=N (every N-th match)  p=0.25 (probability)  times=N (then retire)
  what happens    status=502 | kind=status|drop|stall|truncate|gzip_lie
                  when=before|after (the handler runs first)  delay=2s (stall)
                  retry_after=7  content_type=text/html  body=TEXT (last, to end of line)
  e.g. -fault 'path=/payments/*/capture,status=502,every=2'
       -fault 'route=POST /payments,kind=drop,when=after,times=1'

Control surface (-control; loopback clients only, no cross-origin browser requests;
never throttled, faulted or recorded):
  GET /_rail0test/clock   POST /_rail0test/clock/advance?by=2h   POST /_rail0test/reset
  GET /_rail0test/ledger[?route=&idempotency_key=&payment_id=&operation=&status=]
  DELETE /_rail0test/ledger   POST /_rail0test/faults (body: a rule)   GET /_rail0test/faults/ID (hits)
  DELETE /_rail0test/faults[/ID]

Flags:
`

// parseFlags reads args into settings. It reports usage and errors on errOut.
func parseFlags(args []string, errOut io.Writer) (*settings, error) {
	fs := flag.NewFlagSet("rail0-gateway", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageHeader)
		fs.PrintDefaults()
	}
	s := &settings{}
	fs.StringVar(&s.addr, "addr", "127.0.0.1:8080", "`host:port` to listen on (port 0 picks a free one; see -json)")
	delay := fs.Duration("confirmation-delay", 0, "simulated time a submitted transaction waits before it is confirmed")
	noLimit := fs.Bool("no-rate-limit", false, "turn rate limiting off")
	publicLimit := fs.Int("public-limit", 100, "requests per window on the public surface, per client IP (0 throttles every request)")
	publicPeriod := fs.Duration("public-period", time.Minute, "throttle window of the public surface; Retry-After is this in whole seconds")
	sessionLimit := fs.Int("session-limit", 300, "requests per window on the session surface, per valid session token (any other bearer counts as public)")
	sessionPeriod := fs.Duration("session-period", time.Minute, "throttle window of the session surface")
	rateHeaders := fs.Bool("rate-limit-headers", false, "send RateLimit-Policy, RateLimit and RateLimit-Limit/-Remaining/-Reset (the hosted gateway does not)")
	authWindow := fs.Duration("authorization-window", 7*24*time.Hour, "authorization_expiry after creation: capture and void before it, release after it")
	refundWindow := fs.Duration("refund-window", 30*24*time.Hour, "refund_expiry after creation: refunds and disputes before it")
	sessionTTL := fs.Duration("session-ttl", 24*time.Hour, "lifetime of a session token")
	seed := fs.Uint64("seed", 0, "make ids, nonces, webhook secrets and fault draws reproducible (not the JWT secret; default random)")
	jwtSecret := fs.String("jwt-secret", "", "fixed HS256 key for session tokens, for tests that mint tokens; anyone who knows it can sign in as anyone (default: random at start and at each reset)")
	hookAttempts := fs.Int("webhook-attempts", 3, "delivery attempts per webhook event")
	hookBackoff := fs.Duration("webhook-backoff", 20*time.Millisecond, "real-time pause before the second delivery attempt, doubled before each further one")
	hookCircuit := fs.Int("webhook-circuit-threshold", 5, "consecutive failed attempts that open a webhook's circuit")
	var faults faultFlags
	fs.Var(&faults, "fault", "inject a fault `rule` (repeatable; syntax above)")
	fs.BoolVar(&s.control, "control", false, "mount the control surface under /_rail0test/ (loopback clients only)")
	fs.BoolVar(&s.jsonOut, "json", false, "print the start-up record as one JSON line on stdout instead of the banner")
	fs.StringVar(&s.readyFile, "ready-file", "", "write the start-up record (JSON) to this `file` once serving; removed at exit")
	verbose := fs.Bool("v", false, "log every request to stderr")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	positive := map[string]time.Duration{"public-period": *publicPeriod, "session-period": *sessionPeriod,
		"authorization-window": *authWindow, "refund-window": *refundWindow, "session-ttl": *sessionTTL}
	for name, d := range positive {
		if d <= 0 {
			return nil, fmt.Errorf("-%s must be positive, got %v", name, d)
		}
	}
	switch {
	case *delay < 0:
		return nil, fmt.Errorf("-confirmation-delay must not be negative, got %v", *delay)
	case *publicLimit < 0 || *sessionLimit < 0:
		return nil, errors.New("-public-limit and -session-limit must not be negative")
	case *hookAttempts < 1:
		return nil, fmt.Errorf("-webhook-attempts must be at least 1, got %d", *hookAttempts)
	case *hookBackoff < 0:
		return nil, fmt.Errorf("-webhook-backoff must not be negative, got %v", *hookBackoff)
	case *hookCircuit < 1:
		return nil, fmt.Errorf("-webhook-circuit-threshold must be at least 1, got %d", *hookCircuit)
	case set["jwt-secret"] && *jwtSecret == "":
		return nil, errors.New("-jwt-secret must not be empty")
	}

	s.opts = []rail0test.Option{
		rail0test.WithConfirmationDelay(*delay),
		rail0test.WithPaymentWindows(*authWindow, *refundWindow),
		rail0test.WithSessionTTL(*sessionTTL),
		rail0test.WithWebhookRetry(*hookAttempts, *hookBackoff),
		rail0test.WithCircuitThreshold(*hookCircuit),
		rail0test.WithRateLimits(rail0test.Limit{Requests: *publicLimit, Period: *publicPeriod},
			rail0test.Limit{Requests: *sessionLimit, Period: *sessionPeriod}),
	}
	if *noLimit {
		s.opts = append(s.opts, rail0test.WithoutRateLimits())
	}
	if *rateHeaders {
		s.opts = append(s.opts, rail0test.WithRateLimitHeaders())
	}
	if set["seed"] {
		s.seed = seed
		s.opts = append(s.opts, rail0test.WithSeed(*seed))
	}
	if *jwtSecret != "" {
		s.fixedSecret = true
		s.opts = append(s.opts, rail0test.WithJWTSecret([]byte(*jwtSecret)))
	}
	if len(faults) > 0 {
		s.opts = append(s.opts, rail0test.WithFaults(faults...))
	}
	if s.control {
		s.opts = append(s.opts, rail0test.WithControl())
	}
	if *verbose {
		s.opts = append(s.opts, rail0test.WithLogger(slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	}
	return s, nil
}

// run serves until ctx ends. It writes the banner or the JSON record to out and
// logs to errOut.
func run(ctx context.Context, args []string, out, errOut io.Writer) error {
	s, err := parseFlags(args, errOut)
	if err != nil {
		return err
	}
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", s.addr)
	if err != nil {
		return err
	}
	host, _, _ := net.SplitHostPort(ln.Addr().String())
	gw := rail0test.NewServer(append(s.opts, rail0test.WithSIWEDomain(host, "localhost", "127.0.0.1"))...)
	defer gw.Close()

	hs := &http.Server{Handler: gw.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	rec := newRecord(gw, ln.Addr().String(), host, s)
	// The file first: whoever reads stdout may rely on it existing.
	if s.readyFile != "" {
		if err := writeReadyFile(s.readyFile, rec); err != nil {
			_ = hs.Close()
			if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
				err = errors.Join(err, serr)
			}
			return err
		}
		defer func() { _ = os.Remove(s.readyFile) }()
	}
	if s.jsonOut {
		line, _ := json.Marshal(rec) // plain strings and numbers: cannot fail
		fmt.Fprintf(out, "%s\n", line)
	} else {
		printBanner(out, rec)
	}

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// record is the start-up record: everything a script needs to drive the gateway.
type record struct {
	URL       string      `json:"url"`
	Addr      string      `json:"addr"`
	ChainID   int64       `json:"chain_id"`
	ChainName string      `json:"chain_name"`
	Contract  string      `json:"contract"`
	Token     string      `json:"token"`
	Tokens    []tokenInfo `json:"tokens"`
	Merchant  party       `json:"merchant"`
	Buyer     party       `json:"buyer"`
	SIWE      siweInfo    `json:"siwe"`
	Control   *string     `json:"control"`
	Seed      *uint64     `json:"seed"`
	JWTSecret string      `json:"jwt_secret"`
}

type tokenInfo struct {
	ChainID  int64  `json:"chain_id"`
	Symbol   string `json:"symbol"`
	Address  string `json:"address"`
	Decimals int    `json:"decimals"`
	Active   bool   `json:"active"`
}

type party struct {
	Address    string `json:"address"`
	PrivateKey string `json:"private_key"`
	AccountID  string `json:"account_id,omitempty"`
}

type siweInfo struct {
	Domain  string `json:"domain"`
	URI     string `json:"uri"`
	ChainID int64  `json:"chain_id"`
}

func newRecord(gw *rail0test.Server, addr, host string, s *settings) record {
	url := "http://" + addr
	r := record{
		URL: url, Addr: addr, ChainID: gw.ChainID, ChainName: "Base Sepolia", Contract: gw.Contract, Token: gw.Token,
		Tokens: []tokenInfo{
			{ChainID: rail0test.TestChainID, Symbol: "USDC", Address: gw.Token, Decimals: 6, Active: true},
			{ChainID: rail0test.TestChainID, Symbol: "EURC", Address: rail0test.RetiredTokenAddress, Decimals: 6, Active: false},
			{ChainID: rail0test.MainnetChainID, Symbol: "USDC", Address: rail0test.MainnetTokenAddress, Decimals: 6, Active: true},
		},
		Merchant:  party{Address: gw.Merchant.Address, PrivateKey: gw.Merchant.PrivateKey, AccountID: gw.Merchant.AccountID},
		Buyer:     party{Address: gw.Buyer.Address, PrivateKey: gw.Buyer.PrivateKey},
		SIWE:      siweInfo{Domain: host, URI: url, ChainID: 1},
		Seed:      s.seed,
		JWTSecret: "random",
	}
	if s.fixedSecret {
		r.JWTSecret = "fixed" // the value itself is never printed
	}
	if s.control {
		c := url + "/_rail0test/"
		r.Control = &c
	}
	return r
}

func printBanner(out io.Writer, r record) {
	fmt.Fprintf(out, "RAIL0 test gateway listening on %s\n", r.URL)
	fmt.Fprintf(out, "  chain %d (%s), USDC %s, RAIL0 contract %s\n", r.ChainID, r.ChainName, r.Token, r.Contract)
	fmt.Fprintf(out, "  SIWE: domain %s, URI %s, chain id %d\n", r.SIWE.Domain, r.SIWE.URI, r.SIWE.ChainID)
	if r.Control != nil {
		fmt.Fprintf(out, "  control surface %s (loopback only)\n", *r.Control)
	}
	fmt.Fprintf(out, "  JWT secret: %s\n", r.JWTSecret)
	fmt.Fprintln(out, "Demo keys (TEST ONLY, derived from public seeds):")
	for _, p := range []struct {
		name string
		party
	}{{"merchant", r.Merchant}, {"buyer", r.Buyer}} {
		fmt.Fprintf(out, "  %-8s address %s  private key %s", p.name, p.Address, p.PrivateKey)
		if p.AccountID != "" {
			fmt.Fprintf(out, "  account %s", p.AccountID)
		}
		fmt.Fprintln(out)
	}
}

// writeReadyFile writes r as JSON next to path and renames it into place.
// So a script polling for path never reads half a record.
func writeReadyFile(path string, r record) error {
	data, _ := json.Marshal(r)
	tmp, err := os.CreateTemp(filepath.Dir(path), ".rail0-gateway-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(append(data, '\n'))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}
