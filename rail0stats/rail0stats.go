// Package rail0stats counts what the calls of a rail0.Client did:
//   - calls;
//   - requests sent;
//   - 429 answers;
//   - retries;
//   - the retries a limit refused, by reason;
//   - the calls answered locally because the gateway said their partition
//     is closed.
//
// It is a rail0.Observer, for programs that want a few numbers without
// OpenTelemetry: a health page, expvar, a job's summary. Package rail0otel
// reports the same events as metrics and spans.
//
//	var counts rail0stats.Counters
//	client, err := rail0.NewClient(baseURL, rail0.WithObserver(&counts))
//	handler := client.With(rail0.WithRetryOn429(false), rail0.WithLabel("handler"))
//	...
//	s := counts.Snapshot()             // s.Retries, s.Refusals.Allowance, ...
//	h := counts.Labels()["handler"]    // the same counts, for the handler's calls
//
// The counters are atomic. One Counters may serve several clients and any
// number of concurrent calls. Snapshot may be called at any time.
package rail0stats

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/rail0/rail0-go"
)

// Counters is a rail0.Observer that counts since it was created. It counts
// in all, and per view label (rail0.WithLabel). The zero value is ready to
// use. It must not be copied once in use.
type Counters struct {
	all    counts
	labels sync.Map // label -> *counts
}

// counts is one set of counters: all calls', or one label's.
type counts struct {
	calls, attempts, rateLimited, retries, knownClosed atomic.Uint64

	allowance, deadline, attemptLimit, limiter, retryBudget atomic.Uint64
}

var _ rail0.Observer = (*Counters)(nil)

// Snapshot is what a Counters counted up to one moment.
type Snapshot struct {
	// Calls is the number of calls that ended, successful or not.
	Calls uint64
	// Attempts is the number of requests sent, retries included.
	Attempts uint64
	// RateLimited is the number of 429 answers received. The 429s the SDK
	// answered itself without sending count under Refusals.Limiter and
	// KnownClosed.
	RateLimited uint64
	// Retries is the number of retries sent: every attempt after a call's
	// first. The send after a 401 and a new sign-in counts too.
	Retries uint64
	// KnownClosed is the number of calls with RetryOn429 off answered at
	// once, not sent. The gateway had said their partition is closed
	// (rail0.ReasonKnownClosed).
	KnownClosed uint64
	// Refusals counts, by reason, the failures that came back although the
	// SDK would have retried them. A limit was reached.
	Refusals Refusals
}

// Refusals counts, by reason, the retries a limit refused (the reasons of
// rail0.Call.NotRetried that are limits).
type Refusals struct {
	// Allowance: the server's wait (a 429's, or a 503's Retry-After) did
	// not fit what was left of WithMaxRetryWait (rail0.ReasonAllowance).
	Allowance uint64
	// Deadline: the wait would have ended after the context's deadline
	// (rail0.ReasonDeadline).
	Deadline uint64
	// AttemptLimit: WithMaxRetries was used up. For 429s it may be the
	// safety net of 100 attempts (rail0.ReasonMaxRetries).
	AttemptLimit uint64
	// Limiter: the cooldown or the pacing budget would not admit the
	// request within the allowance or the deadline (rail0.ReasonLimiter).
	// The error is the server's last answer, or a 429 marked NotSent.
	Limiter uint64
	// RetryBudget: the client-wide retry budget was empty
	// (rail0.ReasonRetryBudget).
	RetryBudget uint64
}

// Total returns the refusals of every reason.
func (r Refusals) Total() uint64 {
	return r.Allowance + r.Deadline + r.AttemptLimit + r.Limiter + r.RetryBudget
}

// Snapshot returns the counts so far. Each count is read atomically.
// Counts that a call in flight is changing may be one call apart.
func (c *Counters) Snapshot() Snapshot { return c.all.snapshot() }

// Labels returns the counts so far of each label's calls
// (rail0.WithLabel), by label. Calls made through no labelled view count
// in Snapshot only.
func (c *Counters) Labels() map[string]Snapshot {
	out := map[string]Snapshot{}
	c.labels.Range(func(label, n any) bool {
		out[label.(string)] = n.(*counts).snapshot()
		return true
	})
	return out
}

func (c *counts) snapshot() Snapshot {
	return Snapshot{
		Calls:       c.calls.Load(),
		Attempts:    c.attempts.Load(),
		RateLimited: c.rateLimited.Load(),
		Retries:     c.retries.Load(),
		KnownClosed: c.knownClosed.Load(),
		Refusals: Refusals{
			Allowance:    c.allowance.Load(),
			Deadline:     c.deadline.Load(),
			AttemptLimit: c.attemptLimit.Load(),
			Limiter:      c.limiter.Load(),
			RetryBudget:  c.retryBudget.Load(),
		},
	}
}

// count applies add to the counts of every call, and to those of call's
// label when it has one.
func (c *Counters) count(call *rail0.Call, add func(*counts)) {
	add(&c.all)
	if call.Label == "" {
		return
	}
	n, ok := c.labels.Load(call.Label)
	if !ok {
		n, _ = c.labels.LoadOrStore(call.Label, new(counts))
	}
	add(n.(*counts))
}

// StartCall is part of rail0.Observer; it counts nothing.
func (c *Counters) StartCall(ctx context.Context, _ *rail0.Call) context.Context { return ctx }

// SendAttempt counts a request sent, and a retry when it is not the call's
// first.
func (c *Counters) SendAttempt(_ context.Context, call *rail0.Call, _ rail0.AttemptHeader) {
	retry := len(call.Attempts) > 1
	c.count(call, func(n *counts) {
		n.attempts.Add(1)
		if retry {
			n.retries.Add(1)
		}
	})
}

// EndAttempt counts a 429 answer, and a retry a limit refused.
func (c *Counters) EndAttempt(_ context.Context, call *rail0.Call, a *rail0.Attempt) {
	if a.StatusCode != http.StatusTooManyRequests && !a.Refused {
		return
	}
	c.count(call, func(n *counts) {
		if a.StatusCode == http.StatusTooManyRequests {
			n.rateLimited.Add(1)
		}
		if a.Refused {
			n.refuse(a.Reason)
		}
	})
}

// EndCall counts the call. It also counts a refusal by the limiter, and
// the client's own answer on a closed partition. Those end a call without
// an attempt to carry them.
func (c *Counters) EndCall(_ context.Context, call *rail0.Call, _ error) {
	var refused rail0.RetryReason
	if n := len(call.Limiter); n > 0 && call.Limiter[n-1].Refused {
		refused = call.NotRetried()
	}
	c.count(call, func(n *counts) {
		n.calls.Add(1)
		if refused == rail0.ReasonKnownClosed {
			n.knownClosed.Add(1)
		} else if refused != "" {
			n.refuse(refused)
		}
	})
}

// refuse counts a refusal under its reason.
func (c *counts) refuse(reason rail0.RetryReason) {
	switch reason {
	case rail0.ReasonAllowance:
		c.allowance.Add(1)
	case rail0.ReasonDeadline:
		c.deadline.Add(1)
	case rail0.ReasonMaxRetries:
		c.attemptLimit.Add(1)
	case rail0.ReasonLimiter:
		c.limiter.Add(1)
	case rail0.ReasonRetryBudget:
		c.retryBudget.Add(1)
	}
}
