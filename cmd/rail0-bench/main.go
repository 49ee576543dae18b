// Command rail0-bench measures how retry strategies behave against the
// gateway's fixed-window rate limit, using the gateway of package rail0test
// with small windows, in this process and as an external process on
// loopback, at several numbers of workers, in one command.
//
// W workers share M calls of GET /blockchains (the public surface, limited
// per client IP). Each run starts on a window boundary, and the bench prints
// one row per gateway, W and strategy: HTTP requests sent, 429 answers (in
// the first window and after it), retries sent before the end of the window
// that refused them (all, and after the first window), calls that failed,
// makespan against the floor, call latency, and for the Redis strategy the
// Redis round trips per call. It also draws, for one W, the requests sent
// per 100 ms for each strategy as a PNG.
//
// The gateways:
//
//	inproc    rail0test in this process, a fresh one per run
//	external  rail0test in a child process on loopback (an external
//	          fixed-window throttle, Retry-After = the whole period)
//	short     as external, but every 429 says Retry-After = half the period
//
// The strategies:
//
//	retryablehttp  go-retryablehttp's NewClient() defaults
//	naive          a loop that sleeps 1 s after a 429
//	retry          this SDK, WithRetryOn429(true), WithCooldown(false)
//	sdk            this SDK, WithRetryOn429(true) only: it learns the budget
//	pacing         as sdk, plus WithPacing with the server's budget
//	redis          as pacing, in several processes sharing a redislimit.Limiter
//
// For the redis strategy the bench runs itself again as child processes,
// each with its share of the workers and calls. Without a reachable Redis
// that strategy is skipped with a message.
//
// Usage:
//
//	go run ./cmd/rail0-bench [-workers 8,32,128,512] [-requests 100] [-limit 20] [-period 2s]
//		[-gateways inproc,external,short] [-strategies retryablehttp,sdk,pacing,redis]
//		[-processes 4] [-png docs/ratelimit.png] [-chart-workers 128] [-redis 127.0.0.1:6379]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
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
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "rail0-bench:", err)
		os.Exit(1)
	}
}

// options are the bench's flags.
type options struct {
	workers      []int
	requests     int
	limit        int
	period       time.Duration
	gateways     []string
	strategies   []string
	processes    int
	png          string
	chartWorkers int
	redisAddr    string

	// Set only in a child process.
	serve  string // a gateway child: "external" or "short"
	child  int    // a client child of the redis strategy
	url    string
	start  int64
	prefix string
}

// gatewayKinds are the gateways, in table order.
var gatewayKinds = []string{"inproc", "external", "short"}

// gatewayLabels describe them.
var gatewayLabels = map[string]string{
	"inproc":   "rail0test in process",
	"external": "rail0test in another process on loopback (external fixed-window throttle)",
	"short":    "as external, Retry-After = half the period",
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("rail0-bench", flag.ContinueOnError)
	workers := fs.String("workers", "8,32,128,512", "comma-separated numbers of concurrent workers (W)")
	fs.IntVar(&o.requests, "requests", 0, "calls in total (M); 0 means 5 × limit")
	fs.IntVar(&o.limit, "limit", 20, "gateway limit per window on the public surface (L)")
	fs.DurationVar(&o.period, "period", 2*time.Second, "gateway window length (P)")
	gateways := fs.String("gateways", strings.Join(gatewayKinds, ","), "comma-separated gateways to run against")
	list := fs.String("strategies", "retryablehttp,sdk,pacing,redis", "comma-separated strategies to run")
	fs.IntVar(&o.processes, "processes", 4, "processes sharing Redis in the redis strategy")
	fs.StringVar(&o.png, "png", "docs/ratelimit.png", "where to write the chart; empty for none")
	fs.IntVar(&o.chartWorkers, "chart-workers", 128, "the W whose in-process runs the chart draws")
	fs.StringVar(&o.redisAddr, "redis", defaultRedisAddr(), "Redis address for the redis strategy")
	fs.StringVar(&o.serve, "serve", "", "internal: serve a gateway (external or short) and print its URL")
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
	for w := range strings.SplitSeq(*workers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n <= 0 {
			return o, fmt.Errorf("-workers: %q is not a positive number", w)
		}
		o.workers = append(o.workers, n)
	}
	if o.requests == 0 {
		o.requests = 5 * o.limit
	}
	if o.requests <= 0 || o.limit <= 0 || o.period <= 0 || o.processes <= 0 {
		return o, errors.New("-requests, -limit, -period and -processes must be positive")
	}
	for g := range strings.SplitSeq(*gateways, ",") {
		if g = strings.TrimSpace(g); g == "" {
			continue
		}
		if !slices.Contains(gatewayKinds, g) {
			return o, fmt.Errorf("unknown gateway %q (want some of %s)", g, strings.Join(gatewayKinds, ", "))
		}
		o.gateways = append(o.gateways, g)
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
	if o.serve == "" && o.child == 0 && (len(o.strategies) == 0 || len(o.gateways) == 0) {
		return o, errors.New("no strategy or gateway to run")
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

// applies reports whether strategy key runs against gateway g: the short
// Retry-After gateway is about the retry strategies without a budget, and
// the processes sharing Redis share the in-process gateway.
func applies(key, g string) bool {
	switch g {
	case "short":
		return key != "pacing" && key != "redis"
	case "external":
		return key != "redis"
	}
	return true
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	switch {
	case o.serve != "":
		return serveGateway(ctx, o, stdin, stdout)
	case o.child > 0:
		return runChild(ctx, o, stdout)
	}

	floor := makespanFloor(o.requests, o.limit, o.period)
	fmt.Fprintf(stdout, "%d calls of GET /blockchains, gateway limit %d per %v (public surface); floor (M/L-1)*P = %v\n",
		o.requests, o.limit, o.period, floor)
	var all []result
	for _, g := range o.gateways {
		gw, err := openGateway(ctx, g, o)
		if err != nil {
			return fmt.Errorf("gateway %s: %w", g, err)
		}
		var rows []result
		for _, w := range o.workers {
			for _, key := range o.strategies {
				if !applies(key, g) {
					continue
				}
				r, err := strategies[key].run(ctx, o, w, gw)
				if err != nil {
					gw.close()
					return fmt.Errorf("%s, %s, W=%d: %w", g, key, w, err)
				}
				r.key, r.label, r.gateway, r.workers = key, strategies[key].label, g, w
				if r.skipped == "" {
					r.sum = summarize(r.attempts, r.calls, r.start, o.period)
					r.sum.RoundTrips = r.roundTrips
				}
				rows = append(rows, r)
			}
		}
		gw.close()
		fmt.Fprintf(stdout, "\n%s:\n", gatewayLabels[g])
		printTable(stdout, rows, floor)
		all = append(all, rows...)
	}
	printTargets(stdout, all, floor)
	if o.png != "" {
		var drawn []result
		for _, r := range all {
			if r.gateway == "inproc" && r.workers == o.chartWorkers {
				drawn = append(drawn, r)
			}
		}
		if len(drawn) > 0 {
			title := fmt.Sprintf("Requests sent per 100 ms: %d workers, %d calls, limit %d per %v (dashed: window boundaries)",
				o.chartWorkers, o.requests, o.limit, o.period)
			if err := writeChart(o.png, title, drawn, o.period); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "\nchart written to %s\n", o.png)
		}
	}
	return nil
}
