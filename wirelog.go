package rail0

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file is the wire log (WithWireLog): what each attempt sent and got,
// headers and bodies, at debug level, with every credential redacted. The
// rule errs on the side of redacting. A header or a JSON string is shown
// only when its name is on a list of what carries no credential. Anything
// else is redacted, an unknown field the gateway adds tomorrow included.

// WithWireLog turns the wire log on or off (off by default). NewClient
// refuses WithWireLog(true) without WithLogger. On, the WithLogger logger
// gets two lines at debug level, with the call_id and attempt of the other
// lines:
//   - "rail0: wire request" when each attempt leaves: method, URL, headers,
//     body;
//   - "rail0: wire response" when its answer arrives: status, headers,
//     body.
//
// Credentials are redacted, never shown in part:
//   - the Authorization header, and every header not on a short list of
//     harmless ones (Content-Type, Date, Retry-After, X-Request-Id, the
//     rate-limit fields, ...);
//   - in a JSON body, every string whose field does not name or count
//     something. Shown fields are ids, statuses, modes, amounts,
//     addresses, chain ids, times, and the error envelope's code, title and
//     detail.
//   - in the URL and the Link header, every query value whose key is not
//     safe (WithSafeQueryKeys).
//
// So a bearer token, a SIWE message's signature, a signed transaction, a
// webhook's shared secret and any field the SDK does not know are shown as
// "[redacted]". Numbers, booleans and null are shown. A body that is not
// JSON is not shown, only its size and type. A body's line is cut after
// 8 KiB.
func WithWireLog(on bool) Option {
	return func(c *config) error {
		c.wireLog = on
		return nil
	}
}

const (
	// redacted stands for every value the wire log does not show.
	redacted = "[redacted]"
	// maxWireBody bounds the text of one body in the wire log.
	maxWireBody = 8 << 10
	// maxWireString bounds one string value the wire log shows.
	maxWireString = 256
)

// WithSafeQueryKeys names query parameters whose values may be shown. They
// add to the contract's own filters and pagination, but for token, a name
// that means a credential in many APIs. Every other value of a call's
// query is shown as "REDACTED": a Raw call's access_token, say. That holds
// in the transcript (Call.URL), the wire log, transport errors and what
// observers record (rail0otel's url.full). Keys match exactly, case
// included. Given several times, the keys add up.
func WithSafeQueryKeys(keys ...string) Option {
	return func(c *config) error {
		for _, k := range keys {
			if k == "" {
				return &ValidationError{Field: "safe_query_keys", Reason: "a key must not be empty"}
			}
			if c.safeQuery == nil {
				c.safeQuery = make(map[string]bool, len(defaultSafeQuery)+len(keys))
				for k := range defaultSafeQuery {
					c.safeQuery[k] = true
				}
			}
			c.safeQuery[k] = true
		}
		return nil
	}
}

// defaultSafeQuery are the query keys whose values are shown without
// WithSafeQueryKeys. They are the filters and pagination of the contract's
// operations, which carry ids, addresses, statuses, numbers and dates.
// TestDefaultSafeQueryKeysAreTheContracts holds them to the contract. The
// contract's token filter is left out. It holds an address, but "token"
// names a credential in many APIs, and a Raw call may send one.
var defaultSafeQuery = map[string]bool{
	"account_id": true, "active": true, "address": true, "by": true, "chain_id": true,
	"circuit_state": true, "created_from": true, "created_to": true, "default": true,
	"disputed": true, "from": true, "interval": true, "max_amount": true, "min_amount": true,
	"mode": true, "network_type": true, "operation": true, "page": true, "payee": true,
	"payer": true, "payment_id": true, "per_page": true, "rail0_id": true, "since": true,
	"sort": true, "status": true, "symbol": true, "to": true, "token_active": true,
	"token_symbol": true, "topic": true, "until": true,
}

// redactedQueryValue stands for a query value not shown, as OpenTelemetry's
// semantic conventions write it in url.full.
const redactedQueryValue = "REDACTED"

// redactQuery encodes q as url.Values.Encode does, keys sorted. Each value
// is replaced by redactedQueryValue unless shown[key].
func redactQuery(q url.Values, shown map[string]bool) string {
	safe := make(url.Values, len(q))
	for k, vs := range q {
		if shown[k] {
			safe[k] = vs
			continue
		}
		r := make([]string, len(vs))
		for i := range r {
			r[i] = redactedQueryValue
		}
		safe[k] = r
	}
	return safe.Encode()
}

