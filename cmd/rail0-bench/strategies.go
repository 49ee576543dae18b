package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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
	workers    int
	start      int64 // Unix nanoseconds when the workers were let go
	attempts   []attempt
	calls      []call
	roundTrips float64 // Redis round trips per call (redis strategy)
	skipped    string  // why the strategy did not run, if it did not
	sum        summary
}

// strategy is one way of calling the gateway.
type strategy struct {
	order int
	label string
	run   func(ctx context.Context, o options, workers int, gw gateway) (result, error)
}

// strategies are the contenders, by the name -strategies uses.
var strategies = map[string]strategy{
	"retryablehttp": {0, "go-retryablehttp defaults", local(retryableDoer)},
	"naive":         {1, "naive: sleep 1 s on 429", local(naiveDoer)},
	"retry":         {2, "SDK RetryOn429, no cooldown", local(sdkDoer(rail0.WithCooldown(false)))},
	"sdk":           {3, "SDK RetryOn429 (learns the budget)", local(sdkDoer())},
	"pacing":        {4, "SDK + pacing (budget given)", local(pacedDoer)},
	"redis":         {5, "SDK + pacing via Redis", runRedis},
}

// strategyKeys returns the strategy names in table order.
func strategyKeys() []string {
	keys := make([]string, len(strategies))
	for k, s := range strategies {
		keys[s.order] = k
	}
	return keys
}

// path is the endpoint every call reads: public, so limited per client IP,
// which the child processes of the redis strategy share.
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

// doer builds a strategy's call function for a gateway at url whose
// requests go through rt.
type doer func(o options, url string, rt http.RoundTripper) (func(context.Context) error, error)

// runWorkers lets workers goroutines make requests calls in total with do,
// numbering them from firstID, and returns what each call did.
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
				if i >= int64(requests) || ctx.Err() != nil {
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
// now, plus a few milliseconds so that timer slack cannot put the first
// request at the end of the previous window.
func startAfter(lead, period time.Duration) int64 {
	return nextBoundary(time.Now().Add(lead).UnixNano(), period) + int64(5*time.Millisecond)
}

// local runs a strategy in this process against gw.
func local(d doer) func(context.Context, options, int, gateway) (result, error) {
	return func(ctx context.Context, o options, workers int, gw gateway) (result, error) {
		var r result
		url, closeGW := gw.open(o)
		defer closeGW()
		rec := newRecorder(workers)
		do, err := d(o, url, rec)
		if err != nil {
			return r, err
		}
		r.start = startAfter(10*time.Millisecond, o.period)
		if err := sleepUntil(ctx, r.start); err != nil {
			return r, err
		}
		r.calls = runWorkers(ctx, workers, o.requests, 0, do)
		r.attempts = rec.recorded()
		return r, ctx.Err()
	}
}

// retryableDoer is go-retryablehttp as NewClient configures it: up to 4
// retries, exponential backoff from 1 s to 30 s, and Retry-After honoured on
// 429 and 503. Only its transport is replaced, to record the requests, and
// its logger silenced.
func retryableDoer(_ options, url string, rt http.RoundTripper) (func(context.Context) error, error) {
	rc := retryablehttp.NewClient()
	rc.HTTPClient = &http.Client{Transport: rt}
	rc.Logger = nil
	return func(ctx context.Context) error {
		req, err := retryablehttp.NewRequestWithContext(ctx, http.MethodGet, url+path, nil)
		if err != nil {
			return err
		}
		resp, err := rc.Do(req)
		if err != nil {
			return err
		}
		return drain(resp)
	}, nil
}

// naiveMaxAttempts bounds the naive loop so that a run always ends.
const naiveMaxAttempts = 50

// naiveDoer retries every 429 after a fixed second, as hand-written loops
// often do.
func naiveDoer(_ options, url string, rt http.RoundTripper) (func(context.Context) error, error) {
	hc := &http.Client{Transport: rt}
	return func(ctx context.Context) error {
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
	}, nil
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
	return func(_ options, url string, rt http.RoundTripper) (func(context.Context) error, error) {
		all := append([]rail0.Option{
			rail0.WithHTTPClient(&http.Client{Transport: rt}),
			rail0.WithRetryOn429(true),
		}, opts...)
		c, err := rail0.NewClient(url, all...)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) error {
			_, err := c.Chains.List(ctx, rail0.ChainListParams{})
			return err
		}, nil
	}
}

// budget is the gateway's public budget, as the SDK's pacing takes it.
func budget(o options) rail0.Pacing {
	return rail0.Pacing{Public: rail0.Budget{Limit: o.limit, Period: o.period}}
}

// pacedDoer is sdkDoer with pacing at the gateway's budget.
func pacedDoer(o options, url string, rt http.RoundTripper) (func(context.Context) error, error) {
	return sdkDoer(rail0.WithPacing(budget(o)))(o, url, rt)
}

// childReport is what a child process of the redis strategy prints.
type childReport struct {
	Attempts   []attempt `json:"attempts"`
	Calls      []call    `json:"calls"`
	RoundTrips int64     `json:"round_trips"`
}

// encodeReport writes a child's report as JSON.
func encodeReport(w io.Writer, rep childReport) error {
	return json.NewEncoder(w).Encode(rep)
}
