package rail0

import (
	"context"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeClock is a manual clock for limiter tests.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}

var epoch = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func TestAdmitTime(t *testing.T) {
	const s = time.Second
	b := Budget{Limit: 2, Period: 10 * s}
	tests := []struct {
		name   string
		state  partitionState
		r      Reservation
		want   time.Duration // after epoch
		cooled bool
	}{
		{"empty partition", partitionState{}, Reservation{Budget: b, Period: 10 * s}, 0, false},
		{"log not full", partitionState{sends: []time.Time{epoch.Add(-s)}}, Reservation{Budget: b, Period: 10 * s}, 0, false},
		{"log full: oldest + period", partitionState{sends: []time.Time{epoch.Add(-4 * s), epoch.Add(-s)}}, Reservation{Budget: b, Period: 10 * s}, 6 * s, false},
		{"margin stretches the period", partitionState{sends: []time.Time{epoch.Add(-4 * s), epoch.Add(-s)}}, Reservation{Budget: b, Period: 11 * s}, 7 * s, false},
		{"old sends do not count", partitionState{sends: []time.Time{epoch.Add(-40 * s), epoch.Add(-20 * s)}}, Reservation{Budget: b, Period: 10 * s}, 0, false},
		{"cooldown plus own jitter", partitionState{coolStart: epoch.Add(-10 * s), coolUntil: epoch.Add(50 * s)}, Reservation{Jitter: 0.5}, 53 * s, true},
		{"cooldown over", partitionState{coolStart: epoch.Add(-60 * s), coolUntil: epoch.Add(-s)}, Reservation{Jitter: 0.5}, 0, false},
		{"first in, first out", partitionState{coolStart: epoch, coolUntil: epoch.Add(10 * s), lastAdmit: epoch.Add(10*s + 900*time.Millisecond)}, Reservation{Jitter: 0}, 10*s + 900*time.Millisecond, true},
		{"own jitter after the queue", partitionState{coolStart: epoch, coolUntil: epoch.Add(10 * s), lastAdmit: epoch.Add(10*s + 100*time.Millisecond)}, Reservation{Jitter: 0.5}, 10*s + 500*time.Millisecond, true},
		{"pacing after a cooldown", partitionState{coolStart: epoch, coolUntil: epoch.Add(s), sends: []time.Time{epoch.Add(-s), epoch}}, Reservation{Budget: b, Period: 10 * s}, 9 * s, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.state
			at, cooled := admitTime(&st, tt.r, epoch)
			assert.Equal(t, tt.want, at.Sub(epoch))
			assert.Equal(t, tt.cooled, cooled)
		})
	}
}

// The guarantee: whatever the arrival pattern, in any interval of one period
// at most Limit requests are admitted, so no fixed window can be overrun.
func TestMemoryLimiterNeverExceedsBudgetInAnyInterval(t *testing.T) {
	clock := &fakeClock{t: epoch}
	m := NewMemoryLimiter(clock.Now)
	b := Budget{Limit: 5, Period: time.Second}
	rng := rand.New(rand.NewPCG(1, 2))
	var admitted []time.Time
	for i := 0; i < 400; i++ {
		clock.Advance(time.Duration(rng.IntN(150)) * time.Millisecond)
		adm, err := m.Reserve(context.Background(), Reservation{Partition: "p", Budget: b, Period: b.Period, Jitter: rng.Float64(), MaxWait: time.Hour})
		require.NoError(t, err)
		require.True(t, adm.OK)
		admitted = append(admitted, clock.Now().Add(adm.Wait))
		if i%50 == 0 {
			require.NoError(t, m.Cooldown(context.Background(), "p", 700*time.Millisecond))
		}
	}
	sort.Slice(admitted, func(i, j int) bool { return admitted[i].Before(admitted[j]) })
	for i := b.Limit; i < len(admitted); i++ {
		gap := admitted[i].Sub(admitted[i-b.Limit])
		require.GreaterOrEqual(t, gap, b.Period, "admissions %d and %d are in one period", i-b.Limit, i)
	}
}

