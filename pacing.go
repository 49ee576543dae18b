package rail0

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/rail0/rail0-go/ratelimit"
)

// Budget is a pacing budget: at most Limit requests in any interval of
// Period. Zero means no pacing. It is the rate-limit engine's own type
// (package ratelimit). It is named here so that WithPacing needs no other
// import, and a budget a Limiter reports is the same value.
type Budget = ratelimit.Budget

// maxAdvertisedLimit bounds the budget an answer's RateLimit fields may
// set. An absurd quota must not make the limiter keep an absurd log.
const maxAdvertisedLimit = 4096

// paced reports whether b paces anything.
func paced(b Budget) bool { return b.Limit > 0 && b.Period > 0 }

// validateBudget refuses a budget that is set but paces nothing.
func validateBudget(name string, b Budget) error {
	if b == (Budget{}) {
		return nil
	}
	if !paced(b) {
		return fmt.Errorf("rail0: %s budget needs a positive limit and period, got %d per %v", name, b.Limit, b.Period)
	}
	return nil
}

// inForce is the budget a call's admission was made under, or the
// configured one when the limiter reported none. Its period sizes the
// call's pacing margin.
func inForce(configured, admitted Budget) Budget {
	if paced(admitted) {
		return admitted
	}
	return configured
}

// Pacing holds one budget per rate-limit surface of the gateway. The
// gateway throttles public requests per client IP and authenticated ones
// per session, independently.
type Pacing struct {
	Public  Budget
	Session Budget
	// Margin absorbs the spread in how long requests take to reach the
	// gateway. A request sent less than Margin before a window's end may be
	// counted in the next window. In the sliding rule, each period is
	// stretched by it. Zero measures it: the longest round trip among the
	// client's recent requests, or max(Period/50, 20ms) before any.
	Margin time.Duration
}

// PublishedLimits returns the hosted gateway's published limits. They are
// 100 public requests per 60 s per IP, and 300 per 60 s per session.
func PublishedLimits() Pacing {
	return Pacing{
		Public:  Budget{Limit: 100, Period: 60 * time.Second},
		Session: Budget{Limit: 300, Period: 60 * time.Second},
	}
}

// partitionFor names the rate-limit partition of a call. The gateway counts
// anonymous requests per IP and authenticated ones per session token. The
// token is hashed, so that the limiter (possibly a shared store) never
// holds it in clear.
func partitionFor(token string) string {
	if token == "" {
		return "public"
	}
	sum := sha256.Sum256([]byte(token))
	return "session:" + hex.EncodeToString(sum[:12])
}
