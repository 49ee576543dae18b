package main

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rail0/rail0-go/ratelimit"
	"github.com/rail0/rail0-go/redislimit"
)

func TestShare(t *testing.T) {
	tests := []struct {
		n, parts int
		want     []int
	}{
		{100, 4, []int{25, 25, 25, 25}},
		{100, 8, []int{13, 13, 13, 13, 12, 12, 12, 12}},
		{8, 8, []int{1, 1, 1, 1, 1, 1, 1, 1}},
		{5, 2, []int{3, 2}},
	}
	for _, tt := range tests {
		var got []int
		sum := 0
		for i := range tt.parts {
			got = append(got, share(tt.n, tt.parts, i))
			sum += got[i]
		}
		if !slices.Equal(got, tt.want) || sum != tt.n {
			t.Errorf("share(%d, %d) = %v, want %v", tt.n, tt.parts, got, tt.want)
		}
	}
}

func TestSurvivalRecovery(t *testing.T) {
	tests := []struct {
		name string
		solo []int // the survivor's windows; the others stop in window 3
		want int
	}{
		{"full from the first window alone", []int{5, 5, 5, 2, 10, 10, 10}, 1},
		{"full from the second", []int{5, 5, 5, 2, 7, 10, 10}, 2},
		{"full from the third", []int{5, 5, 5, 2, 7, 9, 10}, 3},
		{"full once, then not", []int{5, 5, 5, 2, 10, 9, 10}, 3},
		{"never full", []int{5, 5, 5, 2, 10, 10, 9}, 0},
		{"the window they stop in does not count", []int{5, 5, 5, 10, 9, 10, 10}, 2},
	}
	for _, tt := range tests {
		sv := survival{shared: 4, limit: 10, accepted: [][]int{tt.solo}}
		if got := sv.recovery(); got != tt.want {
			t.Errorf("%s: recovery = %d, want %d", tt.name, got, tt.want)
		}
	}
	if got := (survival{}).recovery(); got != 0 {
		t.Errorf("recovery of nothing = %d", got)
	}
}

func TestSurvivalParts(t *testing.T) {
	sv := survival{shared: 6, limit: 10, accepted: [][]int{
		{9, 5, 6, 5, 4, 1, 10},
		{1, 5, 4, 5, 5, 0, 0},
	}}
	// Windows 2, 3 and 4 count: 15 and 14 of a fair 15.
	shares, fewest, err := sv.parts()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(shares, []float64{1, 14.0 / 15}) || fewest != 9 {
		t.Errorf("parts = %v, fewest %d; want [1 0.933], 9", shares, fewest)
	}
	if _, _, err := (survival{shared: 3, limit: 10, accepted: [][]int{{1, 1, 1}}}).parts(); err == nil {
		t.Error("parts of three shared windows = nil error")
	}
}

func TestPrintSurvivals(t *testing.T) {
	var b strings.Builder
	printSurvivals(&b, []survival{
		{gateway: "external", processes: 2, shared: 4, limit: 2, accepted: [][]int{{1, 1, 1, 1, 1, 2, 2}, {1, 1, 1, 0, 0, 0, 0}}},
		{gateway: "rackattack", processes: 2, shared: 4, limit: 2, accepted: [][]int{{1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 0, 0, 0, 0}}},
	})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d lines, want a header and two rows:\n%s", len(lines), b.String())
	}
	if got := strings.Fields(lines[1]); !slices.Equal(got, []string{"external", "2", "2", "1", "2", "2", "1.00", "1.00", "2"}) {
		t.Errorf("row = %q", got)
	}
	if got := strings.Fields(lines[2]); got[2] != "never" {
		t.Errorf("row = %q, want never", got)
	}
}

// TestTinyRun runs the bench end to end in the configuration CI can afford:
// two client processes (this test binary run again) against rail0test in
// a process of its own, go-retryablehttp and the SDK (learning, and with
// the margin fixed). It checks that the processes' reports come back whole
// and the tables and targets are printed; the numbers themselves are the
// full bench's.
func TestTinyRun(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	err := run(context.Background(), []string{"-workers", "4", "-processes", "2", "-requests", "4", "-limit", "3", "-period", "1s",
		"-gateways", "external", "-strategies", "retryablehttp,sdk,margin", "-survivor", "0", "-png", "", "-png-processes", ""},
		strings.NewReader(""), &out)
	if err != nil {
		t.Fatal(err)
	}
	text := out.String()
	t.Log(text)
	lines := map[string]bool{}
	for l := range strings.Lines(text) {
		lines[strings.Join(strings.Fields(l), " ")] = true
	}
	has := func(prefix string) bool {
		for l := range lines {
			if strings.HasPrefix(l, prefix) {
				return true
			}
		}
		return false
	}
	for _, want := range []string{
		"2 4 go-retryablehttp defaults 5 1 ", // 4 calls, limit 3: one refused, once
		"2 4 SDK RetryOn429 (learns the budget) ",
		"2 4 SDK RetryOn429, Pacing.Margin 2 ms ",
		"external P=2 W=4 SDK RetryOn429 (learns the budget) failed = 0 0 ok",
		"external P=2 W=4 SDK RetryOn429 (learns the budget) retries before Retry-After = 0 0 ok",
		"external P=2 W=4 SDK RetryOn429, Pacing.Margin 2 ms retries before Retry-After = 0 0 ok",
		"the whole run took",
	} {
		if !has(want) {
			t.Errorf("output lacks a line starting %q", want)
		}
	}
}

