// Package redislimit is a rail0.Limiter kept in Redis, so that many
// processes or machines behind one egress IP, or sharing one session token,
// pace themselves against one budget and honour one another's cooldowns.
//
// Plug it into a client with rail0.WithLimiter:
//
//	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
//	c, err := rail0.NewClient("https://api.rail0.xyz",
//		rail0.WithPacing(rail0.PublishedLimits()),
//		rail0.WithRetryOn429(true),
//		rail0.WithLimiter(redislimit.New(rdb)),
//	)
//
// # Semantics
//
// The Limiter has exactly the semantics of rail0.MemoryLimiter: a sliding
// log of the last Limit admission times per partition, a cooldown deadline
// per partition that is never shortened, and first-in-first-out admission.
// Each operation is one Lua script that runs atomically on the partition's
// keys, so concurrent callers in any number of processes see one consistent
// state. Every time comes from the Redis server's TIME inside the script, and
// only relative durations cross the wire: processes whose clocks disagree
// still agree on the schedule.
//
// # Why not redis_rate (GCRA)
//
// github.com/go-redis/redis_rate implements the generic cell rate
// algorithm, a token bucket in disguise. With rate L/P and burst b it lets
// b requests through at once and then one every P/L, so an interval of
// length P can see b + L − 1 of them. Only b = 1 keeps that within L, and
// then the budget is spread evenly: a client can never send a window's worth
// at once, even into an empty window, and a cold start of L requests takes
// a whole period. Any b > 1 that allows a burst overruns the gateway's fixed
// window (b = L lets 2L − 1 through around a boundary). Its state also has
// no place for a cooldown, which must be read in the same atomic step as the
// pacing log to keep admissions first-in-first-out. So this package keeps
// the sliding log of rail0.MemoryLimiter, which holds "at most Limit sends in
// any interval of Period" exactly and still lets a fresh client send Limit
// at once, at the cost of Limit timestamps per partition in a Redis list.
//
// # Keys and expiry
//
// A partition p uses two keys, prefix + "{" + p + "}:state" (a hash with the
// last admission and the cooldown) and prefix + "{" + p + "}:sends" (a list
// of admission times). The braces form a Redis Cluster hash tag, so both land
// on one slot and the scripts work with a cluster client. Both keys carry a
// TTL covering the last admission or cooldown end plus one period, after
// which the state no longer constrains anything, so idle partitions vanish
// by themselves. Partitions never contain a token: the SDK hashes it.
//
// The scripts read TIME before writing, which needs Redis 5 or later (the
// Debian and Alpine packages of any supported release qualify).
//
// # Errors
//
// Reserve and Cooldown return an *Error when Redis cannot be reached or a
// script fails. The rail0 client then fails open (it sends without pacing)
// and logs the error, because a broken limiter store must not stop
// payments.
package redislimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	rail0 "github.com/rail0/rail0-go"
)

// DefaultPrefix is the key prefix used unless WithKeyPrefix says otherwise.
const DefaultPrefix = "rail0:rl:"

// cooldownJitter is the share of a cooldown's length over which waiters
// spread their admission, as documented on rail0.Reservation.Jitter.
const cooldownJitter = 0.10

// ttlSlack is added to every key's time to live, so that a key never
// expires while its state can still constrain an admission.
const ttlSlack = time.Second

// Limiter is a rail0.Limiter backed by Redis. It is safe for concurrent use
// and holds no state of its own: any number of Limiters on any number of
// machines that share a Redis server and a key prefix share one budget.
type Limiter struct {
	rdb    redis.UniversalClient
	prefix string
	// now, when set, replaces the server's TIME; tests use it to replay a
	// schedule exactly. It is nil in every Limiter that New returns.
	now func() time.Time
}

var _ rail0.Limiter = (*Limiter)(nil)

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

// New returns a Limiter that keeps its state in rdb, which may be a single
// node, a failover or a cluster client. It does no I/O.
func New(rdb redis.UniversalClient, opts ...Option) *Limiter {
	l := &Limiter{rdb: rdb, prefix: DefaultPrefix}
	for _, o := range opts {
		o(l)
	}
	return l
}

