// Command background-job shows the rate-limit settings for work nobody waits
// on.
//
// WithRetryOn429 sleeps the job's goroutines through 429s. Each wait is at
// least the gateway's Retry-After (capped by RetryAfterCap), plus jitter.
// All waits fit within a per-call allowance. The client-wide cooldown stops
// the other workers from sending into a closed window. WithPacing keeps the
// job under the budget, so the gateway never has to refuse it.
//
// It runs against the embedded rail0test gateway by default. That gateway
// throttles sessions at 5 requests per 2 s, so the effect shows in seconds.
// Set RAIL0_BASE_URL to use a real gateway (see examples/internal/demo).
// rail0.PublishedLimits describes a real gateway's budgets.
//
// After each job it prints what a rail0stats.Counters observer counted: the
// 429 answers. It also prints what the calls' transcripts (Response.Call)
// say. That is how long the job waited on the gateway's Retry-After and in
// the limiter. It is also the story of its slowest call, attempt by
// attempt.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/examples/internal/demo"
	"github.com/rail0/rail0-go/rail0stats"
	"github.com/rail0/rail0-go/rail0test"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "background-job:", err)
		os.Exit(1)
	}
}

const (
	workers  = 4
	requests = 12
)

// budget is the embedded gateway's session throttle in this example.
var budget = rail0.Budget{Limit: 5, Period: 2 * time.Second}

func run(ctx context.Context, w io.Writer) error {
	env, err := demo.Setup(
		rail0test.WithSessionRateLimit(rail0test.Limit{Requests: budget.Limit}),
		rail0test.WithRateLimitPeriod(budget.Period))
	if err != nil {
		return err
	}
	defer env.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	fmt.Fprintln(w, "gateway:", env.Where())

	// The margin stretches each period to absorb how long requests take to
	// arrive. A generous one keeps a loaded machine under the budget too.
	pacing := rail0.Pacing{Session: budget, Margin: 300 * time.Millisecond}
	if !env.Embedded {
		pacing = rail0.PublishedLimits()
	}
	for _, job := range []struct {
		name string
		opts []rail0.Option
	}{
		{"retry on 429 with cooldown", nil},
		{"paced under the budget", []rail0.Option{rail0.WithPacing(pacing)}},
	} {
		// Counters for the whole job: a ready-made Observer.
		counts := new(rail0stats.Counters)
		opts := append([]rail0.Option{
			rail0.WithRetryOn429(true),
			rail0.WithObserver(counts),
		}, job.opts...)
		// A fresh session per job: the gateway counts each session apart.
		client, _, err := env.Client(ctx, env.Buyer, opts...)
		if err != nil {
			return err
		}
		start := time.Now()
		r := work(ctx, client)
		fmt.Fprintf(w, "%-27s %d reads done, %d failed, %d answered 429, %.1fs\n",
			job.name+":", r.done, r.failed, counts.Snapshot().RateLimited, time.Since(start).Seconds())
		fmt.Fprintf(w, "  waited %.1fs on Retry-After and %.1fs in the limiter; the slowest call:\n",
			r.retryWait.Seconds(), r.limiterWait.Seconds())
		if r.slowest != nil {
			fmt.Fprintln(w, "  "+strings.ReplaceAll(r.slowest.String(), "\n", "\n  "))
		}
	}
	return nil
}

// result sums up a job from its calls' transcripts.
type result struct {
	done, failed           int
	retryWait, limiterWait time.Duration
	slowest                *rail0.Call
}

// add counts one call, successful or not, from its transcript.
func (r *result) add(call *rail0.Call, err error) {
	if err != nil {
		r.failed++
	} else {
		r.done++
	}
	if call == nil {
		return
	}
	for _, a := range call.Attempts {
		if a.Retry {
			r.retryWait += a.Wait
		}
	}
	for _, l := range call.Limiter {
		if !l.Refused {
			r.limiterWait += l.Wait
		}
	}
	if r.slowest == nil || call.Duration > r.slowest.Duration {
		r.slowest = call
	}
}

// work lists the buyer's payments requests times from a few goroutines.
func work(ctx context.Context, client *rail0.Client) result {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var r result
	jobs := make(chan struct{}, requests)
	for range requests {
		jobs <- struct{}{}
	}
	close(jobs)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				page, err := client.Payments.List(ctx, rail0.PaymentListParams{ListOptions: rail0.ListOptions{PerPage: 10}})
				call := rail0.CallOf(err) // a failed call's transcript rides on its error
				if err == nil {
					call = page.Response.Call
				}
				mu.Lock()
				r.add(call, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return r
}
