package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	rail0 "github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0test"
)

// result is what one strategy's run recorded.
type result struct {
	key, label string
	gateway    string
	processes  int   // the processes the calls were made from; 1 is the bench's own
	workers    int   // all processes together
	start      int64 // Unix nanoseconds when the workers were let go
	attempts   []attempt
	calls      []call
	roundTrips float64 // Redis round trips per call (strategies sharing Redis)
	skipped    string  // why the strategy did not run, if it did not
	sum        summary
}

// strategy is one way of calling the gateway.
type strategy struct {
	order int
	label string
	doer  doer
	// store is what the processes share:
	//   - "": nothing;
	//   - "redis": the Redis at -redis;
	//   - "outage": a Redis Cluster of three masters that the bench
	//     starts. It kills the master holding the partition mid-run.
	store string
	// alone is true for a strategy that needs the whole budget to itself.
	// It runs in one process only. That is pacing at the gateway's budget,
	// which processes that share nothing would each take whole.
	alone bool
}

// strategies are the contenders, by the name -strategies uses.
var strategies = map[string]strategy{
	"retryablehttp":  {0, "go-retryablehttp defaults", retryableDoer, "", false},
	"naive":          {1, "naive: sleep 1 s on 429", naiveDoer, "", false},
	"retry":          {2, "SDK RetryOn429, no cooldown", sdkDoer(rail0.WithCooldown(false)), "", false},
	"sdk":            {3, "SDK RetryOn429 (learns the budget)", sdkDoer(), "", false},
	"pacing":         {4, "SDK + pacing (budget given)", pacedDoer, "", true},
	"redis":          {5, "SDK + pacing via Redis", redisDoer(true), "redis", false},
	"redis-learned":  {6, "SDK RetryOn429 via Redis (learns the budget)", redisDoer(false), "redis", false},
	"outage":         {7, "SDK + pacing via Redis Cluster, master killed", redisDoer(true), "outage", false},
	"outage-learned": {8, "SDK RetryOn429 via Redis Cluster, master killed", redisDoer(false), "outage", false},
	// margin is a diagnosis, not advice. It is sdk with the pacing margin
	// fixed at 2 ms, which is also the step between a window's probes. The
	// margin guards the windows' boundaries too. So a real deployment
	// leaves it measured.
	"margin": {9, "SDK RetryOn429, Pacing.Margin 2 ms", sdkDoer(rail0.WithPacing(rail0.Pacing{Margin: 2 * time.Millisecond})), "", false},
}

// strategyKeys returns the strategy names in table order.
func strategyKeys() []string {
	keys := make([]string, len(strategies))
	for k, s := range strategies {
		keys[s.order] = k
	}
	return keys
}

// path is the endpoint every call reads. It is public, so limited per
// client IP, which all the bench's processes share on loopback.
const path = "/blockchains"

// callKey carries a call's id in the request context to the recorder.
type callKey struct{}

// recorder is an http.RoundTripper that records every request it sends.
type recorder struct {
	next     http.RoundTripper
	mu       sync.Mutex
	attempts []attempt
}

func newRecorder(maxConns int) *recorder {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = maxConns
	return &recorder{next: t}
}

// RoundTrip implements http.RoundTripper.
func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	id, _ := req.Context().Value(callKey{}).(int64)
	sent := time.Now().UnixNano()
	resp, err := r.next.RoundTrip(req)
	a := attempt{Call: id, Sent: sent, Recv: time.Now().UnixNano()}
	if err == nil {
		a.Status = resp.StatusCode
		if v, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After"))); resp.StatusCode == http.StatusTooManyRequests && err == nil && v > 0 {
			a.RetryAfter = int64(time.Duration(v) * time.Second)
		}
	}
	r.mu.Lock()
	r.attempts = append(r.attempts, a)
	r.mu.Unlock()
	return resp, err
}

func (r *recorder) recorded() []attempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]attempt(nil), r.attempts...)
}

// caller is one process's client of a strategy.
type caller struct {
	do    func(context.Context) error // one call
	trips func() int64                // Redis round trips so far; nil without Redis
	close func()
}

// doer builds a strategy's client for a gateway at url whose requests go
// through rt.
type doer func(o options, url string, rt http.RoundTripper) (caller, error)

