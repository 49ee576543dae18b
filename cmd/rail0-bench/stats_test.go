package main

import (
	"context"
	"image/png"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	ms = int64(time.Millisecond)
	s  = int64(time.Second)
)

func TestWindowEndAndNextBoundary(t *testing.T) {
	const p = 2 * time.Second
	tests := []struct {
		t, end, next int64
	}{
		{0, 2 * s, 0},
		{1, 2 * s, 2 * s},
		{2*s - 1, 2 * s, 2 * s},
		{2 * s, 4 * s, 2 * s},
		{-1, 0, 0},
		{-2 * s, 0, -2 * s},
	}
	for _, tt := range tests {
		if got := windowEnd(tt.t, p); got != tt.end {
			t.Errorf("windowEnd(%d) = %d, want %d", tt.t, got, tt.end)
		}
		if got := nextBoundary(tt.t, p); got != tt.next {
			t.Errorf("nextBoundary(%d) = %d, want %d", tt.t, got, tt.next)
		}
	}
}

func TestEarlyRetries(t *testing.T) {
	const p = 2 * time.Second
	tests := []struct {
		name     string
		attempts []attempt
		want     int
	}{
		{"none", nil, 0},
		{"retry after the window", []attempt{
			{Call: 1, Sent: 100 * ms, Recv: 110 * ms, Status: 429},
			{Call: 1, Sent: 2*s + 5*ms, Recv: 2*s + 9*ms, Status: 200},
		}, 0},
		{"retry inside the window", []attempt{
			{Call: 1, Sent: 100 * ms, Recv: 110 * ms, Status: 429},
			{Call: 1, Sent: 1100 * ms, Recv: 1110 * ms, Status: 429},
			{Call: 1, Sent: 2100 * ms, Recv: 2110 * ms, Status: 200},
		}, 1},
		{"recorded out of order", []attempt{
			{Call: 7, Sent: 1500 * ms, Recv: 1510 * ms, Status: 200},
			{Call: 7, Sent: 100 * ms, Recv: 110 * ms, Status: 429},
		}, 1},
		{"refusal arriving in the next window counts from there", []attempt{
			{Call: 1, Sent: 2*s - ms, Recv: 2*s + ms, Status: 429},
			{Call: 1, Sent: 3 * s, Recv: 3*s + ms, Status: 200},
		}, 1},
		{"retry after a 500 is not a rate-limit retry", []attempt{
			{Call: 1, Sent: 100 * ms, Recv: 110 * ms, Status: 500},
			{Call: 1, Sent: 200 * ms, Recv: 210 * ms, Status: 200},
		}, 0},
		{"other calls' first attempts are not retries", []attempt{
			{Call: 1, Sent: 100 * ms, Recv: 110 * ms, Status: 429},
			{Call: 2, Sent: 200 * ms, Recv: 210 * ms, Status: 429},
			{Call: 3, Sent: 300 * ms, Recv: 310 * ms, Status: 429},
		}, 0},
	}
	for _, tt := range tests {
		if all, after := earlyRetries(tt.attempts, p, math.MinInt64); all != tt.want || after != tt.want {
			t.Errorf("%s: earlyRetries = %d (%d after the start of time), want %d", tt.name, all, after, tt.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	d := func(ns ...int) []time.Duration {
		var out []time.Duration
		for _, n := range ns {
			out = append(out, time.Duration(n))
		}
		return out
	}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(100 - i) // unsorted on purpose
	}
	tests := []struct {
		ds   []time.Duration
		q    float64
		want time.Duration
	}{
		{nil, 0.5, 0},
		{d(7), 0.99, 7},
		{d(3, 1, 2), 0.5, 2},
		{d(1, 2, 3, 4), 0.5, 2},
		{hundred, 0.5, 50},
		{hundred, 0.99, 99},
		{hundred, 1, 100},
	}
	for _, tt := range tests {
		if got := percentile(tt.ds, tt.q); got != tt.want {
			t.Errorf("percentile(%v, %v) = %v, want %v", tt.ds, tt.q, got, tt.want)
		}
	}
	in := d(3, 1, 2)
	percentile(in, 0.5)
	if !slices.Equal(in, d(3, 1, 2)) {
		t.Errorf("percentile reordered its input: %v", in)
	}
}

func TestBinSends(t *testing.T) {
	start := 10 * s
	as := []attempt{
		{Sent: start - ms, Status: 200}, // before the start: left out
		{Sent: start, Status: 200},
		{Sent: start + 99*ms, Status: 429},
		{Sent: start + 100*ms, Status: 200},
		{Sent: start + 350*ms, Status: 0}, // a transport error counts as not refused
		{Sent: start + 399*ms, Status: 429},
	}
	want := []bin{{1, 1}, {1, 0}, {0, 0}, {1, 1}}
	if got := binSends(as, start, 100*time.Millisecond); !slices.Equal(got, want) {
		t.Errorf("binSends = %v, want %v", got, want)
	}
}

func TestHistograms(t *testing.T) {
	total, accepted := histograms([]bin{{2, 1}, {0, 0}}, 100*time.Millisecond)
	if len(total) != 2 || len(accepted) != 2 {
		t.Fatalf("got %d and %d bins, want 2 and 2", len(total), len(accepted))
	}
	if total[0].Weight != 3 || accepted[0].Weight != 2 || total[1].Weight != 0 {
		t.Errorf("weights = %v / %v, want 3,0 / 2,0", total, accepted)
	}
	if total[1].Min != 0.1 || total[1].Max != 0.2 {
		t.Errorf("second bin spans [%v, %v], want [0.1, 0.2]", total[1].Min, total[1].Max)
	}
}

func TestMakespanFloor(t *testing.T) {
	tests := []struct {
		m, l int
		want time.Duration
	}{
		{100, 20, 8 * time.Second},
		{101, 20, 10 * time.Second},
		{20, 20, 0},
		{1, 20, 0},
		{0, 20, 0},
		{10, 0, 0},
	}
	for _, tt := range tests {
		if got := makespanFloor(tt.m, tt.l, 2*time.Second); got != tt.want {
			t.Errorf("makespanFloor(%d, %d) = %v, want %v", tt.m, tt.l, got, tt.want)
		}
	}
}

// Issue 27: the time between a 429 that gave an instruction and its
// retry, by the client's clock, and the retries sooner than the
// instruction (capped).
func TestRetryGaps(t *testing.T) {
	ra := int64(2 * time.Second)
	// A retry at the window's reopening is not early by the window
	// (earlyRetries, which excused the learned reopening), but is by the
	// rule.
	reopening := []attempt{
		{Call: 1, Sent: 100 * ms, Recv: 110 * ms, Status: 429, RetryAfter: ra},
		{Call: 1, Sent: 2*s + 4*ms, Recv: 2*s + 5*ms, Status: 200},
	}
	if all, _ := earlyRetries(reopening, 2*time.Second, 0); all != 0 {
		t.Errorf("earlyRetries at the reopening = %d, want 0", all)
	}
	tests := []struct {
		name     string
		attempts []attempt
		n        int
		minGap   time.Duration
		before   int
	}{
		{"none", nil, 0, 0, 0},
		{"retried at the instruction", []attempt{
			{Call: 1, Sent: 0, Recv: 10 * ms, Status: 429, RetryAfter: ra},
			{Call: 1, Sent: 2*s + 10*ms, Recv: 2*s + 11*ms, Status: 200},
		}, 1, 2 * time.Second, 0},
		{"retried a millisecond early, recorded out of order", []attempt{
			{Call: 1, Sent: 2*s + 9*ms, Recv: 2*s + 11*ms, Status: 200},
			{Call: 1, Sent: 0, Recv: 10 * ms, Status: 429, RetryAfter: ra},
		}, 1, 1999 * time.Millisecond, 1},
		{"the shortest of several", []attempt{
			{Call: 1, Sent: 0, Recv: 10 * ms, Status: 429, RetryAfter: ra},
			{Call: 1, Sent: 2100 * ms, Recv: 2110 * ms, Status: 429, RetryAfter: ra},
			{Call: 1, Sent: 4200 * ms, Recv: 4210 * ms, Status: 200},
			{Call: 2, Sent: 0, Recv: 10 * ms, Status: 429, RetryAfter: ra},
			{Call: 2, Sent: 2050 * ms, Recv: 2060 * ms, Status: 200},
		}, 3, 2040 * time.Millisecond, 0},
		{"a 429 without an instruction is a guess, not counted", []attempt{
			{Call: 1, Sent: 0, Recv: 10 * ms, Status: 429},
			{Call: 1, Sent: 100 * ms, Recv: 110 * ms, Status: 200},
		}, 0, 0, 0},
		{"an instruction beyond the cap waits the cap", []attempt{
			{Call: 1, Sent: 0, Recv: 10 * ms, Status: 429, RetryAfter: int64(600 * time.Second)},
			{Call: 1, Sent: 60*s + 10*ms, Recv: 60*s + 11*ms, Status: 200},
		}, 1, 60 * time.Second, 0},
		{"at the window's reopening, before the instruction", reopening, 1, 1894 * time.Millisecond, 1},
		{"a 500's retry is not a 429's", []attempt{
			{Call: 1, Sent: 0, Recv: 10 * ms, Status: 500},
			{Call: 1, Sent: 20 * ms, Recv: 30 * ms, Status: 200},
		}, 0, 0, 0},
	}
	for _, tt := range tests {
		n, minGap, before := retryGaps(tt.attempts, 60*time.Second)
		if n != tt.n || minGap != tt.minGap || before != tt.before {
			t.Errorf("%s: retryGaps = %d, %v, %d; want %d, %v, %d", tt.name, n, minGap, before, tt.n, tt.minGap, tt.before)
		}
	}
}

// The recorder keeps a 429's Retry-After (whole seconds), which retryGaps
// measures against; other answers and unusable values keep none.
func TestRecorderKeepsRetryAfter(t *testing.T) {
	answers := []struct {
		status int
		ra     string
		want   time.Duration
	}{
		{http.StatusTooManyRequests, "2", 2 * time.Second},
		{http.StatusTooManyRequests, "", 0},
		{http.StatusTooManyRequests, "soon", 0},
		{http.StatusServiceUnavailable, "2", 0},
		{http.StatusOK, "", 0},
	}
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		a := answers[n]
		n++
		if a.ra != "" {
			w.Header().Set("Retry-After", a.ra)
		}
		w.WriteHeader(a.status)
	}))
	defer srv.Close()
	rec := newRecorder(1)
	hc := &http.Client{Transport: rec}
	for range answers {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	for i, a := range rec.recorded() {
		if a.Status != answers[i].status || time.Duration(a.RetryAfter) != answers[i].want {
			t.Errorf("answer %d: recorded %d with Retry-After %v, want %d with %v", i, a.Status, time.Duration(a.RetryAfter), answers[i].status, answers[i].want)
		}
	}
}

