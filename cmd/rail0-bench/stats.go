package main

import (
	"cmp"
	"iter"
	"math"
	"net/http"
	"slices"
	"time"

	rail0 "github.com/rail0/rail0-go"
)

// attempt is one HTTP request as the transport saw it.
type attempt struct {
	Call   int64 `json:"call"`   // the logical call it belongs to
	Sent   int64 `json:"sent"`   // Unix nanoseconds when the request left
	Recv   int64 `json:"recv"`   // Unix nanoseconds when the answer (or error) came back
	Status int   `json:"status"` // HTTP status, 0 for a transport error
	// RetryAfter is a 429's instruction in nanoseconds: its Retry-After,
	// whole seconds. It is zero when the answer gave none.
	RetryAfter int64 `json:"retry_after,omitempty"`
}

// call is one logical API call as a worker saw it, retries included.
type call struct {
	ID    int64 `json:"id"`
	Start int64 `json:"start"` // Unix nanoseconds
	End   int64 `json:"end"`
	OK    bool  `json:"ok"` // the call ended in a 2xx
}

// summary is one strategy's row of the table.
type summary struct {
	Calls        int
	Failed       int // calls that ended without a 2xx
	Sent         int // HTTP requests sent
	Refused      int // 429 answers
	RefusedAfter int // 429 answers received after the first window
	EarlyRetries int // retries sent into the window that had refused the call
	EarlyAfter   int // those whose refusal came after the first window
	// Retried429s counts the 429s with an instruction that were retried.
	// MinRetryGap is the shortest time between one of them arriving and
	// its retry leaving. BeforeInstruction counts the retries that left
	// sooner than the instruction, capped as the SDK caps it.
	Retried429s       int
	MinRetryGap       time.Duration
	BeforeInstruction int
	Makespan          time.Duration
	P50, P99          time.Duration
	RoundTrips        float64 // Redis round trips per call, when measured
}

// windowEnd returns the end of the fixed server window holding t. The
// gateway numbers its windows floor(t / period) since the Unix epoch.
func windowEnd(t int64, period time.Duration) int64 {
	p := int64(period)
	return (floorDiv(t, p) + 1) * p
}

// floorDiv is a/b rounded toward minus infinity, for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// earlyRetries counts the retries sent early. A retry is early when it
// goes before the end of the server window in which the previous attempt
// of the same call was refused with a 429. all counts them all. after
// counts those whose refusal arrived at or after from, in Unix
// nanoseconds. The window is that of the moment the refusal arrived. That
// is at or after the moment the server counted it. So the count errs
// towards calling a retry early, never towards excusing one.
func earlyRetries(attempts []attempt, period time.Duration, from int64) (all, after int) {
	for prev, next := range retryPairs(attempts) {
		if prev.Status == http.StatusTooManyRequests && next.Sent < windowEnd(prev.Recv, period) {
			all++
			if prev.Recv >= from {
				after++
			}
		}
	}
	return all, after
}

// retryPairs yields each attempt that its call followed with another, and
// that other, in the order each call sent them.
func retryPairs(attempts []attempt) iter.Seq2[attempt, attempt] {
	return func(yield func(prev, next attempt) bool) {
		byCall := map[int64][]attempt{}
		for _, a := range attempts {
			byCall[a.Call] = append(byCall[a.Call], a)
		}
		for _, as := range byCall {
			slices.SortFunc(as, func(x, y attempt) int { return cmp.Compare(x.Sent, y.Sent) })
			for i := 1; i < len(as); i++ {
				if !yield(as[i-1], as[i]) {
					return
				}
			}
		}
	}
}

// retryGaps measures the time between each 429 that gave an instruction
// and its call's next attempt, by the client's clock. The gap runs from
// when the 429 arrived to when the retry left. It is never longer than the
// same gap on the gateway's clock. The 429 left the gateway before it
// arrived, and the retry arrives after it left. So a retry counted early
// here may be on time there, never the other way round. retryGaps returns
// how many such retries there were and the shortest gap. It also returns
// how many left before min(instruction, cap).
func retryGaps(attempts []attempt, retryAfterCap time.Duration) (n int, minGap time.Duration, before int) {
	for prev, next := range retryPairs(attempts) {
		if prev.Status != http.StatusTooManyRequests || prev.RetryAfter <= 0 {
			continue
		}
		gap := time.Duration(next.Sent - prev.Recv)
		if n == 0 || gap < minGap {
			minGap = gap
		}
		n++
		if gap < min(time.Duration(prev.RetryAfter), retryAfterCap) {
			before++
		}
	}
	return n, minGap, before
}

// percentile returns the nearest-rank q-quantile (0 < q ≤ 1) of ds, or 0
// for none.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(rank, 0), len(s)-1)]
}

// summarize computes a strategy's row from what its transport and workers
// recorded. start is when the workers were let go.
func summarize(attempts []attempt, calls []call, start int64, period time.Duration) summary {
	s := summary{Calls: len(calls), Sent: len(attempts)}
	lat := make([]time.Duration, 0, len(calls))
	end := start
	for _, c := range calls {
		if !c.OK {
			s.Failed++
		}
		lat = append(lat, time.Duration(c.End-c.Start))
		end = max(end, c.End)
	}
	firstEnd := windowEnd(start, period)
	for _, a := range attempts {
		if a.Status == http.StatusTooManyRequests {
			s.Refused++
			if a.Recv >= firstEnd {
				s.RefusedAfter++
			}
		}
	}
	s.EarlyRetries, s.EarlyAfter = earlyRetries(attempts, period, firstEnd)
	s.Retried429s, s.MinRetryGap, s.BeforeInstruction = retryGaps(attempts, rail0.DefaultRetryAfterCap)
	s.Makespan = time.Duration(end - start)
	s.P50 = percentile(lat, 0.50)
	s.P99 = percentile(lat, 0.99)
	return s
}

// bin counts the requests sent in one slice of time.
type bin struct {
	Accepted int // answered with anything but 429 (or not answered)
	Refused  int // answered 429
}

// binSends counts the attempts sent in each slice [start + i·width,
// start + (i+1)·width). Attempts before start are left out. The slices run
// until the last attempt.
func binSends(attempts []attempt, start int64, width time.Duration) []bin {
	var bins []bin
	for _, a := range attempts {
		if a.Sent < start {
			continue
		}
		i := int((a.Sent - start) / int64(width))
		for len(bins) <= i {
			bins = append(bins, bin{})
		}
		if a.Status == http.StatusTooManyRequests {
			bins[i].Refused++
		} else {
			bins[i].Accepted++
		}
	}
	return bins
}

// makespanFloor is the shortest time in which requests calls can go out,
// at limit per fixed window of period, starting on a window boundary. The
// last batch leaves at the start of window ⌈requests/limit⌉ − 1.
func makespanFloor(requests, limit int, period time.Duration) time.Duration {
	if limit <= 0 || requests <= 0 {
		return 0
	}
	return time.Duration((requests+limit-1)/limit-1) * period
}

// nextBoundary returns the first server window boundary at or after t.
func nextBoundary(t int64, period time.Duration) int64 {
	p := int64(period)
	if floorDiv(t, p)*p == t {
		return t
	}
	return windowEnd(t, period)
}
