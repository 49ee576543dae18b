package webhook

import (
	"container/list"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"
)

// The gateway delivers at least once. It retries a delivery whose answer
// timed out, and redeliver re-sends an event with the same id. A
// Deduplicator lets a Handler run Handle once per event id. A claim is in
// flight before it is handled. A redelivery that arrives in flight is not
// run, and not acknowledged either. Acknowledging it, then failing the
// first delivery, would lose the event: the gateway may have given up on
// the first connection. See docs/webhooks.md.

// Claim is a [Deduplicator]'s answer to a claim on an event id.
type Claim int

const (
	// Claimed means the id was free and this delivery now holds it.
	// Run Handle, then call Done or Release.
	Claimed Claim = iota + 1
	// InFlight means another delivery of the event holds the claim and
	// has not finished. A Handler answers 409 so the gateway retries later.
	InFlight
	// Handled means a delivery of the event was handled within the TTL.
	// A Handler answers 204 without running Handle.
	Handled
)

// String names the claim.
func (c Claim) String() string {
	switch c {
	case Claimed:
		return "claimed"
	case InFlight:
		return "in flight"
	case Handled:
		return "handled"
	}
	return fmt.Sprintf("Claim(%d)", int(c))
}

// Deduplicator records which event ids a [Handler] is handling or has
// handled. The id it is given is the event's topic and id, as
// "payments.captured <id>". Set Handler.Deduplicator to use one. [MemoryDeduplicator]
// serves a single process. A store shared by several processes (Redis, a
// database) implements the same three calls, each atomic. It should let
// an in-flight claim expire too, since a process may die holding one.
type Deduplicator interface {
	// Claim atomically claims id for one run of Handle.
	// It answers Claimed when no other delivery holds or has handled id.
	// Otherwise it answers InFlight or Handled.
	Claim(ctx context.Context, id string) (Claim, error)
	// Done records that the event of a claimed id was handled.
	// Its redeliveries are answered Handled until the TTL passes.
	Done(ctx context.Context, id string) error
	// Release drops the claim on an id whose Handle failed.
	// The gateway's redelivery then runs it again.
	Release(ctx context.Context, id string) error
}

// Defaults of [NewMemoryDeduplicator].
const (
	// DefaultDedupTTL is how long a handled event's id is remembered.
	// Redeliveries after it run Handle again.
	DefaultDedupTTL = 24 * time.Hour
	// DefaultDedupEntries bounds the ids remembered. Each takes about 180
	// bytes for a UUID (BenchmarkMemoryDeduplicator): 18 MB at most.
	DefaultDedupEntries = 100_000
)

// ErrDedupFull means a [MemoryDeduplicator] holds its maximum of claims,
// all in flight. So it cannot claim another id. A Handler answers 503, and
// the gateway retries.
var ErrDedupFull = errors.New("webhook: deduplicator full of events in flight")

// ErrEventInFlight is reported for a delivery of an event that another
// delivery is still handling. It goes to OnError, and the answer is a 409.
var ErrEventInFlight = errors.New("webhook: another delivery of the event is being handled")

// MemoryDeduplicator is a [Deduplicator] held in one process's memory.
// A handled id is remembered for a TTL. Expired ids are dropped as new ones
// arrive. When full, it forgets the oldest handled id first, so memory
// stays bounded. Forgetting early only weakens deduplication to the
// gateway's at-least-once. An id longer than 64 bytes (a UUID has 36) is
// remembered by its SHA-256. So no delivery can make an entry large.
// In-flight claims end with Done or Release, which a Handler always calls.
// So they need no expiry here. It is safe for concurrent use.
type MemoryDeduplicator struct {
	ttl time.Duration
	max int

	mu      sync.Mutex
	entries map[string]*dedupEntry
	handled list.List // of *dedupEntry, oldest Done first: ordered by expiry
}

type dedupEntry struct {
	id      string
	expires time.Time     // for a handled id
	elem    *list.Element // in handled; nil while in flight
}

// NewMemoryDeduplicator returns a MemoryDeduplicator remembering handled
// ids for ttl, and at most maxEntries ids. Zero or negative values take
// [DefaultDedupTTL] and [DefaultDedupEntries].
func NewMemoryDeduplicator(ttl time.Duration, maxEntries int) *MemoryDeduplicator {
	if ttl <= 0 {
		ttl = DefaultDedupTTL
	}
	if maxEntries <= 0 {
		maxEntries = DefaultDedupEntries
	}
	return &MemoryDeduplicator{ttl: ttl, max: maxEntries, entries: map[string]*dedupEntry{}}
}

// Claim implements [Deduplicator].
func (d *MemoryDeduplicator) Claim(_ context.Context, id string) (Claim, error) {
	id = dedupKey(id)
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	d.expire(now)
	if e, ok := d.entries[id]; ok {
		if e.elem == nil {
			return InFlight, nil
		}
		return Handled, nil
	}
	if len(d.entries) >= d.max {
		if d.handled.Len() == 0 {
			return 0, fmt.Errorf("%w (%d)", ErrDedupFull, d.max)
		}
		d.drop(d.handled.Front().Value.(*dedupEntry))
	}
	d.entries[id] = &dedupEntry{id: id}
	return Claimed, nil
}

// Done implements [Deduplicator].
func (d *MemoryDeduplicator) Done(_ context.Context, id string) error {
	id = dedupKey(id)
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.entries[id]
	if !ok || e.elem != nil {
		return nil // not claimed here: nothing is held
	}
	e.expires = time.Now().Add(d.ttl)
	e.elem = d.handled.PushBack(e)
	return nil
}

// Release implements [Deduplicator].
func (d *MemoryDeduplicator) Release(_ context.Context, id string) error {
	id = dedupKey(id)
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.entries[id]; ok && e.elem == nil {
		delete(d.entries, id)
	}
	return nil
}

// expire drops the handled ids whose TTL has passed.
// The list is in expiry order, so it stops at the first live one.
func (d *MemoryDeduplicator) expire(now time.Time) {
	for f := d.handled.Front(); f != nil; f = d.handled.Front() {
		e := f.Value.(*dedupEntry)
		if now.Before(e.expires) {
			return
		}
		d.drop(e)
	}
}

// drop forgets a handled id.
func (d *MemoryDeduplicator) drop(e *dedupEntry) {
	d.handled.Remove(e.elem)
	delete(d.entries, e.id)
}

// maxDedupKey is the longest id kept as it is.
const maxDedupKey = 64

// dedupKey is what a MemoryDeduplicator keeps of id.
// That is id itself, or the 32-byte SHA-256 of a long one. A short id equal
// to such a hash would need a preimage.
func dedupKey(id string) string {
	if len(id) <= maxDedupKey {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return string(sum[:])
}
