package redislimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	rail0 "github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/internal/limitclock"
	"github.com/rail0/rail0-go/ratelimit"
)

// redisAddr is the server the tests use: RAIL0_REDIS_ADDR, by default the
// loopback server that .ci/run starts.
func redisAddr() string {
	if a := os.Getenv("RAIL0_REDIS_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}

// newRedis returns a client of the test server, or skips the test when no
// server answers.
func newRedis(t *testing.T) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr(), DialTimeout: time.Second, DialerRetries: 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		t.Skipf("no redis-server answers at %s (set RAIL0_REDIS_ADDR or run `redis-server`): %v", redisAddr(), err)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// testPrefix returns a key prefix no other test or run uses, and deletes
// its keys when the test ends.
func testPrefix(t *testing.T, rdb *redis.Client) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	prefix := "rail0:test:" + t.Name() + ":" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		it := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for it.Next(ctx) {
			rdb.Del(ctx, it.Val())
		}
	})
	return prefix
}

// maxInAnyInterval returns the largest number of times that fall in one
// half-open interval [t, t+p).
func maxInAnyInterval(times []time.Time, p time.Duration) int {
	ts := slices.Clone(times)
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	best, lo := 0, 0
	for hi := range ts {
		for ts[hi].Sub(ts[lo]) >= p {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

func TestMaxInAnyInterval(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms ...int) []time.Time {
		var ts []time.Time
		for _, m := range ms {
			ts = append(ts, t0.Add(time.Duration(m)*time.Millisecond))
		}
		return ts
	}
	tests := []struct {
		times []time.Time
		want  int
	}{
		{nil, 0},
		{at(0), 1},
		{at(0, 0, 0), 3},
		{at(0, 100, 300, 400), 2}, // [0,300) holds 0 and 100; 300 starts a new one
		{at(400, 0, 299, 100), 3},
		{at(0, 299, 599, 898), 2},
	}
	for _, tt := range tests {
		if got := maxInAnyInterval(tt.times, 300*time.Millisecond); got != tt.want {
			t.Errorf("maxInAnyInterval(%v) = %d, want %d", tt.times, got, tt.want)
		}
	}
}

func TestMicros(t *testing.T) {
	tests := []struct {
		d           time.Duration
		ceil, floor int64
	}{
		{0, 0, 0},
		{time.Microsecond, 1, 1},
		{1500 * time.Nanosecond, 2, 1},
		{-500 * time.Nanosecond, 0, -1},
		{-time.Microsecond, -1, -1},
		{2 * time.Second, 2_000_000, 2_000_000},
	}
	for _, tt := range tests {
		if got := microsCeil(tt.d); got != tt.ceil {
			t.Errorf("microsCeil(%v) = %d, want %d", tt.d, got, tt.ceil)
		}
		if got := microsFloor(tt.d); got != tt.floor {
			t.Errorf("microsFloor(%v) = %d, want %d", tt.d, got, tt.floor)
		}
	}
}

// paced is a reservation under a budget of 5 per 300 ms that accepts any wait.
func paced(partition string) ratelimit.Reservation {
	b := ratelimit.Budget{Limit: 5, Period: 300 * time.Millisecond}
	return ratelimit.Reservation{Partition: partition, Budget: b, MaxWait: time.Hour}
}

// reserveMany runs goroutines × n reservations on each limiter at once and
// returns every admission time handed out, per goroutine in call order.
func reserveMany(t *testing.T, ls []*Limiter, goroutines, n int, r ratelimit.Reservation) [][]time.Time {
	t.Helper()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		out  [][]time.Time
		errs []error
	)
	for _, l := range ls {
		for range goroutines {
			wg.Go(func() {
				var ats []time.Time
				for range n {
					a, at, err := l.reserve(context.Background(), r)
					if err == nil && !a.OK {
						err = fmt.Errorf("refused with MaxWait %v: %+v", r.MaxWait, a)
					}
					if err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
						return
					}
					ats = append(ats, at)
				}
				mu.Lock()
				out = append(out, ats)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("reserve: %v", errs[0])
	}
	return out
}

// TestPacingGuarantee checks, over the admission times the limiter hands
// out to concurrent callers, that no interval of one period holds more than
// Limit admissions, and that each caller is admitted in call order.
func TestPacingGuarantee(t *testing.T) {
	rdb := newRedis(t)
	l := New(rdb, WithKeyPrefix(testPrefix(t, rdb)))
	r := paced("public")
	per := reserveMany(t, []*Limiter{l}, 4, 15, r)

	var all []time.Time
	for _, ats := range per {
		if !slices.IsSortedFunc(ats, func(a, b time.Time) int { return a.Compare(b) }) {
			t.Errorf("one caller's admissions are out of order: %v", ats)
		}
		all = append(all, ats...)
	}
	if len(all) != 60 {
		t.Fatalf("got %d admissions, want 60", len(all))
	}
	if got := maxInAnyInterval(all, r.Budget.Period); got != r.Budget.Limit {
		t.Errorf("at most %d admissions in any %v, want exactly %d (the budget, used in full)", got, r.Budget.Period, r.Budget.Limit)
	}
	// The log keeps every admission within the horizon, for learning.
	_, sends := l.keys("public")
	if n, err := l.rdb.LLen(context.Background(), sends).Result(); err != nil || n != 60 {
		t.Errorf("sends log holds %d entries (%v), want 60", n, err)
	}
	// The schedule is as dense as the guarantee allows: 60 admissions at 5
	// per 300 ms need 11 further periods after the first burst, and not one
	// more than the spread of the first callers' arrivals.
	slices.SortFunc(all, func(a, b time.Time) int { return a.Compare(b) })
	if span := all[len(all)-1].Sub(all[0]); span < 11*r.Budget.Period || span > 11*r.Budget.Period+time.Second {
		t.Errorf("60 admissions span %v, want within [%v, %v]", span, 11*r.Budget.Period, 11*r.Budget.Period+time.Second)
	}
}

// TestTwoLimitersShareOneBudget runs two limiters on two Redis connections
// pools, as two processes would, and checks the guarantee over their union.
func TestTwoLimitersShareOneBudget(t *testing.T) {
	rdb := newRedis(t)
	prefix := testPrefix(t, rdb)
	other := redis.NewClient(&redis.Options{Addr: redisAddr()})
	t.Cleanup(func() { other.Close() })
	a, b := New(rdb, WithKeyPrefix(prefix)), New(other, WithKeyPrefix(prefix))
	r := paced("session:0123abcd")

	var all []time.Time
	for _, ats := range reserveMany(t, []*Limiter{a, b}, 2, 12, r) {
		all = append(all, ats...)
	}
	if len(all) != 48 {
		t.Fatalf("got %d admissions, want 48", len(all))
	}
	if got := maxInAnyInterval(all, r.Budget.Period); got > r.Budget.Limit {
		t.Errorf("%d admissions in one %v across two limiters, budget is %d", got, r.Budget.Period, r.Budget.Limit)
	}

	// A limiter under another prefix is another budget: its first Limit
	// reservations go at once although the shared one is exhausted.
	c := New(rdb, WithKeyPrefix(prefix+"other:"))
	for i := range r.Budget.Limit {
		adm, err := c.Reserve(context.Background(), r)
		if err != nil || !adm.OK || adm.Wait != 0 {
			t.Fatalf("reservation %d under another prefix = %+v, %v; want immediate", i, adm, err)
		}
	}
}

// cool closes partition for d, as advertised exhaustion does (a 429 would
// also teach a budget).
func cool(t *testing.T, l *Limiter, partition string, d time.Duration) {
	t.Helper()
	if _, err := l.Observe(context.Background(), partition, ratelimit.Observation{Reset: d}); err != nil {
		t.Fatal(err)
	}
}

// TestFIFOThroughCooldown checks that a later retry with a smaller jitter
// draw is not admitted before an earlier one.
func TestFIFOThroughCooldown(t *testing.T) {
	rdb := newRedis(t)
	l := New(rdb, WithKeyPrefix(testPrefix(t, rdb)))
	ctx := context.Background()
	cool(t, l, "public", time.Second)
	r := ratelimit.Reservation{Partition: "public", MaxWait: time.Hour, Jitter: 0.9, Retry: true}
	first, at1, err := l.reserve(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	r.Jitter = 0
	second, at2, err := l.reserve(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if !first.OK || !first.Cooldown || !second.OK || !second.Cooldown {
		t.Fatalf("admissions = %+v, %+v; want both OK and set by the cooldown", first, second)
	}
	// The first waits out the cooldown plus 90% of its 10% jitter span.
	if first.Wait < 1000*time.Millisecond {
		t.Errorf("first wait %v, want at least the 1 s cooldown plus jitter", first.Wait)
	}
	if at2.Before(at1) {
		t.Errorf("second caller admitted at %v, before the first at %v", at2, at1)
	}
}

// memoryOn is the in-memory reference limiter reading the time from now.
func memoryOn(now func() time.Time) *ratelimit.Memory {
	return limitclock.NewMemory(now).(*ratelimit.Memory)
}

// fakeClock is a settable clock for the injected-time tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func (c *fakeClock) advance(d time.Duration) { c.set(c.now().Add(d)) }

func TestCooldownNeverShortened(t *testing.T) {
	rdb := newRedis(t)
	clk := &fakeClock{t: time.Now().Truncate(time.Millisecond)}
	l := New(rdb, WithKeyPrefix(testPrefix(t, rdb)))
	l.now = clk.now
	ctx := context.Background()
	r := ratelimit.Reservation{Partition: "public", MaxWait: time.Hour, Retry: true}
	wait := func() time.Duration {
		t.Helper()
		a, err := l.Reserve(ctx, r)
		if err != nil || !a.OK || !a.Cooldown {
			t.Fatalf("Reserve = %+v, %v; want OK and set by the cooldown", a, err)
		}
		return a.Wait
	}

	cool(t, l, "public", 2*time.Second)
	cool(t, l, "public", 100*time.Millisecond)
	if got := wait(); got != 2*time.Second {
		t.Errorf("after cooldowns of 2 s then 100 ms, wait = %v, want 2s", got)
	}
	clk.advance(500 * time.Millisecond)
	cool(t, l, "public", 3*time.Second)
	// Jitter is zero, so the wait is exactly the longer cooldown.
	if got := wait(); got != 3*time.Second {
		t.Errorf("after a longer cooldown, wait = %v, want 3s", got)
	}
}

// dump returns a partition's stored state.
func dump(t *testing.T, rdb *redis.Client, l *Limiter, partition string) (map[string]string, []string) {
	t.Helper()
	state, sends := l.keys(partition)
	ctx := context.Background()
	h, err := rdb.HGetAll(ctx, state).Result()
	if err != nil {
		t.Fatal(err)
	}
	s, err := rdb.LRange(ctx, sends, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	return h, s
}

func TestMaxWaitRefusalRecordsNothing(t *testing.T) {
	rdb := newRedis(t)
	l := New(rdb, WithKeyPrefix(testPrefix(t, rdb)))
	ctx := context.Background()
	r := paced("public")
	r.MaxWait = 0
	for i := range r.Budget.Limit {
		if a, err := l.Reserve(ctx, r); err != nil || !a.OK || a.Wait != 0 {
			t.Fatalf("reservation %d = %+v, %v; want immediate", i, a, err)
		}
	}
	h0, s0 := dump(t, rdb, l, "public")
	if len(s0) != r.Budget.Limit {
		t.Fatalf("state after %d sends = %v, %v; want them recorded", r.Budget.Limit, h0, s0)
	}

	r.MaxWait = 10 * time.Millisecond
	a, err := l.Reserve(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if a.OK || a.Wait <= r.MaxWait || a.Cooldown {
		t.Errorf("over-budget reservation = %+v, want refused with a wait over %v", a, r.MaxWait)
	}
	h1, s1 := dump(t, rdb, l, "public")
	if !slices.Equal(s0, s1) || fmt.Sprint(h0) != fmt.Sprint(h1) {
		t.Errorf("a refusal changed the state: %v %v -> %v %v", h0, s0, h1, s1)
	}

	// The same holds when a cooldown sets the wait.
	cool(t, l, "session:ff", time.Minute)
	h0, s0 = dump(t, rdb, l, "session:ff")
	a, err = l.Reserve(ctx, ratelimit.Reservation{Partition: "session:ff", MaxWait: time.Second})
	if err != nil || a.OK || !a.Cooldown || a.Wait < 59*time.Second {
		t.Errorf("reservation in a 1 min cooldown = %+v, %v; want refused by the cooldown", a, err)
	}
	h1, s1 = dump(t, rdb, l, "session:ff")
	if !slices.Equal(s0, s1) || fmt.Sprint(h0) != fmt.Sprint(h1) {
		t.Errorf("a refusal changed the state: %v %v -> %v %v", h0, s0, h1, s1)
	}
}

func TestKeysExpire(t *testing.T) {
	rdb := newRedis(t)
	prefix := testPrefix(t, rdb)
	l := New(rdb, WithKeyPrefix(prefix))
	ctx := context.Background()
	if _, err := l.Reserve(ctx, paced("public")); err != nil {
		t.Fatal(err)
	}
	state, sends := prefix+"{public}:state", prefix+"{public}:sends"
	ttl, err := rdb.PTTL(ctx, sends).Result()
	// Idle for ten minutes, plus the one-second slack, at most.
	if err != nil || ttl <= idleAfter-time.Minute || ttl > idleAfter+time.Second {
		t.Errorf("TTL of %s = %v, %v; want about %v", sends, ttl, err, idleAfter)
	}
	cool(t, l, "public", 10*time.Second)
	if ttl, err := rdb.PTTL(ctx, state).Result(); err != nil || ttl < idleAfter+9*time.Second || ttl > idleAfter+11*time.Second {
		t.Errorf("TTL of %s after a 10 s cooldown = %v, %v; want the cooldown plus %v", state, ttl, err, idleAfter)
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	var e *Error

	_, err := New(nil).Reserve(ctx, paced("public"))
	if !errors.As(err, &e) || e.Op != "reserve" || !errors.Is(err, errNilClient) {
		t.Errorf("Reserve with a nil client = %v, want *Error wrapping errNilClient", err)
	}

	// Nothing listens on port 1 of the loopback address.
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second, DialerRetries: 1})
	defer down.Close()
	l := New(down)
	_, err = l.Reserve(ctx, paced("session:ab"))
	if !errors.As(err, &e) || e.Op != "reserve" || e.Partition != "session:ab" {
		t.Errorf("Reserve on an unreachable server = %v, want *Error{Op: reserve, Partition: session:ab}", err)
	}
	if err := l.Release(ctx, "public", 0); err != nil {
		t.Errorf("releasing no ticket = %v, want nil without touching the server", err)
	}

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := New(down).Reserve(canceled, paced("public")); !errors.Is(err, context.Canceled) {
		t.Errorf("Reserve with a canceled context = %v, want context.Canceled", err)
	}
}

// op is one step of a differential sequence.
type op struct {
	advance time.Duration // move the clock
	obs     *ratelimit.Observation
	res     *ratelimit.Reservation
	held    int  // with res or obs: the index of an earlier held ticket to confirm, report or release; -1 for none
	release bool // give the held ticket back
	part    string
	// admitted, with a 429 in fixed windows, sets Observation.Admitted to
	// the budget the held ticket was admitted under, as the client does.
	admitted bool
}

// genOps draws a sequence of n operations on two partitions: reservations
// (fresh calls and retries, with or without a configured budget),
// confirmations and releases of held slots, 429s that teach a budget or
// distrust a Retry-After, advertised quotas and exhaustion. Without
// advances the clock stays put, for runs against the server's TIME; then
// every wait is either zero or over a second, and MaxWait is 0 or an hour,
// so that the milliseconds between steps cannot flip a decision.
//
// With fixed, most reservations and 429s say FixedWindows, and most 429s
// report the budget their request was admitted under, so that windows
// fill, 429s are explained or contradict the windows, and partitions fall
// back to the sliding rule. A third partition is replaced by a new one
// every 150 operations, so that fresh partitions keep the fixed windows
// while older ones have fallen back; every other one has no configured
// budget, only the one its 429s teach. The clock moves more often, so
// that slots land anywhere in their windows.
func genOps(rng *mrand.Rand, n int, advances, fixed bool) []op {
	budgets := map[string]ratelimit.Budget{
		"public":           {Limit: 3, Period: 2 * time.Second},
		"session:00c0ffee": {Limit: 5, Period: 5 * time.Second},
	}
	maxWaits := []time.Duration{0, 500 * time.Millisecond, 3 * time.Second, time.Hour}
	minCooldown := 100 * time.Millisecond
	if !advances {
		maxWaits = []time.Duration{0, time.Hour}
		minCooldown = time.Second
	}
	var ops []op
	for i := range n {
		parts := []string{"public", "session:00c0ffee"}
		advance := 3
		if fixed {
			gen := fmt.Sprintf("session:%04x", i/150)
			if i/150%2 == 1 {
				budgets[gen] = ratelimit.Budget{Limit: 4, Period: 3 * time.Second}
			}
			parts = append(parts, gen)
			advance = 5
		}
		p := parts[rng.IntN(len(parts))]
		switch k := rng.IntN(24); {
		case k < advance && advances:
			ops = append(ops, op{advance: time.Duration(rng.IntN(1500)) * time.Millisecond})
		case k < 6:
			o := ratelimit.Observation{Throttled: true, RetryAfter: minCooldown + time.Duration(rng.IntN(4000))*time.Millisecond,
				MaxCooldown: 20 * time.Second, Margin: 10 * time.Millisecond}
			if rng.IntN(2) == 0 {
				o.Budget = budgets[p]
			}
			if rng.IntN(10) == 0 {
				// No instruction: the 429 teaches and closes nothing.
				o.RetryAfter = 0
			} else if rng.IntN(8) == 0 {
				o.RetryAfter, o.Capped = o.MaxCooldown, true
				if rng.IntN(2) == 0 {
					// The uncapped instruction: calls that cannot wait
					// the rest of it are refused at once.
					o.Closed = o.MaxCooldown + time.Duration(rng.IntN(10))*time.Second
				}
			}
			admitted := false
			if fixed && rng.IntN(5) > 0 {
				o.FixedWindows = true
				o.Margin = time.Duration(rng.IntN(6)) * 100 * time.Millisecond
				switch rng.IntN(6) {
				case 0: // unpaced
				case 1:
					o.Admitted = budgets[p]
				default:
					admitted = true
				}
			}
			ops = append(ops, op{part: p, obs: &o, held: rng.IntN(1 << 20), admitted: admitted})
		case k < 7:
			o := ratelimit.Observation{Reset: minCooldown + time.Duration(rng.IntN(3000))*time.Millisecond}
			switch rng.IntN(4) {
			case 0, 1:
				o.Advertised = ratelimit.Budget{Limit: 2 + rng.IntN(4), Period: time.Duration(1+rng.IntN(3)) * time.Second}
			case 2:
				// An answer without the fields: an advertised budget is
				// forgotten.
				o.Reset, o.Unadvertised = 0, true
			}
			ops = append(ops, op{part: p, obs: &o, held: -1})
		case k < 8:
			ops = append(ops, op{part: p, release: true, held: rng.IntN(1 << 20)})
		default:
			r := ratelimit.Reservation{
				Partition: p,
				Jitter:    rng.Float64(),
				MaxWait:   maxWaits[rng.IntN(len(maxWaits))],
				Retry:     rng.IntN(3) == 0,
				Margin:    time.Duration(rng.IntN(3)) * 20 * time.Millisecond,
			}
			if fixed {
				// Up to a quarter of the period: slots near a boundary
				// count in both windows.
				r.Margin = time.Duration(rng.IntN(6)) * 100 * time.Millisecond
				// The typical round trip paces the probe rounds after the
				// first: none, or one below, at or above the margin.
				r.Step = time.Duration(rng.IntN(4)) * 70 * time.Millisecond
			}
			if rng.IntN(10) > 0 { // now and then a call without pacing
				r.Budget = budgets[p]
			}
			r.FixedWindows = fixed && rng.IntN(5) > 0
			if r.Retry && rng.IntN(2) == 0 {
				// A retry's slot, held when its 429 came: not before its
				// Retry-After.
				r.After = time.Duration(rng.IntN(3000)) * time.Millisecond
			}
			// A retry whose distrusted wait was clamped: not before the
			// gateway's latest instruction, whatever the cooldown.
			r.Clamped = r.Retry && rng.IntN(3) == 0
			// A retry whose wait is a guess: only an instruction still
			// running and the configured budget hold it.
			r.Guessed = r.Retry && !r.Clamped && rng.IntN(3) == 0
			held := -1
			if rng.IntN(3) == 0 {
				held = rng.IntN(1 << 20)
			}
			ops = append(ops, op{part: p, res: &r, held: held})
		}
	}
	return ops
}

// twin replays ops on the in-memory reference and on Redis, keeping each
// limiter's tickets for the same held slots side by side.
type twin struct {
	mem       *ratelimit.Memory
	red       *Limiter
	memT      []int64
	redT      []int64
	parts     []string
	admitted  []ratelimit.Budget // the budget each held slot was admitted under
	tolerance time.Duration
	// What the observations taught, to check the sequence exercised it.
	distrusted, learned, reported int
	// What the fixed-window rules did, read from Redis: 429s that marked a
	// window full, contradictions, fallbacks to the sliding rule, and
	// slots placed at a window's opening.
	filled, contradicted, fellBack, openings int
	// What the probing rules did: slots beyond the budget in their window,
	// 429s that showed others' requests, short Retry-Afters proved in fixed
	// windows and doubled periods restored.
	probed, shared, doubled, undoubled int
	// Probes of a partition sharing its budget that went ahead of a slot
	// held later in their window (see heldUntil in package ratelimit).
	ahead int
	// Probes reserved with a pace (Step) below the margin; probes of an
	// opening round beyond the first at a window's opening.
	paced, burst int
	// What the gateway's own instructions did: reservations refused at
	// once by an uncapped Retry-After, and clamped retries admitted before
	// the cooldown ends.
	closedRefusals, clampedEarly int
	// Issue 27: guessed retries admitted while a budget was learned, 429s
	// without an instruction, advertised budgets forgotten, and slots held
	// later than now for a retry's After under the sliding rule.
	guessed, headerless, forgotten, slidingAfter int
}

// fields reads some of a partition's state fields from Redis.
func (w *twin) fields(t *testing.T, part string, names ...string) []int64 {
	t.Helper()
	state, _ := w.red.keys(part)
	v, err := w.red.rdb.HMGet(context.Background(), state, names...).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int64, len(v))
	for i, x := range v {
		s, _ := x.(string)
		out[i], _ = strconv.ParseInt(s, 10, 64)
	}
	return out
}

// sends reads the admission times (µs) Redis holds for a partition.
func (w *twin) sends(t *testing.T, part string) []int64 {
	t.Helper()
	_, key := w.red.keys(part)
	xs, err := w.red.rdb.LRange(context.Background(), key, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int64, len(xs))
	for i, x := range xs {
		out[i], _ = strconv.ParseInt(x, 10, 64)
	}
	return out
}

// inWindow counts the slots Redis holds in the window of period p (µs)
// that holds the slot at ticket (µs).
func (w *twin) inWindow(t *testing.T, part string, ticket, p int64) int {
	t.Helper()
	n := 0
	for _, v := range w.sends(t, part) {
		if v/p == ticket/p {
			n++
		}
	}
	return n
}

// heldLater reports whether Redis holds a slot later than ticket (µs) in
// ticket's window of period p (µs).
func (w *twin) heldLater(t *testing.T, part string, ticket, p int64) bool {
	t.Helper()
	for _, v := range w.sends(t, part) {
		if v/p == ticket/p && v > ticket {
			return true
		}
	}
	return false
}

// windows reads a partition's fixed-window state from Redis.
func (w *twin) windows(t *testing.T, part string) (fullUntil, contradicts, sliding int64) {
	t.Helper()
	state, _ := w.red.keys(part)
	v, err := w.red.rdb.HMGet(context.Background(), state, "fu", "ct", "sl").Result()
	if err != nil {
		t.Fatal(err)
	}
	n := func(x any) int64 {
		s, _ := x.(string)
		i, _ := strconv.ParseInt(s, 10, 64)
		return i
	}
	return n(v[0]), n(v[1]), n(v[2])
}

// pick returns the held tickets chosen by k, or zeros when none is held:
// half the values of k pick one of the last eight tickets.
func (w *twin) pick(k int, part string) (int64, int64, int) {
	if k < 0 || len(w.memT) == 0 {
		return 0, 0, -1
	}
	i := k % len(w.memT)
	if k%2 == 1 {
		i = len(w.memT) - 1 - k%min(len(w.memT), 8)
	}
	if w.parts[i] != part {
		return 0, 0, -1
	}
	return w.memT[i], w.redT[i], i
}

// step applies one op to both and reports a disagreement.
func (w *twin) step(t *testing.T, i int, o op) (want ratelimit.Admission, reserved bool) {
	t.Helper()
	ctx := context.Background()
	mt, rt, idx := w.pick(o.held, o.part)
	switch {
	case o.release:
		if idx < 0 {
			return want, false
		}
		if err := w.mem.Release(ctx, o.part, mt); err != nil {
			t.Fatal(err)
		}
		if err := w.red.Release(ctx, o.part, rt); err != nil {
			t.Fatal(err)
		}
	case o.obs != nil:
		mo, ro := *o.obs, *o.obs
		mo.Ticket, ro.Ticket = mt, rt
		if o.admitted && idx >= 0 {
			mo.Admitted, ro.Admitted = w.admitted[idx], w.admitted[idx]
		}
		fu0, ct0, sl0 := w.windows(t, o.part)
		before := w.fields(t, o.part, "sh", "ud", "lp", "ad")
		want, err := w.mem.Observe(ctx, o.part, mo)
		if err != nil {
			t.Fatal(err)
		}
		got, err := w.red.Observe(ctx, o.part, ro)
		if err != nil {
			t.Fatal(err)
		}
		if got.Distrusted != want.Distrusted || got.Budget != want.Budget || (got.Cooldown-want.Cooldown).Abs() > w.tolerance {
			t.Fatalf("step %d observe %+v: redis %+v, memory %+v", i, mo, got, want)
		}
		if mo.Throttled && mo.RetryAfter == 0 {
			w.headerless++
		}
		if want.Distrusted {
			w.distrusted++
		}
		after := w.fields(t, o.part, "sh", "ud", "lp", "ad")
		if mo.Unadvertised && before[3] == 1 && after[3] == 0 {
			w.forgotten++
		}
		switch {
		case after[0] > before[0]:
			w.shared++
		case after[1] > 0 && before[1] == 0:
			w.doubled++
		case after[1] == 0 && before[1] > 0 && after[2] < before[2]:
			w.undoubled++
		}
		if want.Budget.Limit > 1 {
			w.learned++
		}
		if mt != 0 {
			w.reported++
		}
		fu1, ct1, sl1 := w.windows(t, o.part)
		if fu1 > fu0 {
			w.filled++
		}
		if ct1 > ct0 {
			w.contradicted++
		}
		if sl1 > sl0 {
			w.fellBack++
		}
	case o.res != nil:
		mr, rr := *o.res, *o.res
		mr.Ticket, rr.Ticket = mt, rt
		state := w.fields(t, o.part, "cu", "xu", "ll", "sl")
		now := time.Now().UnixMicro()
		if w.red.now != nil {
			now = w.red.now().UnixMicro()
		}
		want, err := w.mem.Reserve(ctx, mr)
		if err != nil {
			t.Fatal(err)
		}
		got, err := w.red.Reserve(ctx, rr)
		if err != nil {
			t.Fatal(err)
		}
		if got.OK != want.OK || got.Cooldown != want.Cooldown || got.Budget != want.Budget || got.Advertised != want.Advertised ||
			(got.Ticket == 0) != (want.Ticket == 0) || (got.Wait-want.Wait).Abs() > w.tolerance {
			t.Fatalf("step %d %+v: redis %+v, memory %+v", i, mr, got, want)
		}
		if want.OK && want.Ticket != 0 && mr.Ticket == 0 && want.Wait < mr.After {
			t.Fatalf("step %d %+v: admitted %+v, before its After", i, mr, want)
		}
		if want.OK && mr.Guessed && mr.Retry && state[2] > 0 {
			w.guessed++
		}
		if want.OK && want.Ticket != 0 && mr.After > 0 && (state[3] == 1 || !mr.FixedWindows) && want.Wait >= mr.After {
			w.slidingAfter++
		}
		if !want.OK && state[1]-now > mr.MaxWait.Microseconds() {
			w.closedRefusals++
		}
		if want.OK && mr.Clamped && want.Ticket != 0 && got.Ticket < state[0] {
			w.clampedEarly++
		}
		if want.Ticket != 0 {
			if idx >= 0 {
				w.memT[idx], w.redT[idx], w.admitted[idx] = want.Ticket, got.Ticket, want.Budget
			} else {
				w.memT, w.redT, w.parts = append(w.memT, want.Ticket), append(w.redT, got.Ticket), append(w.parts, o.part)
				w.admitted = append(w.admitted, want.Budget)
			}
			if p := want.Budget.Period.Microseconds(); mr.FixedWindows && want.Wait > 0 && p > 0 &&
				got.Ticket%p == allowance(want.Budget.Period).Microseconds() {
				w.openings++
			}
			if p := want.Budget.Period.Microseconds(); mr.FixedWindows && p > 0 && w.inWindow(t, o.part, got.Ticket, p) > want.Budget.Limit {
				w.probed++
				sh := w.fields(t, o.part, "sh", "vr")
				if (sh[0] != 0 || sh[1] != 0) && w.heldLater(t, o.part, got.Ticket, p) {
					w.ahead++
				}
				if mr.Step > 0 && mr.Step < mr.Margin {
					w.paced++
				}
				if sh[0] != 0 && got.Ticket%p == allowance(want.Budget.Period).Microseconds() &&
					w.inWindow(t, o.part, got.Ticket, p) > want.Budget.Limit+1 {
					w.burst++
				}
			}
		}
		return want, true
	}
	return want, false
}

// allowance is the limiter's clock allowance of a period: a request at a
// window's opening goes this long after the boundary.
func allowance(period time.Duration) time.Duration {
	return min(period/500, 100*time.Millisecond)
}

// TestDifferentialFakeClock replays long random sequences on the in-memory
// reference and on Redis with the same injected clock: every admission and
// every lesson must agree, to the microsecond Redis stores. The clock
// starts at fixed times, so that the windows fall the same way in every
// run.
func TestDifferentialFakeClock(t *testing.T) {
	rdb := newRedis(t)
	var refused, cooled, waited, confirmed int
	var all twin
	for seed := range uint64(4) {
		start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(seed) * 7919 * time.Millisecond)
		clk := &fakeClock{t: start}
		w := &twin{mem: memoryOn(clk.now), red: New(rdb, WithKeyPrefix(testPrefix(t, rdb))), tolerance: 2 * time.Microsecond}
		w.red.now = clk.now
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			for i, o := range genOps(mrand.New(mrand.NewPCG(6+seed, 46)), 1500, true, true) {
				if o.advance > 0 {
					clk.advance(o.advance)
					continue
				}
				want, reserved := w.step(t, i, o)
				if !reserved {
					continue
				}
				switch {
				case !want.OK:
					refused++
				case want.Cooldown:
					cooled++
				case want.Wait > 0:
					waited++
				case o.held >= 0 && want.Wait == 0:
					confirmed++
				}
			}
		})
		all.distrusted += w.distrusted
		all.learned += w.learned
		all.reported += w.reported
		all.filled += w.filled
		all.contradicted += w.contradicted
		all.fellBack += w.fellBack
		all.openings += w.openings
		all.probed += w.probed
		all.shared += w.shared
		all.doubled += w.doubled
		all.undoubled += w.undoubled
		all.ahead += w.ahead
		all.paced += w.paced
		all.burst += w.burst
		all.guessed += w.guessed
		all.headerless += w.headerless
		all.forgotten += w.forgotten
		all.slidingAfter += w.slidingAfter
		all.closedRefusals += w.closedRefusals
		all.clampedEarly += w.clampedEarly
	}
	// The sequences must exercise every branch for the comparison to mean
	// anything.
	w := &all
	if refused == 0 || cooled == 0 || waited == 0 || confirmed == 0 || w.distrusted == 0 || w.learned == 0 || w.reported == 0 {
		t.Errorf("sequence too tame: %d refused, %d cooled, %d waited, %d confirmed, %d distrusted, %d learned, %d reported",
			refused, cooled, waited, confirmed, w.distrusted, w.learned, w.reported)
	}
	if w.filled == 0 || w.contradicted == 0 || w.fellBack == 0 || w.openings == 0 {
		t.Errorf("fixed windows too tame: %d 429s filled a window, %d contradicted, %d fell back, %d slots at an opening",
			w.filled, w.contradicted, w.fellBack, w.openings)
	}
	// Short Retry-Afters proved in fixed windows need a scripted sequence
	// (TestProbingIsShared).
	if w.probed == 0 || w.shared == 0 || w.ahead == 0 {
		t.Errorf("probing too tame: %d slots beyond the budget, %d 429s showed others, %d probes ahead of held slots",
			w.probed, w.shared, w.ahead)
	}
	if w.paced == 0 || w.burst == 0 {
		t.Errorf("probe rounds too tame: %d probes paced below the margin, %d in an opening round", w.paced, w.burst)
	}
	t.Logf("probe rounds: %d probes paced below the margin, %d in an opening round", w.paced, w.burst)
	if w.guessed == 0 || w.headerless == 0 || w.forgotten == 0 || w.slidingAfter == 0 {
		t.Errorf("issue 27 too tame: %d guessed retries on a learned budget, %d 429s without an instruction, %d advertised budgets forgotten, %d retries at their After outside fixed windows",
			w.guessed, w.headerless, w.forgotten, w.slidingAfter)
	}
	t.Logf("issue 27: %d guessed retries on a learned budget, %d 429s without an instruction, %d advertised budgets forgotten, %d retries at their After outside fixed windows",
		w.guessed, w.headerless, w.forgotten, w.slidingAfter)
	if w.closedRefusals == 0 || w.clampedEarly == 0 {
		t.Errorf("instructions too tame: %d refused by an uncapped Retry-After, %d clamped retries before the cooldown's end",
			w.closedRefusals, w.clampedEarly)
	}
	t.Logf("instructions: %d refused by an uncapped Retry-After, %d clamped retries before the cooldown's end",
		w.closedRefusals, w.clampedEarly)
	t.Logf("probing: %d slots beyond the budget, %d 429s showed others, %d periods doubled (%d restored), %d probes ahead of held slots",
		w.probed, w.shared, w.doubled, w.undoubled, w.ahead)
	t.Logf("%d refused, %d cooled, %d waited, %d confirmed, %d distrusted, %d learned, %d reported; "+
		"fixed windows: %d filled, %d contradicted, %d fell back, %d at an opening",
		refused, cooled, waited, confirmed, w.distrusted, w.learned, w.reported, w.filled, w.contradicted, w.fellBack, w.openings)
}

// TestDifferentialServerTime replays a sequence against Redis on its own
// TIME, setting the reference's clock to the server's time read just before
// each step. The admission times may then differ by the few milliseconds
// that pass between that read and the script, never by a period. The
// sequence keeps to the sliding rule: in fixed windows, a window boundary
// falling in those milliseconds would move an admission by a whole window.
func TestDifferentialServerTime(t *testing.T) {
	rdb := newRedis(t)
	ctx := context.Background()
	clk := &fakeClock{}
	w := &twin{mem: memoryOn(clk.now), red: New(rdb, WithKeyPrefix(testPrefix(t, rdb))), tolerance: 250 * time.Millisecond}
	for i, o := range genOps(mrand.New(mrand.NewPCG(7, 7)), 60, false, false) {
		now, err := rdb.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		clk.set(now)
		w.step(t, i, o)
	}
}

// Issue 12, item 20, in Redis: a slot given back is free again, and a
// released ticket is not confirmed.
func TestReleaseGivesSlotBack(t *testing.T) {
	rdb := newRedis(t)
	clk := &fakeClock{t: time.Now().Truncate(time.Millisecond)}
	l := New(rdb, WithKeyPrefix(testPrefix(t, rdb)))
	l.now = clk.now
	ctx := context.Background()
	b := ratelimit.Budget{Limit: 5, Period: time.Second}
	r := ratelimit.Reservation{Partition: "public", Budget: b, MaxWait: time.Hour}
	var held []int64
	for range 55 {
		a, err := l.Reserve(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if a.Wait > 0 {
			held = append(held, a.Ticket)
		}
	}
	if len(held) != 50 {
		t.Fatalf("%d callers queued, want 50", len(held))
	}
	for _, tk := range held {
		if err := l.Release(ctx, "public", tk); err != nil {
			t.Fatal(err)
		}
	}
	clk.advance(time.Second)
	r.MaxWait = 3 * time.Second
	a, err := l.Reserve(ctx, r)
	if err != nil || !a.OK || a.Wait != 0 {
		t.Errorf("after 50 releases, Reserve = %+v, %v; want immediate", a, err)
	}
	if _, s := dump(t, rdb, l, "public"); len(s) != 6 {
		t.Errorf("log holds %d admissions, want the 6 sent", len(s))
	}
}

// fixedWindowsScenario runs, on x and y as two processes sharing one
// store, what the fixed windows are for, with the clock set after 12:00:00
// UTC (a boundary of every window of 10 s): the admission times of seven
// calls with the third one late in its window; a window a 429 from x
// showed full, which y then skips (the window after it too, when the 429
// came within the clock allowance of its end); and two contradicted 429s,
// after which y keeps to the sliding rule. It returns the times, after
// 12:00:00, at which the calls may go.
func fixedWindowsScenario(t *testing.T, clk *fakeClock, x, y ratelimit.Limiter, fixed bool) []time.Duration {
	t.Helper()
	const s, ms = time.Second, time.Millisecond
	epoch := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ctx := context.Background()
	var got []time.Duration
	reserve := func(l ratelimit.Limiter, r ratelimit.Reservation) ratelimit.Admission {
		t.Helper()
		adm, err := l.Reserve(ctx, r)
		if err != nil || !adm.OK {
			t.Fatalf("Reserve(%+v) = %+v, %v; want OK", r, adm, err)
		}
		got = append(got, clk.now().Add(adm.Wait).Sub(epoch))
		return adm
	}
	refuse := func(l ratelimit.Limiter, r ratelimit.Reservation, adm ratelimit.Admission, retryAfter time.Duration) {
		t.Helper()
		_, err := l.Observe(ctx, r.Partition, ratelimit.Observation{Ticket: adm.Ticket, Throttled: true, RetryAfter: retryAfter,
			Budget: r.Budget, Margin: r.Margin, FixedWindows: r.FixedWindows, Admitted: adm.Budget})
		if err != nil {
			t.Fatal(err)
		}
	}

	// The whole budget at each window's opening, whichever process asks.
	r := ratelimit.Reservation{Partition: "public", Budget: ratelimit.Budget{Limit: 3, Period: 10 * s}, Margin: ms, MaxWait: time.Minute, FixedWindows: fixed}
	clk.set(epoch.Add(s))
	for i := range 7 {
		if i == 2 {
			clk.advance(4 * s) // the third call comes late in the window
		}
		reserve([]ratelimit.Limiter{x, y}[i%2], r)
	}

	// An unpaced request refused at 21 s, with a Retry-After shorter than
	// the window: its window [20 s, 30 s) is full, for y too.
	r.Partition = "session:ab"
	r.Budget.Limit = 4
	clk.set(epoch.Add(21 * s))
	adm := reserve(x, r)
	adm.Budget = ratelimit.Budget{}
	refuse(x, r, adm, 2*s)
	clk.set(epoch.Add(24 * s))
	reserve(y, r)
	// The same 5 ms before the window's end: the gateway's clock may be
	// ahead by the allowance (20 ms), so the next window is full too.
	r.Partition = "session:ef"
	clk.set(epoch.Add(30*s - 5*ms))
	adm = reserve(x, r)
	adm.Budget = ratelimit.Budget{}
	refuse(x, r, adm, 2*s)
	clk.set(epoch.Add(33 * s))
	reserve(y, r)

	// Two requests paced at a budget the gateway advertises and the client
	// was configured with (nothing to probe up to), refused although their
	// windows had room: after the second, y keeps to the sliding rule. (A
	// budget learned from 429s, or advertised alone, is probed instead, and
	// such refusals are taken for others' requests.)
	r.Partition = "session:cd"
	advertised := ratelimit.Budget{Limit: 4, Period: 10 * s}
	r.Budget = advertised
	if _, err := x.Observe(ctx, r.Partition, ratelimit.Observation{Advertised: advertised}); err != nil {
		t.Fatal(err)
	}
	refuseAdvertised := func(l ratelimit.Limiter, adm ratelimit.Admission) {
		t.Helper()
		_, err := l.Observe(ctx, r.Partition, ratelimit.Observation{Ticket: adm.Ticket, Throttled: true, RetryAfter: 10 * s,
			Advertised: advertised, Budget: r.Budget, Margin: r.Margin, FixedWindows: r.FixedWindows, Admitted: adm.Budget})
		if err != nil {
			t.Fatal(err)
		}
	}
	clk.set(epoch.Add(s))
	reserve(x, r)
	refuseAdvertised(y, reserve(y, r))
	clk.set(epoch.Add(25 * s))
	refuseAdvertised(x, reserve(x, r))
	clk.set(epoch.Add(36 * s))
	for range 4 {
		reserve(y, r)
	}
	reserve(y, r)
	return got
}

// countingHook counts the commands Redis clients send, but for the
// handshake of each new connection.
type countingHook struct{ n atomic.Int32 }

func (h *countingHook) count(cmds ...redis.Cmder) {
	for _, c := range cmds {
		if n := c.Name(); n != "hello" && n != "client" {
			h.n.Add(1)
		}
	}
}

func (h *countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count(cmd)
		return next(ctx, cmd)
	}
}

func (h *countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.count(cmds...)
		return next(ctx, cmds)
	}
}

// Issue 13 in Redis: in fixed windows, two Limiters sharing the store admit
// the whole budget at each window's opening, as one ratelimit.Memory does, and
// share the windows a 429 showed full and the fallback to the sliding rule,
// still with one round trip per operation.
func TestFixedWindowsAreShared(t *testing.T) {
	rdb := newRedis(t)
	const s, ms = time.Second, time.Millisecond
	var hook countingHook
	one, other := redis.NewClient(&redis.Options{Addr: redisAddr()}), redis.NewClient(&redis.Options{Addr: redisAddr()})
	t.Cleanup(func() { one.Close(); other.Close() })
	one.AddHook(&hook)
	other.AddHook(&hook)
	// With the scripts loaded, EVALSHA needs no second try.
	for _, sc := range []*redis.Script{reserveScript, observeScript} {
		if err := sc.Load(context.Background(), rdb).Err(); err != nil {
			t.Fatal(err)
		}
	}
	run := func(fixed bool) (redisTimes, memTimes []time.Duration, x *Limiter) {
		prefix := testPrefix(t, rdb)
		clk := &fakeClock{}
		x, y := New(one, WithKeyPrefix(prefix)), New(other, WithKeyPrefix(prefix))
		x.now, y.now = clk.now, clk.now
		hook.n.Store(0)
		redisTimes = fixedWindowsScenario(t, clk, x, y, fixed)
		// 18 reservations and 6 observations.
		if n := hook.n.Load(); n != 24 {
			t.Errorf("%d Redis commands for 24 operations, want one each", n)
		}
		m := memoryOn(clk.now)
		return redisTimes, fixedWindowsScenario(t, clk, m, m, fixed), x
	}

	got, mem, x := run(true)
	want := []time.Duration{
		s, s, 5 * s, 10*s + 20*ms, 10*s + 20*ms, 10*s + 20*ms, 20*s + 20*ms, // the budget at each opening
		// y skips the window x's 429 showed full; nothing of the
		// partition's went through it, so its next one starts with the
		// window's probes, a step (the margin) after the opening.
		21 * s, 30*s + 21*ms,
		30*s - 5*ms, 40*s + 21*ms,
		// y keeps to the sliding rule: a period after 36 s, not 40 s.
		s, s, 25 * s, 36 * s, 36 * s, 36 * s, 36 * s, 46*s + ms,
	}
	if !slices.Equal(got, want) {
		t.Errorf("fixed windows through Redis: admissions at %v, want %v", got, want)
	}
	if !slices.Equal(mem, want) {
		t.Errorf("fixed windows in memory: admissions at %v, want %v", mem, want)
	}
	h, _ := dump(t, rdb, x, "session:cd")
	if h["sl"] != "1" || h["ct"] != "2" {
		t.Errorf("state of the contradicted partition = %v, want sl 1 and ct 2", h)
	}

	// The sliding rule, for the same calls: one late slot delays a slot in
	// every window after it.
	got, mem, _ = run(false)
	want = []time.Duration{
		s, s, 5 * s, 11*s + ms, 11*s + ms, 15*s + ms, 21*s + 2*ms,
		21 * s, 24 * s,
		30*s - 5*ms, 33 * s,
		s, s, 25 * s, 36 * s, 36 * s, 36 * s, 36 * s, 46*s + ms,
	}
	if !slices.Equal(got, want) || !slices.Equal(mem, want) {
		t.Errorf("sliding rule: admissions at %v through Redis and %v in memory, want %v", got, mem, want)
	}
}

// In fixed windows, the bound on the log (maxLog admissions) keeps every
// admission the windows still count, as in ratelimit.Memory: with more
// slots held than that, the current window stays full.
func TestHeldSlotsBeyondTheLogBound(t *testing.T) {
	rdb := newRedis(t)
	const s, ms = time.Second, time.Millisecond
	epoch := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clk := &fakeClock{t: epoch.Add(s)}
	l := New(rdb, WithKeyPrefix(testPrefix(t, rdb)))
	l.now = clk.now
	ctx := context.Background()
	r := ratelimit.Reservation{Partition: "public", Budget: ratelimit.Budget{Limit: 2000, Period: 10 * s}, MaxWait: time.Hour, FixedWindows: true}
	// The log of maxLog admissions that many callers would hold: the
	// budget at 1 s and at the next window's opening, the rest in the
	// window after.
	_, sends := l.keys("public")
	var log []any
	for i := range maxLog {
		at := epoch.Add(s)
		if k := i / 2000; k > 0 {
			at = epoch.Add(time.Duration(k)*10*s + 20*ms)
		}
		log = append(log, strconv.FormatInt(at.UnixMicro(), 10))
	}
	if err := rdb.RPush(ctx, sends, log...).Err(); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		a, err := l.Reserve(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := clk.now().Add(a.Wait).Sub(epoch), 20*s+20*ms; got != want {
			t.Fatalf("slot %d after %d held at %v, want %v", i, maxLog, got, want)
		}
	}
	// Admissions before the current window are bounded as before.
	clk.advance(time.Minute)
	if _, err := l.Reserve(ctx, r); err != nil {
		t.Fatal(err)
	}
	if _, sends := dump(t, rdb, l, "public"); len(sends) != maxLog+1 {
		t.Errorf("log holds %d admissions, want %d", len(sends), maxLog+1)
	}
}

// Issue 13, item 1: what one process learns from a 429, another sharing the
// store paces by.
func TestLearnedBudgetIsShared(t *testing.T) {
	rdb := newRedis(t)
	prefix := testPrefix(t, rdb)
	other := redis.NewClient(&redis.Options{Addr: redisAddr()})
	t.Cleanup(func() { other.Close() })
	a, b := New(rdb, WithKeyPrefix(prefix)), New(other, WithKeyPrefix(prefix))
	ctx := context.Background()
	r := ratelimit.Reservation{Partition: "public", MaxWait: time.Hour}
	var tickets []int64
	for i := range 12 {
		l := a
		if i%2 == 1 {
			l = b
		}
		adm, err := l.Reserve(ctx, r)
		if err != nil || adm.Wait != 0 {
			t.Fatalf("unpaced Reserve = %+v, %v", adm, err)
		}
		tickets = append(tickets, adm.Ticket)
	}
	// The gateway let 4 through; a sees the refusals.
	var fb ratelimit.Feedback
	for _, tk := range tickets[4:] {
		var err error
		fb, err = a.Observe(ctx, "public", ratelimit.Observation{Ticket: tk, Throttled: true, RetryAfter: 30 * time.Second, Margin: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
	}
	if fb.Budget != (ratelimit.Budget{Limit: 4, Period: 30 * time.Second}) {
		t.Fatalf("learned %+v, want 4 per 30s", fb.Budget)
	}
	// b, which saw no 429, now paces a retry at the learned budget.
	r.Retry = true
	adm, err := b.Reserve(ctx, r)
	if err != nil || !adm.OK || adm.Budget != fb.Budget || !adm.Cooldown {
		t.Errorf("b's Reserve = %+v, %v; want paced at %+v after the cooldown", adm, err, fb.Budget)
	}
}

// stalledServer accepts connections and never answers: a Redis stuck in a
// long command, or a host that swallows packets. Its cleanup closes the
// connections, which ends the operations still waiting on them.
func stalledServer(t *testing.T) (addr string, stop func()) {
	t.Helper()
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() { _, _ = io.Copy(io.Discard, c) }()
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			ln.Close()
			<-done
			mu.Lock()
			for _, c := range conns {
				c.Close()
			}
			mu.Unlock()
		})
	}
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

// stalledLimiter is a Limiter on a store that accepts connections and never
// answers, through a Redis client with no read or write timeout and no
// retries: only the caller's context can bound its operations.
func stalledLimiter(t *testing.T) *Limiter {
	t.Helper()
	addr, stop := stalledServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: -1, WriteTimeout: -1, MaxRetries: -1})
	l := New(rdb, WithTimeout(time.Hour))
	t.Cleanup(func() {
		stop()
		rdb.Close()
		l.inflight.Wait()
	})
	return l
}

