// Command rail0-bench measures how retry strategies behave against the
// gateway's fixed-window rate limit. It uses small windows, runs in one
// process and in several, and does it all in one command.
//
// W workers (all processes together) share M calls of GET /blockchains.
// That is the public surface, limited per client IP, which all the bench's
// processes share on loopback. Each run starts on a window boundary with
// fresh clients. The bench prints one row per gateway, P, W and strategy:
//   - HTTP requests sent;
//   - 429 answers, in the first window and after it;
//   - retries sent before the end of the window that refused them, all and
//     after the first window;
//   - the shortest time between a 429 and its retry;
//   - the retries sent sooner than the 429's Retry-After;
//   - calls that failed;
//   - makespan against the floor;
//   - call latency;
//   - for the strategies sharing Redis, the Redis round trips per call.
//
// It checks the targets of issues 13, 21 and 27 (no SDK retry before its
// Retry-After). For one W it draws the requests sent per 100 ms of each
// strategy as PNGs. One chart is one process against the in-process
// gateway. The other is several processes, side by side with
// go-retryablehttp.
//
// P = 1 runs the calls in the bench's own process. P > 1 runs this binary
// again as P client processes (-child). Each has its own client and its
// share of the workers and calls, as separate deployments of one program
// are. They report what they recorded as JSON.
//
// The gateways:
//
//	inproc      rail0test in this process, a fresh one per run (from P > 1,
//	            on loopback to the client processes)
//	external    rail0test in a child process on loopback, as rail0-gateway
//	            serves it
//	short       as external, but every 429 says Retry-After = half the period
//	rackattack  Rack::Attack 6 under Puma in a Ruby process on loopback (an
//	            outside fixed-window throttle; Debian: ruby-rack-attack puma;
//	            skipped with a message when missing)
//
// The strategies:
//
//	retryablehttp   go-retryablehttp's NewClient() defaults
//	naive           a loop that sleeps 1 s after a 429
//	retry           this SDK, WithRetryOn429(true), WithCooldown(false)
//	sdk             this SDK, WithRetryOn429(true) only: it learns the budget
//	pacing          as sdk, plus WithPacing with the server's budget (P = 1)
//	redis           as pacing, the processes sharing a redislimit.Limiter
//	redis-learned   as sdk, the processes sharing a redislimit.Limiter
//	outage          as redis, on a Redis Cluster of three masters that the
//	                bench starts (redis-server, redis-cli) and whose master
//	                holding the partition it kills -outage-at into the run
//	outage-learned  as redis-learned, with the same outage
//	margin          as sdk, its pacing margin (the step between a window's
//	                probes) fixed at 2 ms: a diagnosis, not in the default run
//
// One process runs the strategies that need no store on every gateway.
// Several processes that share nothing (retryablehttp, sdk, naive, retry)
// call external and rackattack. Those that share a store call inproc.
//
// The survivor runs (-survivor windows, then -alone) start P processes of
// the sdk strategy with unbounded demand, on external and rackattack. They
// stop all but one, and count the windows until the survivor has the whole
// budget again. Without a reachable Redis the redis strategies are skipped
// with a message.
//
// Usage:
//
//	go run ./cmd/rail0-bench [-workers 8,32,128,512] [-processes 1,2,4,8] [-requests 100] [-limit 20] [-period 2s]
//		[-gateways inproc,external,short,rackattack] [-strategies retryablehttp,sdk,pacing,redis,redis-learned,outage,outage-learned]
//		[-survivor 10] [-alone 5] [-outage-at 3s] [-redis 127.0.0.1:6379]
//		[-png docs/ratelimit.png] [-png-processes docs/ratelimit-processes.png] [-chart-workers 128]
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
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "rail0-bench:", err)
		os.Exit(1)
	}
}

// options are the bench's flags.
type options struct {
	workers      []int
	processes    []int
	requests     int
	limit        int
	period       time.Duration
	gateways     []string
	strategies   []string
	png          string
	pngFleet     string
	chartWorkers int
	redisAddr    string
	survivor     int
	alone        int
	outageAt     time.Duration
	// lead is how long the client processes have to start before the
	// first window. Zero means a second. Only tests shorten it.
	lead time.Duration

	// Set only in a child process.
	serve    string // a gateway child: "external" or "short"
	child    int    // a client child
	strategy string
	url      string
	start    int64
	until    int64
	prefix   string
	cluster  bool
}

// gatewayKinds are the gateways, in table order.
var gatewayKinds = []string{"inproc", "external", "short", "rackattack"}

