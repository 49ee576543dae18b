// Package webhook verifies and decodes the event deliveries that a RAIL0
// gateway POSTs to a webhook's callback_url.
//
// Every delivery carries three headers:
//   - X-Rail0-Topic;
//   - X-Rail0-Timestamp, in decimal Unix seconds;
//   - X-Rail0-Signature, the lowercase hex HMAC-SHA256 of
//     "{timestamp}.{body}" keyed with the webhook's shared secret.
//
// A delivery is authentic when the digest matches, compared in constant
// time. It is fresh when its timestamp lies within a tolerance of the
// receiver's clock: 300 s by default, in either direction. The timestamp is
// covered by the digest. So the freshness check is what stops an attacker
// from replaying a captured delivery later. No unsigned header may move
// that clock back (see [Verifier.ClockOffset]).
//
// Verify the raw body bytes exactly as they arrived. Decoding and
// re-encoding the JSON changes key order and whitespace, and with them the
// digest. [Handler] does this for an http.Server. [Verifier.VerifyEvent]
// does it for any other framework.
//
// The signature covers the timestamp and the body, not the X-Rail0-Topic
// header. So an event's topic is read from the signed body only. The
// header is never read; it is informational only, and anyone on the way
// could change it. A header that disagrees with the body is ignored, not
// refused. Refusing would let whoever changed it get an authentic delivery
// retried, and nothing acts on the header.
//
// Each webhook subscription has its own secret and one topic. One callback
// URL may serve several subscriptions. Its receiver then gives its Verifier
// each subscription's secrets with [Verifier.WithSubscription]. A delivery
// is accepted when one of them verifies it. And it is accepted only for the
// topic of the subscription that secret belongs to.
//
// The gateway delivers at least once. A [Handler] with a [Deduplicator]
// runs its Handle once per event id.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/internal/secret"
)

// Header names used by webhook deliveries.
const (
	// SignatureHeader carries the hex HMAC-SHA256 of "{timestamp}.{body}".
	SignatureHeader = "X-Rail0-Signature"
	// TimestampHeader carries the signing time as decimal Unix seconds.
	TimestampHeader = "X-Rail0-Timestamp"
)

// DefaultTolerance is the largest accepted distance between a delivery's
// timestamp and the receiver's clock when [Verifier.Tolerance] is zero. It
// matches the window the gateway applies to its own signed channel.
const DefaultTolerance = 300 * time.Second

// Errors returned by verification. They are matched with errors.Is.
// The returned error adds detail, never the secret or the expected digest.
var (
	// ErrMalformedHeader means the signature or timestamp header is missing
	// or not in the documented form. That is 64 hex digits for the
	// signature and decimal seconds for the timestamp.
	ErrMalformedHeader = errors.New("webhook: malformed signature header")
	// ErrBadSignature means the digest does not match the body, timestamp
	// and secret. The delivery is forged, altered, or signed with another
	// secret.
	ErrBadSignature = errors.New("webhook: signature does not match")
	// ErrStale means the digest matched but the timestamp is further than
	// the tolerance from the receiver's clock. In the past, that is a replay
	// or a long-delayed delivery. In the future, it is clock skew.
	ErrStale = errors.New("webhook: timestamp outside tolerance")
	// ErrNoSecret means the verifier has no secret, or a subscription's
	// current secret is empty. An empty HMAC key is public knowledge, so
	// verifying with it would accept forgeries. A previous secret alone is
	// one the gateway no longer signs with.
	ErrNoSecret = errors.New("webhook: no shared secret configured")
	// ErrTopicMismatch means the delivery verified only with the secret of
	// a subscription to another topic. Its signed body names a topic that
	// secret does not vouch for (see [Verifier.WithSubscription]).
	ErrTopicMismatch = errors.New("webhook: topic is not the subscription's")
)