// Issue 12, item 21: an operation is bounded by its context even though
// the Redis client ignores context deadlines and has no read timeout; the
// Limiter then serves from its local fallback, cooldowns included, without
// asking the stalled store again until the backoff is over.
func TestStalledRedisIsBounded(t *testing.T) {
	addr, stop := stalledServer(t)
	var dials atomic.Int32
	rdb := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: -1, WriteTimeout: -1, MaxRetries: -1,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}})
	clk := &fakeClock{t: time.Now()}
	l := New(rdb, WithTimeout(time.Hour))
	l.wall = clk.now
	l.local = memoryOn(clk.now)
	t.Cleanup(func() {
		stop()
		rdb.Close()
		l.inflight.Wait()
	})

	// Deadlines well beyond minStall: the time between making one and the
	// store call starting (long on a loaded machine) must not make the
	// store's chance look unfair.
	ctx, cancel := context.WithTimeout(context.Background(), 5*minStall)
	defer cancel()
	_, err := l.Reserve(ctx, paced("public"))
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Reserve on a stalled store = %v, want *Error at the context's deadline", err)
	}

	// The store is not asked again during the backoff: the local fallback
	// answers, and keeps the cooldowns this process sees.
	bg := context.Background()
	if _, err := l.Observe(bg, "public", ratelimit.Observation{Throttled: true, RetryAfter: 10 * time.Second}); err != nil {
		t.Fatalf("Observe during the backoff = %v, want the local fallback", err)
	}
	a, err := l.Reserve(bg, ratelimit.Reservation{Partition: "public", MaxWait: time.Hour, Retry: true})
	if err != nil || !a.OK || !a.Cooldown || a.Wait < 10*time.Second {
		t.Errorf("Reserve during the backoff = %+v, %v; want the local cooldown", a, err)
	}
	if n := dials.Load(); n != 1 {
		t.Errorf("%d dials during the backoff, want only the first", n)
	}
	// After the backoff, the store is checked again in the background
	// while the callers keep the fallback: none of them waits for a store
	// that may still stall.
	clk.advance(firstBackoff)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*minStall)
	defer cancel2()
	if a, err := l.Reserve(ctx2, paced("public")); err != nil || !a.OK {
		t.Errorf("Reserve after the backoff = %+v, %v; want the local fallback while the store is checked", a, err)
	}
	if _, err := l.Reserve(ctx2, paced("public")); err != nil {
		t.Errorf("Reserve during the check = %v, want the local fallback", err)
	}
	// The check fails when the store goes away: the backoff doubles.
	stop()
	l.inflight.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.wait != 2*firstBackoff || l.checking {
		t.Errorf("backoff after the check failed = %v (checking %v), want doubled", l.wait, l.checking)
	}
}

