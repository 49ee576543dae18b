package rail0

import (
	"encoding/json"
	"net/http"
)

// provesNotRun reports whether an answer proves that the request it
// answers was not run, so that a write that must not run twice (opOnce, or
// opKeyed: see backoff.go) may come back as a refusal, an *APIError, rather
// than as an *OutcomeUnknownError. Two answers prove it:
//
//   - a 429: the gateway's throttle refuses in middleware, before the
//     application runs (the contract guide, section 10);
//   - a 4xx other than 408 whose body is the gateway's own error envelope,
//     a JSON object with the four fields the contract's Error schema
//     requires (code, title, detail, status) as strings, code not empty
//     (section 9): the application read the request and refused it.
//
// Nothing else does, because a proxy or load balancer in front of the
// gateway may have written it after passing the request on: a 2xx whose
// body is not the promised JSON (an HTML page, an empty body), a 3xx, a 408
// (a timeout: whoever writes it may have forwarded the request), every 5xx
// and every status outside 100-599, and a 4xx without the envelope (an
// authenticating proxy's 401, a firewall's 403). The gateway's own bodiless
// answers (a 400 to a raw transaction it cannot decode, 409 or 422 to a
// wallet registration) cannot be told from those, so they prove nothing
// either: reading the resource tells what happened.
//
// The envelope is what marks the gateway's answer, not its code being one
// the guide lists: the list grows (and the gateway's 409 to a reused
// Idempotency-Key has a code it does not list), while a proxy's JSON, where
// there is any, is not shaped like it. A proxy that forges the envelope is
// outside what any client can tell from the wire.
func provesNotRun(status int, body []byte) bool {
	switch {
	case status == http.StatusTooManyRequests:
		return true
	case status < 400 || status > 499 || status == http.StatusRequestTimeout:
		return false
	}
	var fields map[string]json.RawMessage // exact keys: "Code" is not "code"
	if json.Unmarshal(body, &fields) != nil {
		return false
	}
	for _, name := range [...]string{"code", "title", "detail", "status"} {
		if raw := fields[name]; len(raw) == 0 || raw[0] != '"' {
			return false // absent, null, or not a string
		}
	}
	var code string
	return json.Unmarshal(fields["code"], &code) == nil && code != ""
}
