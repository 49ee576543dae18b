package main

import (
	"bufio"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// gateway is where a run sends its requests.
type gateway struct {
	kind  string
	url   string // an external gateway's URL; empty: a fresh in-process one per run
	close func()
}

// open returns the URL a run uses and how to release it.
func (g gateway) open(o options) (string, func()) {
	if g.url != "" {
		return g.url, func() {}
	}
	srv := newGateway(o)
	return srv.URL, srv.Close
}

// errUnavailable is a gateway the bench cannot start on this machine. Its
// rows are skipped with the reason.
var errUnavailable = errors.New("gateway unavailable")

// rackAttack is the outside throttle: Rack::Attack under Ruby.
//
//go:embed rackattack.rb
var rackAttack []byte

// openGateway prepares gateway kind:
//   - nothing for inproc;
//   - a child process serving rail0test on loopback for external and short;
//   - Rack::Attack in a Ruby process for rackattack.
func openGateway(ctx context.Context, kind string, o options) (gateway, error) {
	if kind == "inproc" {
		return gateway{kind: kind, close: func() {}}, nil
	}
	var cmd *exec.Cmd
	cleanup := func() {}
	if kind == "rackattack" {
		if o.period%time.Second != 0 {
			return gateway{}, fmt.Errorf("%w: Rack::Attack counts in whole seconds, and -period is %v", errUnavailable, o.period)
		}
		if err := exec.CommandContext(ctx, "ruby", "-e", "require 'rack/attack'; require 'puma'; require 'puma/server'").Run(); err != nil {
			return gateway{}, fmt.Errorf("%w: ruby with rack-attack and puma is needed (Debian: ruby-rack-attack puma): %v", errUnavailable, err)
		}
		dir, err := os.MkdirTemp("", "rail0-bench-rackattack-")
		if err != nil {
			return gateway{}, err
		}
		cleanup = func() { _ = os.RemoveAll(dir) }
		script := filepath.Join(dir, "rackattack.rb")
		if err := os.WriteFile(script, rackAttack, 0o600); err != nil {
			cleanup()
			return gateway{}, err
		}
		cmd = exec.CommandContext(ctx, "ruby", script, strconv.Itoa(o.limit), strconv.Itoa(int(o.period/time.Second)))
	} else {
		exe, err := os.Executable()
		if err != nil {
			return gateway{}, err
		}
		cmd = exec.CommandContext(ctx, exe, "-serve", kind, "-limit", strconv.Itoa(o.limit), "-period", o.period.String())
		cmd.Env = append(os.Environ(), childEnv)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		cleanup()
		return gateway{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cleanup()
		return gateway{}, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		cleanup()
		return gateway{}, err
	}
	stop := func() {
		_ = stdin.Close() // the child serves until its stdin closes
		_ = cmd.Wait()
		cleanup()
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stop()
		return gateway{}, fmt.Errorf("reading the gateway's URL: %w", err)
	}
	url := strings.TrimSpace(line)
	if !strings.HasPrefix(url, "http://") {
		stop()
		return gateway{}, fmt.Errorf("gateway printed %q, want its URL", url)
	}
	return gateway{kind: kind, url: url, close: stop}, nil
}

// shortRetryAfter makes every 429 of h say Retry-After: ra, as a gateway
// whose header is wrong would.
type shortRetryAfter struct {
	h  http.Handler
	ra string
}

func (s shortRetryAfter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.h.ServeHTTP(raWriter{w, s.ra}, r)
}

// raWriter rewrites the Retry-After of a 429.
type raWriter struct {
	http.ResponseWriter
	ra string
}

func (w raWriter) WriteHeader(code int) {
	if code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", w.ra)
	}
	w.ResponseWriter.WriteHeader(code)
}

// serveGateway is a gateway child. It serves rail0test on a loopback port,
// prints the URL, and serves until stdin closes.
func serveGateway(ctx context.Context, o options, stdin io.Reader, stdout io.Writer) error {
	srv := newGateway(o)
	defer srv.Close()
	h := srv.Handler()
	switch o.serve {
	case "external":
	case "short":
		half := max(1, int((o.period/2+time.Second-1)/time.Second))
		h = shortRetryAfter{h, strconv.Itoa(half)}
	default:
		return fmt.Errorf("-serve %q: want external or short", o.serve)
	}
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	fmt.Fprintf(stdout, "http://%s\n", ln.Addr())
	closed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, stdin)
		close(closed)
	}()
	select {
	case <-closed:
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = hs.Shutdown(sctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
