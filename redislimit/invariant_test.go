package redislimit

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	rail0 "github.com/rail0/rail0-go"
)

// Issue 27, item 1, through Redis: the retry rule holds for processes
// sharing one Limiter in Redis, end to end (each process a rail0.Client of
// its own, a real http.Server on the bubble's in-memory network), over
// randomized scenarios: on the server's clock no retried 429 that gave an
// instruction is retried before min(instruction, RetryAfterCap), and a
// retry whose wait was a guess goes at its guess unless an instruction the
// shared Limiter heard still runs. The Limiters read the bubble's clock
// (Limiter.now), so the Lua schedules in the same time as the gateway;
// Redis is real, and a call to it takes no time in the bubble. The root
// package's TestRetryRuleHolds checks the same in memory.

// redisServed is one request the throttle answered, on its clock.
type redisServed struct {
	path         string
	at, answered time.Time
	status       int
	retryAfter   time.Duration
}

// redisThrottle counts in fixed windows and refuses beyond limit, with
// retryAfter or, when headerless says so, without any.
type redisThrottle struct {
	limit      int
	period     time.Duration
	retryAfter time.Duration
	headerless func() bool

	mu     sync.Mutex
	counts map[int64]int
	seen   []redisServed
}

func (g *redisThrottle) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	s := redisServed{path: r.URL.Path, at: time.Now(), status: http.StatusOK}
	win := s.at.UnixNano() / int64(g.period)
	g.counts[win]++
	if g.counts[win] > g.limit {
		s.status = http.StatusTooManyRequests
		if !g.headerless() {
			s.retryAfter = g.retryAfter
		}
	}
	g.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if s.status == http.StatusTooManyRequests {
		if s.retryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(s.retryAfter/time.Second)))
		}
		w.WriteHeader(s.status)
		io.WriteString(w, `{"code":"rate_limited","title":"Too many requests","status":"rate_limited"}`)
	} else {
		io.WriteString(w, `{"id":"p","status":"authorized"}`)
	}
	s.answered = time.Now()
	g.mu.Lock()
	g.seen = append(g.seen, s)
	g.mu.Unlock()
}

// pipeListener hands the server the far ends of in-memory connections.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error { l.once.Do(func() { close(l.done) }); return nil }
func (l *pipeListener) Addr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}
}

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	near, far := net.Pipe()
	select {
	case l.conns <- far:
		return near, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// serve serves h on the bubble's network and returns a client that reaches
// it; stop stops both.
func serve(h http.Handler) (hc *http.Client, stop func()) {
	l := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(l) }()
	hc = &http.Client{Transport: &http.Transport{DialContext: l.dial, MaxIdleConnsPerHost: 100}}
	return hc, func() { hc.CloseIdleConnections(); srv.Close() }
}

// endCalls is an Observer that keeps every call when it ends.
type endCalls struct {
	mu    sync.Mutex
	calls []*rail0.Call
}

func (o *endCalls) StartCall(ctx context.Context, _ *rail0.Call) context.Context  { return ctx }
func (o *endCalls) SendAttempt(context.Context, *rail0.Call, rail0.AttemptHeader) {}
func (o *endCalls) EndAttempt(context.Context, *rail0.Call, *rail0.Attempt)       {}
func (o *endCalls) EndCall(_ context.Context, c *rail0.Call, _ error) {
	o.mu.Lock()
	o.calls = append(o.calls, c)
	o.mu.Unlock()
}

// redisScenario is one randomized run.
type redisScenario struct {
	seed                      uint64
	processes, workers, calls int // workers and calls per process
	limit                     int
	period, retryAfter        time.Duration
	headerless                float64
	cap                       time.Duration // zero: the default
}

func (s redisScenario) String() string {
	return fmt.Sprintf("seed %d: P=%d, %d workers and %d calls each, %d per %v, Retry-After %v (%.0f%% of 429s without), cap %v",
		s.seed, s.processes, s.workers, s.calls, s.limit, s.period, s.retryAfter, 100*s.headerless, s.cap)
}

func newRedisScenario(seed uint64) redisScenario {
	rng := rand.New(rand.NewPCG(seed, 27))
	s := redisScenario{seed: seed, processes: 2 + rng.IntN(3), workers: 1 + rng.IntN(6), limit: 3 + rng.IntN(8)}
	s.calls = s.limit * (2 + rng.IntN(3)) / s.processes
	s.period = time.Duration(1+rng.IntN(2)) * time.Second
	s.retryAfter = max([]time.Duration{s.period, s.period / 2, 2 * s.period}[rng.IntN(3)], time.Second)
	s.headerless = []float64{0, 0.2, 0.5}[rng.IntN(3)]
	if rng.IntN(5) == 0 {
		s.cap = s.retryAfter * 3 / 4
	}
	return s
}

func (s redisScenario) wait(retryAfter time.Duration) time.Duration {
	if s.cap > 0 {
		return min(retryAfter, s.cap)
	}
	return min(retryAfter, rail0.DefaultRetryAfterCap)
}