// Issue 21: once the backoff has passed, a store that answers again ends
// the fallback through the background check, and the next operation goes
// to the store.
func TestCheckEndsTheFallback(t *testing.T) {
	rdb := newRedis(t)
	clk := &fakeClock{t: time.Now()}
	l := New(rdb, WithKeyPrefix(testPrefix(t, rdb)))
	l.wall = clk.now
	t.Cleanup(l.inflight.Wait)
	l.failed() // as if the store had failed
	ctx := context.Background()
	if !l.useLocal("public") {
		t.Fatal("fallback not used during the backoff")
	}
	l.inflight.Wait()
	if l.down.IsZero() {
		t.Fatal("store checked during the backoff")
	}
	clk.advance(firstBackoff)
	if !l.useLocal("public") {
		t.Error("the first caller after the backoff asked the store; want the fallback while it is checked")
	}
	l.inflight.Wait()
	if l.useLocal("public") {
		t.Error("fallback still used after the store answered the check")
	}
	if _, err := l.Reserve(ctx, paced("public")); err != nil {
		t.Errorf("Reserve after the check = %v", err)
	}
}

// Issue 12, item 21, through the client: with a stalled store and no read
// timeout, a call that may spend 200 ms on rate limiting goes ahead after
// at most that, failing open, instead of hanging on the store.
func TestClientFailsOpenWithinAllowance(t *testing.T) {
	l := stalledLimiter(t)
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `{"status":"ok","db":"ok","timestamp":"2026-09-14T10:00:00Z"}`)
	}))
	defer gw.Close()
	var logs strings.Builder
	var mu sync.Mutex
	c, err := rail0.NewClient(gw.URL, rail0.WithLimiter(l), rail0.WithRetryOn429(true),
		rail0.WithMaxRetryWait(200*time.Millisecond),
		rail0.WithLogger(slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &logs}, nil))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Health.Get(ctx); err != nil {
		t.Fatalf("Health.Get with a stalled limiter store = %v, want it sent anyway", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "rate limiter unavailable") {
		t.Errorf("log = %q, want the failure reported", logs.String())
	}
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A call whose own deadline leaves the store no time (a few milliseconds,
// against a store that does not answer at once) fails alone: it does not
// send the whole process to the local fallback.
func TestTinyDeadlineDoesNotMarkTheStoreDown(t *testing.T) {
	l := stalledLimiter(t)
	ctx, cancel := context.WithTimeout(context.Background(), minStall/10)
	defer cancel()
	if _, err := l.Reserve(ctx, paced("public")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Reserve = %v, want the caller's deadline", err)
	}
	if l.useLocal("public") {
		t.Fatal("a caller's tiny deadline marked the store down")
	}
}

// probingScenario drives one partition through issue 21's rules on l: a
// window whose 429s teach the share that went through, the clean window
// after it (the share at its opening, a probe once the streak's retries
// have gone), a window that probes one beyond the share at its opening and
// gives back a sixteenth when the probe is refused, a short Retry-After
// proved by a burst refused whole, and a partition whose first 429 let none
// of its requests through. It returns every admission's time and every
// feedback, in order.
func probingScenario(t *testing.T, clk *fakeClock, l ratelimit.Limiter) ([]time.Duration, []ratelimit.Feedback) {
	t.Helper()
	const s, ms = time.Second, time.Millisecond
	epoch := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	sc := &script{t: t, clk: clk, l: l, epoch: epoch}
	r := ratelimit.Reservation{Partition: "public", Margin: ms, MaxWait: time.Minute, FixedWindows: true}
	reserve := sc.reserve
	refuse := func(adm ratelimit.Admission, ra time.Duration) { sc.refuse(r.Partition, adm, ra) }
	// The first window: five go unpaced, the last two are refused.
	clk.set(epoch)
	var adms []ratelimit.Admission
	for range 5 {
		adms = append(adms, reserve(r))
	}
	clk.advance(10 * ms)
	retry := r
	retry.Retry, retry.After = true, 2*s
	for _, adm := range adms[3:] {
		refuse(adm, 2*s)
		reserve(retry) // the retry's slot, held for its Retry-After
	}
	// The clean window: one fresh call goes at its opening with the two
	// retries; a fourth is the probe, a step after the retries' jitter band
	// (a tenth of the period: other clients' retries land there).
	clk.set(epoch.Add(2*s + 4*ms))
	reserve(r)
	probe := reserve(r)
	clk.set(epoch.Add(2*s + 20*ms))
	refuse(probe, 2*s)
	// The next window probes one beyond the share at its opening, and its
	// refusal gives a sixteenth back (at least one).
	clk.set(epoch.Add(4*s + 4*ms))
	for range 4 {
		probe = reserve(r)
	}
	clk.set(epoch.Add(4*s + 10*ms))
	refuse(probe, 2*s)

	// A gateway whose Retry-After is half its window: the burst at the
	// reopening is refused whole, and its last 429 proves the header short.
	r.Partition = "session:ab"
	clk.set(epoch.Add(10 * s))
	adms = adms[:0]
	for range 4 {
		adms = append(adms, reserve(r))
	}
	clk.advance(10 * ms)
	refuse(adms[3], s)
	clk.set(epoch.Add(11*s + 10*ms))
	adms = adms[:0]
	for range 3 {
		adms = append(adms, reserve(r))
	}
	clk.advance(10 * ms)
	for _, adm := range adms {
		refuse(adm, s)
	}
	// The proof starts the windows afresh: the window after it (12 s to
	// 14 s, the period doubled) is the clean one again, so its probe goes a
	// step after the share, not with it.
	clk.set(epoch.Add(13*s + 500*ms))
	for range 4 {
		reserve(r)
	}
	// Later, a refusal with one of ours sent in its window, fewer than the
	// budget (three retries hold slots later in it, not sent yet): others'
	// requests, so the doubling was theirs too, and the period goes back.
	clk.set(epoch.Add(16 * s))
	reserve(r)
	adm := reserve(r)
	later := r
	later.Retry, later.After = true, s
	for range 3 {
		reserve(later)
	}
	clk.advance(10 * ms)
	refuse(adm, s)

	// A partition whose first 429 let none of its requests through: one
	// per window, from the probes of the window after the next.
	r.Partition = "session:cd"
	clk.set(epoch.Add(20 * s))
	refuse(reserve(r), 2*s)
	clk.set(epoch.Add(21 * s))
	reserve(r)

	// A larger share: 34 of 36 through, then a window that probes one
	// beyond it at its opening and one a step later, whose refusal gives
	// back a sixteenth of the 35 through (two).
	r.Partition = "session:ef"
	clk.set(epoch.Add(30 * s))
	adms = adms[:0]
	for range 36 {
		adms = append(adms, reserve(r))
	}
	clk.advance(10 * ms)
	for _, adm := range adms[34:] {
		refuse(adm, 2*s)
	}
	clk.set(epoch.Add(34*s + 4*ms))
	for range 36 {
		probe = reserve(r)
	}
	clk.set(epoch.Add(34*s + 10*ms))
	refuse(probe, 2*s)
	return sc.at, sc.fbs
}

// script drives a limiter through a scenario on a fake clock, recording
// when each reservation was admitted (from epoch) and what each 429 fed
// back.
type script struct {
	t     *testing.T
	clk   *fakeClock
	l     ratelimit.Limiter
	epoch time.Time
	at    []time.Duration
	fbs   []ratelimit.Feedback
}

// reserve reserves r, which must be admitted.
func (sc *script) reserve(r ratelimit.Reservation) ratelimit.Admission {
	sc.t.Helper()
	adm, err := sc.l.Reserve(context.Background(), r)
	if err != nil || !adm.OK {
		sc.t.Fatalf("Reserve(%+v) = %+v, %v; want OK", r, adm, err)
	}
	sc.at = append(sc.at, sc.clk.now().Add(adm.Wait).Sub(sc.epoch))
	return adm
}

// refuse reports a 429 with Retry-After ra for the request admitted as adm.
func (sc *script) refuse(partition string, adm ratelimit.Admission, ra time.Duration) {
	sc.t.Helper()
	fb, err := sc.l.Observe(context.Background(), partition, ratelimit.Observation{Ticket: adm.Ticket, Throttled: true,
		RetryAfter: ra, MaxCooldown: time.Minute, Margin: time.Millisecond, FixedWindows: true, Admitted: adm.Budget})
	if err != nil {
		sc.t.Fatal(err)
	}
	sc.fbs = append(sc.fbs, fb)
}

// Issue 21, item 1, in Redis: the probing rules run in Lua exactly as in
// ratelimit.Memory, so every process sharing a store probes together.
func TestProbingIsShared(t *testing.T) {
	rdb := newRedis(t)
	const s, ms = time.Second, time.Millisecond
	clk := &fakeClock{}
	red := New(rdb, WithKeyPrefix(testPrefix(t, rdb)))
	red.now = clk.now
	got, gotFb := probingScenario(t, clk, red)
	want, wantFb := probingScenario(t, clk, memoryOn(clk.now))
	if !slices.Equal(got, want) {
		t.Errorf("admissions through Redis at %v, in memory at %v", got, want)
	}
	if len(gotFb) != len(wantFb) {
		t.Fatalf("%d feedbacks through Redis, %d in memory", len(gotFb), len(wantFb))
	}
	for i := range wantFb {
		g, w := gotFb[i], wantFb[i]
		if g.Budget != w.Budget || g.Distrusted != w.Distrusted || (g.Cooldown-w.Cooldown).Abs() > 2*time.Microsecond {
			t.Errorf("feedback %d: redis %+v, memory %+v", i, g, w)
		}
	}
	wantAt := []time.Duration{
		0, 0, 0, 0, 0, // the first window, unpaced
		2*s + 10*ms, 2*s + 10*ms, // the two retries, held for their Retry-After
		2*s + 4*ms, 2*s + 211*ms, // the clean window: the share, then a probe after the retries' jitter band
		4*s + 4*ms, 4*s + 4*ms, 4*s + 4*ms, 4*s + 5*ms, // the share (2), one beyond at the opening, one a step later
		10 * s, 10 * s, 10 * s, 10 * s, // session:ab: unpaced
		11*s + 10*ms, 11*s + 10*ms, 11*s + 10*ms, // its reopening, refused whole
		13*s + 500*ms, 13*s + 500*ms, 13*s + 500*ms, 13*s + 501*ms, // the clean window after the proof
		// Refused with one of ours sent; three retries held later, a step
		// after their Retry-After: the partition looks alone (see
		// behindIn in package ratelimit).
		16 * s, 16 * s, 17*s + ms, 17*s + ms, 17*s + 2*ms,
		20 * s,           // session:cd: refused with nothing through
		22*s + 4*ms + ms, // ... its next goes with the probes of the window after
	}
	for range 36 { // session:ef: unpaced
		wantAt = append(wantAt, 30*s)
	}
	for range 35 { // the share (34) and one beyond it at the opening
		wantAt = append(wantAt, 34*s+4*ms)
	}
	wantAt = append(wantAt, 34*s+5*ms) // one more a step later
	if !slices.Equal(want, wantAt) {
		t.Errorf("admissions at %v, want %v", want, wantAt)
	}
	if fb := wantFb[1]; fb.Budget != (ratelimit.Budget{Limit: 3, Period: 2 * s}) || fb.Cooldown != 2*s-6*ms {
		t.Errorf("the first window teaches %+v, want the 3 that went through, and the partition reopening with the window (1.994 s; the retries wait their 2 s Retry-After)", fb)
	}
	if fb := wantFb[3]; fb.Budget != (ratelimit.Budget{Limit: 2, Period: 2 * s}) {
		t.Errorf("the refused probe leaves %+v, want the 3 through, less one", fb)
	}
	if fb := wantFb[len(wantFb)-6]; !fb.Distrusted || fb.Budget != (ratelimit.Budget{Limit: 3, Period: 2 * s}) || fb.Cooldown != 2*s {
		t.Errorf("the burst refused whole gives %+v, want a short Retry-After proved: the period doubled", fb)
	}
	if fb := wantFb[len(wantFb)-5]; fb.Budget != (ratelimit.Budget{Limit: 1, Period: s}) {
		t.Errorf("others' requests in the window give %+v, want the period back at 1 s", fb)
	}
	if fb := wantFb[len(wantFb)-4]; fb.Budget != (ratelimit.Budget{Limit: 1, Period: 2 * s}) {
		t.Errorf("nothing through gives %+v, want one per window", fb)
	}
	if fb := wantFb[len(wantFb)-2]; fb.Budget != (ratelimit.Budget{Limit: 34, Period: 2 * s}) {
		t.Errorf("34 of 36 through teach %+v, want 34", fb)
	}
	if fb := wantFb[len(wantFb)-1]; fb.Budget != (ratelimit.Budget{Limit: 33, Period: 2 * s}) {
		t.Errorf("the refused probe after 35 through leaves %+v, want 35 less a sixteenth (two)", fb)
	}
}

// Issue 21, item 1: while Redis is down, each process keeps pacing in its
// own in-memory limiter, which probes as the shared one does: a process
// that falls back alone learns its share and takes the others' back when
// they fall silent, rather than keeping the share it saw in one window.
func TestFallbackProbesToo(t *testing.T) {
	clk := &fakeClock{}
	l := New(nil) // no store at all: every operation would fail
	l.wall, l.local = clk.now, memoryOn(clk.now)
	l.down = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC) // in its failure backoff throughout
	got, gotFb := probingScenario(t, clk, l)
	want, wantFb := probingScenario(t, clk, memoryOn(clk.now))
	if !slices.Equal(got, want) || !slices.Equal(gotFb, wantFb) {
		t.Errorf("fallback: admissions %v, feedback %v; want the in-memory rules' %v, %v", got, gotFb, want, wantFb)
	}
}

// Issue 21, the last window's tail, in Redis: a partition that looks
// alone sends the first round of probes after the opening one two typical
// round trips (Reservation.Step) after the opening, not the margin, as
// ratelimit.Memory does. 34 of 36 through in the window at 30 s; the
// window at 34 s probes one beyond the share at its opening and the next
// 20 ms later (a step of 10 ms, a margin of 100 ms).
func TestFirstProbeRoundIsShared(t *testing.T) {
	want := sameInRedis(t, firstRoundScenario)
	const s, ms = time.Second, time.Millisecond
	var wantAt []time.Duration
	for range 36 {
		wantAt = append(wantAt, 30*s)
	}
	for range 35 { // the share (34) and one beyond it at the opening
		wantAt = append(wantAt, 34*s+4*ms)
	}
	wantAt = append(wantAt, 34*s+24*ms) // two steps later, not the margin (100 ms)
	if !slices.Equal(want, wantAt) {
		t.Errorf("admissions at %v, want %v", want, wantAt)
	}
}

// sameInRedis runs scenario on Redis and on ratelimit.Memory, each on a
// fake clock from its start, and returns the in-memory admissions after
// checking that Redis made the same.
func sameInRedis(t *testing.T, scenario func(*testing.T, *fakeClock, ratelimit.Limiter) []time.Duration) []time.Duration {
	t.Helper()
	rdb := newRedis(t)
	clk := &fakeClock{}
	red := New(rdb, WithKeyPrefix(testPrefix(t, rdb)))
	red.now = clk.now
	got := scenario(t, clk, red)
	want := scenario(t, clk, memoryOn(clk.now))
	if !slices.Equal(got, want) {
		t.Errorf("admissions through Redis at %v, in memory at %v", got, want)
	}
	return want
}

// firstRoundScenario is TestFirstProbeRoundIsShared's sequence on l.
func firstRoundScenario(t *testing.T, clk *fakeClock, l ratelimit.Limiter) []time.Duration {
	t.Helper()
	const s, ms = time.Second, time.Millisecond
	epoch := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	sc := &script{t: t, clk: clk, l: l, epoch: epoch}
	r := ratelimit.Reservation{Partition: "session:gh", Margin: ms, MaxWait: time.Minute, FixedWindows: true}
	clk.set(epoch.Add(30 * s))
	var adms []ratelimit.Admission
	for range 36 {
		adms = append(adms, sc.reserve(r))
	}
	clk.advance(10 * ms)
	for _, adm := range adms[34:] {
		sc.refuse(r.Partition, adm, 2*s)
	}
	clk.set(epoch.Add(34*s + 4*ms))
	r.Margin, r.Step = 100*ms, 10*ms
	for range 36 {
		sc.reserve(r)
	}
	return sc.at
}

// step of instructionScenario: one reservation's answer, as times from the
// scenario's epoch, or one observation's feedback.
type instructed struct {
	ok       bool
	wait, at time.Duration // at: when the slot goes; zero when none is held
	cooldown bool
	fb       ratelimit.Feedback
}

// instructionScenario drives the two rules of the gateway's own
// instructions on l (issue 22, items 2 and 3): a Retry-After beyond the cap
// closes the partition for the reservations that cannot wait the rest of it
// (a held slot being confirmed is given up), for as long as it says and no
// longer; and a retry whose distrusted wait was clamped goes before the
// lengthened cooldown ends, never before the gateway's instruction nor
// before its own clamped wait (issue 27), where
// the windows have room, under the sliding rule as in fixed windows, while
// other retries still wait for the cooldown.
func instructionScenario(t *testing.T, clk *fakeClock, l ratelimit.Limiter) []instructed {
	t.Helper()
	const s, ms = time.Second, time.Millisecond
	epoch := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ctx := context.Background()
	var out []instructed
	reserve := func(r ratelimit.Reservation) ratelimit.Admission {
		t.Helper()
		adm, err := l.Reserve(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		st := instructed{ok: adm.OK, wait: adm.Wait, cooldown: adm.Cooldown}
		if adm.Ticket != 0 {
			st.at = clk.now().Add(adm.Wait).Sub(epoch)
		}
		out = append(out, st)
		return adm
	}
	observe := func(p string, o ratelimit.Observation) {
		t.Helper()
		fb, err := l.Observe(ctx, p, o)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, instructed{fb: fb})
	}

	// A Retry-After of 15 s, capped at 2 s: a slot held before it, and
	// reservations that cannot wait the rest, are refused at once.
	paced := ratelimit.Reservation{Partition: "public", Budget: ratelimit.Budget{Limit: 1, Period: 10 * s}, MaxWait: time.Hour}
	clk.set(epoch)
	reserve(paced)         // 0: goes now
	held := reserve(paced) // 1: held for 10 s
	observe("public", ratelimit.Observation{Throttled: true, RetryAfter: 2 * s, Capped: true, Closed: 15 * s, MaxCooldown: 2 * s})
	short := paced
	short.MaxWait = 5 * s
	reserve(short) // 3: refused, 15 s left
	clk.set(epoch.Add(10 * s))
	confirm := short
	confirm.MaxWait, confirm.Ticket = s, held.Ticket
	reserve(confirm) // 4: given up, 5 s left
	reserve(short)   // 5: admitted: 5 s left fits; the cooldown is over and the slot given up is free
	clk.set(epoch.Add(15 * s))
	reserve(ratelimit.Reservation{Partition: "session:closed", MaxWait: 0}) // 6: another partition is open

	// Under the sliding rule: a 429, its retry refused again after 1 s,
	// which proves the header short: the cooldown doubles to 2 s.
	sliding := ratelimit.Reservation{Partition: "session:sl", MaxWait: time.Hour}
	clk.set(epoch.Add(20 * s))
	observe("session:sl", ratelimit.Observation{Throttled: true, RetryAfter: s, MaxCooldown: time.Minute}) // 7
	clk.set(epoch.Add(21 * s))
	retry := sliding
	retry.Retry = true
	adm := reserve(retry)                                                                                                      // 8: goes now
	observe("session:sl", ratelimit.Observation{Ticket: adm.Ticket, Throttled: true, RetryAfter: s, MaxCooldown: time.Minute}) // 9: distrusted
	clamped := retry
	clamped.Clamped, clamped.MaxWait, clamped.After = true, 1500*ms, 1500*ms
	c := reserve(clamped) // 10: at its clamped wait (22.5 s), after the instruction (22 s), before the cooldown (23 s)
	unclamped := retry
	unclamped.MaxWait = 1500 * ms
	reserve(unclamped) // 11: refused: the cooldown and its jitter
	unclamped.MaxWait = time.Hour
	reserve(unclamped) // 12: held at the cooldown's end, after the clamped one
	clk.set(epoch.Add(22*s + 500*ms))
	clamped.Ticket, clamped.MaxWait = c.Ticket, 0
	reserve(clamped) // 13: confirmed, before the slot held after it

	// In fixed windows, as a client sends: one call through, one refused
	// with Retry-After 1 s, its retry refused again in the same gateway
	// window: distrusted, the cooldown 2 s from the second 429.
	fixed := ratelimit.Reservation{Partition: "session:fw", Margin: ms, MaxWait: 3 * time.Minute, FixedWindows: true}
	clk.set(epoch.Add(30 * s))
	reserve(fixed)          // 14
	first := reserve(fixed) // 15
	refused := func(adm ratelimit.Admission) {
		observe("session:fw", ratelimit.Observation{Ticket: adm.Ticket, Throttled: true, RetryAfter: s, MaxCooldown: time.Minute,
			Margin: ms, FixedWindows: true, Admitted: adm.Budget})
	}
	refused(first) // 16
	retry = fixed
	retry.Retry, retry.After, retry.MaxWait = true, s, 3*time.Minute
	h := reserve(retry) // 17: the retry's slot, held
	clk.set(epoch.Add(31*s + 2*ms))
	retry.Ticket, retry.After = h.Ticket, 0
	again := reserve(retry) // 18: confirmed
	refused(again)          // 19: distrusted
	clamped = fixed
	clamped.Retry, clamped.Clamped, clamped.After, clamped.MaxWait = true, true, 1498*ms, 1498*ms
	c = reserve(clamped) // 20: in the next gateway window, at the clamped wait
	unclamped = clamped
	unclamped.Clamped = false
	reserve(unclamped) // 21: refused: the cooldown ends 2 s on
	unclamped.MaxWait = time.Hour
	reserve(unclamped) // 22: held at the cooldown's end, the window's probe
	clk.set(epoch.Add(32*s + 500*ms))
	clamped.Ticket, clamped.After, clamped.MaxWait = c.Ticket, 0, 0
	reserve(clamped) // 23: confirmed, before the probe held after it
	return out
}

// Issue 22, items 2 and 3, in Redis: the gateway's own instructions are
// kept in Lua exactly as in ratelimit.Memory.
func TestInstructionsAreShared(t *testing.T) {
	rdb := newRedis(t)
	const s, ms = time.Second, time.Millisecond
	clk := &fakeClock{}
	red := New(rdb, WithKeyPrefix(testPrefix(t, rdb)))
	red.now = clk.now
	got := instructionScenario(t, clk, red)
	want := instructionScenario(t, clk, memoryOn(clk.now))
	if len(got) != len(want) {
		t.Fatalf("%d steps through Redis, %d in memory", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ok != w.ok || g.cooldown != w.cooldown || (g.wait-w.wait).Abs() > 2*time.Microsecond || (g.at-w.at).Abs() > 2*time.Microsecond ||
			g.fb.Distrusted != w.fb.Distrusted || g.fb.Budget != w.fb.Budget || (g.fb.Cooldown-w.fb.Cooldown).Abs() > 2*time.Microsecond {
			t.Errorf("step %d: redis %+v, memory %+v", i, g, w)
		}
	}
	pins := []struct {
		step int
		want instructed
	}{
		{3, instructed{wait: 15 * s, cooldown: true}},
		{4, instructed{wait: 5 * s, cooldown: true}},
		{5, instructed{ok: true, at: 10 * s}},
		{6, instructed{ok: true, at: 15 * s}},
		{10, instructed{ok: true, wait: 1500 * ms, at: 22*s + 500*ms, cooldown: true}},
		{12, instructed{ok: true, wait: 2 * s, at: 23 * s, cooldown: true}},
		{13, instructed{ok: true, at: 22*s + 500*ms}},
		{20, instructed{ok: true, wait: 1498 * ms, at: 32*s + 500*ms, cooldown: true}},
		{22, instructed{ok: true, wait: 2 * s, at: 33*s + 2*ms, cooldown: true}},
		{23, instructed{ok: true, at: 32*s + 500*ms}},
	}
	for _, p := range pins {
		w := want[p.step]
		w.fb = ratelimit.Feedback{}
		if w != p.want {
			t.Errorf("step %d: %+v, want %+v", p.step, w, p.want)
		}
	}
	if !want[9].fb.Distrusted || !want[19].fb.Distrusted {
		t.Errorf("the second 429s are not distrusted: %+v, %+v", want[9].fb, want[19].fb)
	}
	for _, i := range []int{11, 21} {
		if want[i].ok {
			t.Errorf("step %d: a retry that is not clamped went before the lengthened cooldown: %+v", i, want[i])
		}
	}
}

// lateRetryScenario drives a partition alone behind its budget through the
// rule for its late retries (see behindIn in package ratelimit) and returns
// when each reservation and confirmation was admitted.
func lateRetryScenario(t *testing.T, clk *fakeClock, l ratelimit.Limiter) []time.Duration {
	t.Helper()
	const s, ms = time.Second, time.Millisecond
	epoch := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	sc := &script{t: t, clk: clk, l: l, epoch: epoch}
	r := ratelimit.Reservation{Partition: "public", Margin: ms, MaxWait: time.Minute, FixedWindows: true}
	reserve := sc.reserve
	refuse := func(adm ratelimit.Admission) { sc.refuse(r.Partition, adm, 2*s) }
	retry := r
	retry.Retry, retry.After = true, 2*s
	confirm := func(adm ratelimit.Admission) ratelimit.Admission {
		t.Helper()
		c := retry
		c.After, c.Ticket = 0, adm.Ticket
		return reserve(c)
	}
	// The first window: five go unpaced, two are refused; the clean window
	// takes their retries and one fresh call, and refuses its probe, with
	// three through: the budget is two.
	clk.set(epoch)
	var adms []ratelimit.Admission
	for range 5 {
		adms = append(adms, reserve(r))
	}
	clk.advance(10 * ms)
	for _, adm := range adms[3:] {
		refuse(adm)
		reserve(retry)
	}
	clk.set(epoch.Add(2*s + 4*ms))
	reserve(r)
	probe := reserve(r)
	clk.set(epoch.Add(2*s + 20*ms))
	refuse(probe)
	reserve(retry) // the first probed window: its late retry holds the probes back
	// The first probed window: the share at the opening, two probes after
	// the retry; the second is refused with three through again.
	clk.set(epoch.Add(4*s + 4*ms))
	for range 3 {
		probe = reserve(r)
	}
	clk.set(epoch.Add(4*s + 30*ms))
	refuse(probe)
	late := reserve(retry) // a step after its Retry-After: the probes do not wait for it
	// The next window: the share less the late retry's place, two probes at
	// the opening and one a step later, refused before the retry is due:
	// the retry moves to the next window's opening.
	clk.set(epoch.Add(6*s + 4*ms))
	for range 4 {
		probe = reserve(r)
	}
	clk.set(epoch.Add(6*s + 10*ms))
	refuse(probe)
	clk.set(epoch.Add(6*s + 30*ms))
	confirm(late)
	late = reserve(retry)
	// A window with room: the probes ramp past the late retry, which,
	// confirmed before it is due and again when it is, keeps its place.
	clk.set(epoch.Add(8*s + 4*ms))
	for range 40 {
		probe = reserve(r)
	}
	clk.set(epoch.Add(8*s + 30*ms))
	late = confirm(late)
	clk.set(epoch.Add(8*s + 31*ms))
	confirm(late)
	// The refused probe finds another count: others share the budget, and
	// the retry waits its Retry-After exactly.
	clk.set(epoch.Add(8*s + 50*ms))
	refuse(probe)
	reserve(retry)
	return sc.at
}

// Issue 21's one-process regression, in Redis: a partition alone behind its
// budget does not let its late retry hold the probes back, in Lua exactly as
// in ratelimit.Memory.
func TestLateRetryIsShared(t *testing.T) {
	want := sameInRedis(t, lateRetryScenario)
	const s, ms = time.Second, time.Millisecond
	wantAt := []time.Duration{
		0, 0, 0, 0, 0, // the first window, unpaced
		2*s + 10*ms, 2*s + 10*ms, 2*s + 4*ms, 2*s + 211*ms, // the clean window
		4*s + 20*ms,                          // the first probed window's late retry, at its Retry-After
		4*s + 4*ms, 4*s + 20*ms, 4*s + 21*ms, // the share, the probes after the retry
		6*s + 31*ms,                                    // the next late retry, a step after its Retry-After
		6*s + 4*ms, 6*s + 4*ms, 6*s + 4*ms, 6*s + 5*ms, // one fresh, two probes at the opening, one a step later
		8*s + 4*ms,             // the late retry, moved by the 429 before it was due
		8*s + 31*ms,            // the next one
		8*s + 4*ms, 8*s + 4*ms, // the window with room: the two retries are the share; two probes at the opening
	}
	// The ramp, past the late retry: rounds of 1, 2, 4, 8 and 16 probes a
	// step apart, then the rest of the 38.
	for round, size := range []int{1, 2, 4, 8, 16, 7} {
		for range size {
			wantAt = append(wantAt, 8*s+5*ms+time.Duration(round)*ms)
		}
	}
	wantAt = append(wantAt, 8*s+31*ms, 8*s+31*ms, // the late retry keeps its place, confirmed early and when due
		10*s+50*ms) // others share the budget: the retry at its Retry-After exactly
	if !slices.Equal(want, wantAt) {
		t.Errorf("admissions at %v, want %v", want, wantAt)
	}
}

// Issue 27 item 3, in Redis: an interactive reservation (a handler's call)
// goes ahead of the slots waiting calls hold, as in ratelimit.Memory. The
// random sequences of TestDifferentialFakeClock, with a third of the
// reservations interactive, must agree to the microsecond, and exercise
// interactive slots held ahead of others, confirmed, and refused.
func TestDifferentialInteractive(t *testing.T) {
	rdb := newRedis(t)
	var aheadOfHeld, confirmed, waited int
	for seed := range uint64(4) {
		start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(seed) * 7919 * time.Millisecond)
		clk := &fakeClock{t: start}
		w := &twin{mem: memoryOn(clk.now), red: New(rdb, WithKeyPrefix(testPrefix(t, rdb))), tolerance: 2 * time.Microsecond}
		w.red.now = clk.now
		rng := mrand.New(mrand.NewPCG(27+seed, 3))
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			for i, o := range genOps(mrand.New(mrand.NewPCG(6+seed, 46)), 1500, true, true) {
				if o.advance > 0 {
					clk.advance(o.advance)
					continue
				}
				if o.res != nil && rng.IntN(3) == 0 {
					r := *o.res
					r.Interactive = true
					o.res = &r
				}
				var later bool
				if o.res != nil && o.res.Interactive {
					now := clk.now().UnixMicro()
					for _, x := range w.sends(t, o.part) {
						later = later || x > now
					}
				}
				want, reserved := w.step(t, i, o)
				if !reserved || o.res == nil || !o.res.Interactive || !want.OK {
					continue
				}
				if o.held >= 0 && want.Ticket != 0 {
					confirmed++
				}
				if want.Wait > 0 {
					waited++
				}
				if want.Ticket != 0 && later {
					// Held slots come after the one it got: it went ahead.
					for _, x := range w.sends(t, o.part) {
						if x > want.Ticket/1000 {
							aheadOfHeld++
							break
						}
					}
				}
			}
		})
	}
	if aheadOfHeld == 0 || confirmed == 0 || waited == 0 {
		t.Errorf("interactive sequence too tame: %d ahead of held slots, %d confirmed, %d waited", aheadOfHeld, confirmed, waited)
	}
	t.Logf("interactive: %d ahead of held slots, %d confirmed, %d waited", aheadOfHeld, confirmed, waited)
}

