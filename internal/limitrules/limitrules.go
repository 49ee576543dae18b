// Package limitrules holds the constants of the rate-limit rules. Package
// ratelimit's in-memory limiter and package redislimit's Lua both apply
// them. Each has one value, so that the two engines cannot drift apart.
// Their meaning is documented where package ratelimit uses them.
package limitrules

import "time"

const (
	// RetryJitter is the share of a cooldown over which the retries it
	// held back spread their slots. That holds under the sliding rule.
	RetryJitter = 0.10
	// YieldShare sets what a probing partition gives up when refused in a
	// window. It gives up a YieldShare-th of what went through in it. That
	// is at least one request.
	YieldShare = 16
	// LogHorizon is how long a partition's log keeps an admission for
	// learning. It holds when no longer period is known.
	LogHorizon = 2 * time.Minute
	// MaxLog bounds a partition's log. A budget larger than this raises it.
	MaxLog = 4096
	// IdleAfter is how long a partition must have been unconstrained
	// before it is forgotten.
	IdleAfter = 10 * time.Minute
)