func TestRetryRuleThroughRedis(t *testing.T) {
	newRedis(t) // skips without a server
	var instructed, guessed atomic.Int64
	for seed := range uint64(18) {
		s := newRedisScenario(seed)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			prefix := testPrefix(t, newRedis(t))
			synctest.Test(t, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 1))
				var rmu sync.Mutex
				g := &redisThrottle{limit: s.limit, period: s.period, retryAfter: s.retryAfter, counts: map[int64]int{},
					headerless: func() bool { rmu.Lock(); defer rmu.Unlock(); return rng.Float64() < s.headerless }}
				obs := &endCalls{}
				var wg sync.WaitGroup
				for i := range s.processes {
					// Each process its own Redis client and Limiter, made in
					// the bubble: go-redis's timers are then the bubble's.
					rdb := redis.NewClient(&redis.Options{Addr: redisAddr(), ReadTimeout: -1, WriteTimeout: -1})
					l := New(rdb, WithKeyPrefix(prefix))
					l.now = time.Now
					hc, stop := serve(g)
					// A plain http:// URL to an in-memory gateway: not loopback, so named.
					opts := []rail0.Option{rail0.WithHTTPClient(hc), rail0.WithInsecureHTTP(), rail0.WithRetryOn429(true), rail0.WithLimiter(l), rail0.WithObserver(obs)}
					if s.cap > 0 {
						opts = append(opts, rail0.WithRetryAfterCap(s.cap))
					}
					c, err := rail0.NewClient("http://gateway.test", opts...)
					if err != nil {
						t.Fatal(err)
					}
					wg.Go(func() {
						defer func() { stop(); l.inflight.Wait(); rdb.Close() }()
						var next atomic.Int64
						var ww sync.WaitGroup
						for range s.workers {
							ww.Go(func() {
								for n := int(next.Add(1)) - 1; n < s.calls; n = int(next.Add(1)) - 1 {
									if _, err := c.Payments.Get(context.Background(), fmt.Sprintf("p%d-%03d", i, n)); err != nil {
										t.Errorf("%v: %v", s, err)
									}
								}
							})
						}
						ww.Wait()
					})
				}
				wg.Wait()
				instructed.Add(int64(s.checkInstructed(t, g.seen)))
				guessed.Add(int64(s.checkGuessed(t, obs.calls)))
			})
		})
	}
	t.Logf("%d retried 429s with an instruction, %d guessed retries checked", instructed.Load(), guessed.Load())
	if instructed.Load() < 50 || guessed.Load() < 10 {
		t.Errorf("too tame: %d retried 429s with an instruction, %d guessed retries", instructed.Load(), guessed.Load())
	}
}

// checkInstructed checks on the server's clock that no retried 429 that
// gave an instruction was retried before it.
func (s redisScenario) checkInstructed(t *testing.T, seen []redisServed) int {
	t.Helper()
	byPath := map[string][]redisServed{}
	for _, r := range seen {
		byPath[r.path] = append(byPath[r.path], r)
	}
	checked := 0
	for path, rs := range byPath {
		for i := 1; i < len(rs); i++ {
			prev := rs[i-1]
			if prev.status != http.StatusTooManyRequests || prev.retryAfter == 0 {
				continue
			}
			checked++
			if gap := rs[i].at.Sub(prev.answered); gap < s.wait(prev.retryAfter) {
				t.Errorf("%v: %s retried %v after a 429 with Retry-After %v; the rule says no sooner than %v",
					s, path, gap, prev.retryAfter, s.wait(prev.retryAfter))
			}
		}
	}
	return checked
}

// checkGuessed checks that each guessed retry went at its guess, or no
// later than the end of an instruction some process had heard by then.
func (s redisScenario) checkGuessed(t *testing.T, calls []*rail0.Call) int {
	t.Helper()
	type instruction struct{ heard, ends time.Time }
	var told []instruction
	for _, c := range calls {
		for _, a := range c.Attempts {
			if a.StatusCode == http.StatusTooManyRequests && a.RetryAfter > 0 {
				heard := a.Sent.Add(a.Duration)
				told = append(told, instruction{heard, heard.Add(s.wait(a.RetryAfter))})
			}
		}
	}
	checked := 0
	for _, c := range calls {
		for n, a := range c.Attempts[:max(len(c.Attempts)-1, 0)] {
			if !a.Retry || a.Reason != rail0.ReasonRateLimitedGuess {
				continue
			}
			checked++
			next := c.Attempts[n+1]
			due := a.Sent.Add(a.Duration).Add(a.Wait)
			for _, in := range told {
				if !in.heard.After(next.Sent) && in.ends.After(due) {
					due = in.ends
				}
			}
			// Redis keeps times in whole microseconds, rounded up.
			if next.Sent.After(due.Add(2 * time.Microsecond)) {
				t.Errorf("%v: %s's guessed retry (%v) went %v late: held by what no running instruction says\n%v",
					s, c.Path, a.Wait, next.Sent.Sub(due), c)
			}
		}
	}
	return checked
}