// redactURL returns raw with its query's values redacted as in Call.URL.
// It returns raw as it is when it has no query, and nothing of it when it
// cannot be parsed.
func redactURL(raw string, shown map[string]bool) string {
	u, err := url.Parse(raw)
	if err != nil {
		return redacted
	}
	if u.RawQuery == "" {
		return raw
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil && len(q) == 0 {
		u.RawQuery = redactedQueryValue
	} else {
		u.RawQuery = redactQuery(q, shown)
	}
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// wireLink is a Link header's value as the wire log shows it: each <URL>
// with its query redacted. The gateway's next-page links repeat the call's
// query.
func wireLink(v string, shown map[string]bool) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(v, '<')
		j := strings.IndexByte(v[i+1:], '>')
		if i < 0 || j < 0 {
			b.WriteString(v)
			return b.String()
		}
		b.WriteString(v[:i+1])
		b.WriteString(redactURL(v[i+1:i+1+j], shown))
		v = v[i+1+j:]
	}
}

// wireHeaders are the headers the wire log shows as they are, since none
// carries a credential. Every other header's value is redacted.
var wireHeaders = map[string]bool{
	"Accept": true, "Accept-Encoding": true, "Cache-Control": true, "Content-Encoding": true,
	"Content-Length": true, "Content-Type": true, "Date": true, "Etag": true, "Idempotency-Key": true,
	"Link": true, "Ratelimit": true, "Ratelimit-Limit": true, "Ratelimit-Policy": true,
	"Ratelimit-Remaining": true, "Ratelimit-Reset": true, "Retry-After": true, "Server": true,
	"Traceparent": true, "Tracestate": true, "User-Agent": true, "Vary": true, "X-Page": true,
	"X-Per-Page": true, "X-Ratelimit-Limit": true, "X-Ratelimit-Remaining": true,
	"X-Ratelimit-Reset": true, "X-Request-Id": true, "X-Total-Count": true,
}

// wireFields are the JSON fields whose string values the wire log shows:
// what names, counts or describes a payment, a chain or an error. A field
// that carries a credential or free text the SDK cannot vouch for is not
// here: token, signature, signed_transaction, shared_secret, message,
// nonce, metadata, callback_url, rpc_urls, data, ... Neither is one the SDK
// does not know. Fields ending in _id, _at, _amount, _expiry or _block are
// shown too (see wireShown).
var wireFields = map[string]bool{
	"id": true, "status": true, "mode": true, "operation": true, "event_type": true, "topic": true,
	"network_type": true, "circuit_state": true, "amount": true, "captured": true, "refunded": true,
	"escrowed": true, "settled": true, "gross": true, "volume": true, "native": true, "decimals": true,
	"symbol": true, "native_symbol": true, "chain_name": true, "blockchain": true, "name": true,
	"address": true, "payer": true, "payee": true, "from": true, "to": true, "rail0_contract": true,
	"transaction_hash": true, "config_hash": true, "contract_version": true, "api_version": true,
	"code": true, "title": true, "detail": true, "error": true, "error_code": true, "error_title": true,
	"error_detail": true, "last_error_code": true, "revert_reason": true, "close_reason": true,
	"reason": true, "closed_by": true, "bucket": true, "gas_limit": true, "gas_used": true,
	"gas_cost": true, "effective_gas_price": true, "base_fee_per_gas": true, "max_fee_per_gas": true,
	"max_priority_fee_per_gas": true, "value": true, "primaryType": true,
}

// wireShown reports whether the wire log shows the string value of field.
func wireShown(field string) bool {
	if wireFields[field] {
		return true
	}
	for _, suffix := range []string{"_id", "_at", "_amount", "_expiry", "_block"} {
		if strings.HasSuffix(field, suffix) {
			return true
		}
	}
	return false
}

// wireLogging reports whether this client writes the wire log for ctx.
func (c *Client) wireLogging(ctx context.Context) bool {
	return c.wireLog && c.logger != nil && c.logger.Enabled(ctx, slog.LevelDebug)
}

// logWireRequest writes the wire log's line for the attempt about to leave.
func (c *Client) logWireRequest(ctx context.Context, st *callState, h http.Header) {
	call := st.call
	attrs := callAttrs(call,
		slog.Int("attempt", len(call.Attempts)),
		slog.String("url", call.URL),
		wireHeader(h, c.shownQuery))
	if len(st.requestBody) > 0 {
		attrs = append(attrs, slog.String("body", wireBody(st.requestBody, "application/json")))
	}
	c.logger.LogAttrs(ctx, slog.LevelDebug, "rail0: wire request", attrs...)
}

