package rail0stats_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0stats"
)

// script answers each path with its statuses in turn, then 200; a 429
// asks for Retry-After, a 401 is in the gateway's envelope.
type script struct {
	mu       sync.Mutex
	statuses map[string][]int
	retryAft string
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	status := http.StatusOK
	if q := s.statuses[r.URL.Path]; len(q) > 0 {
		status, s.statuses[r.URL.Path] = q[0], q[1:]
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch status {
	case http.StatusOK:
		fmt.Fprint(w, `{"id":"p1","status":"authorized"}`)
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", s.retryAft)
		w.WriteHeader(status)
		fmt.Fprint(w, `{"code":"rate_limited","title":"Too many requests","detail":"slow down","status":"rate_limited"}`)
	default:
		w.WriteHeader(status)
		fmt.Fprint(w, `{"code":"x","title":"x","detail":"x","status":"x"}`)
	}
}

// client returns a client of a server playing statuses that reports to
// counts. Waits are capped to a millisecond: the allowance and the
// deadline still judge the server's uncapped instruction.
func client(t *testing.T, counts *rail0stats.Counters, statuses map[string][]int, retryAfter string, opts ...rail0.Option) *rail0.Client {
	t.Helper()
	srv := httptest.NewServer(&script{statuses: statuses, retryAft: retryAfter})
	t.Cleanup(srv.Close)
	base := []rail0.Option{rail0.WithObserver(counts), rail0.WithRetryAfterCap(time.Millisecond)}
	c, err := rail0.NewClient(srv.URL, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func get(c *rail0.Client, id string) error {
	_, err := c.Payments.Get(context.Background(), id)
	return err
}

// Each rule of the counters, end to end through NewClient: what one call
// (or two) adds.
func TestCounters(t *testing.T) {
	tokens := 0
	newToken := func(context.Context) (string, error) { tokens++; return fmt.Sprint("tok-", tokens), nil }
	for _, tt := range []struct {
		name       string
		statuses   []int
		retryAfter string
		opts       []rail0.Option
		calls      int
		want       rail0stats.Snapshot
	}{
		{"a success", nil, "", []rail0.Option{rail0.WithToken("t")}, 1,
			rail0stats.Snapshot{Calls: 1, Attempts: 1}},
		{"a 429 retried", []int{429}, "1", []rail0.Option{rail0.WithToken("t"), rail0.WithRetryOn429(true)}, 1,
			rail0stats.Snapshot{Calls: 1, Attempts: 2, RateLimited: 1, Retries: 1}},
		{"a 429 with RetryOn429 off: no refusal", []int{429}, "1", []rail0.Option{rail0.WithToken("t")}, 1,
			rail0stats.Snapshot{Calls: 1, Attempts: 1, RateLimited: 1}},
		{"a 429 beyond the allowance", []int{429}, "600", []rail0.Option{rail0.WithToken("t"), rail0.WithRetryOn429(true)}, 1,
			rail0stats.Snapshot{Calls: 1, Attempts: 1, RateLimited: 1, Refusals: rail0stats.Refusals{Allowance: 1}}},
		{"5xx until MaxRetries", []int{503, 503, 503}, "", []rail0.Option{rail0.WithToken("t")}, 1,
			rail0stats.Snapshot{Calls: 1, Attempts: 3, Retries: 2, Refusals: rail0stats.Refusals{AttemptLimit: 1}}},
		{"5xx until the retry budget is empty (20 retries)", []int{503, 503, 503, 503, 503, 503, 503, 503, 503, 503, 503,
			503, 503, 503, 503, 503, 503, 503, 503, 503, 503, 503}, "", []rail0.Option{rail0.WithToken("t"), rail0.WithMaxRetries(50)}, 1,
			rail0stats.Snapshot{Calls: 1, Attempts: 21, Retries: 20, Refusals: rail0stats.Refusals{RetryBudget: 1}}},
		{"the send after a 401 and a new token", []int{401}, "", []rail0.Option{rail0.WithTokenSource(newToken)}, 1,
			rail0stats.Snapshot{Calls: 1, Attempts: 2, Retries: 1}},
		{"the limiter refuses the second call", nil, "", []rail0.Option{rail0.WithToken("t"),
			rail0.WithPacing(rail0.Pacing{Session: rail0.Budget{Limit: 1, Period: time.Hour}}), rail0.WithMaxRetryWait(time.Second)}, 2,
			rail0stats.Snapshot{Calls: 2, Attempts: 1, Refusals: rail0stats.Refusals{Limiter: 1}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var counts rail0stats.Counters
			c := client(t, &counts, map[string][]int{"/payments/p1": tt.statuses}, tt.retryAfter, tt.opts...)
			for i := range tt.calls {
				_ = get(c, fmt.Sprint("p", i+1))
			}
			if got := counts.Snapshot(); got != tt.want {
				t.Errorf("Snapshot() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// Every refusal the transcript reports is counted under one reason, and
// only those: the counts agree with Call.NotRetried of the calls.
func TestRefusalsAgreeWithTheTranscript(t *testing.T) {
	var counts rail0stats.Counters
	c := client(t, &counts, map[string][]int{"/payments/p1": {429}, "/payments/p2": {503, 503, 503}, "/payments/p3": {429}}, "600",
		rail0.WithToken("t"), rail0.WithRetryOn429(true))
	reasons := map[rail0.RetryReason]uint64{}
	for _, id := range []string{"p1", "p2", "p3"} {
		call := rail0.CallOf(get(c, id))
		if call == nil {
			t.Fatalf("%s: no transcript", id)
		}
		reasons[call.NotRetried()]++
	}
	want := rail0stats.Refusals{Allowance: reasons[rail0.ReasonAllowance], AttemptLimit: reasons[rail0.ReasonMaxRetries]}
	if got := counts.Snapshot().Refusals; got != want || got.Total() != 3 {
		t.Errorf("Refusals = %+v (total %d), want %+v (total 3)", got, got.Total(), want)
	}
}

// One Counters serves two clients and many concurrent calls: every call
// and request is counted once (run with -race).
func TestConcurrentCallsOnTwoClients(t *testing.T) {
	var counts rail0stats.Counters
	clients := []*rail0.Client{
		client(t, &counts, nil, "", rail0.WithToken("a")),
		client(t, &counts, nil, "", rail0.WithToken("b")),
	}
	const perClient = 25
	var wg sync.WaitGroup
	var failures sync.Map
	for _, c := range clients {
		for i := range perClient {
			wg.Go(func() {
				if err := get(c, fmt.Sprint("q", i)); err != nil {
					failures.Store(i, err)
				}
			})
		}
	}
	wg.Wait()
	failures.Range(func(_, err any) bool { t.Error(err); return true })
	if got := counts.Snapshot(); got != (rail0stats.Snapshot{Calls: 2 * perClient, Attempts: 2 * perClient}) {
		t.Errorf("Snapshot() = %+v", got)
	}
}

// A Counters is a plain Observer: it sits beside another one, and both hear
// every call.
func TestBesideAnotherObserver(t *testing.T) {
	var first, second rail0stats.Counters
	c := client(t, &first, map[string][]int{"/payments/p1": {500}}, "", rail0.WithToken("t"), rail0.WithObserver(&second))
	if err := get(c, "p1"); err != nil {
		t.Fatal(err)
	}
	if a, b := first.Snapshot(), second.Snapshot(); a != b || a.Retries != 1 {
		t.Errorf("first %+v, second %+v", a, b)
	}
}

// Issue 27 item 4: one client, two views, each watched on its own. The
// counts of each label are its calls' only; Snapshot counts all of them.
// A handler's call on a partition the gateway said is closed is answered
// locally and counted as KnownClosed.
func TestCountsPerLabel(t *testing.T) {
	var counts rail0stats.Counters
	// The cap is an hour here: the gateway's 600 s then closes the
	// partition for all of them, not ten caps.
	c := client(t, &counts, map[string][]int{"/payments/h1": {429}}, "600",
		rail0.WithToken("t"), rail0.WithRetryAfterCap(time.Hour))
	job := c.With(rail0.WithRetryOn429(true), rail0.WithLabel("job"))
	handler := c.With(rail0.WithRetryOn429(false), rail0.WithLabel("handler"))
	if err := get(job, "j1"); err != nil {
		t.Fatal(err)
	}
	if err := get(c, "plain"); err != nil {
		t.Fatal(err)
	}
	if err := get(handler, "h1"); !errors.Is(err, rail0.ErrRateLimited) {
		t.Fatalf("handler: %v", err)
	}
	// The gateway said ten minutes: the handler's next call is not sent.
	if err := get(handler, "h2"); !errors.Is(err, rail0.ErrRateLimited) {
		t.Fatalf("handler: %v", err)
	}
	want := map[string]rail0stats.Snapshot{
		"job":     {Calls: 1, Attempts: 1},
		"handler": {Calls: 2, Attempts: 1, RateLimited: 1, KnownClosed: 1},
	}
	if got := counts.Labels(); len(got) != len(want) || got["job"] != want["job"] || got["handler"] != want["handler"] {
		t.Errorf("Labels() = %+v, want %+v", got, want)
	}
	if got, want := counts.Snapshot(), (rail0stats.Snapshot{Calls: 4, Attempts: 3, RateLimited: 1, KnownClosed: 1}); got != want {
		t.Errorf("Snapshot() = %+v, want %+v", got, want)
	}
}