func TestSummarize(t *testing.T) {
	start := 100 * s
	as := []attempt{
		{Call: 0, Sent: start, Recv: start + ms, Status: 200},
		{Call: 1, Sent: start, Recv: start + ms, Status: 429, RetryAfter: int64(time.Second)},
		{Call: 1, Sent: start + 500*ms, Recv: start + 501*ms, Status: 200}, // early
		{Call: 2, Sent: start, Recv: start + ms, Status: 429},
	}
	calls := []call{
		{ID: 0, Start: start, End: start + ms, OK: true},
		{ID: 1, Start: start, End: start + 501*ms, OK: true},
		{ID: 2, Start: start, End: start + 3*s, OK: false},
	}
	got := summarize(as, calls, start, time.Second)
	want := summary{
		Calls: 3, Failed: 1, Sent: 4, Refused: 2, EarlyRetries: 1,
		Retried429s: 1, MinRetryGap: 499 * time.Millisecond, BeforeInstruction: 1,
		Makespan: 3 * time.Second, P50: 501 * time.Millisecond, P99: 3 * time.Second,
	}
	if got != want {
		t.Errorf("summarize =\n %+v, want\n %+v", got, want)
	}
}

func TestCheckTargets(t *testing.T) {
	floor := 8 * time.Second
	ok := 8020 * time.Millisecond
	results := []result{
		{key: "retryablehttp", gateway: "inproc", processes: 1, workers: 8, sum: summary{Refused: 32, P99: 2 * time.Second}}, // no target of its own
		{key: "sdk", gateway: "inproc", processes: 1, workers: 8, sum: summary{Refused: 8, Makespan: ok, P99: 2 * time.Second}},
		{key: "sdk", gateway: "external", processes: 1, workers: 8, sum: summary{Refused: 9, RefusedAfter: 1, Makespan: 8100 * time.Millisecond}},
		{key: "sdk", gateway: "short", processes: 1, workers: 8, sum: summary{EarlyRetries: 8, EarlyAfter: 1, BeforeInstruction: 2}},
		{key: "pacing", gateway: "inproc", processes: 1, workers: 8, sum: summary{Makespan: ok}},
		{key: "retryablehttp", gateway: "external", processes: 4, workers: 32, sum: summary{RefusedAfter: 80, P99: 6 * time.Second}},
		{key: "sdk", gateway: "external", processes: 4, workers: 32, sum: summary{RefusedAfter: 9, Makespan: 8150 * time.Millisecond, P99: 4 * time.Second}},
		{key: "sdk", gateway: "external", processes: 2, workers: 32, sum: summary{Failed: 1, RefusedAfter: 9, Makespan: 8170 * time.Millisecond}},
		{key: "redis", gateway: "inproc", processes: 4, workers: 8, sum: summary{Refused: 1, Makespan: ok, RoundTrips: 1.5}},
		{key: "redis-learned", gateway: "inproc", processes: 4, workers: 8, sum: summary{Refused: 3, RefusedAfter: 1, Makespan: ok, RoundTrips: 1.5}},
		{key: "outage", gateway: "inproc", processes: 4, workers: 8, sum: summary{Makespan: 8800 * time.Millisecond}},
		{key: "outage-learned", gateway: "inproc", processes: 4, workers: 8, sum: summary{Failed: 2, Makespan: 8900 * time.Millisecond}},
		{key: "redis", gateway: "inproc", processes: 4, workers: 32, skipped: "no redis"},
	}
	survivals := []survival{
		{gateway: "external", processes: 2, shared: 4, limit: 2, accepted: [][]int{{1, 1, 1, 1, 1, 2, 2, 2}}},
		{gateway: "external", processes: 4, shared: 4, limit: 2, accepted: [][]int{{1, 1, 1, 1, 1, 1, 1, 2}}},
	}
	var got []bool
	for _, v := range checkTargets(results, survivals, floor) {
		got = append(got, v.ok)
	}
	// Every SDK row starts with issue 27's: no retry before its Retry-After.
	want := []bool{
		true, true, true, true, true, // sdk inproc, one process: 429s, after, makespan (8.02 s ≤ 1.003 × 8 s), p99
		true, false, false, false, // sdk external: 429s, after, makespan (no baseline)
		false, false, // sdk short: two retries before the instruction; early after the first window
		true, true, true, // pacing: 429s, makespan
		true, true, true, true, true, // sdk in 4 processes: failed, makespan, 429s after, p99 against go-retryablehttp in 4 processes
		true, false, false, // sdk in 2 processes: failed, makespan 8.17 s (no baseline)
		true, false, false, true, // redis: 429s, round trips, makespan
		true, false, true, // redis-learned: 429s after the first window, makespan
		true, true, true, // outage: failed, makespan ≤ 1.1
		true, false, false, // outage-learned: failed, makespan 8.9 s
		true, false, // survivors: back in 2 periods; back in 3 + 1 periods
	}
	if !slices.Equal(got, want) {
		t.Errorf("verdicts = %v, want %v", got, want)
	}
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"-workers", "4, 16", "-processes", "1,3", "-strategies", "naive, pacing", "-gateways", "inproc", "-period", "500ms"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.workers, []int{4, 16}) || !slices.Equal(o.processes, []int{1, 3}) || o.requests != 100 || o.period != 500*time.Millisecond ||
		!slices.Equal(o.strategies, []string{"naive", "pacing"}) || !slices.Equal(o.gateways, []string{"inproc"}) {
		t.Errorf("parseFlags = %+v", o)
	}
	if o, _ := parseFlags([]string{"-limit", "7"}); o.requests != 35 || len(o.workers) != 4 || len(o.gateways) != 4 ||
		!slices.Equal(o.processes, []int{1, 2, 4, 8}) || o.survivor != 10 || o.alone != 5 || o.outageAt != 3*time.Second {
		t.Errorf("defaults with -limit 7 = %+v, want 35 calls, 4 Ws, 4 gateways, P = 1,2,4,8, survivor 10 + 5 windows, outage at 3 s", o)
	}
	for _, bad := range [][]string{
		{"-strategies", "fastest"},
		{"-strategies", ""},
		{"-gateways", "cloud"},
		{"-workers", "8,x"},
		{"-workers", "0"},
		{"-processes", "0"},
		{"-limit", "0"},
		{"-survivor", "3"},
		{"-survivor", "10", "-alone", "2"},
		{"-outage-at", "-1s"},
		{"extra"},
	} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%q) = nil error", bad)
		}
	}
	if got := strategyKeys(); !slices.Equal(got, []string{"retryablehttp", "naive", "retry", "sdk", "pacing",
		"redis", "redis-learned", "outage", "outage-learned", "margin"}) {
		t.Errorf("strategyKeys = %v", got)
	}
}

