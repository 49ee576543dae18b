// Command rail0-gateway serves the in-process RAIL0 gateway of package rail0test
// on a TCP address, so clients in any language can run against a faithful
// gateway with a simulated chain, offline.
//
// Usage:
//
//	rail0-gateway [-addr 127.0.0.1:8080] [-confirmation-delay 2s] [-no-rate-limit] [-seed N] [-v]
//
// At start it prints its URL and the demo merchant and buyer keys. Those keys are
// derived from fixed public seeds: they are test keys and must never hold real
// funds. It serves until SIGINT or SIGTERM, then shuts down gracefully.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rail0/rail0-go/rail0test"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "rail0-gateway:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends. It writes the banner to out and logs to errOut.
func run(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := flag.NewFlagSet("rail0-gateway", flag.ContinueOnError)
	fs.SetOutput(errOut)
	addr := fs.String("addr", "127.0.0.1:8080", "address to listen on")
	delay := fs.Duration("confirmation-delay", 0, "how long a submitted transaction waits before it is confirmed")
	noLimit := fs.Bool("no-rate-limit", false, "turn rate limiting off (on by default: 100/60 s public, 300/60 s per session)")
	seed := fs.Uint64("seed", 0, "seed for reproducible ids and secrets (0: random)")
	verbose := fs.Bool("v", false, "log every request to stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	host, _, _ := net.SplitHostPort(ln.Addr().String())
	opts := []rail0test.Option{
		rail0test.WithConfirmationDelay(*delay),
		rail0test.WithSIWEDomain(host, "localhost", "127.0.0.1"),
	}
	if *noLimit {
		opts = append(opts, rail0test.WithoutRateLimits())
	}
	if *seed != 0 {
		opts = append(opts, rail0test.WithSeed(*seed))
	}
	if *verbose {
		opts = append(opts, rail0test.WithLogger(slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	}
	gw := rail0test.NewServer(opts...)
	defer gw.Close()

	hs := &http.Server{Handler: gw.Handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()

	url := "http://" + ln.Addr().String()
	fmt.Fprintf(out, "RAIL0 test gateway listening on %s\n", url)
	fmt.Fprintf(out, "  chain %d (Base Sepolia), USDC %s, RAIL0 contract %s\n", gw.ChainID, gw.Token, gw.Contract)
	fmt.Fprintf(out, "  SIWE: domain %s, URI %s, chain id 1\n", host, url)
	fmt.Fprintln(out, "Demo keys (TEST ONLY, derived from public seeds):")
	for _, p := range []rail0test.Party{gw.Merchant, gw.Buyer} {
		fmt.Fprintf(out, "  %-8s address %s  private key %s", p.Name, p.Address, p.PrivateKey)
		if p.AccountID != "" {
			fmt.Fprintf(out, "  account %s", p.AccountID)
		}
		fmt.Fprintln(out)
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
