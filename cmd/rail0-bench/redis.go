package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	rail0 "github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/ratelimit"
	"github.com/rail0/rail0-go/redislimit"
)

// newRedis returns a client of addr with short timeouts, as the
// redislimit documentation advises: it gives up quickly when nothing
// listens there.
func newRedis(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, DialerRetries: 1,
		ReadTimeout: time.Second, WriteTimeout: time.Second, PoolTimeout: time.Second, ContextTimeoutEnabled: true})
}

// counter is a go-redis hook that counts the limiter's round trips to the
// server: its script calls. The handshake of each new connection is not
// the limiter's doing and is not counted.
type counter struct{ n atomic.Int64 }

func (c *counter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if isScript(cmd.Name()) {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if isScript(cmd.Name()) {
				c.n.Add(1)
				break
			}
		}
		return next(ctx, cmds)
	}
}

// isScript reports whether a command runs a Lua script.
func isScript(name string) bool {
	switch strings.ToLower(name) {
	case "eval", "evalsha", "eval_ro", "evalsha_ro":
		return true
	}
	return false
}

// runRedis runs the paced SDK in o.processes child processes (this binary
// again, with -child) that share one budget through redislimit, against one
// gateway, and merges what they recorded.
func runRedis(ctx context.Context, o options, workersTotal int, gw gateway) (result, error) {
	var r result
	childProcesses := o.processes
	if workersTotal < childProcesses || o.requests < childProcesses {
		r.skipped = fmt.Sprintf("needs at least %d workers and calls", childProcesses)
		return r, nil
	}
	rdb := newRedis(o.redisAddr)
	defer rdb.Close()
	pingCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
	err := rdb.Ping(pingCtx).Err()
	cancel()
	if err != nil {
		r.skipped = fmt.Sprintf("skipped: Redis unreachable at %s (%v)", o.redisAddr, err)
		return r, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return r, err
	}
	url, closeGW := gw.open(o)
	defer closeGW()
	prefix := fmt.Sprintf("rail0:bench:%d-%d:", os.Getpid(), time.Now().UnixNano())
	defer func() { // the keys expire anyway; leave nothing behind sooner
		it := rdb.Scan(context.Background(), 0, prefix+"*", 100).Iterator()
		for it.Next(context.Background()) {
			rdb.Del(context.Background(), it.Val())
		}
	}()

	// Leave the children a second to start before the first window.
	r.start = startAfter(time.Second, o.period)
	outs := make([]bytes.Buffer, childProcesses)
	cmds := make([]*exec.Cmd, childProcesses)
	for i := range childProcesses {
		// Split the workers and calls as evenly as possible.
		workers := workersTotal/childProcesses + btoi(i < workersTotal%childProcesses)
		requests := o.requests/childProcesses + btoi(i < o.requests%childProcesses)
		cmd := exec.CommandContext(ctx, exe,
			"-child", strconv.Itoa(i+1),
			"-url", url,
			"-start", strconv.FormatInt(r.start, 10),
			"-prefix", prefix,
			"-redis", o.redisAddr,
			"-workers", strconv.Itoa(workers),
			"-requests", strconv.Itoa(requests),
			"-limit", strconv.Itoa(o.limit),
			"-period", o.period.String(),
			"-png", "",
		)
		cmd.Stdout, cmd.Stderr = &outs[i], os.Stderr
		if err := cmd.Start(); err != nil {
			return r, err
		}
		cmds[i] = cmd
	}
	var firstErr error
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("child %d: %w", i+1, err)
		}
	}
	if firstErr != nil {
		return r, firstErr
	}
	for i := range outs {
		var rep childReport
		if err := json.Unmarshal(outs[i].Bytes(), &rep); err != nil {
			return r, fmt.Errorf("child %d report: %w", i+1, err)
		}
		r.attempts = append(r.attempts, rep.Attempts...)
		r.calls = append(r.calls, rep.Calls...)
		r.roundTrips += float64(rep.RoundTrips)
	}
	if len(r.calls) > 0 {
		r.roundTrips /= float64(len(r.calls))
	}
	return r, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// runChild is one process of the redis strategy: it waits for the agreed
// start, runs its workers through a paced SDK client whose limiter lives in
// Redis, and prints what it recorded as JSON.
func runChild(ctx context.Context, o options, stdout io.Writer) error {
	if o.url == "" || o.start == 0 || o.prefix == "" {
		return fmt.Errorf("child %d: -url, -start and -prefix are required", o.child)
	}
	rdb := newRedis(o.redisAddr)
	defer rdb.Close()
	trips := &counter{}
	rdb.AddHook(trips)
	workers := o.workers[0]
	rec := newRecorder(workers)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	lim := redislimit.New(rdb, redislimit.WithKeyPrefix(o.prefix))
	do, err := sdkDoer(
		rail0.WithPacing(budget(o)),
		rail0.WithLimiter(lim),
		rail0.WithLogger(logger),
	)(o, o.url, rec)
	if err != nil {
		return err
	}
	// A long-lived process has the limiter's script in Redis's cache; the
	// first call of a fresh one pays a second round trip to load it. Load
	// it before the measured calls, on a partition of its own.
	warm := ratelimit.Reservation{Partition: fmt.Sprintf("warm-up-%d", o.child), MaxWait: time.Second}
	if adm, err := lim.Reserve(ctx, warm); err == nil && adm.Ticket != 0 {
		lim.Release(ctx, warm.Partition, adm.Ticket)
	}
	if err := sleepUntil(ctx, o.start); err != nil {
		return err
	}
	// Call ids must not collide across the processes.
	trips.n.Store(0) // only the calls' round trips
	calls := runWorkers(ctx, workers, o.requests, int64(o.child)<<32, do)
	return encodeReport(stdout, childReport{Attempts: rec.recorded(), Calls: calls, RoundTrips: trips.n.Load()})
}