func TestApplies(t *testing.T) {
	tests := []struct {
		key, gateway string
		processes    int
		want         bool
	}{
		{"sdk", "inproc", 1, true},
		{"sdk", "short", 1, true},
		{"pacing", "short", 1, false},
		{"pacing", "external", 1, true},
		{"pacing", "external", 2, false}, // each process would take the whole budget
		{"sdk", "external", 4, true},
		{"retryablehttp", "rackattack", 8, true},
		{"sdk", "inproc", 2, false},
		{"sdk", "short", 2, false},
		{"redis", "inproc", 1, false},
		{"redis", "inproc", 4, true},
		{"redis-learned", "external", 4, false},
		{"outage", "inproc", 3, true},
	}
	for _, tt := range tests {
		if got := applies(tt.key, tt.gateway, tt.processes); got != tt.want {
			t.Errorf("applies(%s, %s, %d) = %v, want %v", tt.key, tt.gateway, tt.processes, got, tt.want)
		}
	}
}

// TestPacedStrategyEndToEnd runs the paced SDK strategy against a real
// rail0test gateway with tiny windows and checks that the recorder, the
// workers and the summary fit together: every call is made once, succeeds,
// and is recorded with its attempts.
func TestPacedStrategyEndToEnd(t *testing.T) {
	o := options{requests: 6, limit: 3, period: 200 * time.Millisecond}
	r, err := runLocal(context.Background(), o, "pacing", 2, gateway{kind: "inproc"})
	if err != nil {
		t.Fatal(err)
	}
	sum := summarize(r.attempts, r.calls, r.start, o.period)
	if sum.Calls != 6 || sum.Failed != 0 || sum.EarlyRetries != 0 {
		t.Errorf("summary = %+v, want 6 calls, none failed, no early retry", sum)
	}
	if sum.Sent != 6+sum.Refused {
		t.Errorf("%d sent with %d refusals for 6 calls; want each refusal retried once", sum.Sent, sum.Refused)
	}
	ids := map[int64]bool{}
	windows := map[int64]bool{}
	for _, a := range r.attempts {
		ids[a.Call] = true
		windows[a.Sent/int64(o.period)] = true
		if a.Sent < r.start {
			t.Errorf("attempt sent before the start: %+v", a)
		}
	}
	if len(ids) != 6 {
		t.Errorf("attempts belong to %d calls, want 6", len(ids))
	}
	// Pacing at 3 per 200 ms cannot send 6 calls within one of the
	// gateway's windows.
	if len(windows) < 2 {
		t.Errorf("6 calls sent in %d window(s) of %v", len(windows), o.period)
	}
}

