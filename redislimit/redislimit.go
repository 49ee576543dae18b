// Package redislimit is a ratelimit.Limiter kept in Redis. Many processes
// or machines behind one egress IP, or sharing one session token, can then:
//   - pace themselves against one budget;
//   - honour one another's cooldowns;
//   - share the budget they learn from the gateway's answers.
//
// Plug it into a client with rail0.WithLimiter:
//
//	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
//	c, err := rail0.NewClient("https://api.rail0.xyz",
//		rail0.WithRetryOn429(true),
//		rail0.WithLimiter(redislimit.New(rdb)),
//	)
//
// # Semantics
//
// The Limiter has exactly the semantics of ratelimit.Memory:
//   - a log of admission times per partition: the sliding log that paces,
//     and the requests the budget estimate counts;
//   - a cooldown that is never shortened;
//   - the learned budget;
//   - retries before fresh calls while a partition is closed;
//   - slots that are confirmed after the caller's sleep, and given back
//     when it gives up.
//
// Each operation is one Lua script that runs atomically on the partition's
// keys. So concurrent callers in any number of processes see one
// consistent state. Every time comes from the Redis server's TIME inside
// the script. Only relative durations cross the wire. So processes whose
// clocks disagree still agree on the schedule.
//
// A call admitted at once costs one round trip. A call that waits costs a
// second one, the confirmation after its sleep. A 429 costs two more: one
// to record it and one to hold the slot of its retry.
//
// It honours ratelimit.Reservation.FixedWindows as ratelimit.Memory does
// (a rail0.Client always sets it). The partition admits its whole budget
// in each window of the budget's period, aligned to the Unix epoch, as the
// gateway's Rack::Attack counts. It keeps the clock allowance and the
// margin around each boundary. A 429 marks its window full.
//
// A learned budget is probed as ratelimit.Memory probes it:
//   - one request beyond it at each window's opening;
//   - then rounds a round trip apart that double the probes while no 429
//     shows the window full;
//   - a sixteenth given back on a 429.
//
// So the processes sharing the store find their parts. So do any others
// behind the same budget that do not share it. The probes are the shared
// partition's, not each process's.
//
// Take a partition paced at a budget it does not probe: configured, or
// stated by RateLimit fields and configured alike. After two 429s that its
// own count cannot explain, it keeps to the sliding rule (first in, first
// out) until it is forgotten. The shared state holds the window a 429
// showed full, the probes' start, the count of those 429s and the
// fallback. So every process sharing the store keeps the same windows, and
// falls back with the others. The windows are aligned on the Redis
// server's clock. Keep that clock by NTP, like the gateway's.
//
// This package keeps the sliding log of ratelimit.Memory rather than the
// GCRA of github.com/go-redis/redis_rate. docs/ratelimit-design.md ("Why
// not redis_rate") says why.
//
// # Keys and expiry
//
// A partition p uses two keys:
//   - prefix + "{" + p + "}:state" is a hash. It holds the cooldown, the
//     learned budget and the end of the latest window a 429 showed full.
//     It holds the count of contradicted 429s and the fallback to the
//     sliding rule. It holds what the probes need: whether the budget was
//     advertised or is shared, where probing and the clean ramp start, and
//     the window a 429 reopened.
//   - prefix + "{" + p + "}:sends" is a list of admission times in
//     microseconds, ascending. It holds at most 4096, but for the slots
//     that fixed windows still count. It holds none older than the longer
//     of two minutes and two periods.
//
// The braces form a Redis Cluster hash tag. So both keys land on one
// slot, and the scripts work with a cluster client. Both keys expire ten
// minutes after the partition last constrained anything, as
// ratelimit.Memory forgets idle partitions. Partitions never contain a
// token: the SDK hashes it.
//
// The scripts use LPOS, which needs Redis 6.0.6 or later.
//
// # Failures
//
// Every operation is bounded by its context: the SDK passes what the call
// can still spend on rate limiting. It is also bounded by the Limiter's
// own timeout (WithTimeout, default 500 ms). Both hold even when the Redis
// client does not enforce context deadlines itself.
//
// An operation that fails or runs out of time returns an *Error. The rail0
// client then fails open: it sends without pacing, and logs the error. A
// broken limiter store must not stop payments. The Limiter then stops
// asking Redis for a while: 1 s, doubling up to 30 s while failures go on.
// Meanwhile it keeps pacing, cooldowns and the learned budget in a local
// ratelimit.Memory. So a dead store costs each call nothing, and the
// process still honours the 429s it sees. When the while is over, one
// check asks Redis in the background. The calls keep the local fallback
// until Redis answers it. So a store that stalls holds only the calls in
// flight when it first fails. Give the Redis client short DialTimeout,
// ReadTimeout and PoolTimeout values anyway. Then connections stuck on a
// dead server are reclaimed.
package redislimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rail0/rail0-go/internal/jitter"
	"github.com/rail0/rail0-go/internal/limitrules"
	"github.com/rail0/rail0-go/ratelimit"
)

// DefaultPrefix is the key prefix used unless WithKeyPrefix says otherwise.
const DefaultPrefix = "rail0:rl:"

// DefaultTimeout bounds every Redis operation unless WithTimeout says
// otherwise.
const DefaultTimeout = 500 * time.Millisecond

const (
	// cooldownJitter is the share of a cooldown's length over which
	// retries spread their admission. ratelimit.Reservation.Jitter
	// documents it.
	cooldownJitter = limitrules.RetryJitter
	// ttlSlack is added to every key's time to live.
	ttlSlack = time.Second
	// yieldShare is ratelimit.Memory's. A probing partition refused in a
	// window gives up this share of what went through in it.
	yieldShare = limitrules.YieldShare
	// The log's bounds and the idle time, as in ratelimit.Memory.
	logHorizon = limitrules.LogHorizon
	maxLog     = limitrules.MaxLog
	idleAfter  = limitrules.IdleAfter
	// firstBackoff and maxBackoff bound how long the Limiter uses its local
	// fallback after Redis failed.
	firstBackoff = time.Second
	maxBackoff   = 30 * time.Second
)

