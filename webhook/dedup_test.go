package webhook

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// A claim, step by step: free, in flight, released, handled, expired.
func TestMemoryDeduplicatorClaims(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		d := NewMemoryDeduplicator(time.Hour, 0)
		check := func(step, id string, want Claim) {
			t.Helper()
			got, err := d.Claim(ctx, id)
			if err != nil || got != want {
				t.Fatalf("%s: Claim(%s) = %v, %v; want %v", step, id, got, err, want)
			}
		}
		check("first", "a", Claimed)
		check("while it runs", "a", InFlight)
		check("another id", "b", Claimed)
		if err := d.Release(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		check("after a release", "a", Claimed)
		if err := d.Done(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		check("after done", "a", Handled)
		_ = d.Release(ctx, "a") // releases only a claim in flight
		check("a release after done", "a", Handled)
		time.Sleep(time.Hour - time.Second)
		check("within the TTL", "a", Handled)
		time.Sleep(time.Second)
		check("after the TTL", "a", Claimed)
	})
}

// Memory stays bounded: expired ids go as new ones arrive; when full, the
// oldest handled id goes first; ids in flight are never dropped, and a
// deduplicator full of them refuses to claim.
func TestMemoryDeduplicatorBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		d := NewMemoryDeduplicator(time.Minute, 3)
		handle := func(id string) {
			t.Helper()
			if c, err := d.Claim(ctx, id); c != Claimed || err != nil {
				t.Fatalf("Claim(%s) = %v, %v", id, c, err)
			}
			if err := d.Done(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 1000 {
			handle(fmt.Sprint("e", i))
			time.Sleep(time.Second)
			if len(d.entries) > 3 || d.handled.Len() > 3 {
				t.Fatalf("after %d events: %d entries", i+1, len(d.entries))
			}
		}
		time.Sleep(time.Minute)
		if c, _ := d.Claim(ctx, "x"); c != Claimed || len(d.entries) != 1 {
			t.Fatalf("after the TTL: %d entries, want the new claim only", len(d.entries))
		}
		_ = d.Release(ctx, "x")

		// Full: the oldest handled id is forgotten first, never one in flight.
		handle("old")
		time.Sleep(time.Second)
		handle("newer")
		if c, _ := d.Claim(ctx, "running"); c != Claimed {
			t.Fatal("running not claimed")
		}
		if c, _ := d.Claim(ctx, "next"); c != Claimed { // drops "old"
			t.Fatal("next not claimed")
		}
		for id, want := range map[string]Claim{"running": InFlight, "newer": Handled} {
			if c, _ := d.Claim(ctx, id); c != want {
				t.Fatalf("Claim(%s) = %v, want %v", id, c, want)
			}
		}
		if c, _ := d.Claim(ctx, "old"); c != Claimed { // forgotten; drops "newer"
			t.Fatalf("Claim(old) = %v, want it forgotten", c)
		}
		if _, err := d.Claim(ctx, "one more"); !errors.Is(err, ErrDedupFull) {
			t.Fatalf("three in flight: Claim = %v, want ErrDedupFull", err)
		}
		if err := d.Release(ctx, "next"); err != nil {
			t.Fatal(err)
		}
		if c, err := d.Claim(ctx, "one more"); c != Claimed || err != nil {
			t.Fatalf("after a release: Claim = %v, %v", c, err)
		}
	})
}

// A long id is remembered by its digest: two ids that share their first
// kilobyte are told apart, and neither keeps its megabyte in memory.
func TestMemoryDeduplicatorLongIDs(t *testing.T) {
	ctx := context.Background()
	d := NewMemoryDeduplicator(0, 0)
	long := strings.Repeat("x", 1<<20)
	for _, step := range []struct {
		id   string
		want Claim
	}{{long + "a", Claimed}, {long + "b", Claimed}, {long + "a", InFlight}} {
		if c, err := d.Claim(ctx, step.id); c != step.want || err != nil {
			t.Fatalf("Claim = %v, %v; want %v", c, err, step.want)
		}
	}
	_ = d.Done(ctx, long+"a")
	if c, _ := d.Claim(ctx, long+"a"); c != Handled {
		t.Fatalf("Claim after Done = %v", c)
	}
	for k := range d.entries {
		if len(k) > maxDedupKey {
			t.Fatalf("an entry keeps a key of %d bytes", len(k))
		}
	}
}

// Under concurrent claims of one id, exactly one wins.
func TestMemoryDeduplicatorConcurrentClaims(t *testing.T) {
	ctx := context.Background()
	d := NewMemoryDeduplicator(0, 0)
	for round := range 50 {
		id := fmt.Sprint("evt-", round)
		var mu sync.Mutex
		got := map[Claim]int{}
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				c, err := d.Claim(ctx, id)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				got[c]++
				mu.Unlock()
			})
		}
		wg.Wait()
		if got[Claimed] != 1 || got[InFlight] != 15 {
			t.Fatalf("round %d: %v, want one claim", round, got)
		}
	}
}

// BenchmarkMemoryDeduplicator measures a claim and its Done on a full
// deduplicator (each evicts the oldest id), and the memory an id holds.
func BenchmarkMemoryDeduplicator(b *testing.B) {
	ctx := context.Background()
	const n = 100_000
	id := func(i int) string { return fmt.Sprintf("0191f0aa-7c8d-7e9f-8a0b-%012d", i) } // a UUID's length
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	d := NewMemoryDeduplicator(time.Hour, n)
	for i := range n {
		_, _ = d.Claim(ctx, id(i))
		_ = d.Done(ctx, id(i))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perID := float64(after.HeapAlloc-before.HeapAlloc) / n
	ids := make([]string, 1<<18) // more than n: each is forgotten before it comes again
	for i := range ids {
		ids[i] = id(n + i)
	}
	for i := 0; b.Loop(); i++ {
		_, _ = d.Claim(ctx, ids[i%len(ids)])
		_ = d.Done(ctx, ids[i%len(ids)])
	}
	b.ReportMetric(perID, "B/id")
}