// Verifier checks delivery signatures.
// Build it with [NewVerifier] for one subscription, or with
// [Verifier.WithSubscription] for several. The zero value has no secret and
// rejects everything with [ErrNoSecret]. A Verifier is safe for concurrent
// use once configured.
//
// The secrets are held where no reflection-based printer or encoder
// reaches them. A Verifier prints (every fmt verb), logs and encodes
// without them. That holds even in an unexported field of the
// application's own struct, which fmt and slog's text handler walk field by
// field.
type Verifier struct {
	// Tolerance is the largest accepted |now - timestamp|.
	// Zero means DefaultTolerance. A negative value is treated as zero
	// tolerance rather than disabling the check.
	Tolerance time.Duration

	// Now returns the current time; nil means time.Now. Tests inject a
	// fixed clock here. Do not derive it from the gateway's Date headers:
	// ClockOffset is the safe way to use them.
	Now func() time.Time

	// ClockOffset, when set, says how far the gateway's clock is ahead
	// of Now. Pass a rail0.Client's ClockOffset method. That offset is
	// learned from unsigned Date headers. So the verifier only moves its
	// clock forward by it, by at most half the tolerance. A lying offset
	// can then refuse a late delivery, never accept an older one.
	ClockOffset func() time.Duration

	keys []key // never modified once built: WithSubscription copies

	// misconfigured, when set, refuses every delivery.
	// A subscription was given without its current secret.
	misconfigured error
}

// key is one accepted secret and the subscription it was issued for.
type key struct {
	secret *secret.Value
	sub    Subscription
}

// Subscription is a webhook subscription as the receiver knows it.
// A delivery names no subscription. The receiver learns which one it came
// for from the secret that verified it. It reports that subscription in
// [Event.Subscription].
type Subscription struct {
	// ID is the webhook's id (rail0.Webhook.ID), for the receiver's own
	// routing and logs. It may be empty.
	ID string
	// Topic is the one topic the webhook is subscribed to. Take a delivery
	// verified with this subscription's secret. It is accepted only when
	// its signed body names this topic, or names none and then takes this
	// one. Empty accepts any topic.
	Topic rail0.WebhookTopic
}

// NewVerifier returns a Verifier for one subscription of any topic.
// It accepts deliveries signed with any of secrets. Pass the webhook's
// current shared_secret first. After a rotation, add the one it replaced.
// Keep it for as long as deliveries signed before the rotation may still
// arrive.
//
// An empty current secret makes the Verifier refuse every delivery with
// [ErrNoSecret]. A deploy that lost it must not go on trusting the retired
// one alone. Later empty secrets are ignored.
func NewVerifier(secrets ...string) Verifier {
	if len(secrets) == 0 {
		return Verifier{}
	}
	return Verifier{}.WithSubscription(Subscription{}, secrets...)
}

// WithSubscription returns a copy of v that also accepts deliveries for sub
// signed with any of secrets. Pass sub's current shared_secret first and,
// during a rotation, the previous one.
//
// Give each subscription of a callback URL its own Topic. A delivery is
// then accepted only for the topic of the subscription whose secret
// verified it. Say a secret was handed to a system that sees only
// payments.created. That secret cannot vouch for a payments.refunded.
//
// The copy may lack a current secret: none given, or the first empty. It
// then refuses every delivery with [ErrNoSecret], for every subscription.
// A misconfigured receiver should fail loudly, not trust a retired secret.
// Later empty secrets are ignored; v is not modified.
func (v Verifier) WithSubscription(sub Subscription, secrets ...string) Verifier {
	if (len(secrets) == 0 || secrets[0] == "") && v.misconfigured == nil {
		of := ""
		if sub.ID != "" {
			of = fmt.Sprintf(" of subscription %q", sub.ID)
		}
		v.misconfigured = fmt.Errorf("%w: the current (first) secret%s is empty, so no delivery is trusted", ErrNoSecret, of)
	}
	keys := slices.Clip(v.keys) // an append must never write into another copy's array
	for _, s := range secrets {
		if s != "" {
			keys = append(keys, key{secret: secret.New(s), sub: sub})
		}
	}
	v.keys = keys
	return v
}

