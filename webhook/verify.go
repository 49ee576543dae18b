// Package webhook verifies and decodes the event deliveries that a RAIL0
// gateway POSTs to a webhook's callback_url.
//
// Every delivery carries three headers: X-Rail0-Topic, X-Rail0-Timestamp
// (decimal Unix seconds) and X-Rail0-Signature, the lowercase hex
// HMAC-SHA256 of "{timestamp}.{body}" keyed with the webhook's shared
// secret. A delivery is authentic when the digest matches, compared in
// constant time, and fresh when its timestamp lies within a tolerance of the
// receiver's clock (300 s by default, in either direction). The timestamp is
// covered by the digest, so the freshness check is what stops an attacker
// from replaying a captured delivery later.
//
// Verify the raw body bytes exactly as they arrived: decoding and
// re-encoding the JSON changes key order and whitespace, and with them the
// digest. [Handler] does this for an http.Server; [Verifier] does it for any
// other framework.
//
// This package depends only on the standard library, so a service that only
// receives deliveries does not compile the API client.
package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"
)

// Header names used by webhook deliveries.
const (
	// SignatureHeader carries the hex HMAC-SHA256 of "{timestamp}.{body}".
	SignatureHeader = "X-Rail0-Signature"
	// TimestampHeader carries the signing time as decimal Unix seconds.
	TimestampHeader = "X-Rail0-Timestamp"
	// TopicHeader carries the event's topic, e.g. "payments.captured".
	TopicHeader = "X-Rail0-Topic"
)

// DefaultTolerance is the largest accepted distance between a delivery's
// timestamp and the receiver's clock when [Verifier.Tolerance] is zero. It
// matches the window the gateway applies to its own signed channel.
const DefaultTolerance = 300 * time.Second

// Errors returned by verification. They are matched with errors.Is; the
// returned error adds detail (never the secret or the expected digest).
var (
	// ErrMalformedHeader means the signature or timestamp header is missing
	// or not in the documented form (64 hex digits; decimal seconds).
	ErrMalformedHeader = errors.New("webhook: malformed signature header")
	// ErrBadSignature means the digest does not match the body, timestamp
	// and secret: the delivery is forged, altered, or signed with another
	// secret.
	ErrBadSignature = errors.New("webhook: signature does not match")
	// ErrStale means the digest matched but the timestamp is further than
	// the tolerance from the receiver's clock, in the past (a replay or a
	// long-delayed delivery) or in the future (clock skew).
	ErrStale = errors.New("webhook: timestamp outside tolerance")
	// ErrNoSecret means the verifier has no secret. An empty HMAC key is
	// public knowledge, so verifying with it would accept forgeries.
	ErrNoSecret = errors.New("webhook: no shared secret configured")
)

// Verifier checks delivery signatures. The zero value has no secret and
// rejects everything with [ErrNoSecret]; set Secret to the webhook's
// shared_secret. A Verifier is safe for concurrent use once configured.
type Verifier struct {
	// Secret is the webhook's shared_secret, as returned when the webhook
	// was created or its secret rotated. It is never printed.
	Secret string

	// PreviousSecrets are also accepted. Set the secret replaced by a
	// rotation here while deliveries signed before the rotation may still
	// arrive, then remove it.
	PreviousSecrets []string

	// Tolerance is the largest accepted |now - timestamp|. Zero means
	// DefaultTolerance. A negative value is treated as zero tolerance
	// rather than disabling the check.
	Tolerance time.Duration

	// Now returns the current time; nil means time.Now. Tests inject a
	// fixed clock here.
	Now func() time.Time
}

// Verify reports whether body, with the given X-Rail0-Signature and
// X-Rail0-Timestamp header values, is an authentic and fresh delivery
// signed with secret, using DefaultTolerance and the system clock.
//
// It is shorthand for Verifier{Secret: secret}.Verify(...).
func Verify(body []byte, signatureHeader, timestampHeader, secret string) error {
	v := Verifier{Secret: secret}
	return v.Verify(body, signatureHeader, timestampHeader)
}

// Verify checks one delivery. body must be the raw request body.
//
// The digest is checked before the clock, so [ErrStale] is only returned for
// a delivery that really was signed with one of the secrets: a caller can
// tell a replay or a skewed clock apart from a forgery.
func (v Verifier) Verify(body []byte, signatureHeader, timestampHeader string) error {
	if v.Secret == "" {
		return ErrNoSecret
	}
	got, err := parseSignature(signatureHeader)
	if err != nil {
		return err
	}
	ts, err := parseTimestamp(timestampHeader)
	if err != nil {
		return err
	}
	if !v.matches(body, timestampHeader, got) {
		return ErrBadSignature
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	tolerance := v.tolerance()
	// Sub saturates instead of overflowing and Abs maps the minimum
	// Duration to the maximum, so absurd timestamps are refused too.
	skew := now().Sub(time.Unix(ts, 0))
	if skew.Abs() > tolerance {
		return fmt.Errorf("%w: signed at %s, %s away from now (tolerance %s)",
			ErrStale, time.Unix(ts, 0).UTC().Format(time.RFC3339), skew.Abs(), tolerance)
	}
	return nil
}

// String describes the verifier without revealing any secret.
func (v Verifier) String() string {
	return fmt.Sprintf("webhook.Verifier{secrets: %d, tolerance: %s}", v.secretCount(), v.tolerance())
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

// Format implements fmt.Formatter so that every verb prints String: String
// and GoString alone leave %d, %x or %o to walk the fields and print the
// secret's bytes.
func (v Verifier) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, v.String()) }

// LogValue implements slog.LogValuer without any secret.
func (v Verifier) LogValue() slog.Value {
	return slog.GroupValue(slog.Int("secrets", v.secretCount()), slog.Duration("tolerance", v.tolerance()))
}

func (v Verifier) secretCount() int {
	n := len(v.PreviousSecrets)
	if v.Secret != "" {
		n++
	}
	return n
}

// matches compares got with the digest under every configured secret. All
// secrets are tried even after a match, so the time taken does not tell
// which one matched.
func (v Verifier) matches(body []byte, timestamp string, got []byte) bool {
	ok := hmac.Equal(got, digest(v.Secret, timestamp, body))
	for _, s := range v.PreviousSecrets {
		if s == "" {
			continue
		}
		if hmac.Equal(got, digest(s, timestamp, body)) {
			ok = true
		}
	}
	return ok
}

// Sign returns the X-Rail0-Signature value for body signed at timestamp
// (Unix seconds) with secret, exactly as the gateway computes it. It is
// meant for tests and local tools that simulate deliveries.
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

// parseTimestamp accepts only unsigned decimal digits: the digest covers the
// header text, so forms such as "+17" or " 17" that strconv would tolerate
// must not be given a second meaning.
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
// overflow (year 9999).
const maxUnix = 253402300799
