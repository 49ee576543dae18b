package rail0

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RateLimitInfo is the rate-limit state a response advertised. It comes
// from the IETF RateLimit header fields (RateLimit and RateLimit-Policy).
// It also comes from their older forms: RateLimit-Limit,
// RateLimit-Remaining, RateLimit-Reset, and the X-RateLimit-* family. The
// RAIL0 gateway does not send them yet, but a proxy in front of it may.
// Unknown parts are left zero.
type RateLimitInfo struct {
	// Policy names the policy the numbers come from, when the server named
	// it.
	Policy string
	// Limit is the quota of requests per Window, or zero when not
	// advertised.
	Limit int64
	// Window is the quota's period, or zero when not advertised.
	Window time.Duration
	// Remaining is the number of requests left in the current window.
	Remaining int64
	// Reset is the time until the quota resets.
	Reset time.Duration
	// HasRemaining reports whether Remaining and Reset were advertised.
	HasRemaining bool
}

// Exhausted reports whether the server says no request is left before Reset.
func (r *RateLimitInfo) Exhausted() bool {
	return r != nil && r.HasRemaining && r.Remaining <= 0 && r.Reset > 0
}

// parseRateLimit reads the rate-limit fields of h, relative to now. now
// serves only X-RateLimit-Reset values given as a Unix time. Malformed
// fields are ignored. ok is false when no usable field is present. When
// several policies are listed, the most constrained one (least remaining)
// wins.
func parseRateLimit(h http.Header, now time.Time) (info RateLimitInfo, ok bool) {
	// Cheap exit for the common case: no such header at all.
	if h.Get("RateLimit") == "" && h.Get("RateLimit-Policy") == "" && h.Get("RateLimit-Remaining") == "" &&
		h.Get("X-RateLimit-Remaining") == "" && h.Get("RateLimit-Limit") == "" && h.Get("X-RateLimit-Limit") == "" {
		return RateLimitInfo{}, false
	}
	policies := map[string]RateLimitInfo{}
	for _, it := range parseSFList(strings.Join(h.Values("RateLimit-Policy"), ",")) {
		q, okQ := it.intParam("q")
		if !okQ {
			continue
		}
		p := policies[it.name]
		p.Policy, p.Limit = it.name, q
		if w, okW := it.intParam("w"); okW && w > 0 {
			p.Window = seconds(w)
		}
		policies[it.name] = p
	}
	var best *RateLimitInfo
	for _, it := range parseSFList(strings.Join(h.Values("RateLimit"), ",")) {
		r, okR := it.intParam("r")
		if !okR {
			continue
		}
		p := policies[it.name]
		p.Policy = it.name
		p.Remaining, p.HasRemaining = r, true
		if t, okT := it.intParam("t"); okT {
			p.Reset = seconds(t)
		}
		if best == nil || p.Remaining < best.Remaining {
			cp := p
			best = &cp
		}
	}
	if best != nil {
		return *best, true
	}
	// Older drafts and the X- family: separate fields.
	for _, prefix := range []string{"RateLimit-", "X-RateLimit-"} {
		rem, okRem := headerInt64(h, prefix+"Remaining")
		lim, okLim := headerInt64(h, prefix+"Limit")
		if !okRem && !okLim {
			continue
		}
		info = RateLimitInfo{Limit: lim, Remaining: rem, HasRemaining: okRem}
		if reset, okReset := headerInt64(h, prefix+"Reset"); okReset {
			info.Reset = resetDelta(reset, now)
		}
		if len(policies) == 1 {
			for _, p := range policies {
				info.Policy, info.Window = p.Policy, p.Window
			}
		}
		return info, true
	}
	// A policy alone says the quota, not what is left.
	for _, p := range policies {
		return p, true
	}
	return RateLimitInfo{}, false
}

// seconds is v seconds, saturating instead of overflowing.
func seconds(v int64) time.Duration {
	if v > int64(maxDuration/time.Second) {
		return maxDuration
	}
	return time.Duration(v) * time.Second
}

// resetDelta reads a reset value: delta seconds, or a Unix time, recognised
// by its size. Some servers send a Unix time in X-RateLimit-Reset.
func resetDelta(v int64, now time.Time) time.Duration {
	const unixTimeFloor = 1_000_000_000 // 2001-09-09; no window is 31 years long
	if v >= unixTimeFloor {
		d := time.Unix(v, 0).Sub(now)
		return max(d, 0)
	}
	return seconds(v)
}

func headerInt64(h http.Header, name string) (int64, bool) {
	v := strings.TrimSpace(h.Get(name))
	if !isDigits(v) {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// sfItem is one member of a structured-field list (RFC 8941) as the
// RateLimit fields use it. It is a string or token naming the policy, with
// parameters.
type sfItem struct {
	name   string
	params map[string]string
}

func (it sfItem) intParam(key string) (int64, bool) {
	v, ok := it.params[key]
	if !ok || !isDigits(v) {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// parseSFList parses the subset of an RFC 8941 list the RateLimit fields
// use. Its members are a string, token or integer, followed by ;key=value
// parameters. A malformed member is dropped, not the whole field.
func parseSFList(s string) []sfItem {
	var items []sfItem
	for _, member := range splitOutsideQuotes(s, ',') {
		parts := splitOutsideQuotes(member, ';')
		name, ok := sfBareItem(strings.TrimSpace(parts[0]))
		if !ok {
			continue
		}
		it := sfItem{name: name, params: map[string]string{}}
		valid := true
		for _, p := range parts[1:] {
			k, v, found := strings.Cut(strings.TrimSpace(p), "=")
			if !found {
				v = "?1" // a bare parameter is boolean true
			}
			k = strings.TrimSpace(k)
			val, okV := sfBareItem(strings.TrimSpace(v))
			if k == "" || !okV {
				valid = false
				break
			}
			it.params[k] = val
		}
		if valid {
			items = append(items, it)
		}
	}
	return items
}

// sfBareItem returns the value of a string ("..."), token or integer.
func sfBareItem(s string) (string, bool) {
	if s == "" {
		return "", false
	}
	if s[0] == '"' {
		if len(s) < 2 || s[len(s)-1] != '"' {
			return "", false
		}
		inner := s[1 : len(s)-1]
		return strings.ReplaceAll(strings.ReplaceAll(inner, `\"`, `"`), `\\`, `\`), true
	}
	for _, r := range s {
		if r <= ' ' || r == '"' || r == ',' || r == ';' || r > '~' {
			return "", false
		}
	}
	return s, true
}

// splitOutsideQuotes splits s at sep, ignoring separators inside quoted
// strings.
func splitOutsideQuotes(s string, sep byte) []string {
	var parts []string
	inQuote, escaped, start := false, false, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case escaped:
			escaped = false
		case c == '\\' && inQuote:
			escaped = true
		case c == '"':
			inQuote = !inQuote
		case c == sep && !inQuote:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}
