package redislimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	rail0 "github.com/rail0/rail0-go"
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
func paced(partition string) rail0.Reservation {
	b := rail0.Budget{Limit: 5, Period: 300 * time.Millisecond}
	return rail0.Reservation{Partition: partition, Budget: b, Period: b.Period, MaxWait: time.Hour}
}

// reserveMany runs goroutines × n reservations on each limiter at once and
// returns every admission time handed out, per goroutine in call order.
func reserveMany(t *testing.T, ls []*Limiter, goroutines, n int, r rail0.Reservation) [][]time.Time {
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
	// The log keeps only the last Limit admissions.
	_, sends := l.keys("public")
	if n, err := l.rdb.LLen(context.Background(), sends).Result(); err != nil || n != int64(r.Budget.Limit) {
		t.Errorf("sends log holds %d entries (%v), want %d", n, err, r.Budget.Limit)
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

// TestFIFOThroughCooldown checks that a later caller with a smaller jitter
// draw is not admitted before an earlier one.
func TestFIFOThroughCooldown(t *testing.T) {
	rdb := newRedis(t)
	l := New(rdb, WithKeyPrefix(testPrefix(t, rdb)))
	ctx := context.Background()
	if err := l.Cooldown(ctx, "public", time.Second); err != nil {
		t.Fatal(err)
	}
	r := rail0.Reservation{Partition: "public", MaxWait: time.Hour, Jitter: 0.9}
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
	r := rail0.Reservation{Partition: "public", MaxWait: time.Hour}
	wait := func() time.Duration {
		t.Helper()
		a, err := l.Reserve(ctx, r)
		if err != nil || !a.OK || !a.Cooldown {
			t.Fatalf("Reserve = %+v, %v; want OK and set by the cooldown", a, err)
		}
		return a.Wait
	}

	if err := l.Cooldown(ctx, "public", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := l.Cooldown(ctx, "public", 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if got := wait(); got != 2*time.Second {
		t.Errorf("after cooldowns of 2 s then 100 ms, wait = %v, want 2s", got)
	}
	clk.advance(500 * time.Millisecond)
	if err := l.Cooldown(ctx, "public", 3*time.Second); err != nil {
		t.Fatal(err)
	}
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
	if len(s0) != r.Budget.Limit || h0["last"] == "" {
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
	if err := l.Cooldown(ctx, "session:ff", time.Minute); err != nil {
		t.Fatal(err)
	}
	h0, s0 = dump(t, rdb, l, "session:ff")
	a, err = l.Reserve(ctx, rail0.Reservation{Partition: "session:ff", MaxWait: time.Second})
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
	for _, k := range []string{state, sends} {
		ttl, err := rdb.PTTL(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		// One period (300 ms) plus the one-second slack, at most.
		if ttl <= 0 || ttl > 1300*time.Millisecond {
			t.Errorf("TTL of %s = %v, want in (0, 1.3s]", k, ttl)
		}
	}
	if err := l.Cooldown(ctx, "public", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if ttl, err := rdb.PTTL(ctx, state).Result(); err != nil || ttl < 10*time.Second || ttl > 11*time.Second {
		t.Errorf("TTL of %s after a 10 s cooldown = %v, %v; want in [10s, 11s]", state, ttl, err)
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
	err = l.Cooldown(ctx, "public", time.Second)
	if !errors.As(err, &e) || e.Op != "cooldown" {
		t.Errorf("Cooldown on an unreachable server = %v, want *Error{Op: cooldown}", err)
	}
	if err := l.Cooldown(ctx, "public", 0); err != nil {
		t.Errorf("a zero cooldown = %v, want nil without touching the server", err)
	}

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Reserve(canceled, paced("public")); !errors.Is(err, context.Canceled) {
		t.Errorf("Reserve with a canceled context = %v, want context.Canceled", err)
	}
}

// op is one step of a differential sequence.
type op struct {
	advance  time.Duration // move the clock
	cooldown time.Duration // Cooldown(partition, cooldown)
	res      *rail0.Reservation
	part     string
}

// genOps draws a sequence of n operations on two partitions. Without
// advances the clock stays put, for runs against the server's TIME; then
// every wait is either zero or over a second, and MaxWait is 0 or an hour,
// so that the milliseconds between steps cannot flip a decision.
func genOps(rng *mrand.Rand, n int, advances bool) []op {
	budgets := map[string]rail0.Budget{
		"public":           {Limit: 3, Period: 2 * time.Second},
		"session:00c0ffee": {Limit: 5, Period: 5 * time.Second},
	}
	parts := []string{"public", "session:00c0ffee"}
	maxWaits := []time.Duration{0, 500 * time.Millisecond, 3 * time.Second, time.Hour}
	minCooldown := 100 * time.Millisecond
	if !advances {
		maxWaits = []time.Duration{0, time.Hour}
		minCooldown = time.Second
	}
	var ops []op
	for range n {
		p := parts[rng.IntN(len(parts))]
		switch k := rng.IntN(20); {
		case k < 3 && advances:
			ops = append(ops, op{advance: time.Duration(rng.IntN(1500)) * time.Millisecond})
		case k < 6:
			ops = append(ops, op{part: p, cooldown: minCooldown + time.Duration(rng.IntN(4000))*time.Millisecond})
		default:
			r := rail0.Reservation{
				Partition: p,
				Jitter:    rng.Float64(),
				MaxWait:   maxWaits[rng.IntN(len(maxWaits))],
			}
			if rng.IntN(10) > 0 { // now and then a call without pacing
				r.Budget = budgets[p]
				r.Period = r.Budget.Period + 40*time.Millisecond
			}
			ops = append(ops, op{part: p, res: &r})
		}
	}
	return ops
}

// TestDifferentialFakeClock replays one long random sequence on the
// in-memory reference and on Redis with the same injected clock: every
// admission must agree, to the microsecond Redis stores.
func TestDifferentialFakeClock(t *testing.T) {
	rdb := newRedis(t)
	ctx := context.Background()
	clk := &fakeClock{t: time.Now().Truncate(time.Millisecond)}
	mem := rail0.NewMemoryLimiter(clk.now)
	red := New(rdb, WithKeyPrefix(testPrefix(t, rdb)))
	red.now = clk.now

	var refused, cooled, waited int
	for i, o := range genOps(mrand.New(mrand.NewPCG(6, 42)), 600, true) {
		switch {
		case o.advance > 0:
			clk.advance(o.advance)
		case o.res == nil:
			if err := mem.Cooldown(ctx, o.part, o.cooldown); err != nil {
				t.Fatal(err)
			}
			if err := red.Cooldown(ctx, o.part, o.cooldown); err != nil {
				t.Fatal(err)
			}
		default:
			want, err := mem.Reserve(ctx, *o.res)
			if err != nil {
				t.Fatal(err)
			}
			got, err := red.Reserve(ctx, *o.res)
			if err != nil {
				t.Fatal(err)
			}
			if got.OK != want.OK || got.Cooldown != want.Cooldown || (got.Wait-want.Wait).Abs() > 2*time.Microsecond {
				t.Fatalf("step %d %+v: redis %+v, memory %+v", i, *o.res, got, want)
			}
			if !want.OK {
				refused++
			}
			if want.Cooldown {
				cooled++
			}
			if want.OK && want.Wait > 0 {
				waited++
			}
		}
	}
	// The sequence must exercise every branch for the comparison to mean
	// anything.
	if refused == 0 || cooled == 0 || waited == 0 {
		t.Errorf("sequence too tame: %d refused, %d cooled, %d waited", refused, cooled, waited)
	}
}

// TestDifferentialServerTime replays a sequence against Redis on its own
// TIME, setting the reference's clock to the server's time read just before
// each step. The admission times may then differ by the few milliseconds
// that pass between that read and the script, never by a period.
func TestDifferentialServerTime(t *testing.T) {
	rdb := newRedis(t)
	ctx := context.Background()
	clk := &fakeClock{}
	mem := rail0.NewMemoryLimiter(clk.now)
	red := New(rdb, WithKeyPrefix(testPrefix(t, rdb)))
	const tolerance = 250 * time.Millisecond

	for i, o := range genOps(mrand.New(mrand.NewPCG(7, 7)), 40, false) {
		now, err := rdb.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		clk.set(now)
		if o.res == nil {
			if err := mem.Cooldown(ctx, o.part, o.cooldown); err != nil {
				t.Fatal(err)
			}
			if err := red.Cooldown(ctx, o.part, o.cooldown); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := mem.Reserve(ctx, *o.res)
		if err != nil {
			t.Fatal(err)
		}
		got, at, err := red.reserve(ctx, *o.res)
		if err != nil {
			t.Fatal(err)
		}
		wantAt := now.Add(want.Wait)
		if got.OK != want.OK || got.Cooldown != want.Cooldown || at.Sub(wantAt).Abs() > tolerance {
			t.Fatalf("step %d %+v: redis %+v at %v, memory %+v at %v", i, *o.res, got, at, want, wantAt)
		}
	}
}