// Limiter is a ratelimit.Limiter backed by Redis. It is safe for
// concurrent use. It holds no rate-limit state of its own while Redis
// answers. So any number of Limiters on any number of machines share one
// budget, when they share a Redis server and a key prefix.
type Limiter struct {
	rdb     redis.UniversalClient
	prefix  string
	timeout time.Duration
	// now, when set, replaces the server's TIME. Tests use it to replay a
	// schedule exactly. It is nil in every Limiter that New returns.
	now func() time.Time
	// wall is the local clock of the failure backoff.
	wall func() time.Time

	local *ratelimit.Memory // used while Redis is down
	mu    sync.Mutex
	down  time.Time     // Redis is not asked before this; zero when it answers
	wait  time.Duration // the current backoff
	// checking: a check of the store runs in the background (see useLocal).
	checking bool
	// inflight counts operations still waiting for Redis after their
	// caller was answered; tests wait for them.
	inflight sync.WaitGroup
}

var _ ratelimit.Limiter = (*Limiter)(nil)

// Option configures a Limiter.
type Option func(*Limiter)

// WithKeyPrefix sets the prefix of every key the Limiter writes (default
// DefaultPrefix). Give each independent budget its own prefix, e.g. one per
// deployment sharing a Redis server. An empty prefix keeps the default.
func WithKeyPrefix(prefix string) Option {
	return func(l *Limiter) {
		if prefix != "" {
			l.prefix = prefix
		}
	}
}

// WithTimeout bounds every Redis operation (default DefaultTimeout), on top
// of the caller's context. A non-positive d keeps the default.
func WithTimeout(d time.Duration) Option {
	return func(l *Limiter) {
		if d > 0 {
			l.timeout = d
		}
	}
}

// New returns a Limiter that keeps its state in rdb, which may be a single
// node, a failover or a cluster client. It does no I/O.
func New(rdb redis.UniversalClient, opts ...Option) *Limiter {
	l := &Limiter{rdb: rdb, prefix: DefaultPrefix, timeout: DefaultTimeout, wall: time.Now}
	for _, o := range opts {
		o(l)
	}
	l.local = ratelimit.NewMemory()
	return l
}

// Error reports a failed limiter operation. It unwraps to the cause, such
// as a network error from go-redis or a context error when the operation
// ran out of time.
type Error struct {
	// Op is "reserve", "release" or "observe".
	Op string
	// Partition is the partition operated on ("public" or "session:<hash>").
	Partition string
	// Err is the cause.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("redislimit: %s %s: %v", e.Op, e.Partition, e.Err)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// errNilClient is the cause reported when New was given a nil client.
var errNilClient = errors.New("nil redis client")

// keys returns the state and sends keys of a partition.
func (l *Limiter) keys(partition string) (state, sends string) {
	base := l.prefix + "{" + partition + "}"
	return base + ":state", base + ":sends"
}

// nowArg is the script's clock argument: empty for the server's TIME.
func (l *Limiter) nowArg() string {
	if l.now == nil {
		return ""
	}
	return strconv.FormatInt(l.now().UnixMicro(), 10)
}

// useLocal reports whether the Limiter answers from its local fallback.
// It does from a failure of the store until the store answers again. Once
// the backoff has passed, one check asks the store in the background (see
// check). It asks on partition's key: a cluster routes that to the
// partition's master. The callers keep the fallback until it answers.
//
// Why not let the next callers ask the store, as before? A store that
// stalls would hold every call in flight at the end of each backoff for
// the whole timeout. A killed master stalls until the failover or the
// timeout. The timeout is half a second by default, and came three or four
// times in a run of a few windows. That cost 1.13-1.19 × the floor for 4
// and 8 processes with one or two workers each, against 1.07 with the
// check. TestProcessesSharingALimiterSurviveTheStore measures it; its
// model follows this rule.
func (l *Limiter) useLocal(partition string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.down.IsZero() {
		return false
	}
	if !l.wall().Before(l.down) && !l.checking {
		l.checking = true
		l.inflight.Add(1)
		go l.check(partition)
	}
	return true
}

// check asks the store whether it answers, with a read of partition's
// state key. An answer within the Limiter's timeout ends the fallback. An
// error, or no answer by then, doubles the backoff. Either way the check
// is over within the timeout. So the next caller after the backoff starts
// another. The read runs on its own goroutine, as run's scripts do.
// go-redis ignores context deadlines unless ContextTimeoutEnabled is set.
// With no read timeout, a stalled store would hold the check for as long
// as it stalls, and so keep the fallback. The read finishes in the
// background.
func (l *Limiter) check(partition string) {
	defer l.inflight.Done()
	err := errNilClient
	if l.rdb != nil {
		state, _ := l.keys(partition)
		err = l.within(context.Background(), func(ctx context.Context) error {
			return l.rdb.Exists(ctx, state).Err()
		})
	}
	if err != nil {
		l.failed()
	} else {
		l.recovered()
	}
	l.mu.Lock()
	l.checking = false
	l.mu.Unlock()
}

// within runs do within ctx and the Limiter's timeout, on its own
// goroutine. So a Redis client that ignores context deadlines cannot hold
// the caller past the bound. (go-redis ignores them unless
// ContextTimeoutEnabled is set.) do finishes in the background. Its error
// is the deadline's when the bound came first.
func (l *Limiter) within(ctx context.Context, do func(context.Context) error) error {
	bctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	done := make(chan error, 1)
	l.inflight.Add(1)
	go func() {
		defer l.inflight.Done()
		done <- do(bctx)
	}()
	select {
	case err := <-done:
		return err
	case <-bctx.Done():
		return bctx.Err()
	}
}

// failed starts or lengthens the failure backoff.
func (l *Limiter) failed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.wait = min(max(2*l.wait, firstBackoff), maxBackoff)
	l.down = l.wall().Add(l.wait)
}

// recovered ends the failure backoff.
func (l *Limiter) recovered() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.wait, l.down = 0, time.Time{}
}

// minStall is how long a store must have had to answer before a caller's
// deadline counts as the store being down.
const minStall = 20 * time.Millisecond