// logWireResponse writes the wire log's line for the answer the attempt
// just got.
func (c *Client) logWireResponse(ctx context.Context, st *callState, status int, h http.Header, body []byte) {
	call := st.call
	attrs := callAttrs(call,
		slog.Int("attempt", len(call.Attempts)),
		slog.Int("status", status),
		wireHeader(h, c.shownQuery))
	if len(body) > 0 {
		attrs = append(attrs, slog.String("body", wireBody(body, h.Get("Content-Type"))))
	}
	c.logger.LogAttrs(ctx, slog.LevelDebug, "rail0: wire response", attrs...)
}

// wireHeader is a header as the wire log shows it: a group of its fields,
// sorted. Each value is shown when the field is harmless, and redacted
// otherwise.
func wireHeader(h http.Header, shown map[string]bool) slog.Attr {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	attrs := make([]any, 0, len(keys))
	for _, k := range keys {
		v := redacted
		switch ck := http.CanonicalHeaderKey(k); {
		case ck == "Link":
			v = clipString(wireLink(strings.Join(h[k], ", "), shown), maxWireString)
		case wireHeaders[ck]:
			v = clipString(strings.Join(h[k], ", "), maxWireString)
		}
		attrs = append(attrs, slog.String(clipString(k, 64), v))
	}
	return slog.Group("header", attrs...)
}

// wireBody is a body as the wire log shows it. JSON is shown with every
// string whose field is not shown replaced by "[redacted]", cut after
// maxWireBody. A body that is not JSON shows only its size and type.
func wireBody(body []byte, contentType string) string {
	mediaType, _, _ := mime.ParseMediaType(contentType)
	if mediaType == "application/json" || strings.HasSuffix(mediaType, "+json") || mediaType == "" {
		if s, ok := redactJSON(body, maxWireBody); ok {
			return s
		}
	}
	if mediaType == "" {
		mediaType = "no content type"
	}
	return "[not shown: " + strconv.Itoa(len(body)) + " bytes, " + clipString(mediaType, 64) + ", not JSON]"
}

// jsonFrame is an open object or array while redactJSON walks a body.
type jsonFrame struct {
	object    bool
	expectKey bool   // an object's next token is a key
	field     string // the field whose value is being written (an array's: its own field)
	n         int    // members written so far
}

// redactJSON writes body back as JSON, keeping the order of the fields.
// Every string value whose field wireShown refuses is replaced by
// "[redacted]". It stops after limit bytes ("…(n bytes in all)"). It
// reports false when body is not JSON from its first byte. A body that
// breaks off later is shown up to there. Only the first JSON value is read.
func redactJSON(body []byte, limit int) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var b strings.Builder
	var stack []jsonFrame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) && len(stack) == 0 && b.Len() > 0 {
			break
		}
		if err != nil {
			if b.Len() == 0 {
				return "", false
			}
			b.WriteString("…(not JSON after this)")
			break
		}
		var f *jsonFrame
		if n := len(stack); n > 0 {
			f = &stack[n-1]
		}
		closing := tok == json.Delim('}') || tok == json.Delim(']')
		if f != nil && !closing {
			switch {
			case f.object && !f.expectKey:
				b.WriteByte(':')
			case f.n > 0:
				b.WriteByte(',')
			}
		}
		if f != nil && f.object && f.expectKey && !closing {
			key, _ := tok.(string)
			f.field, f.expectKey = key, false
			writeJSONString(&b, clipString(key, 64))
			continue
		}
		if f != nil && !closing {
			// What follows is a member of f. After it, f's next token is
			// a key (or the end) again.
			f.n++
			f.expectKey = f.object
		}
		field := ""
		if f != nil {
			field = f.field
		}
		switch v := tok.(type) {
		case json.Delim:
			b.WriteString(v.String())
			if closing {
				stack = stack[:len(stack)-1]
			} else {
				stack = append(stack, jsonFrame{object: v == '{', expectKey: v == '{', field: field})
			}
		case string:
			if wireShown(field) {
				writeJSONString(&b, clipString(v, maxWireString))
			} else {
				writeJSONString(&b, redacted)
			}
		case json.Number:
			b.WriteString(clipString(v.String(), 80))
		case bool:
			b.WriteString(strconv.FormatBool(v))
		case nil:
			b.WriteString("null")
		}
		if b.Len() > limit {
			return clipString(b.String(), limit) + "(" + strconv.Itoa(len(body)) + " bytes in all)", true
		}
		if len(stack) == 0 {
			break // one JSON value: whatever follows is not read
		}
	}
	return b.String(), true
}

// writeJSONString writes s as a JSON string.
func writeJSONString(b *strings.Builder, s string) {
	q, _ := json.Marshal(s)
	b.Write(q)
}

// clipString cuts s to at most n bytes, on a rune boundary.
func clipString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
