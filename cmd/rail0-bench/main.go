// Command rail0-bench measures how retry strategies behave against the
// gateway's fixed-window rate limit, using the in-process gateway of package
// rail0test with small windows.
//
// W workers share M calls of GET /blockchains (the public surface, limited
// per client IP). Each strategy runs against its own fresh gateway, starting
// on a window boundary, and the bench prints one row per strategy: HTTP
// requests sent, 429 answers, retries sent before the end of the window
// that refused them, the most 429s in one window, calls that failed,
// makespan and call latency. It also draws the requests sent per 100 ms for
// each strategy as a PNG.
//
// The strategies:
//
//	retryablehttp  go-retryablehttp's NewClient() defaults
//	naive          a loop that sleeps 1 s after a 429
//	retry          this SDK, WithRetryOn429(true), WithCooldown(false)
//	cooldown       this SDK, WithRetryOn429(true) (client-wide cooldown on)
//	pacing         as cooldown, plus WithPacing with the server's budget
//	redis          as pacing, in 2 processes sharing a redislimit.Limiter
//
// For the redis strategy the bench runs itself twice more as child
// processes, each with half the workers and half the calls. Without a
// reachable Redis that strategy is skipped with a message.
//
// Usage:
//
//	go run ./cmd/rail0-bench [-workers 10] [-requests 100] [-limit 20] [-period 2s]
//		[-strategies retryablehttp,naive,retry,cooldown,pacing,redis]
//		[-png docs/ratelimit.png] [-redis 127.0.0.1:6379]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// quietLogger discards go-redis's internal log lines.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func main() {
	// go-redis logs every failed dial on its own; the bench reports an
	// unreachable Redis once, in the table.
	redis.SetLogger(quietLogger{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "rail0-bench:", err)
		os.Exit(1)
	}
}

// options are the bench's flags.
type options struct {
	workers    int
	requests   int
	limit      int
	period     time.Duration
	strategies []string
	png        string
	redisAddr  string

	// Set only in a child process of the redis strategy.
	child  int
	url    string
	start  int64
	prefix string
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("rail0-bench", flag.ContinueOnError)
	fs.IntVar(&o.workers, "workers", 10, "concurrent workers (W)")
	fs.IntVar(&o.requests, "requests", 100, "calls in total (M)")
	fs.IntVar(&o.limit, "limit", 20, "gateway limit per window on the public surface (L)")
	fs.DurationVar(&o.period, "period", 2*time.Second, "gateway window length (P)")
	list := fs.String("strategies", strings.Join(strategyKeys(), ","), "comma-separated strategies to run")
	fs.StringVar(&o.png, "png", "docs/ratelimit.png", "where to write the chart; empty for none")
	fs.StringVar(&o.redisAddr, "redis", defaultRedisAddr(), "Redis address for the redis strategy")
	fs.IntVar(&o.child, "child", 0, "internal: index of a child process of the redis strategy")
	fs.StringVar(&o.url, "url", "", "internal: gateway URL for a child process")
	fs.Int64Var(&o.start, "start", 0, "internal: Unix nanoseconds at which a child starts")
	fs.StringVar(&o.prefix, "prefix", "", "internal: redislimit key prefix for a child process")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.workers <= 0 || o.requests <= 0 || o.limit <= 0 || o.period <= 0 {
		return o, errors.New("-workers, -requests, -limit and -period must be positive")
	}
	for s := range strings.SplitSeq(*list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if _, ok := strategies[s]; !ok {
			return o, fmt.Errorf("unknown strategy %q (want some of %s)", s, strings.Join(strategyKeys(), ", "))
		}
		o.strategies = append(o.strategies, s)
	}
	if o.child == 0 && len(o.strategies) == 0 {
		return o, errors.New("no strategy to run")
	}
	return o, nil
}

// defaultRedisAddr is RAIL0_REDIS_ADDR, as in the redislimit tests, or the
// loopback default.
func defaultRedisAddr() string {
	if a := os.Getenv("RAIL0_REDIS_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	if o.child > 0 {
		return runChild(ctx, o, stdout)
	}

	floor := makespanFloor(o.requests, o.limit, o.period)
	fmt.Fprintf(stdout, "%d workers, %d calls of GET /blockchains, gateway limit %d per %v (public surface); floor (M/L-1)*P = %v\n\n",
		o.workers, o.requests, o.limit, o.period, floor)
	var results []result
	for _, key := range o.strategies {
		r, err := strategies[key].run(ctx, o)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		r.key, r.label = key, strategies[key].label
		if r.skipped == "" {
			r.sum = summarize(r.attempts, r.calls, r.start, o.period)
		}
		results = append(results, r)
	}
	printTable(stdout, results)
	printTargets(stdout, results, o, floor)
	if o.png != "" {
		title := fmt.Sprintf("Requests sent per 100 ms: %d workers, %d calls, limit %d per %v (dashed: window boundaries)",
			o.workers, o.requests, o.limit, o.period)
		if err := writeChart(o.png, title, results, o.period); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nchart written to %s\n", o.png)
	}
	return nil
}