// An interactive reservation goes ahead of a long backlog of held slots.
// The script put it into the log by popping every later slot and pushing
// them back with one unpack, which Lua refuses past about 8,000 values: the
// call went unpaced and the Limiter fell back to its local state. It now
// inserts the slot in one LINSERT.
func TestInteractiveAheadOfALongBacklog(t *testing.T) {
	rdb := newRedis(t)
	clk := &fakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	l := New(rdb, WithKeyPrefix(testPrefix(t, rdb)))
	l.now = clk.now
	ctx := context.Background()
	_, sends := l.keys("public")
	now := clk.now().UnixMicro()
	backlog := make([]any, 9500)
	for i := range backlog {
		backlog[i] = strconv.FormatInt(now+int64(i+1)*2000, 10) // held slots, 2 ms apart
	}
	if err := rdb.RPush(ctx, sends, backlog...).Err(); err != nil {
		t.Fatal(err)
	}
	a, err := l.Reserve(ctx, ratelimit.Reservation{Partition: "public", MaxWait: time.Hour, Interactive: true,
		FixedWindows: true, Budget: ratelimit.Budget{Limit: 500, Period: time.Second}})
	if err != nil || !a.OK {
		t.Fatalf("Reserve = %+v, %v", a, err)
	}
	got, err := rdb.LRange(ctx, sends, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(backlog)+1 {
		t.Fatalf("the log holds %d slots, want %d: the reservation did not reach the store", len(got), len(backlog)+1)
	}
	prev := int64(-1 << 62)
	for i, s := range got {
		var x int64
		if _, err := fmt.Sscan(s, &x); err != nil || x < prev {
			t.Fatalf("slot %d = %q after %d: the log is out of order", i, s, prev)
		}
		prev = x
	}
}