// A fresh partition may send its whole budget at once (no token-bucket
// ramp), then waits exactly one period.
func TestMemoryLimiterFullBurstThenPeriod(t *testing.T) {
	clock := &fakeClock{t: epoch}
	m := NewMemoryLimiter(clock.Now)
	b := Budget{Limit: 3, Period: 2 * time.Second}
	var waits []time.Duration
	for range 7 {
		adm, err := m.Reserve(context.Background(), Reservation{Partition: "p", Budget: b, Period: b.Period, MaxWait: time.Hour})
		require.NoError(t, err)
		waits = append(waits, adm.Wait)
	}
	s := time.Second
	assert.Equal(t, []time.Duration{0, 0, 0, 2 * s, 2 * s, 2 * s, 4 * s}, waits)
}

func TestMemoryLimiterMaxWaitRecordsNothing(t *testing.T) {
	clock := &fakeClock{t: epoch}
	m := NewMemoryLimiter(clock.Now)
	b := Budget{Limit: 1, Period: 10 * time.Second}
	ctx := context.Background()
	adm, _ := m.Reserve(ctx, Reservation{Partition: "p", Budget: b, Period: b.Period, MaxWait: time.Second})
	require.True(t, adm.OK)
	adm, _ = m.Reserve(ctx, Reservation{Partition: "p", Budget: b, Period: b.Period, MaxWait: time.Second})
	assert.False(t, adm.OK)
	assert.Equal(t, 10*time.Second, adm.Wait)
	// The refused request took no slot: the next one still waits 10 s, not 20 s.
	adm, _ = m.Reserve(ctx, Reservation{Partition: "p", Budget: b, Period: b.Period, MaxWait: time.Hour})
	assert.True(t, adm.OK)
	assert.Equal(t, 10*time.Second, adm.Wait)
}

func TestMemoryLimiterCooldownNeverShortened(t *testing.T) {
	clock := &fakeClock{t: epoch}
	m := NewMemoryLimiter(clock.Now)
	ctx := context.Background()
	require.NoError(t, m.Cooldown(ctx, "p", 60*time.Second))
	require.NoError(t, m.Cooldown(ctx, "p", 5*time.Second))
	adm, _ := m.Reserve(ctx, Reservation{Partition: "p", MaxWait: time.Hour})
	assert.Equal(t, 60*time.Second, adm.Wait)
	assert.True(t, adm.Cooldown)
	// Partitions are independent.
	adm, _ = m.Reserve(ctx, Reservation{Partition: "other", MaxWait: time.Hour})
	assert.Zero(t, adm.Wait)
	assert.False(t, adm.Cooldown)
}

func TestMemoryLimiterHonoursContext(t *testing.T) {
	m := NewMemoryLimiter(nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := m.Reserve(ctx, Reservation{Partition: "p"})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestPartitionHidesTheToken(t *testing.T) {
	assert.Equal(t, "public", partitionFor(""))
	p := partitionFor("eyJhbGciOiJIUzI1NiJ9.secret.sig")
	assert.True(t, strings.HasPrefix(p, "session:"))
	assert.NotContains(t, p, "secret")
	assert.Equal(t, p, partitionFor("eyJhbGciOiJIUzI1NiJ9.secret.sig"))
	assert.NotEqual(t, p, partitionFor("another"))
}

func TestPacingValidation(t *testing.T) {
	for _, p := range []Pacing{
		{Public: Budget{Limit: 0, Period: time.Second}},
		{Session: Budget{Limit: 5}},
		{Public: Budget{Limit: -1, Period: time.Second}},
		{Public: Budget{Limit: 1, Period: time.Second}, Margin: -time.Second},
	} {
		_, err := NewClient("https://api.rail0.xyz", WithPacing(p))
		assert.Error(t, err, "%+v", p)
	}
	_, err := NewClient("https://api.rail0.xyz", WithLimiter(nil))
	assert.Error(t, err)
	c, err := NewClient("https://api.rail0.xyz", WithPacing(PublishedLimits()))
	require.NoError(t, err)
	assert.True(t, c.pacingOn)
	assert.Equal(t, 1200*time.Millisecond, c.pacing.margin(c.pacing.Public))
	assert.Equal(t, 20*time.Millisecond, Pacing{}.margin(Budget{Limit: 1, Period: 100 * time.Millisecond}))
}
