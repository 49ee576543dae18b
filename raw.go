package rail0

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
)

// RetryClass says what running an operation twice would do. That decides
// what the SDK may repeat once a request may have reached the gateway. A
// 429 (refused before anything ran) and a request that never left the
// client are retried in every class, under the client's settings.
type RetryClass int

const (
	// RunOnce means a second run has a second effect, or is answered as a
	// failure although the first one worked (a submit, a creation without
	// a key). The SDK never repeats it once it may have run. It then
	// returns an *OutcomeUnknownError. RunOnce is the zero value, the
	// safest guess for an operation the SDK does not know.
	RunOnce RetryClass = iota
	// Idempotent means running it twice has the effect of running it once (a
	// read, a PUT or PATCH that sets a state, a DELETE). 5xx answers and
	// broken connections are retried within WithMaxRetries.
	Idempotent
	// IdempotentWithKey means the gateway deduplicates it by its
	// Idempotency-Key, as it does payment creation. The request carries
	// RawRequest.IdempotencyKey, or a random one when empty, the same on
	// every attempt. It is retried like an Idempotent one.
	IdempotentWithKey
)

// RawRequest is a request to a gateway operation the SDK has no method for
// yet. See Client.Raw.
type RawRequest struct {
	// Method is GET, POST, PUT, PATCH or DELETE.
	Method string
	// Path is the operation's path relative to the base URL, one element
	// per segment: []string{"payments", id, "receipts"}. Each element is
	// escaped into exactly one segment; a "/" or "?" in an id stays inside
	// it. An empty, "." or ".." element is refused. So no id can address
	// another resource.
	Path []string
	// Query is sent as the query string.
	Query url.Values
	// Body is encoded as JSON and sent with Content-Type application/json.
	// nil sends no body, and a GET takes none.
	Body any
	// Class is what repeating the operation would do. The zero value,
	// RunOnce, is the safest. For an operation the contract names, the
	// stricter of Class and the SDK's own class of it applies.
	Class RetryClass
	// IdempotencyKey is sent as Idempotency-Key, only with Class
	// IdempotentWithKey. A key on an operation the gateway does not
	// deduplicate would promise a safety it does not have.
	IdempotencyKey string
	// Public sends the request without the bearer token, on the public
	// rate-limit partition, as the contract's public operations are
	// (security: []). A token source is then never asked.
	Public bool
}

// Raw sends req, a request to an endpoint the SDK does not know yet. It
// decodes a 2xx JSON answer into out. nil discards the answer; a
// *json.RawMessage keeps it as it is.
//
// It is the escape hatch, after stripe-go's RawRequest and go-github's
// NewRequest and Do. The request goes through everything a method's does:
//   - the bearer token, and a sign-in after a 401;
//   - the retry rules of req.Class under the view's settings;
//   - the limiter and the redirect refusal;
//   - the transcript in Response.Call, the logger and the observer.
//
// A failure is one of the SDK's errors: *APIError, *OutcomeUnknownError,
// *TransportError, *DecodeError. A malformed req is a *ValidationError
// before anything is sent. So is a body encoding/json cannot encode, and
// an out that is neither nil nor a non-nil pointer. A *DecodeError of Raw
// keeps no Body. The SDK cannot tell whether the answer carries a
// credential, as a sign-in or a webhook's secret does.
//
// Prefer a method of a service when there is one. It knows the operation's
// class. It checks what it sends and decodes what comes back into types.
// Raw does neither.
func (c *Client) Raw(ctx context.Context, req RawRequest, out any) (*Response, error) {
	// secretAnswer: the SDK cannot tell which answers carry a credential:
	// a sign-in, a webhook secret, an endpoint it does not know yet. So a
	// 2xx that cannot be decoded keeps no body in its error.
	r := &request{method: req.Method, query: req.Query, body: req.Body, anonymous: req.Public, raw: true, secretAnswer: true}
	switch req.Method {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return nil, &ValidationError{Field: "method", Reason: "must be GET, POST, PUT, PATCH or DELETE, got " + strconv.Quote(clip(req.Method))}
	}
	if req.Method == http.MethodGet && req.Body != nil {
		return nil, &ValidationError{Field: "body", Reason: "must be nil on a GET"}
	}
	switch req.Class {
	case RunOnce:
		r.class = opOnce
	case Idempotent:
		r.class = opRepeatable
	case IdempotentWithKey:
		r.class = opKeyed
		r.idempotencyKey = req.IdempotencyKey
		if r.idempotencyKey == "" {
			r.idempotencyKey = newIdempotencyKey()
		}
	default:
		return nil, &ValidationError{Field: "class", Reason: "is not a RetryClass"}
	}
	if req.IdempotencyKey != "" && req.Class != IdempotentWithKey {
		return nil, &ValidationError{Field: "idempotency_key", Reason: "is sent only with Class IdempotentWithKey, for an operation the gateway deduplicates by its key"}
	}
	if len(req.Path) == 0 {
		return nil, &ValidationError{Field: "path", Reason: "is required"}
	}
	if v := reflect.ValueOf(out); out != nil && (v.Kind() != reflect.Pointer || v.IsNil()) {
		// An answer that cannot be decoded would come only after the
		// request ran. A write that must not run twice would be done and
		// reported as an unknown outcome.
		return nil, &ValidationError{Field: "out", Reason: fmt.Sprintf("must be nil or a non-nil pointer, got %T", out)}
	}
	if req.Body != nil {
		// Encoded here, once. So a body encoding/json refuses is the
		// caller's mistake, found before the call starts.
		b, err := json.Marshal(req.Body)
		if err != nil {
			return nil, &ValidationError{Field: "body", Reason: "cannot be encoded as JSON: " + err.Error()}
		}
		r.body = json.RawMessage(b)
	}
	segments := make([]string, len(req.Path))
	for i, s := range req.Path {
		seg, err := pathSegment("path", s)
		if err != nil {
			return nil, err
		}
		segments[i] = seg
	}
	r.path = strings.Join(segments, "/")
	return c.do(ctx, r, out)
}

// stricter reports whether repeating an operation of class c is allowed in
// fewer cases than one of class d.
func stricter(c, d opClass) bool {
	rank := func(c opClass) int {
		switch c {
		case opOnce:
			return 3
		case opKeyed:
			return 2
		case opRepeatable:
			return 1
		}
		return 0
	}
	return rank(c) > rank(d)
}
