// Package limitclock runs package ratelimit's in-memory limiter on a clock
// its caller controls. Only the SDK's own tests use it. redislimit's
// differential test replays one schedule on Redis and on the in-memory
// rules, under one injected clock. redislimit also runs its local fallback
// on a fake clock. The in-memory limiter a program can build
// (ratelimit.NewMemory) always reads time.Now. So the clock is not part of
// the public API.
package limitclock

import "time"

// NewMemory returns a new *ratelimit.Memory that reads the time from now.
// Package ratelimit sets it when it is initialised, so it is set whenever
// ratelimit is linked in. It never changes afterwards. The result is typed
// any because this package cannot import ratelimit: ratelimit imports it.
var NewMemory func(now func() time.Time) any
