package redislimit

import (
	"context"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
)

// The review of the background check (F3): with a store that stalls and is
// never stopped, through a client with no read or write timeout (go-redis
// then ignores the context's deadline), the check must end within the
// Limiter's timeout, doubling the backoff, so that the process leaves its
// local fallback once the store answers again instead of keeping it for as
// long as the stall lasts. In a bubble, the store is the far end of a pipe
// that nobody reads until the test ends (dialled by IP: no lookup leaves
// the bubble), and the clock is synctest's.
func TestCheckOfAStalledStoreEndsWithinTheTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 50 * time.Millisecond
		var mu sync.Mutex
		var far []net.Conn
		rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ReadTimeout: -1, WriteTimeout: -1, MaxRetries: -1,
			Dialer: func(context.Context, string, string) (net.Conn, error) {
				near, other := net.Pipe()
				mu.Lock()
				far = append(far, other)
				mu.Unlock()
				return near, nil
			}})
		l := New(rdb, WithTimeout(timeout))
		defer func() {
			// Only now does the store go away: the reads still waiting
			// on it end, and the bubble with them.
			mu.Lock()
			for _, c := range far {
				c.Close()
			}
			mu.Unlock()
			rdb.Close()
			l.inflight.Wait()
		}()
		state := func() (checking bool, wait time.Duration) {
			l.mu.Lock()
			defer l.mu.Unlock()
			return l.checking, l.wait
		}

		l.failed() // as if a call had found the store down
		want := firstBackoff
		for round := range 3 {
			time.Sleep(want) // the backoff passes
			if !l.useLocal("public") {
				t.Fatalf("round %d: the first caller after the backoff asked the store; want the fallback while it is checked", round)
			}
			synctest.Wait()
			if checking, _ := state(); !checking {
				t.Fatalf("round %d: no check started after the backoff", round)
			}
			time.Sleep(timeout)
			synctest.Wait()
			checking, wait := state()
			want = min(2*want, maxBackoff)
			if checking || wait != want {
				t.Fatalf("round %d: one timeout (%v) after the check started: checking %v, backoff %v; want the check over and the backoff %v",
					round, timeout, checking, wait, want)
			}
		}
	})
}
