package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// childEnv marks a process the bench started as one of its clients. The
// bench's test binary runs the bench as a child too. It looks for childEnv
// before the testing package reads the flags.
const childEnv = "RAIL0_BENCH_CHILD=1"

// childReport is what a client process prints.
type childReport struct {
	Attempts   []attempt `json:"attempts"`
	Calls      []call    `json:"calls"`
	RoundTrips int64     `json:"round_trips"`
}

// job is what one client process is asked to do.
type job struct {
	key      string
	workers  int
	requests int   // calls in total; 0: until `until`
	until    int64 // Unix nanoseconds when the calls stop; 0: when they are done
}

// fleet is a run's client processes: this binary again, with -child. Each
// is its own process with its own client, as separate deployments of one
// program are. Why real processes, rather than clients in goroutines of
// one? That is how users deploy, and what the issue measured. Each has its
// own runtime, connections and scheduling.
type fleet struct {
	url     string
	start   int64
	prefix  string // redislimit key prefix; "" when nothing is shared
	redis   string // -redis for the children
	cluster bool
	period  time.Duration
	limit   int
}

// run starts one child per job, waits for all of them, and merges what
// they recorded. jobs[i] is child i+1.
func (f fleet) run(ctx context.Context, jobs []job) ([]childReport, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	outs := make([]bytes.Buffer, len(jobs))
	cmds := make([]*exec.Cmd, len(jobs))
	for i, j := range jobs {
		args := []string{
			"-child", strconv.Itoa(i + 1),
			"-strategy", j.key,
			"-url", f.url,
			"-start", strconv.FormatInt(f.start, 10),
			"-until", strconv.FormatInt(j.until, 10),
			"-prefix", f.prefix,
			"-redis", f.redis,
			"-cluster=" + strconv.FormatBool(f.cluster),
			"-workers", strconv.Itoa(j.workers),
			"-requests", strconv.Itoa(j.requests),
			"-limit", strconv.Itoa(f.limit),
			"-period", f.period.String(),
		}
		cmd := exec.CommandContext(ctx, exe, args...)
		cmd.Env = append(os.Environ(), childEnv)
		cmd.Stdout, cmd.Stderr = &outs[i], os.Stderr
		if err := cmd.Start(); err != nil {
			for _, c := range cmds[:i] {
				_ = c.Process.Kill()
				_ = c.Wait() // killed
			}
			return nil, err
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
		return nil, firstErr
	}
	reps := make([]childReport, len(jobs))
	for i := range outs {
		if err := json.Unmarshal(outs[i].Bytes(), &reps[i]); err != nil {
			return nil, fmt.Errorf("child %d report: %w", i+1, err)
		}
	}
	return reps, nil
}

// share splits n among parts, the first ones taking the remainder.
func share(n, parts, i int) int {
	return n/parts + btoi(i < n%parts)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// runFleet runs strategy key in `processes` client processes against gw.
// Each has its share of the W workers and of the calls. runFleet merges
// what they recorded. The processes share what the strategy's store says:
//   - nothing;
//   - the Redis at -redis;
//   - a Redis Cluster the bench starts, and loses a master of o.outageAt
//     into the run.
func runFleet(ctx context.Context, o options, key string, processes, workers int, gw gateway) (result, error) {
	var r result
	if workers < processes || o.requests < processes {
		r.skipped = fmt.Sprintf("needs at least %d workers and calls", processes)
		return r, nil
	}
	url, closeGW := gw.open(o)
	defer closeGW()
	f := fleet{url: url, period: o.period, limit: o.limit}
	var kill func() error
	switch strategies[key].store {
	case "redis":
		if why := pingRedis(ctx, o.redisAddr); why != "" {
			r.skipped = why
			return r, nil
		}
		f.redis, f.prefix = o.redisAddr, newPrefix()
		defer dropKeys(o.redisAddr, f.prefix)
	case "outage":
		if why := clusterTools(); why != "" {
			r.skipped = why
			return r, nil
		}
		c, err := startCluster(ctx)
		if err != nil {
			return r, err
		}
		defer c.close()
		f.redis, f.cluster, f.prefix = strings.Join(c.addrs, ","), true, newPrefix()
		i, err := c.owner(ctx, f.prefix+"{public}:state")
		if err != nil {
			return r, err
		}
		kill = func() error { return c.kill(i) }
	}
	f.start = startAfter(o.childLead(), o.period)
	r.start = f.start
	jobs := make([]job, processes)
	for i := range jobs {
		jobs[i] = job{key: key, workers: share(workers, processes, i), requests: share(o.requests, processes, i)}
	}
	killed := make(chan error, 1)
	if kill != nil {
		go func() {
			if err := sleepUntil(ctx, f.start+int64(o.outageAt)); err != nil {
				killed <- err
				return
			}
			killed <- kill()
		}()
	}
	reps, err := f.run(ctx, jobs)
	if kill != nil {
		if kerr := <-killed; err == nil && kerr != nil {
			err = fmt.Errorf("killing the cluster's master: %w", kerr)
		}
	}
	if err != nil {
		return r, err
	}
	var trips int64
	for _, rep := range reps {
		r.attempts = append(r.attempts, rep.Attempts...)
		r.calls = append(r.calls, rep.Calls...)
		trips += rep.RoundTrips
	}
	if len(r.calls) > 0 {
		r.roundTrips = float64(trips) / float64(len(r.calls))
	}
	return r, nil
}

// childLead is how long the client processes have to start before the
// first window. It is a second unless a test says otherwise.
func (o options) childLead() time.Duration {
	if o.lead > 0 {
		return o.lead
	}
	return time.Second
}

// newPrefix is a redislimit key prefix of the bench's own for one run.
func newPrefix() string {
	return fmt.Sprintf("rail0:bench:%d-%d:", os.Getpid(), time.Now().UnixNano())
}

// runChild is one client process. It builds its strategy's client and
// waits for the agreed start. It runs its workers until its calls are done
// or its time is up. Then it prints what it recorded as JSON.
func runChild(ctx context.Context, o options, stdout io.Writer) error {
	s, ok := strategies[o.strategy]
	if !ok {
		return fmt.Errorf("child %d: unknown strategy %q", o.child, o.strategy)
	}
	if o.url == "" || o.start == 0 {
		return fmt.Errorf("child %d: -url and -start are required", o.child)
	}
	workers := o.workers[0]
	rec := newRecorder(workers)
	c, err := s.doer(o, o.url, rec)
	if err != nil {
		return err
	}
	defer c.close()
	if err := sleepUntil(ctx, o.start); err != nil {
		return err
	}
	runCtx := ctx
	requests := o.requests
	if o.until != 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithDeadline(ctx, time.Unix(0, o.until))
		defer cancel()
		requests = 0
	}
	// Call ids must not collide across the processes.
	calls := runWorkers(runCtx, workers, requests, int64(o.child)<<32, c.do)
	rep := childReport{Attempts: rec.recorded(), Calls: calls}
	if c.trips != nil {
		rep.RoundTrips = c.trips()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(rep)
}

// survival is what one survivor run measured.
type survival struct {
	gateway   string
	processes int
	// accepted[p][k] counts process p's requests that went through in
	// window k of the run, by the time each was sent.
	accepted [][]int
	refused  [][]int
	shared   int // windows before the others stopped (the last one cut short)
	alone    int // windows the survivor ran alone after that
	limit    int
}

// survivorWorkers is each process's workers in the survivor runs. They are
// enough that every process wants more than the whole budget.
const survivorWorkers = 8

// runSurvivor runs `processes` SDK processes (only WithRetryOn429) with
// unbounded demand against gw, for o.survivor windows. It stops all but
// the first halfway through the last of them. It lets the first run alone
// for o.alone windows more.
func runSurvivor(ctx context.Context, o options, processes int, gw gateway) (survival, error) {
	sv := survival{gateway: gw.kind, processes: processes, shared: o.survivor, alone: o.alone, limit: o.limit}
	url, closeGW := gw.open(o)
	defer closeGW()
	f := fleet{url: url, period: o.period, limit: o.limit, start: startAfter(o.childLead(), o.period)}
	p := int64(o.period)
	stop := f.start + int64(o.survivor)*p - p/2
	end := f.start + int64(o.survivor+o.alone)*p
	jobs := make([]job, processes)
	for i := range jobs {
		jobs[i] = job{key: "sdk", workers: survivorWorkers, until: stop}
	}
	jobs[0].until = end
	reps, err := f.run(ctx, jobs)
	if err != nil {
		return sv, err
	}
	first := floorDiv(f.start, p)
	windows := o.survivor + o.alone
	for _, rep := range reps {
		acc, ref := make([]int, windows), make([]int, windows)
		for _, a := range rep.Attempts {
			k := int(floorDiv(a.Sent, p) - first)
			if k < 0 || k >= windows {
				continue
			}
			switch a.Status {
			case 200:
				acc[k]++
			case 429:
				ref[k]++
			}
		}
		sv.accepted = append(sv.accepted, acc)
		sv.refused = append(sv.refused, ref)
	}
	return sv, nil
}

// recovery returns how many windows after the others stopped the survivor
// took to be back at the full budget for good. It returns k when window k
// after the one they stopped in, and every later one, let the whole limit
// through. 1 is the first full window without them. It returns 0 when the
// survivor never was back.
func (sv survival) recovery() int {
	if len(sv.accepted) == 0 {
		return 0
	}
	solo := sv.accepted[0]
	k := 0
	for w := len(solo) - 1; w >= sv.shared; w-- {
		if solo[w] < sv.limit {
			break
		}
		k = w - sv.shared + 1
	}
	return k
}

// parts returns, for each process, the requests it got through in the
// shared windows, as a share of its fair part. It leaves out the first two
// windows, where the budget is being learned. It leaves out the last, cut
// short. It also returns the fewest requests that any of those windows let
// through in all.
func (sv survival) parts() (shares []float64, fewest int, err error) {
	lo, hi := 2, sv.shared-1
	if hi <= lo {
		return nil, 0, errors.New("too few shared windows")
	}
	fewest = -1
	for w := lo; w < hi; w++ {
		total := 0
		for _, acc := range sv.accepted {
			total += acc[w]
		}
		if fewest < 0 || total < fewest {
			fewest = total
		}
	}
	fair := float64((hi-lo)*sv.limit) / float64(len(sv.accepted))
	for _, acc := range sv.accepted {
		sum := 0
		for w := lo; w < hi; w++ {
			sum += acc[w]
		}
		shares = append(shares, float64(sum)/fair)
	}
	return shares, fewest, nil
}