// gatewayLabels describe them.
var gatewayLabels = map[string]string{
	"inproc":     "rail0test in the bench's process",
	"external":   "rail0test in another process on loopback (as rail0-gateway serves it)",
	"short":      "as external, Retry-After = half the period",
	"rackattack": "Rack::Attack 6.6 under Puma, another process on loopback (an outside fixed-window throttle)",
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("rail0-bench", flag.ContinueOnError)
	workers := fs.String("workers", "8,32,128,512", "comma-separated numbers of concurrent workers (W), all processes together")
	processes := fs.String("processes", "1,2,4,8", "comma-separated numbers of client processes (P); 1 runs the calls in the bench's own process")
	fs.IntVar(&o.requests, "requests", 0, "calls in total (M); 0 means 5 × limit")
	fs.IntVar(&o.limit, "limit", 20, "gateway limit per window on the public surface (L)")
	fs.DurationVar(&o.period, "period", 2*time.Second, "gateway window length (P); whole seconds for rackattack")
	gateways := fs.String("gateways", strings.Join(gatewayKinds, ","), "comma-separated gateways to run against")
	list := fs.String("strategies", "retryablehttp,sdk,pacing,redis,redis-learned,outage,outage-learned", "comma-separated strategies to run")
	fs.StringVar(&o.png, "png", "docs/ratelimit.png", "where to write the chart of one process's strategies; empty for none")
	fs.StringVar(&o.pngFleet, "png-processes", "docs/ratelimit-processes.png", "where to write the chart of several processes; empty for none")
	fs.IntVar(&o.chartWorkers, "chart-workers", 128, "the W the charts draw")
	fs.StringVar(&o.redisAddr, "redis", defaultRedisAddr(), "Redis address for the strategies sharing Redis")
	fs.IntVar(&o.survivor, "survivor", 10, "survivor runs: windows the processes share before all but one stop; 0 for none")
	fs.IntVar(&o.alone, "alone", 5, "survivor runs: windows the survivor runs alone")
	fs.DurationVar(&o.outageAt, "outage-at", 3*time.Second, "outage strategies: when the master holding the partition is killed, from the start")
	fs.StringVar(&o.serve, "serve", "", "internal: serve a gateway (external or short) and print its URL")
	fs.IntVar(&o.child, "child", 0, "internal: index of a client child process")
	fs.StringVar(&o.strategy, "strategy", "", "internal: the strategy of a client child process")
	fs.StringVar(&o.url, "url", "", "internal: gateway URL for a child process")
	fs.Int64Var(&o.start, "start", 0, "internal: Unix nanoseconds at which a child starts")
	fs.Int64Var(&o.until, "until", 0, "internal: Unix nanoseconds at which a child stops calling; 0 when its calls are done")
	fs.StringVar(&o.prefix, "prefix", "", "internal: redislimit key prefix for a child process")
	fs.BoolVar(&o.cluster, "cluster", false, "internal: -redis names the nodes of a Redis Cluster")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if o.workers, err = positives("-workers", *workers); err != nil {
		return o, err
	}
	if o.processes, err = positives("-processes", *processes); err != nil {
		return o, err
	}
	if o.requests == 0 {
		o.requests = 5 * o.limit
	}
	if o.requests <= 0 || o.limit <= 0 || o.period <= 0 || o.survivor < 0 || o.alone < 0 || o.outageAt < 0 {
		return o, errors.New("-requests, -limit and -period must be positive; -survivor, -alone and -outage-at not negative")
	}
	if o.survivor > 0 && (o.survivor < 4 || o.alone < 3) {
		return o, errors.New("-survivor needs at least 4 windows and -alone at least 3")
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

// positives parses a comma-separated list of positive numbers.
func positives(name, list string) ([]int, error) {
	var ns []int
	for w := range strings.SplitSeq(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s: %q is not a positive number", name, w)
		}
		ns = append(ns, n)
	}
	return ns, nil
}

// defaultRedisAddr is RAIL0_REDIS_ADDR, as in the redislimit tests. Else it
// is the loopback default.
func defaultRedisAddr() string {
	if a := os.Getenv("RAIL0_REDIS_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}

// applies reports whether strategy key runs against gateway g in P
// processes:
//   - One process runs every strategy that needs no store, on every
//     gateway. The short Retry-After gateway is about the retry strategies
//     without a budget.
//   - Several processes that share nothing call the gateways in processes
//     of their own (external, rackattack).
//   - Several that share a store call rail0test in the bench's process, as
//     before.
func applies(key, g string, processes int) bool {
	s := strategies[key]
	switch {
	case s.store != "":
		return processes > 1 && g == "inproc"
	case processes == 1:
		return g != "short" || key != "pacing"
	default:
		return !s.alone && survives(g)
	}
}

// survives reports whether gateway g hosts survivor runs. Survivor runs
// are those whose fleets share nothing.
func survives(g string) bool { return g == "external" || g == "rackattack" }

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

	began := time.Now()
	floor := makespanFloor(o.requests, o.limit, o.period)
	fmt.Fprintf(stdout, "%d calls of GET /blockchains, gateway limit %d per %v (public surface); floor (M/L-1)*P = %v\n",
		o.requests, o.limit, o.period, floor)
	var (
		all       []result
		survivals []survival
	)
	for _, g := range o.gateways {
		gw, err := openGateway(ctx, g, o)
		if errors.Is(err, errUnavailable) {
			fmt.Fprintf(stdout, "\n%s: skipped: %v\n", gatewayLabels[g], err)
			continue
		}
		if err != nil {
			return fmt.Errorf("gateway %s: %w", g, err)
		}
		var rows []result
		for _, p := range o.processes {
			for _, w := range o.workers {
				for _, key := range o.strategies {
					if !applies(key, g, p) {
						continue
					}
					var r result
					if p == 1 {
						r, err = runLocal(ctx, o, key, w, gw)
					} else {
						r, err = runFleet(ctx, o, key, p, w, gw)
					}
					if err != nil {
						gw.close()
						return fmt.Errorf("%s, %s, P=%d, W=%d: %w", g, key, p, w, err)
					}
					r.key, r.label, r.gateway, r.processes, r.workers = key, strategies[key].label, g, p, w
					if r.skipped == "" {
						r.sum = summarize(r.attempts, r.calls, r.start, o.period)
						r.sum.RoundTrips = r.roundTrips
					}
					rows = append(rows, r)
				}
			}
		}
		if o.survivor > 0 && survives(g) {
			for _, p := range o.processes {
				if p == 1 {
					continue
				}
				sv, err := runSurvivor(ctx, o, p, gw)
				if err != nil {
					gw.close()
					return fmt.Errorf("%s, survivor, P=%d: %w", g, p, err)
				}
				survivals = append(survivals, sv)
			}
		}
		gw.close()
		fmt.Fprintf(stdout, "\n%s:\n", gatewayLabels[g])
		printTable(stdout, rows, floor)
		all = append(all, rows...)
	}
	if len(survivals) > 0 {
		fmt.Fprintf(stdout, "\nsurvivor: P processes with only RetryOn429, %d workers each, share the budget for %d windows; all but one stop halfway through the last:\n",
			survivorWorkers, o.survivor)
		printSurvivals(stdout, survivals)
	}
	printTargets(stdout, all, survivals, floor)
	if err := drawCharts(stdout, o, all); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nthe whole run took %v\n", time.Since(began).Round(time.Second))
	return nil
}

// drawCharts writes the charts. One shows one process's strategies against
// the in-process gateway. The other shows the processes that share
// nothing, side by side with go-retryablehttp's. It uses the first gateway
// they ran on.
func drawCharts(stdout io.Writer, o options, all []result) error {
	var one, many []result
	fleetGW := ""
	for _, r := range all {
		if r.workers != o.chartWorkers || r.skipped != "" {
			continue
		}
		switch {
		case r.processes == 1 && r.gateway == "inproc":
			one = append(one, r)
		case r.processes > 1 && strategies[r.key].store == "":
			if fleetGW == "" {
				fleetGW = r.gateway
			}
			if r.gateway == fleetGW {
				many = append(many, r)
			}
		}
	}
	if o.png != "" && len(one) > 0 {
		title := fmt.Sprintf("Requests sent per 100 ms: one process, %d workers, %d calls, limit %d per %v (dashed: window boundaries)",
			o.chartWorkers, o.requests, o.limit, o.period)
		if err := writeChart(o.png, title, one, o.period); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nchart written to %s\n", o.png)
	}
	if o.pngFleet != "" && len(many) > 0 {
		title := fmt.Sprintf("Requests sent per 100 ms, all processes together: %d workers, %d calls, limit %d per %v, %s (dashed: window boundaries)",
			o.chartWorkers, o.requests, o.limit, o.period, fleetGW)
		if err := writeChart(o.pngFleet, title, many, o.period); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "chart written to %s\n", o.pngFleet)
	}
	return nil
}
