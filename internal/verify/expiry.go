package verify

import (
	"fmt"
	"time"
)

// ExpiryBounds bound the expiries the payer's signature commits to. They
// are durations from the moment of signing, on the signer's own clock. The
// payment's terms, expiries included, are the gateway's choice: Create
// takes none. config_hash only proves them consistent. Without a bound, a
// gateway could have the payer sign either of these:
//   - An escrow whose authorization never expires. The payer can release
//     it only after authorization_expiry, so the funds are locked for
//     good.
//   - A refund window that closes now. The merchant can then never refund,
//     and the payer never dispute.
type ExpiryBounds struct {
	// MaxAuthorization is how far ahead authorization_expiry may be.
	MaxAuthorization time.Duration
	// MinRefund and MaxRefund are how far ahead refund_expiry must and may
	// be.
	MinRefund, MaxRefund time.Duration
}

// DefaultExpiryBounds are the bounds without WithExpiryBounds. The
// contract guide leaves the windows to the gateway. rail0test, like the
// hosted gateway's defaults, uses 7 days for the authorization and 30 for
// refunds. The maxima are four and twelve times those: 30 days of escrow,
// a year of refunds. They are generous enough for a gateway configured for
// longer holds, or a merchant's year of returns. They are finite enough
// that the payer's funds come back, and a signature does not outlive its
// purpose. The minimum, one day, refuses a refund window a gateway closed
// at creation. A payer signing late in a short window still can sign.
var DefaultExpiryBounds = ExpiryBounds{
	MaxAuthorization: 30 * 24 * time.Hour,
	MinRefund:        24 * time.Hour,
	MaxRefund:        365 * 24 * time.Hour,
}

// CheckExpiries runs the rows of ArtExpiries: t's expiries against b at
// now, the signer's clock. now is never a clock learned from the gateway's
// Date headers, which would let the gateway move its own bounds.
func CheckExpiries(t *Terms, now time.Time, b ExpiryBounds) error {
	return run(ArtExpiries, &expiriesCase{t: t, now: now, b: b})
}

// days renders d in days, or hours below two days.
func days(d time.Duration) string {
	if d < 48*time.Hour {
		return fmt.Sprintf("%d hours", int64(d/time.Hour))
	}
	return fmt.Sprintf("%d days", int64(d/(24*time.Hour)))
}
