package rail0

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// This file reads what an answer says of its endpoint's retirement: the
// Deprecation header (RFC 9745), the Sunset header (RFC 8594) and their
// Link relations. The answer's Response and the transcript's Attempt carry
// it. The observers read it there. The logger hears it once per operation
// (callState.report).

// Deprecation is what an answer said of its endpoint's retirement.
type Deprecation struct {
	// Deprecated is true when the answer carried a valid Deprecation
	// header. The endpoint is deprecated, or will be at Date.
	Deprecated bool
	// Date is when the endpoint was or will be deprecated. It is zero
	// when the header gave no date (the legacy "true").
	Date time.Time
	// Sunset is when the endpoint may stop answering (the Sunset header).
	// It is zero when absent.
	Sunset time.Time
	// Link is where the gateway documents it: the Link header's URL of
	// relation "deprecation", or else "sunset". It is empty when none.
	Link string
}

// maxDeprecationLink bounds the Link the SDK keeps. It comes from the
// answer and ends up in logs and spans.
const maxDeprecationLink = 512

// deprecationOf reads an answer's Deprecation and Sunset headers. It
// returns nil when the answer has neither, or neither is valid. A value it
// cannot read is ignored, as RFC 9745 says of an invalid Deprecation.
// The Link's query values are redacted unless shown, as in Call.URL: the
// Deprecation goes into the transcript and the log.
func deprecationOf(h http.Header, shown map[string]bool) *Deprecation {
	dep, sunset := h["Deprecation"], h["Sunset"]
	if len(dep) == 0 && len(sunset) == 0 {
		return nil // the common case: two map lookups
	}
	var d Deprecation
	if len(dep) == 1 {
		d.Date, d.Deprecated = parseDeprecation(dep[0])
	}
	if len(sunset) == 1 {
		if t, err := http.ParseTime(strings.TrimSpace(sunset[0])); err == nil {
			d.Sunset = t.UTC()
		}
	}
	if !d.Deprecated && d.Sunset.IsZero() {
		return nil
	}
	d.Link = deprecationLink(h.Values("Link"), shown)
	return &d
}

// parseDeprecation reads a Deprecation value. That is RFC 9745's
// structured-field date ("@1688169599"), or a form of its drafts that
// servers still send: "true", the boolean "?1", or an HTTP-date. ok is
// false for any other value.
func parseDeprecation(v string) (date time.Time, ok bool) {
	v = strings.TrimSpace(v)
	switch {
	case v == "true" || v == "?1":
		return time.Time{}, true
	case strings.HasPrefix(v, "@"):
		// An sf-integer: an optional minus and at most 15 digits.
		digits := strings.TrimPrefix(v[1:], "-")
		if digits == "" || len(digits) > 15 || !isDigits(digits) {
			return time.Time{}, false
		}
		// A date outside the years 0000 to 9999 is no date: RFC 3339 and
		// slog's JSON handler cannot write it.
		n, err := strconv.ParseInt(v[1:], 10, 64)
		if err != nil || n < minDeprecationUnix || n > maxDeprecationUnix {
			return time.Time{}, false
		}
		return time.Unix(n, 0).UTC(), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return t.UTC(), true
	}
	return time.Time{}, false
}

// The Unix times of 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z.
const (
	minDeprecationUnix = -62167219200
	maxDeprecationUnix = 253402300799
)

// deprecationLink returns the first http(s) URL of the Link values whose
// relation is "deprecation", or else "sunset", its query redacted unless
// shown. It returns "" when there is none. A URL with user info is none.
func deprecationLink(values []string, shown map[string]bool) string {
	var sunset string
	for _, v := range values {
		for link := range strings.SplitSeq(v, ",") {
			target, params, ok := strings.Cut(link, ";")
			target = strings.TrimSpace(target)
			if !ok || !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
				continue
			}
			u, err := url.Parse(target[1 : len(target)-1])
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil || len(u.String()) > maxDeprecationLink {
				continue
			}
			link := redactURL(u.String(), shown)
			for param := range strings.SplitSeq(params, ";") {
				name, val, _ := strings.Cut(strings.TrimSpace(param), "=")
				if !strings.EqualFold(strings.TrimSpace(name), "rel") {
					continue
				}
				for rel := range strings.FieldsSeq(strings.Trim(strings.TrimSpace(val), `"`)) {
					switch {
					case strings.EqualFold(rel, "deprecation"):
						return link
					case strings.EqualFold(rel, "sunset") && sunset == "":
						sunset = link
					}
				}
			}
		}
	}
	return sunset
}

// maxDeprecationNotes bounds the operations the client remembers having
// logged a deprecation for. The contract names about sixty. The rest of
// the room is for Raw's routes. Past it, no new one is logged.
const maxDeprecationNotes = 256

// deprecationNotes remembers the operations whose deprecation the client
// has logged. So it is logged once per operation, not per call.
type deprecationNotes struct {
	mu   sync.Mutex
	seen map[string]struct{}
}

// first reports whether op's deprecation is news. It is true once per op,
// while there is room.
func (n *deprecationNotes) first(op string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.seen[op]; ok || len(n.seen) >= maxDeprecationNotes {
		return false
	}
	if n.seen == nil {
		n.seen = make(map[string]struct{})
	}
	n.seen[op] = struct{}{}
	return true
}
