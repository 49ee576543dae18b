package rail0

import (
	"net/http"
	"sync"
	"time"
)

// This file learns the gateway's clock from the Date header of its answers,
// as aws-sdk-go-v2 does for request signing. The gateway refuses a SIWE
// message whose Issued At is too far from its own time. A session's
// expires_at is on its clock too. So a client whose clock is ten minutes
// off could not sign in, and would refresh its session ten minutes late.

const (
	// dateResolution is the resolution of an HTTP Date. The gateway's time
	// when it wrote the answer is in [Date, Date + 1 s).
	dateResolution = time.Second
	// clockDeadBand is the offset below which the clocks are taken to
	// agree. A Date cannot say more. Moving Issued At or the refresh by
	// less would chase noise.
	clockDeadBand = 2 * time.Second
	// maxClockOffset bounds an offset the client believes. A Date further
	// off than a day is a broken or hostile header. A local clock that far
	// off could not check a TLS certificate either.
	maxClockOffset = 24 * time.Hour
	// clockHintOffset is the offset from which the hint of invalid_siwe
	// names the clock before the message layout.
	clockHintOffset = 30 * time.Second
)

// gatewayClock estimates the offset of the gateway's clock from the local
// one. It is safe for concurrent use. Each answer bounds the offset. The
// gateway wrote Date (truncated to the second) at some local time between
// the request's departure and the answer's arrival. So the offset lies in
//
//	[Date − arrival, Date + 1 s − departure].
//
// The estimate is the middle of the intersection of those intervals. It
// narrows with every answer, to about the shortest round trip. An answer
// whose interval does not meet it is held aside, so one lying or stale
// header moves nothing. The second answer in a row that agrees with it
// replaces the estimate: the gateway's clock was stepped, or the local one
// was.
type gatewayClock struct {
	mu      sync.Mutex
	known   bool
	lo, hi  time.Duration // the offset's bounds
	pending *[2]time.Duration
}

// sample takes in the Date header of an answer. The request left at sent,
// and the answer arrived at arrived, both local times. A missing or
// malformed Date, or one more than a day off, is ignored.
func (g *gatewayClock) sample(h http.Header, sent, arrived time.Time) {
	v := h.Get("Date")
	if v == "" || sent.IsZero() || arrived.Before(sent) {
		return
	}
	date, err := http.ParseTime(v)
	if err != nil {
		return
	}
	lo, hi := date.Sub(arrived), date.Add(dateResolution).Sub(sent)
	if lo < -maxClockOffset || hi > maxClockOffset {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case !g.known:
		g.known, g.lo, g.hi = true, lo, hi
	case lo <= g.hi && g.lo <= hi:
		g.lo, g.hi = max(g.lo, lo), min(g.hi, hi)
		g.pending = nil
	case g.pending != nil && lo <= g.pending[1] && g.pending[0] <= hi:
		g.lo, g.hi = max(g.pending[0], lo), min(g.pending[1], hi)
		g.pending = nil
	default:
		g.pending = &[2]time.Duration{lo, hi}
	}
}

// offset is how far the gateway's clock is ahead of the local one, negative
// when behind. It is zero until an answer carried a Date, and within the
// dead band.
func (g *gatewayClock) offset() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.known {
		return 0
	}
	d := g.lo + (g.hi-g.lo)/2
	if d > -clockDeadBand && d < clockDeadBand {
		return 0
	}
	return d
}

// ClockOffset returns how far the gateway's clock is ahead of the local
// one. The Date headers of its answers tell it. It is negative when the
// gateway's clock is behind. It is zero before the first answer, and when
// the two agree within two seconds.
//
// The client uses it to date what the gateway compares with its own time:
// the Issued At of a SIWE message, the refresh of a session before its
// expires_at, an X-RateLimit-Reset given as a Unix time. Date is not
// signed, so a proxy can move the offset. Never add it to a webhook
// Verifier's Now. Give this method to the Verifier's ClockOffset field
// instead, which never lets it widen the replay window.
func (c *Client) ClockOffset() time.Duration { return c.clock.offset() }

// gatewayNow is the gateway's time now, by the learned offset.
func (c *Client) gatewayNow() time.Time { return c.now().Add(c.clock.offset()) }