// run runs one script within the caller's context and the Limiter's
// timeout. The script runs on its own goroutine (see within). So a Redis
// client that ignores context deadlines cannot hold the caller past the
// bound. The script finishes in the background. A failure, or no answer
// within the Limiter's timeout, starts the failure backoff.
func (l *Limiter) run(ctx context.Context, op, partition string, script *redis.Script, keys []string, args ...any) ([]int64, error) {
	fail := func(err error) ([]int64, error) {
		return nil, &Error{Op: op, Partition: partition, Err: err}
	}
	if l.rdb == nil {
		return fail(errNilClient)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	// A deadline that left the store less than minStall says nothing about
	// the store if it passes. It is judged from the deadline, not from the
	// time spent. A timer that fires late on a loaded machine must not
	// turn a caller's tiny deadline into an outage.
	fair := true
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < minStall {
		fair = false
	}
	var v []int64
	err := l.within(ctx, func(bctx context.Context) (err error) {
		v, err = script.Run(bctx, l.rdb, keys, args...).Int64Slice()
		return err
	})
	if err != nil {
		if ctx.Err() == nil || (!errors.Is(ctx.Err(), context.Canceled) && fair) {
			// An error, or no answer within the Limiter's timeout: for
			// the next calls, the store is down. So it is after no answer
			// within a caller's deadline that left the store a fair
			// chance. A caller that gave up says nothing about the store.
			// Nor does one whose deadline left the store no time (a few
			// microseconds).
			l.failed()
		}
		return fail(err)
	}
	l.recovered()
	return v, nil
}

// Reserve implements ratelimit.Limiter.
func (l *Limiter) Reserve(ctx context.Context, r ratelimit.Reservation) (ratelimit.Admission, error) {
	a, _, err := l.reserve(ctx, r)
	return a, err
}

// reserve is Reserve that also returns the admission time on the Redis
// clock, which tests use to check the pacing guarantee exactly.
func (l *Limiter) reserve(ctx context.Context, r ratelimit.Reservation) (ratelimit.Admission, time.Time, error) {
	if l.useLocal(r.Partition) {
		a, err := l.local.Reserve(ctx, r)
		return a, l.wall().Add(a.Wait), err
	}
	state, sends := l.keys(r.Partition)
	res, err := l.run(ctx, "reserve", r.Partition, reserveScript, []string{state, sends},
		r.Budget.Limit,
		microsCeil(r.Budget.Period),
		microsCeil(max(r.Margin, 0)),
		btoi(r.Retry),
		strconv.FormatFloat(jitter.Clamp(r.Jitter), 'g', -1, 64),
		microsFloor(r.MaxWait),
		r.Ticket,
		l.nowArg(),
		microsCeil(ttlSlack),
		maxLog,
		microsCeil(logHorizon),
		microsCeil(idleAfter),
		btoi(r.FixedWindows),
		microsCeil(max(r.After, 0)),
		btoi(r.Clamped),
		microsCeil(max(r.Step, 0)),
		btoi(r.Guessed),
		btoi(r.Interactive),
	)
	if err != nil {
		return ratelimit.Admission{}, time.Time{}, err
	}
	if len(res) != 8 {
		return ratelimit.Admission{}, time.Time{}, &Error{Op: "reserve", Partition: r.Partition, Err: fmt.Errorf("script returned %d values, want 8", len(res))}
	}
	a := ratelimit.Admission{
		OK:         res[0] == 1,
		Wait:       time.Duration(res[1]) * time.Microsecond,
		Cooldown:   res[2] == 1,
		Ticket:     res[3],
		Budget:     ratelimit.Budget{Limit: int(res[4]), Period: time.Duration(res[5]) * time.Microsecond},
		Advertised: res[7] == 1,
	}
	return a, time.UnixMicro(res[6]).Add(a.Wait), nil
}

// Release implements ratelimit.Limiter.
func (l *Limiter) Release(ctx context.Context, partition string, ticket int64) error {
	if ticket == 0 {
		return nil
	}
	if l.useLocal(partition) {
		return l.local.Release(ctx, partition, ticket)
	}
	_, sends := l.keys(partition)
	_, err := l.run(ctx, "release", partition, releaseScript, []string{sends}, ticket)
	return err
}

// Observe implements ratelimit.Limiter.
func (l *Limiter) Observe(ctx context.Context, partition string, o ratelimit.Observation) (ratelimit.Feedback, error) {
	if l.useLocal(partition) {
		return l.local.Observe(ctx, partition, o)
	}
	state, sends := l.keys(partition)
	res, err := l.run(ctx, "observe", partition, observeScript, []string{state, sends},
		o.Ticket,
		btoi(o.Throttled),
		microsCeil(o.RetryAfter),
		microsCeil(o.MaxCooldown),
		o.Advertised.Limit,
		microsCeil(o.Advertised.Period),
		microsCeil(o.Reset),
		o.Budget.Limit,
		microsCeil(o.Budget.Period),
		microsCeil(max(o.Margin, 0)),
		l.nowArg(),
		microsCeil(ttlSlack),
		microsCeil(idleAfter),
		btoi(o.Capped),
		btoi(o.FixedWindows),
		o.Admitted.Limit,
		microsCeil(o.Admitted.Period),
		microsCeil(max(o.Closed, 0)),
		btoi(o.Unadvertised),
	)
	if err != nil {
		return ratelimit.Feedback{}, err
	}
	if len(res) != 4 {
		return ratelimit.Feedback{}, &Error{Op: "observe", Partition: partition, Err: fmt.Errorf("script returned %d values, want 4", len(res))}
	}
	return ratelimit.Feedback{
		Cooldown:   time.Duration(res[0]) * time.Microsecond,
		Distrusted: res[1] == 1,
		Budget:     ratelimit.Budget{Limit: int(res[2]), Period: time.Duration(res[3]) * time.Microsecond},
	}, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// microsCeil converts d to whole microseconds, rounding up so that a period
// or cooldown is never shortened.
func microsCeil(d time.Duration) int64 {
	us := int64(d / time.Microsecond)
	if d%time.Microsecond > 0 {
		us++
	}
	return us
}

// microsFloor converts d to whole microseconds, rounding down so that a
// wait longer than d is never accepted.
func microsFloor(d time.Duration) int64 {
	us := int64(d / time.Microsecond)
	if d%time.Microsecond < 0 {
		us--
	}
	return us
}

// luaCommon holds the helpers every script shares. Times are microseconds
// since the epoch (exact in a Lua double).
const luaCommon = `
local function clock(arg)
  if arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
-- str formats an integral number in full: Lua's default formatting would
-- turn 1.7e15 into "1.7e+15" and lose digits.
local function str(x) return string.format('%.0f', x) end
-- expire sets a key's TTL to ms milliseconds.
local function expire(key, ms)
  redis.call('PEXPIRE', key, str(math.max(ms, 1)))
end
-- effective is the budget in force: configured, learned, or the stricter.
local function effective(cl, cp, ll, lp)
  if not (ll > 0 and lp > 0) then return cl, cp end
  if not (cl > 0 and cp > 0) then return ll, lp end
  return math.min(cl, ll), math.max(cp, lp)
end
-- fields names a partition's state:
--   cs, cu: the cooldown's start and end;
--   ll, lp: the learned limit and period;
--   fu: the end of the window a 429 showed full;
--   ct: the count of contradicted 429s;
--   sl: the fallback to the sliding rule;
--   ad: the learned budget is advertised;
--   sh: others' requests were seen in our windows;
--   pf: the start of the probes;
--   rf: when the clean window's ramp may start;
--   ud: the period before a short Retry-After doubled it;
--   rs, ru, rl, rp: the cooldown the partition last reopened from, and
--     the budget then;
--   tu: when the gateway's latest instruction ends (a clamped retry goes
--     no earlier);
--   xu: when its uncapped instruction ends (calls that cannot wait the
--     rest of it are refused at once).
-- For a partition that looks alone behind its budget (see behindIn and
-- lone in package ratelimit):
--   bh: the slot of the late retry the probes do not wait for;
--   pb: what went through in the window of the latest refused probe;
--   vr: whether two refused probes found different counts.
local fields = {'cs', 'cu', 'll', 'lp', 'fu', 'ct', 'sl', 'ad', 'sh', 'pf', 'rf', 'ud', 'rs', 'ru', 'rl', 'rp', 'tu', 'xu', 'bh', 'pb', 'vr'}
-- state reads a partition's state hash, 0 for what is not set.
local function state(key)
  local v = redis.call('HMGET', key, unpack(fields))
  local st = {}
  for i, f in ipairs(fields) do st[f] = tonumber(v[i]) or 0 end
  return st
end
-- save writes a partition's state hash.
local function save(key, st)
  local kv = {}
  for _, f in ipairs(fields) do
    kv[#kv + 1] = f
    kv[#kv + 1] = str(st[f])
  end
  redis.call('HSET', key, unpack(kv))
end
-- probes: the partition looks for room beyond a budget it learned, from
-- 429s or RateLimit fields. That budget is below the configured one, if
-- any (see probes in package ratelimit).
local function probes(st, cl, cp)
  return st.ll > 0 and st.lp > 0 and st.sl == 0 and (not (cl > 0 and cp > 0) or st.ll < cl)
end
`

// luaWindows holds the fixed-window rules of ratelimit.Memory: see
// windowsOf, alignedAt and confirmAligned there. They work over an
// ascending array of admission times in microseconds. The clock allowance
// and the late bound are rounded up to whole microseconds. So the band is
// a fraction of a microsecond wider than the in-memory one, never
// narrower.
var luaWindows = `
-- floorDiv is floor(a / b) for b > 0, exactly. The quotient of two
-- doubles may round to the integer just above, when a is just below a
-- multiple of b.
local function floorDiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end
-- rank returns how many entries of the ascending array xs are below v, or
-- at most v when incl is true.
local function rank(xs, v, incl)
  local lo, hi = 1, #xs + 1
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    if xs[mid] < v or (incl and xs[mid] == v) then lo = mid + 1 else hi = mid end
  end
  return lo - 1
end
-- confirmAt is the first time from t at which the ascending log xs has
-- room for one more under the sliding rule: fewer than limit entries in
-- the stretched period per before it (see confirmAt in package ratelimit).
local function confirmAt(xs, t, limit, per)
  if limit <= 0 then return t end
  while true do
    local hi = rank(xs, t, true)
    if hi < limit then return t end
    local nxt = xs[hi - limit + 1] + per
    if nxt <= t then return t end
    t = nxt
  end
end
-- logInsert puts t into the ascending log at KEYS[2], after the entries
-- at or before it, in one call. xs is the log as read, ascending, or its
-- tail from an entry at or before t on. Every entry is stored as str
-- writes it, so the first one after t is found by its value.
local function logInsert(xs, t)
  local j = rank(xs, t, true)
  if j == #xs then
    redis.call('RPUSH', KEYS[2], str(t))
  else
    redis.call('LINSERT', KEYS[2], 'BEFORE', str(xs[j + 1]), str(t))
  end
end
-- roomAround is the first time from t at which the ascending xs holds
-- fewer than limit entries less than per away, before or after (see
-- roomAround in package ratelimit).
local function roomAround(xs, t, limit, per)
  while true do
    local lo = rank(xs, t - per, true)
    if rank(xs, t + per, false) - lo < limit then return t end
    t = xs[lo + 1] + per
  end
end
-- countLog counts the entries of xs in [from, to).
local function countLog(xs, from, to)
  if to <= from then return 0 end
  return rank(xs, to, false) - rank(xs, from, false)
end
-- allowance is how far the gateway's clock may be from ours.
local function allowance(period) return math.min(math.ceil(period / 500), 100000) end
-- windowsOf: a request sent at t is counted in [t - early, t + late]; no
-- probing (step 0).
local function windowsOf(limit, period, margin)
  local a = allowance(period)
  return {limit = limit, period = period, early = a, late = math.min(a + margin, math.ceil(period / 4)),
    step = 0, pace = 0, from = 0, clean = 0, behind = 0, ceiling = math.huge, ahead = false, burst = false}
end
-- probeWindows is w with the probing geometry when the partition probes
-- (see probeWindows in package ratelimit).
local function probeWindows(w, st, cl, cp, margin, pace)
  if not probes(st, cl, cp) then return w end
  w.step, w.from, w.clean = math.max(margin, 1000), st.pf, st.rf
  -- The clean window's probes wait for the streak's retries' jitter band.
  if st.rf > 0 then w.clean = st.rf + math.floor(w.period * ` + strconv.FormatFloat(cooldownJitter, 'f', -1, 64) + `) end
  w.pace = w.step
  if pace > 0 then w.pace = math.max(math.min(pace, margin), 1000) end
  w.ahead = st.sh ~= 0 or st.vr ~= 0
  w.burst = st.sh ~= 0
  if cl > 0 and cp > 0 then w.ceiling = cl end
  return w
end
local function first(w, t) return floorDiv(t - w.early, w.period) end
local function last(w, t) return floorDiv(t + w.late, w.period) end
-- count is how many admissions of xs sent before til may be counted in
-- window k.
local function count(xs, w, k, til)
  return countLog(xs, k * w.period - w.late, math.min((k + 1) * w.period + w.early, til))
end
local function opening(w, k) return k * w.period + w.early end
-- lateIn: a slot at t comes after the opening of a window probed after the
-- first (see lateIn in package ratelimit).
local function lateIn(w, t)
  local k = floorDiv(t, w.period)
  return w.step > 0 and k * w.period >= w.from + w.period and t > opening(w, k)
end
-- probeAt is when window k, holding n admissions of xs before til, may
-- take one more. n is at least the budget. It is nil when the window may
-- not (see probeAt in package ratelimit).
local function probeAt(xs, w, k, n, til)
  if w.step <= 0 or k * w.period < w.from - w.period or n >= w.ceiling then return nil end
  local open = opening(w, k)
  local lastAt = open
  local j = rank(xs, math.min((k + 1) * w.period + w.early, til), false)
  -- The late retry does not hold the probes back (see behindIn).
  if j > 0 and xs[j] == w.behind then j = j - 1 end
  if j > 0 and xs[j] >= k * w.period - w.late then lastAt = math.max(lastAt, xs[j]) end
  -- The probes the window holds; the late retry lends its place to one.
  local probed = n - w.limit
  if w.behind ~= 0 and floorDiv(w.behind, w.period) == k then probed = probed - 1 end
  local t = lastAt
  if k * w.period < w.from then
    t = math.max(lastAt + w.step, w.clean + w.step)
  elseif probed > 0 then
    -- Rounds of 1, 1, 2, 4, ... probes. The first goes a step after the
    -- opening (alone, two paces, at most the step). The others go a pace
    -- apart. Sharing, the partition sends an opening round of up to its
    -- share, then rounds that are multiples of its size (see probeAt in
    -- package ratelimit).
    local pace = w.pace -- at least a millisecond (probeWindows)
    local firstStep, unit, opening = w.step, 1, false
    if not w.ahead then firstStep = math.min(2 * pace, w.step) end
    if w.burst then
      firstStep = pace
      opening = countLog(xs, k * w.period - w.late, til) < 2 * w.limit and til - 1 < open + firstStep
      unit = math.max(countLog(xs, k * w.period - w.late, open + firstStep) - w.limit, 1)
    end
    if not opening then
      local q = math.floor(probed / unit)
      local round, x = 0, q
      while x > 0 do round, x = round + 1, math.floor(x / 2) end
      t = math.max(t, open + firstStep + (round - 1) * pace)
      if probed % unit == 0 and 2 ^ (round - 1) == q then
        if round == 1 then t = math.max(t, lastAt + firstStep) else t = math.max(t, lastAt + pace) end
      end
    end
  end
  if t >= (k + 1) * w.period - w.late then return nil end
  return t
end
-- alignedAt is the first time at or after from when a request may go. xs
-- may leave out admissions that no window from from on counts. w.size is
-- then the length of the whole log. It bounds the search as in package
-- ratelimit.
local function alignedAt(xs, fu, w, from)
  local t = from
  for _ = 1, 2 * (w.size or #xs) + 3 do
    if t - w.early < fu then t = math.max(t, fu + w.early) end
    local moved = false
    for k = first(w, t), last(w, t) do
      local n = count(xs, w, k, math.huge)
      if n >= w.limit then
        -- Sharing the budget, the probes go ahead of the slots held
        -- later in the window (see heldUntil).
        local p = probeAt(xs, w, k, n, w.ahead and t + 1 or math.huge)
        if not p then
          t, moved = opening(w, k + 1), true
          break
        elseif t < p then
          t, moved = p, true
          break
        end
      end
    end
    if not moved then return t end
  end
  return t
end
-- confirmAligned is when a held slot due at t may go: it keeps its rank.
local function confirmAligned(xs, fu, w, t)
  if t - w.early < fu then return alignedAt(xs, fu, w, t) end
  for k = first(w, t), last(w, t) do
    local n = count(xs, w, k, t + 1)
    if n >= w.limit then
      local p = probeAt(xs, w, k, n, t + 1)
      if not (p and t >= p) then return alignedAt(xs, fu, w, t) end
    end
  end
  return t
end
`

// reserveScript is the admission rule of ratelimit.Memory.
//
//	KEYS: state hash (see fields), sends list
//	ARGV: 1 configured limit, 2 configured period µs, 3 margin µs, 4 retry,
//	      5 jitter draw, 6 max wait µs, 7 ticket, 8 clock override µs or '',
//	      9 TTL slack µs, 10 max log length, 11 log horizon µs, 12 idle µs,
//	      13 fixed windows, 14 after µs, 15 clamped, 16 step µs (the
//	      pace of probe rounds after the first; 0: the margin), 17 guessed,
//	      18 interactive
//	returns {ok, wait µs, cooled, ticket, limit, period µs, now, advertised}
var reserveScript = redis.NewScript(luaCommon + luaWindows + `
local now = clock(ARGV[8])
local st = state(KEYS[1])
local cs, cu, lp, fu, sl = st.cs, st.cu, st.lp, st.fu, st.sl
local limit, bper = effective(tonumber(ARGV[1]), tonumber(ARGV[2]), st.ll, st.lp)
local per = bper + tonumber(ARGV[3])
local retry = tonumber(ARGV[4])
local jitter = tonumber(ARGV[5])
local maxwait = tonumber(ARGV[6])
local ticket = tonumber(ARGV[7])
local slack = tonumber(ARGV[9])
local idle = tonumber(ARGV[12])
-- A clamped or guessed retry reopens with the gateway's latest
-- instruction. It does not wait for a cooldown the limiter worked out
-- beyond it (see reopensFor in package ratelimit).
local clamped = retry == 1 and tonumber(ARGV[15]) == 1
local guessed = retry == 1 and tonumber(ARGV[17]) == 1
local reopen = cu
if clamped or guessed then reopen = math.min(cu, st.tu) end
-- The learned budget was stated by RateLimit fields (Admission.Advertised).
local adv = 0
if st.ad == 1 and st.ll > 0 and st.lp > 0 then adv = 1 end

-- The gateway said the partition stays closed longer than the caller may
-- wait. Nothing is held, and a slot being confirmed is given up.
if st.xu - now > 0 and st.xu - now > maxwait then
  if ticket > 0 then redis.call('LREM', KEYS[2], -1, ARGV[7]) end
  return {0, st.xu - now, 1, 0, limit, bper, now, adv}
end
-- Fixed windows, unless the partition fell back to the sliding rule.
local aligned = tonumber(ARGV[13]) == 1 and limit > 0 and bper > 0 and sl == 0

-- Prune what is too old to matter.
local horizon = math.max(tonumber(ARGV[11]), 2 * per)
if aligned then horizon = math.max(tonumber(ARGV[11]), 2 * bper) end
while true do
  local h = redis.call('LINDEX', KEYS[2], 0)
  if not h or now - tonumber(h) <= horizon then break end
  redis.call('LPOP', KEYS[2])
end
local len = redis.call('LLEN', KEYS[2])
-- In fixed windows, xs holds the admissions that the windows from now on
-- count, ascending. They are the list's tail, read from the end, since
-- the log can hold thousands of older ones. The bound on the log keeps
-- them all (see reserveAligned in package ratelimit).
local w, xs = nil, {}
if aligned then
  w = probeWindows(windowsOf(limit, bper, tonumber(ARGV[3])), st, tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[16]))
  local band = first(w, now) * bper - w.late
  local raw, m = {}, 64
  while true do
    raw = redis.call('LRANGE', KEYS[2], -m, -1)
    if #raw >= len or tonumber(raw[1]) < band then break end
    m = m * 4
  end
  local vs = {}
  for i, x in ipairs(raw) do vs[i] = tonumber(x) end
  local skip = rank(vs, band, false)
  for i = skip + 1, #raw do xs[i - skip] = vs[i] end
end
local keep = math.max(tonumber(ARGV[10]), limit, #xs)
if len > keep then
  redis.call('LTRIM', KEYS[2], len - keep, -1)
  len = keep
end

local function keepalive(horizonAt)
  local ms = math.ceil((math.max(horizonAt, cu, st.xu, now) - now + idle + lp + slack) / 1000)
  expire(KEYS[1], ms)
  expire(KEYS[2], ms)
end

local window = (cu - cs) * ` + strconv.FormatFloat(cooldownJitter, 'f', -1, 64) + `

-- A guessed retry goes at its own wait. Only a cooldown whose instruction
-- still runs and the configured budget hold it (see reserveGuessed in
-- package ratelimit).
if guessed then
  local cl, cp, margin = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
  local from = now + math.max(tonumber(ARGV[14]), 0)
  if ticket > 0 and redis.call('LREM', KEYS[2], -1, ARGV[7]) > 0 then from = math.max(from, ticket) end
  local cooled = 0
  if reopen > from then from, cooled = reopen, 1 end
  local vs = {}
  for i, x in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do vs[i] = tonumber(x) end
  local t = from
  if cl > 0 and cp > 0 then
    if tonumber(ARGV[13]) == 1 and sl == 0 then
      t = alignedAt(vs, 0, windowsOf(cl, cp, margin), from)
    else
      t = roomAround(vs, from, cl, cp + margin)
    end
  end
  local wait = t - now
  if wait > maxwait then return {0, wait, cooled, 0, cl, cp, now, adv} end
  logInsert(vs, t)
  keepalive(t)
  return {1, math.max(wait, 0), cooled, t, cl, cp, now, adv}
end

-- An interactive reservation goes ahead of the slots waiting calls hold,
-- within the budget (see reserveAhead in package ratelimit). The slots
-- interactive reservations hold for later are the state's 'ah', ascending.
if tonumber(ARGV[18]) == 1 then
  local ah = {}
  for x in string.gmatch(redis.call('HGET', KEYS[1], 'ah') or '', '%S+') do ah[#ah + 1] = tonumber(x) end
  local function saveAhead()
    local parts = {}
    for i, x in ipairs(ah) do parts[i] = str(x) end
    redis.call('HSET', KEYS[1], 'ah', table.concat(parts, ' '))
  end
  local list = xs
  if not aligned then
    list = {}
    for i, x in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do list[i] = tonumber(x) end
  end
  local own = 0
  if ticket > 0 and redis.call('LPOS', KEYS[2], ARGV[7], 'RANK', -1) then
    own = ticket
    redis.call('LREM', KEYS[2], -1, ARGV[7])
    for i, x in ipairs(list) do
      if x == ticket then
        table.remove(list, i)
        break
      end
    end
    for i, x in ipairs(ah) do
      if x == ticket then
        table.remove(ah, i)
        break
      end
    end
  end
  if reopen > now then
    -- Closed: it holds nothing and asks again at the reopening.
    saveAhead()
    local wait = reopen - now
    if wait > maxwait then return {0, wait, 1, 0, limit, bper, now, adv} end
    return {1, wait, 1, 0, limit, bper, now, adv}
  end
  local function countEq(ys, v) return rank(ys, v, true) - rank(ys, v, false) end
  -- committed: what was sent by now (at a confirmed slot's own time, the
  -- held slots there are not) and what interactive reservations hold.
  local cm, kept = {}, {}
  for _, x in ipairs(list) do
    if x <= now and x ~= own then cm[#cm + 1] = x end
  end
  for _, x in ipairs(ah) do
    if not ((x <= now and x ~= own) or countEq(kept, x) >= countEq(list, x)) then kept[#kept + 1] = x end
  end
  ah = kept
  for _, x in ipairs(kept) do cm[#cm + 1] = x end
  table.sort(cm)
  local from = now + math.max(tonumber(ARGV[14]), 0)
  if own > 0 then from = math.max(own, now) end
  local t = from
  if aligned then
    w.size = #cm
    if own > 0 then t = confirmAligned(cm, fu, w, from) else t = alignedAt(cm, fu, w, from) end
  else
    t = confirmAt(cm, t, limit, per)
  end
  if t - now > maxwait then
    saveAhead()
    return {0, t - now, 0, 0, limit, bper, now, adv}
  end
  logInsert(list, t)
  if t > now then table.insert(ah, rank(ah, t, true) + 1, t) end
  saveAhead()
  keepalive(t)
  return {1, math.max(t - now, 0), 0, t, limit, bper, now, adv}
end

-- Fixed windows (see reserveAligned in package ratelimit): slots are no longer
-- first in, first out, so each goes into the list in order.
if aligned then
  -- The whole log's length bounds the search, as in package ratelimit; the
  -- tail starts at index off.
  w.size = len
  local off = len - #xs
  -- behindIn: the late retry's slot, while held, in a window probed after
  -- the first.
  if st.bh > 0 and lateIn(w, st.bh) then
    local j = rank(xs, st.bh, true)
    if j > 0 and xs[j] == st.bh then w.behind = st.bh end
  end
  if st.bh > 0 and w.behind == 0 then redis.call('HSET', KEYS[1], 'bh', '0') end
  local function put(t)
    logInsert(xs, t)
    keepalive(t)
  end
  if ticket > 0 then
    local i = redis.call('LPOS', KEYS[2], ARGV[7], 'RANK', -1)
    if i then
      redis.call('LREM', KEYS[2], -1, ARGV[7])
      w.size = w.size - 1
      if i >= off then
        table.remove(xs, i - off + 1)
      end
      local behind = ticket == st.bh and w.behind ~= 0
      if ticket == st.bh and st.bh > 0 then redis.call('HSET', KEYS[1], 'bh', '0') end
      if reopen <= ticket then
        local t
        if behind then
          -- confirmBehind: its place, however many probes went before it.
          t = math.max(ticket, now)
        else
          t = confirmAligned(xs, fu, w, math.max(ticket, now))
        end
        if t - now > maxwait then return {0, t - now, 0, 0, limit, bper, now, adv} end
        put(t)
        if behind and t == ticket and t - now > 0 then redis.call('HSET', KEYS[1], 'bh', str(t)) end
        return {1, t - now, 0, t, limit, bper, now, adv}
      end
    end
  end
  local from, cooled = now, 0
  if reopen > now then
    cooled = 1
    if retry == 0 then
      -- A fresh call holds nothing and asks again at the reopening.
      local wait = reopen - now
      if wait > maxwait then return {0, wait, 1, 0, limit, bper, now, adv} end
      return {1, wait, 1, 0, limit, bper, now, adv}
    end
    -- A retry's place is its rank in the window that reopens: no jitter.
    from = reopen
  end
  -- A retry's slot is not taken before its Retry-After has passed.
  from = math.max(from, now + math.max(tonumber(ARGV[14]), 0))
  local t = alignedAt(xs, fu, w, from)
  -- A retry its Retry-After sets after its window's opening, on a
  -- partition that looks alone. The probes do not wait for it. It goes a
  -- step later (see behindIn in package ratelimit).
  local late = retry == 1 and not clamped and tonumber(ARGV[14]) > 0 and st.sh == 0 and st.vr == 0 and lateIn(w, t)
  if late then t = alignedAt(xs, fu, w, t + w.step) end
  local wait = t - now
  if wait > maxwait then return {0, wait, cooled, 0, limit, bper, now, adv} end
  put(t)
  if late and lateIn(w, t) then redis.call('HSET', KEYS[1], 'bh', str(t)) end
  return {1, math.max(wait, 0), cooled, t, limit, bper, now, adv}
end

-- A confirmation after the caller's sleep.
if ticket > 0 then
  local i = redis.call('LPOS', KEYS[2], ARGV[7], 'RANK', -1)
  if i then
    redis.call('LREM', KEYS[2], -1, ARGV[7])
    if reopen <= ticket then
      -- The slot stands, perhaps a little later (see confirmAt in package
      -- ratelimit); it keeps its place in the queue.
      local xs = {}
      for i, x in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do xs[i] = tonumber(x) end
      local t = confirmAt(xs, math.max(ticket, now), limit, per)
      if t - now > maxwait then return {0, t - now, 0, 0, limit, bper, now, adv} end
      logInsert(xs, t)
      keepalive(t)
      return {1, t - now, 0, t, limit, bper, now, adv}
    end
  end
end

-- A new slot: first in, first out; retries before fresh calls while the
-- partition is closed; the sliding log. A clamped retry has no jitter
-- window: its clamped wait is its own.
local ru = cu
if clamped then ru, window = reopen, 0 end
local at = now
local last = redis.call('LINDEX', KEYS[2], -1)
if last then at = math.max(at, tonumber(last)) end
local cooled = 0
if retry == 0 and ru + math.floor(window) > now then
  local wait = math.max(ru + math.floor(window), at) - now
  if wait > maxwait then return {0, wait, 1, 0, limit, bper, now, adv} end
  return {1, wait, 1, 0, limit, bper, now, adv}
end
if ru > now then
  cooled = 1
  at = math.max(at, ru + math.floor(window * jitter))
end
if limit > 0 and redis.call('LLEN', KEYS[2]) >= limit then
  at = math.max(at, tonumber(redis.call('LINDEX', KEYS[2], -limit)) + per)
end
-- No slot before the request's own wait (After).
at = math.max(at, now + math.max(tonumber(ARGV[14]), 0))
local wait = at - now
if wait > maxwait then return {0, wait, cooled, 0, limit, bper, now, adv} end
redis.call('RPUSH', KEYS[2], str(at))
keepalive(at)
return {1, wait, cooled, at, limit, bper, now, adv}
`)

// releaseScript gives back a slot: it removes one admission at the ticket's
// time (admissions at one time are interchangeable).
//
//	KEYS: sends list
//	ARGV: ticket
var releaseScript = redis.NewScript(`
return {redis.call('LREM', KEYS[1], -1, ARGV[1])}
`)

// observeScript applies an Observation as ratelimit.Memory does. It
// applies the advertised quota, and the 429's estimate, distrust and
// probing (see learnFrom in package ratelimit). It applies what the 429
// says about fixed windows (see learnWindows there), and the cooldown.
//
//	KEYS: state hash (see fields), sends list
//	ARGV: 1 ticket, 2 throttled, 3 Retry-After µs, 4 max cooldown µs,
//	      5 advertised limit, 6 advertised period µs, 7 reset µs,
//	      8 configured limit, 9 configured period µs, 10 margin µs,
//	      11 clock override µs or '', 12 TTL slack µs, 13 idle µs, 14 capped,
//	      15 fixed windows, 16 admitted limit, 17 admitted period µs,
//	      18 closed µs, 19 unadvertised
//	returns {cooldown left µs, distrusted, learned limit, learned period µs}
var observeScript = redis.NewScript(luaCommon + luaWindows + `
local now = clock(ARGV[11])
local st = state(KEYS[1])
local advL, advP = tonumber(ARGV[5]), tonumber(ARGV[6])
local advertised = advL > 0 and advP > 0
-- Answers stopped carrying the budget they stated: it is forgotten.
if tonumber(ARGV[19]) == 1 and st.ad == 1 then st.ll, st.lp, st.ad = 0, 0, 0 end
if advertised then st.ll, st.lp, st.ad = advL, advP, 1 end
local cl, cp = tonumber(ARGV[8]), tonumber(ARGV[9])
local windowsOn = tonumber(ARGV[15]) == 1
local distrusted = 0
local cool = tonumber(ARGV[7])
if cool > 0 then st.tu = math.max(st.tu, now + cool) end
if tonumber(ARGV[2]) == 1 and tonumber(ARGV[3]) <= 0 then
  -- A 429 without an instruction: refused (it used no budget), and it
  -- teaches and closes nothing (see observe in package ratelimit).
  if tonumber(ARGV[1]) > 0 then redis.call('LREM', KEYS[2], -1, ARGV[1]) end
elseif tonumber(ARGV[2]) == 1 then
  if tonumber(ARGV[3]) > 0 then st.tu = math.max(st.tu, now + tonumber(ARGV[3])) end
  if tonumber(ARGV[18]) > 0 then st.xu = math.max(st.xu, now + tonumber(ARGV[18])) end
  if now >= st.cu then
    -- The first 429 since the partition reopened.
    st.rs, st.ru = st.cs, st.cu
    st.rl, st.rp = effective(cl, cp, st.ll, st.lp)
  end
  local ra = tonumber(ARGV[3])
  local maxcool = tonumber(ARGV[4])
  local margin = tonumber(ARGV[10])
  local sent = now
  local ticket = tonumber(ARGV[1])
  if ticket > 0 and redis.call('LREM', KEYS[2], -1, ARGV[1]) > 0 then sent = ticket end
  -- The log, read once: ascending admission times.
  local xs = {}
  for i, x in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do xs[i] = tonumber(x) end
  local til = now + 1 -- slots held for later are not sent yet
  local fixed = windowsOn and st.sl == 0
  -- Fewer of ours sent by now in the refused request's windows than the
  -- budget it was admitted under (see unexplained in package ratelimit).
  local unexplained = false
  local adL, adP = tonumber(ARGV[16]), tonumber(ARGV[17])
  if fixed and adL > 0 and adP > 0 then
    local w = windowsOf(adL, adP, margin)
    unexplained = true
    for k = first(w, sent), last(w, sent) do
      if count(xs, w, k, til) >= w.limit then
        unexplained = false
        break
      end
    end
  end
  local probing = fixed and probes(st, cl, cp)
  local trusted = fixed and st.cu > 0 and sent >= st.pf
  local curL, curP = effective(cl, cp, st.ll, st.lp)
  local firstOne = st.cu == 0
  -- learnFrom.
  local budL, budP = 0, 0
  local lcool, others, done = ra, false, false
  local prevLen = st.cu - st.cs
  if tonumber(ARGV[14]) == 1 then
    -- Retry-After beyond the cap: the period is unknown; nothing learned.
    done = true
  elseif fixed then
    -- distrustWindows: a burst at the reopening refused whole.
    local rs, ru, rl, rp = st.rs, st.ru, st.rl, st.rp
    if ru == 0 then rs, ru, rl, rp = st.cs, st.cu, curL, curP end
    local rlen = ru - rs
    if ra > 0 and ru > 0 and st.sh == 0 and not trusted and sent >= ru and sent < ru + rlen then
      local since = ru
      local p = math.max(rp, ra)
      if p > 0 then since = math.max(since, floorDiv(sent, p) * p) end
      if countLog(xs, since, til) == 0 then
        local d = math.max(ra, 2 * math.max(rlen, rp))
        if maxcool > 0 then d = math.min(d, math.max(maxcool, ra)) end
        lcool, distrusted, done = d, 1, true
        if rl > 0 then budL, budP = rl, math.max(rp, d) end
      end
    end
  elseif ra > 0 and st.cu > 0 and sent >= st.cu and sent < st.cu + prevLen and countLog(xs, st.cu, sent) < math.max(curL, 1) then
    local d = math.max(ra, 2 * prevLen)
    if maxcool > 0 then d = math.min(d, math.max(maxcool, ra)) end
    lcool, distrusted, done = d, 1, true
    if curL > 0 then budL, budP = curL, math.max(curP, d) end
  end
  if not done then
    local period = curP
    if period <= 0 then period = ra end
    if period > 0 then
      local n = countLog(xs, sent - period - margin, sent + margin + 1)
      if fixed then
        -- Only the refused request's window counts.
        local w = windowsOf(1, period, margin)
        local k = floorDiv(sent, period)
        n = math.min(n, countLog(xs, k * period - w.late, math.min((k + 1) * period + w.early, til)))
      end
      others = fixed and n == 0
      local lim, taught = n, true
      local probedN = 0
      if curL == 0 and n == 0 and fixed then lim = 1
      elseif curL == 0 and n == 0 then taught = false
      elseif curL == 0 then
      elseif sent >= st.cu and probing then
        lim, probedN = n - math.max(1, math.floor(n / ` + strconv.Itoa(yieldShare) + `)), n
      elseif sent >= st.cu then lim = math.min(curL - 1, n)
      else lim = math.min(curL, n) end
      if taught then budL, budP = math.max(lim, 1), period end
      if probedN > 0 then
        -- Alone, every refused probe finds the same count (see lone).
        if st.pb > 0 and probedN ~= st.pb then st.vr = 1 end
        st.pb = probedN
      end
    end
  end
  if budL > 0 and budP > 0 and not advertised then st.ll, st.lp, st.ad = budL, budP, 0 end
  if distrusted == 1 and fixed then
    st.ud = curP
  elseif others or (unexplained and trusted) then
    -- Others' requests fill our windows: a doubled period was theirs.
    st.sh = 1
    if st.ud > 0 and st.lp > st.ud then st.lp = st.ud end
    st.ud = 0
  end
  if lcool > 0 then cool = lcool end
  if windowsOn then
    local afL, afP = effective(cl, cp, st.ll, st.lp)
    -- learnWindows: the window the 429 arrived in is full. A refusal our
    -- count cannot explain contradicts the windows of a partition that
    -- does not probe. The second ends them.
    if afL > 0 and afP > 0 and st.sl == 0 then
      st.fu = math.max(st.fu, (floorDiv(now + allowance(afP), afP) + 1) * afP)
      if unexplained and not probing and distrusted == 0 and sent > st.cs then
        st.ct = st.ct + 1
        if st.ct >= 2 then st.sl = 1 end
      end
    end
    if fixed and afL > 0 and afP > 0 then
      if firstOne or distrusted == 1 then st.pf, st.rf = st.fu + afP, 0 end
      if now < st.pf - afP then st.rf = math.max(st.rf, now + ra) end
      if st.sl == 0 and distrusted == 0 and cool <= afP then
        -- The window the 429 showed full ends sooner than the whole period.
        cool = math.min(cool, st.fu + allowance(afP) - now)
      end
      local clean = st.pf - afP
      if others and now < clean then
        -- Nothing of ours went through: ours starts with the clean ramp.
        cool = math.max(cool, math.max(clean + allowance(afP), st.rf) + math.max(margin, 1000) - now)
      end
    end
  end
end
if cool > 0 and now + cool > st.cu then st.cs, st.cu = now, now + cool end
save(KEYS[1], st)
local ms = math.ceil((math.max(st.cu, st.xu, now) - now + tonumber(ARGV[13]) + st.lp + tonumber(ARGV[12])) / 1000)
expire(KEYS[1], ms)
if redis.call('EXISTS', KEYS[2]) == 1 then expire(KEYS[2], ms) end
return {math.max(st.cu - now, 0), distrusted, st.ll, st.lp}
`)
