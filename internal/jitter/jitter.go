// Package jitter holds what the SDK's waits do with a random draw.
// Three packages share it: the root's backoff, ratelimit (in memory) and
// redislimit (on Redis). The same draw must give the same wait in each.
// Otherwise redislimit's differential test, which replays one schedule on
// both limiters, would compare two rules.
package jitter

import "math"

// Clamp maps a jitter draw into [0, 1).
// A negative or NaN draw from a caller's random source counts as 0.
// A draw of 1 or more counts as the largest value below 1.
// A broken source thus cannot shorten a wait below its floor.
// Nor can it stretch a wait past its window.
func Clamp(u float64) float64 {
	switch {
	case u < 0 || math.IsNaN(u):
		return 0
	case u >= 1:
		return math.Nextafter(1, 0)
	}
	return u
}