// runWorkers lets workers goroutines make requests calls in total with
// do. With requests ≤ 0 they go on until ctx ends. It numbers the calls
// from firstID, and returns what each call did.
func runWorkers(ctx context.Context, workers, requests int, firstID int64, do func(context.Context) error) []call {
	var (
		next  atomic.Int64
		mu    sync.Mutex
		calls []call
		wg    sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if requests > 0 && i >= int64(requests) || ctx.Err() != nil {
					return
				}
				id := firstID + i
				c := call{ID: id, Start: time.Now().UnixNano()}
				err := do(context.WithValue(ctx, callKey{}, id))
				c.End, c.OK = time.Now().UnixNano(), err == nil
				mu.Lock()
				calls = append(calls, c)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return calls
}

// newGateway starts a gateway whose public and session surfaces both allow
// o.limit requests per window of o.period.
func newGateway(o options) *rail0test.Server {
	return rail0test.NewServer(
		rail0test.WithRateLimits(rail0test.Limit{Requests: o.limit}, rail0test.Limit{Requests: o.limit}),
		rail0test.WithRateLimitPeriod(o.period),
	)
}

// sleepUntil waits until the wall clock reads t (Unix nanoseconds).
func sleepUntil(ctx context.Context, t int64) error {
	timer := time.NewTimer(time.Until(time.Unix(0, t)))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// startAfter returns a start time on a window boundary at least lead from
// now. It adds a few milliseconds, so that timer slack cannot put the
// first request at the end of the previous window.
func startAfter(lead, period time.Duration) int64 {
	return nextBoundary(time.Now().Add(lead).UnixNano(), period) + int64(5*time.Millisecond)
}

// runLocal runs strategy key in this process against gw: W workers, one
// client.
func runLocal(ctx context.Context, o options, key string, workers int, gw gateway) (result, error) {
	var r result
	url, closeGW := gw.open(o)
	defer closeGW()
	rec := newRecorder(workers)
	c, err := strategies[key].doer(o, url, rec)
	if err != nil {
		return r, err
	}
	defer c.close()
	r.start = startAfter(10*time.Millisecond, o.period)
	if err := sleepUntil(ctx, r.start); err != nil {
		return r, err
	}
	r.calls = runWorkers(ctx, workers, o.requests, 0, c.do)
	r.attempts = rec.recorded()
	return r, ctx.Err()
}

// retryableDoer is go-retryablehttp as NewClient configures it:
//   - up to 4 retries;
//   - exponential backoff from 1 s to 30 s;
//   - Retry-After honoured on 429 and 503.
//
// Only its transport is replaced, to record the requests, and its logger
// silenced.
func retryableDoer(_ options, url string, rt http.RoundTripper) (caller, error) {
	rc := retryablehttp.NewClient()
	rc.HTTPClient = &http.Client{Transport: rt}
	rc.Logger = nil
	return caller{do: func(ctx context.Context) error {
		req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, url+path, nil)
		if err != nil {
			return err
		}
		resp, err := rc.Do(req)
		if err != nil {
			return err
		}
		return drain(resp)
	}, close: func() {}}, nil
}

// naiveMaxAttempts bounds the naive loop so that a run always ends.
const naiveMaxAttempts = 50

// naiveDoer retries every 429 after a fixed second, as hand-written loops
// often do.
func naiveDoer(_ options, url string, rt http.RoundTripper) (caller, error) {
	hc := &http.Client{Transport: rt}
	return caller{do: func(ctx context.Context) error {
		var err error
		for range naiveMaxAttempts {
			var req *http.Request
			req, err = http.NewRequestWithContext(ctx, http.MethodGet, url+path, nil)
			if err != nil {
				return err
			}
			var resp *http.Response
			resp, err = hc.Do(req)
			if err != nil {
				return err
			}
			if resp.StatusCode != http.StatusTooManyRequests {
				return drain(resp)
			}
			err = drain(resp)
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return err
	}, close: func() {}}, nil
}

// drain reads and closes a response body, and turns a non-2xx into an error.
func drain(resp *http.Response) error {
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// sdkDoer calls through this SDK with 429 retries on and the given options.
func sdkDoer(opts ...rail0.Option) doer {
	return func(_ options, url string, rt http.RoundTripper) (caller, error) {
		all := append([]rail0.Option{
			rail0.WithHTTPClient(&http.Client{Transport: rt}),
			rail0.WithRetryOn429(true),
		}, opts...)
		c, err := rail0.NewClient(url, all...)
		if err != nil {
			return caller{}, err
		}
		return caller{do: func(ctx context.Context) error {
			_, err := c.Chains.List(ctx, rail0.ChainListParams{})
			return err
		}, close: func() {}}, nil
	}
}

// budget is the gateway's public budget, as the SDK's pacing takes it.
func budget(o options) rail0.Pacing {
	return rail0.Pacing{Public: rail0.Budget{Limit: o.limit, Period: o.period}}
}

// pacedDoer is sdkDoer with pacing at the gateway's budget.
func pacedDoer(o options, url string, rt http.RoundTripper) (caller, error) {
	return sdkDoer(rail0.WithPacing(budget(o)))(o, url, rt)
}