func TestRoundLatency(t *testing.T) {
	tests := []struct{ in, want time.Duration }{
		{0, 0},
		{449 * time.Microsecond, 400 * time.Microsecond},
		{9_960 * time.Microsecond, 10 * time.Millisecond},
		{2_046_400 * time.Microsecond, 2_046 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := roundLatency(tt.in); got != tt.want {
			t.Errorf("roundLatency(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestPrintTable(t *testing.T) {
	var b strings.Builder
	printTable(&b, []result{
		{label: "naive", processes: 1, workers: 8, sum: summary{Sent: 180, Refused: 80, RefusedAfter: 60, EarlyRetries: 40, EarlyAfter: 30,
			Retried429s: 80, MinRetryGap: time.Second, BeforeInstruction: 70,
			Makespan: 8020 * time.Millisecond, P50: 300 * time.Microsecond, P99: 6010 * time.Millisecond}},
		{label: "redis", processes: 4, workers: 8, sum: summary{Sent: 100, Makespan: 8 * time.Second, RoundTrips: 1.25}},
		{label: "redis", processes: 4, workers: 32, skipped: "skipped: Redis unreachable"},
	}, 8*time.Second)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("table has %d lines, want header, two rows and the skip note:\n%s", len(lines), b.String())
	}
	if got := strings.Fields(lines[1]); !slices.Equal(got, []string{"1", "8", "naive", "180", "80", "60", "40", "30", "1s", "70", "0", "8.02s", "1.002", "300µs", "6.01s"}) {
		t.Errorf("row = %q", got)
	}
	if got := strings.Fields(lines[2]); got[len(got)-1] != "1.25" {
		t.Errorf("redis row = %q, want the round trips last", got)
	}
	if lines[3] != "P=4 W=32 redis: skipped: Redis unreachable" {
		t.Errorf("skip note = %q", lines[3])
	}
}

func TestWriteChart(t *testing.T) {
	start := 10 * s
	r := result{label: "(x) test", start: start, attempts: []attempt{
		{Sent: start, Status: 200}, {Sent: start + 50*ms, Status: 429}, {Sent: start + 2100*ms, Status: 200},
	}}
	path := filepath.Join(t.TempDir(), "sub", "chart.png")
	if err := writeChart(path, "title", []result{r, {skipped: "no"}}, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }() // read only
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 500 || b.Dy() < 100 {
		t.Errorf("chart is %v, too small to read", b)
	}
	if err := writeChart(path, "title", []result{{skipped: "no"}}, time.Second); err == nil {
		t.Error("writeChart with nothing to draw = nil error")
	}
}

func TestIsScript(t *testing.T) {
	for name, want := range map[string]bool{"evalsha": true, "EVAL": true, "evalsha_ro": true, "hello": false, "client": false, "ping": false} {
		if got := isScript(name); got != want {
			t.Errorf("isScript(%q) = %v, want %v", name, got, want)
		}
	}
}