// Error reports a failed limiter operation. It unwraps to the cause, such
// as a network error from go-redis or the context's error.
type Error struct {
	// Op is "reserve" or "cooldown".
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

// Reserve implements rail0.Limiter.
func (l *Limiter) Reserve(ctx context.Context, r rail0.Reservation) (rail0.Admission, error) {
	a, _, err := l.reserve(ctx, r)
	return a, err
}

// reserve is Reserve that also returns the admission time on the Redis
// clock, which tests use to check the pacing guarantee exactly.
func (l *Limiter) reserve(ctx context.Context, r rail0.Reservation) (rail0.Admission, time.Time, error) {
	fail := func(err error) (rail0.Admission, time.Time, error) {
		return rail0.Admission{}, time.Time{}, &Error{Op: "reserve", Partition: r.Partition, Err: err}
	}
	if l.rdb == nil {
		return fail(errNilClient)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	limit, period := 0, time.Duration(0)
	if r.Budget.Limit > 0 && r.Budget.Period > 0 {
		limit, period = r.Budget.Limit, max(r.Period, r.Budget.Period)
	}
	state, sends := l.keys(r.Partition)
	res, err := reserveScript.Run(ctx, l.rdb, []string{state, sends},
		limit,
		microsCeil(period),
		strconv.FormatFloat(clampUnit(r.Jitter), 'g', -1, 64),
		microsFloor(r.MaxWait),
		l.nowArg(),
		microsCeil(ttlSlack),
	).Int64Slice()
	if err != nil {
		return fail(err)
	}
	if len(res) != 4 {
		return fail(fmt.Errorf("reserve script returned %d values, want 4", len(res)))
	}
	a := rail0.Admission{
		OK:       res[0] == 1,
		Wait:     time.Duration(res[1]) * time.Microsecond,
		Cooldown: res[2] == 1,
	}
	return a, time.UnixMicro(res[3]), nil
}

// Cooldown implements rail0.Limiter.
func (l *Limiter) Cooldown(ctx context.Context, partition string, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	if l.rdb == nil {
		return &Error{Op: "cooldown", Partition: partition, Err: errNilClient}
	}
	state, _ := l.keys(partition)
	err := cooldownScript.Run(ctx, l.rdb, []string{state},
		microsCeil(d),
		l.nowArg(),
		microsCeil(ttlSlack),
	).Err()
	if err != nil {
		return &Error{Op: "cooldown", Partition: partition, Err: err}
	}
	return nil
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

// clampUnit maps a jitter draw into [0, 1), as the in-memory limiter does.
func clampUnit(u float64) float64 {
	switch {
	case u < 0 || math.IsNaN(u):
		return 0
	case u >= 1:
		return math.Nextafter(1, 0)
	}
	return u
}

// luaClock reads the clock: ARGV[i] when the caller fixed it, else the
// server's TIME, in microseconds since the epoch (exact in a Lua double).
const luaClock = `
local function clock(arg)
  if arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
-- str formats an integral number in full: Lua's default formatting would
-- turn 1.7e15 into "1.7e+15" and lose digits.
local function str(x) return string.format('%.0f', x) end
-- extend sets a key's TTL to at least ms milliseconds, never shortening it.
local function extend(key, ms)
  local cur = redis.call('PTTL', key)
  if cur < ms then redis.call('PEXPIRE', key, str(ms)) end
end
`

// reserveScript is the admission rule of rail0.MemoryLimiter.
//
//	KEYS: state hash (last, cs, cu), sends list
//	ARGV: limit (0: no pacing), period µs, jitter draw in [0,1), max wait µs,
//	      clock override µs or '', TTL slack µs
//	returns {ok, wait µs, cooled, admission time µs}
var reserveScript = redis.NewScript(luaClock + `
local now = clock(ARGV[5])
local limit = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
local jitter = tonumber(ARGV[3])
local maxwait = tonumber(ARGV[4])
local slack = tonumber(ARGV[6])
local st = redis.call('HMGET', KEYS[1], 'last', 'cs', 'cu')
local last = tonumber(st[1]) or 0
local cs = tonumber(st[2]) or 0
local cu = tonumber(st[3]) or 0

local at = now
if last > at then at = last end
local cooled = 0
if cu > now then
  local t = cu + math.floor((cu - cs) * ` + strconv.FormatFloat(cooldownJitter, 'f', -1, 64) + ` * jitter)
  if t > at then at = t end
  cooled = 1
end
if limit > 0 and redis.call('LLEN', KEYS[2]) >= limit then
  local t = tonumber(redis.call('LINDEX', KEYS[2], -limit)) + period
  if t > at then at = t end
end

local wait = at - now
if wait > maxwait then return {0, wait, cooled, at} end

redis.call('HSET', KEYS[1], 'last', str(at))
local horizon = at
if cu > horizon then horizon = cu end
local ttl = math.ceil((horizon - now + period + slack) / 1000)
extend(KEYS[1], ttl)
if limit > 0 then
  redis.call('RPUSH', KEYS[2], str(at))
  redis.call('LTRIM', KEYS[2], -limit, -1)
  extend(KEYS[2], ttl)
end
return {1, wait, cooled, at}
`)

// cooldownScript closes a partition until now + d unless a longer cooldown
// is already in force.
//
//	KEYS: state hash
//	ARGV: d µs, clock override µs or '', TTL slack µs
//	returns 1 when the cooldown was extended, else 0
var cooldownScript = redis.NewScript(luaClock + `
local now = clock(ARGV[2])
local fin = now + tonumber(ARGV[1])
local cu = tonumber(redis.call('HGET', KEYS[1], 'cu')) or 0
if fin <= cu then return 0 end
redis.call('HSET', KEYS[1], 'cs', str(now), 'cu', str(fin))
extend(KEYS[1], math.ceil((fin - now + tonumber(ARGV[3])) / 1000))
return 1
`)