// Verify checks one delivery's signature and timestamp against every
// configured secret. body must be the raw request body. Verify does not
// look into the body, so it does not check a subscription's topic.
// [Verifier.VerifyEvent] does.
//
// The digest is checked before the clock. So [ErrStale] is only returned
// for a delivery that really was signed with one of the secrets. A caller
// can thus tell a replay or a skewed clock apart from a forgery.
func (v Verifier) Verify(body []byte, signatureHeader, timestampHeader string) error {
	_, err := v.verify(body, signatureHeader, timestampHeader)
	return err
}

// VerifyEvent verifies one delivery and decodes it.
// It checks the signature and timestamp as [Verifier.Verify] does. It
// decodes the body as [DecodeEvent] does. It checks the topic against the
// subscription whose secret verified the delivery.
//
// The event's Topic comes from the signed body only; the X-Rail0-Topic
// header is not read. A body that names no topic takes the subscription's.
// Event.Subscription says which subscription the delivery came for.
//
// A delivery may verify only with subscriptions to other topics than the
// one its body names. It is refused with [ErrTopicMismatch]. A body that is
// not an event is refused with [ErrMalformedEvent]. [Handler] calls this
// for each request.
func (v Verifier) VerifyEvent(body []byte, signatureHeader, timestampHeader string) (Event, error) {
	matched, err := v.verify(body, signatureHeader, timestampHeader)
	if err != nil {
		return Event{}, err
	}
	event, err := DecodeEvent(body)
	if err != nil {
		return Event{}, err
	}
	sub, ok := subscriptionFor(matched, event.Topic)
	if !ok {
		return Event{}, fmt.Errorf("%w: the body names %q; the secret that signed it belongs to a subscription to %q",
			ErrTopicMismatch, event.Topic, matched[0].Topic)
	}
	if event.Topic == "" {
		event.Topic = sub.Topic
	}
	event.Subscription = sub
	return event, nil
}

// subscriptionFor picks the one that vouches for topic among the
// subscriptions whose secret verified a delivery. That is one subscribed to
// it, else one of any topic. A body without a topic takes the first.
func subscriptionFor(matched []Subscription, topic rail0.WebhookTopic) (Subscription, bool) {
	if topic == "" {
		return matched[0], true
	}
	if i := slices.IndexFunc(matched, func(s Subscription) bool { return s.Topic == topic }); i >= 0 {
		return matched[i], true
	}
	if i := slices.IndexFunc(matched, func(s Subscription) bool { return s.Topic == "" }); i >= 0 {
		return matched[i], true
	}
	return Subscription{}, false
}

// verify checks the headers, the digest under every secret and the clock.
// It returns the subscriptions whose secret matched: at least one when the
// error is nil.
func (v Verifier) verify(body []byte, signatureHeader, timestampHeader string) ([]Subscription, error) {
	if v.misconfigured != nil {
		return nil, v.misconfigured
	}
	if len(v.keys) == 0 {
		return nil, ErrNoSecret
	}
	got, err := parseSignature(signatureHeader)
	if err != nil {
		return nil, err
	}
	ts, err := parseTimestamp(timestampHeader)
	if err != nil {
		return nil, err
	}
	matched := v.matches(body, timestampHeader, got)
	if len(matched) == 0 {
		return nil, ErrBadSignature
	}
	tolerance := v.tolerance()
	// Sub saturates instead of overflowing and Abs maps the minimum
	// Duration to the maximum, so absurd timestamps are refused too.
	skew := v.now(tolerance).Sub(time.Unix(ts, 0))
	if skew.Abs() > tolerance {
		return nil, fmt.Errorf("%w: signed at %s, %s away from now (tolerance %s)",
			ErrStale, time.Unix(ts, 0).UTC().Format(time.RFC3339), skew.Abs(), tolerance)
	}
	return matched, nil
}

// now is the time a delivery's timestamp is compared with.
// It is Now, moved forward by ClockOffset within [0, tolerance/2]. Moving it
// back would accept deliveries older than the tolerance on an unsigned
// header's word. Moving it forward by at most half leaves a fresh delivery
// half the window.
func (v Verifier) now(tolerance time.Duration) time.Time {
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	t := now()
	if v.ClockOffset != nil {
		t = t.Add(min(max(v.ClockOffset(), 0), tolerance/2))
	}
	return t
}

