// Package limitclock runs package ratelimit's in-memory limiter on a clock
// its caller controls. Only the SDK's own tests use it: redislimit replays
// one schedule on Redis and on the in-memory rules under one injected
// clock (its differential test), and runs its local fallback on a fake
// clock. The in-memory limiter a program can build (ratelimit.NewMemory)
// always reads time.Now, so the clock is not part of the public API.
package limitclock

import "time"

// NewMemory returns a new *ratelimit.Memory that reads the time from now.
// Package ratelimit sets it when it is initialised, so that it is set
// whenever ratelimit is linked in; it never changes afterwards. The result
// is typed any because this package cannot import ratelimit (ratelimit
// imports it).
var NewMemory func(now func() time.Time) any
