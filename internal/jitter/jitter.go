// Package jitter holds what the SDK's waits do with a random draw, shared
// by the root package's backoff and the rate limiters (package ratelimit in
// memory, package redislimit on Redis): the same draw must give the same
// wait in each, or redislimit's differential test, which replays one
// schedule on both limiters, would compare two rules.
package jitter

import "math"

// Clamp maps a jitter draw into [0, 1): a draw from a caller's random
// source that is negative or NaN counts as 0, and one of 1 or more as the
// largest value below 1, so that a broken source can neither shorten a
// wait below its floor nor stretch it past its window.
func Clamp(u float64) float64 {
	switch {
	case u < 0 || math.IsNaN(u):
		return 0
	case u >= 1:
		return math.Nextafter(1, 0)
	}
	return u
}