// TestSurvivorRun runs the survivor scenario in two processes against
// rail0test in the bench's process, in the fewest windows the bench allows,
// and checks what it recorded: every window of both processes, and the
// survivor's requests going through after the other stopped.
func TestSurvivorRun(t *testing.T) {
	t.Parallel()
	o := options{limit: 3, period: time.Second, survivor: 4, alone: 3, lead: 200 * time.Millisecond}
	sv, err := runSurvivor(context.Background(), o, 2, gateway{kind: "inproc"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("accepted %v, refused %v", sv.accepted, sv.refused)
	if len(sv.accepted) != 2 || len(sv.accepted[0]) != 7 || len(sv.refused[1]) != 7 {
		t.Fatalf("accepted %v, refused %v: want 2 processes of 7 windows", sv.accepted, sv.refused)
	}
	for w := 4; w < 7; w++ {
		if sv.accepted[1][w] != 0 {
			t.Errorf("window %d: the stopped process got %d through", w, sv.accepted[1][w])
		}
		if sv.accepted[0][w] == 0 {
			t.Errorf("window %d: the survivor got nothing through", w)
		}
	}
}

// TestFleetRecordsEveryCall checks the merge of the processes' reports: 5
// calls split over 3 processes come back once each, with distinct ids, all
// sent after the agreed start.
func TestFleetRecordsEveryCall(t *testing.T) {
	t.Parallel()
	o := options{requests: 5, limit: 5, period: time.Second, lead: 200 * time.Millisecond}
	r, err := runFleet(context.Background(), o, "sdk", 3, 3, gateway{kind: "inproc"})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[int64]int{}
	for _, c := range r.calls {
		ids[c.ID]++
		if !c.OK {
			t.Errorf("call %x failed", c.ID)
		}
	}
	if len(r.calls) != 5 || len(ids) != 5 {
		t.Errorf("%d calls with %d distinct ids, want 5 and 5", len(r.calls), len(ids))
	}
	for _, a := range r.attempts {
		if ids[a.Call] != 1 || a.Sent < r.start {
			t.Errorf("attempt %+v: not of a recorded call, or sent before the start", a)
		}
	}
}

// TestChildRefusesAnUnknownStrategy checks a client process's arguments.
func TestChildRefusesAnUnknownStrategy(t *testing.T) {
	for _, args := range [][]string{
		{"-child", "1", "-strategy", "fastest", "-url", "http://127.0.0.1:1", "-start", "1"},
		{"-child", "1", "-strategy", "sdk"},
		{"-child", "1", "-strategy", "redis", "-url", "http://127.0.0.1:1", "-start", "1"}, // no prefix
	} {
		if err := run(context.Background(), args, strings.NewReader(""), &strings.Builder{}); err == nil {
			t.Errorf("run(%q) = nil error", args)
		}
	}
}

// TestRackAttackGateway starts the outside throttle and checks that it
// throttles as the gateway does: the limit's next request in one window is
// refused with 429, Retry-After the whole period, the gateway's error code.
func TestRackAttackGateway(t *testing.T) {
	t.Parallel()
	o := options{limit: 2, period: time.Second}
	gw, err := openGateway(context.Background(), "rackattack", o)
	if err != nil {
		t.Skip(err)
	}
	defer gw.close()
	get := func() *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, gw.url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	// Start just after a boundary, so that the three requests share a window.
	if err := sleepUntil(context.Background(), nextBoundary(time.Now().UnixNano(), o.period)+int64(20*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	for range o.limit {
		if resp := get(); resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d within the limit", resp.StatusCode)
		}
	}
	resp := get()
	if time.Since(started) > 900*time.Millisecond {
		t.Skip("the requests spread over two windows on a loaded machine")
	}
	var body struct{ Code string }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" || body.Code != "rate_limited" {
		t.Errorf("over the limit: %d, Retry-After %q, code %q; want 429, 1, rate_limited",
			resp.StatusCode, resp.Header.Get("Retry-After"), body.Code)
	}
	if _, err := openGateway(context.Background(), "rackattack", options{limit: 2, period: 1500 * time.Millisecond}); err == nil {
		t.Error("a period of 1.5 s: nil error, want the gateway unavailable")
	}
}

// TestClusterOutage starts the outage strategies' Redis Cluster and checks
// what they rely on: a redislimit.Limiter over a cluster client keeps its
// partition on the master owner names, and once that master is killed the
// Limiter fails (the client then falls back), while the cluster's other
// masters still answer.
func TestClusterOutage(t *testing.T) {
	t.Parallel()
	if why := clusterTools(); why != "" {
		t.Skip(why)
	}
	ctx := context.Background()
	c, err := startCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	prefix := newPrefix()
	owner, err := c.owner(ctx, prefix+"{public}:state")
	if err != nil {
		t.Fatal(err)
	}
	rdb := newRedis(c.addrs, true)
	defer rdb.Close()
	lim := redislimit.New(rdb, redislimit.WithKeyPrefix(prefix))
	res := ratelimit.Reservation{Partition: "public", MaxWait: time.Second, FixedWindows: true,
		Budget: ratelimit.Budget{Limit: 5, Period: time.Second}}
	if _, err := lim.Reserve(ctx, res); err != nil {
		t.Fatalf("Reserve on the cluster: %v", err)
	}
	node := redis.NewClient(&redis.Options{Addr: c.addrs[owner]})
	defer node.Close()
	if n, err := node.Exists(ctx, prefix+"{public}:sends").Result(); err != nil || n != 1 {
		t.Errorf("the partition's log on master %d: %d, %v; want it there", owner, n, err)
	}
	if err := c.kill(owner); err != nil {
		t.Fatal(err)
	}
	if _, err := lim.Reserve(ctx, res); err == nil {
		t.Error("Reserve with the partition's master dead = nil error")
	}
	other := redis.NewClient(&redis.Options{Addr: c.addrs[(owner+1)%3]})
	defer other.Close()
	if err := other.Ping(ctx).Err(); err != nil {
		t.Errorf("another master: %v", err)
	}
}