// String describes the verifier without revealing any secret.
func (v Verifier) String() string {
	return fmt.Sprintf("webhook.Verifier{subscriptions: %d, secrets: %d, tolerance: %s}",
		v.subscriptionCount(), len(v.keys), v.tolerance())
}

// tolerance returns the effective tolerance (see the Tolerance field).
func (v Verifier) tolerance() time.Duration {
	switch {
	case v.Tolerance == 0:
		return DefaultTolerance
	case v.Tolerance < 0:
		return 0
	}
	return v.Tolerance
}

// GoString is like String, so %#v does not reveal the secret either.
func (v Verifier) GoString() string { return v.String() }

// Format implements fmt.Formatter so that every verb prints String.
func (v Verifier) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, v.String()) }

// LogValue implements slog.LogValuer without any secret.
func (v Verifier) LogValue() slog.Value {
	return slog.GroupValue(slog.Int("subscriptions", v.subscriptionCount()), slog.Int("secrets", len(v.keys)),
		slog.Duration("tolerance", v.tolerance()))
}

// subscriptionCount counts the distinct subscriptions of the keys.
func (v Verifier) subscriptionCount() int {
	var seen []Subscription
	for _, k := range v.keys {
		if !slices.Contains(seen, k.sub) {
			seen = append(seen, k.sub)
		}
	}
	return len(seen)
}

// matches compares got with the digest under every configured secret.
// It returns the subscriptions of the secrets that match, in configuration
// order. All secrets are tried even after a match. So the time taken does
// not tell which one matched.
func (v Verifier) matches(body []byte, timestamp string, got []byte) []Subscription {
	var matched []Subscription
	for _, k := range v.keys {
		if hmac.Equal(got, digest(k.secret.Reveal(), timestamp, body)) {
			matched = append(matched, k.sub)
		}
	}
	return matched
}

// Sign returns the X-Rail0-Signature value for body signed with secret.
// timestamp is in Unix seconds. Sign computes the value exactly as the
// gateway does. It is meant for tests and local tools that simulate
// deliveries.
func Sign(body []byte, timestamp int64, secret string) string {
	return hex.EncodeToString(digest(secret, strconv.FormatInt(timestamp, 10), body))
}

func digest(secret, timestamp string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// parseSignature decodes the 64 hex digits of a SHA-256 HMAC. Upper-case
// digits are accepted although the gateway sends lower case.
func parseSignature(h string) ([]byte, error) {
	if h == "" {
		return nil, fmt.Errorf("%w: %s is missing", ErrMalformedHeader, SignatureHeader)
	}
	if len(h) != 2*sha256.Size {
		return nil, fmt.Errorf("%w: %s has %d characters, want %d hex digits",
			ErrMalformedHeader, SignatureHeader, len(h), 2*sha256.Size)
	}
	b, err := hex.DecodeString(h)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not hex", ErrMalformedHeader, SignatureHeader)
	}
	return b, nil
}

// parseTimestamp accepts only unsigned decimal digits.
// The digest covers the header text. strconv would tolerate forms such as
// "+17" or " 17"; they must not be given a second meaning.
func parseTimestamp(h string) (int64, error) {
	if h == "" {
		return 0, fmt.Errorf("%w: %s is missing", ErrMalformedHeader, TimestampHeader)
	}
	for i := 0; i < len(h); i++ {
		if h[i] < '0' || h[i] > '9' {
			return 0, fmt.Errorf("%w: %s is not decimal Unix seconds", ErrMalformedHeader, TimestampHeader)
		}
	}
	ts, err := strconv.ParseInt(h, 10, 64)
	if err != nil || ts > maxUnix {
		return 0, fmt.Errorf("%w: %s is out of range", ErrMalformedHeader, TimestampHeader)
	}
	return ts, nil
}

// maxUnix keeps time.Unix(ts, 0) and the skew computation far from
// overflow. It is the end of year 9999.
const maxUnix = 253402300799
