package rail0

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/rail0/rail0-go/internal/ops"
)

// operation is one operation of the gateway contract. It is a row of the
// table in package internal/ops, which the fake gateway (package rail0test)
// serves from too. Each method names its row in a package-level value
// beside it, the way go-github writes //meta:operation above each method.
// The value is named by the operationId: var getPayment =
// declare(ops.GetPayment). The method passes it to do in its request, with
// the path's arguments. do builds the path from the template (path). So
// the route, the transcript's names and the retry class come with the
// request. No method's request is matched against the templates at run
// time, and a path cannot stray from its template.
//
// Adding an endpoint is one row in internal/ops, one declaration and one
// method in the resource's file. TestOperationsMatchTheContract holds
// every row against the contract (testdata/openapi.json).
type operation struct {
	id, method, template string // the operationId; the template has its leading slash, as Call.Route shows
	class                opClass
	why                  string
}

// operations is the table as the send path reads it, indexed by ops.ID.
var operations = func() []operation {
	rows := ops.All()
	out := make([]operation, len(rows))
	for i, r := range rows {
		out[i] = operation{id: r.ID, method: r.Method, template: r.Template, class: r.Class, why: r.Why}
	}
	return out
}()

// declare returns the operation id, for the method that performs it.
func declare(id ops.ID) *operation { return &operations[id] }

// lookup returns the operation a request without one performs, or nil when
// the contract does not name it. It reads the request's method and its
// path relative to the base URL. The path's segments are escaped, so an id
// is always one segment. Of two templates that match, the one with fewer
// "{...}" segments is the operation. POST payments/p1/dispute is
// submitDispute, not the generic submitPaymentOperation.
func lookup(method, path string) *operation {
	path = strings.Trim(path, "/")
	var found *operation
	for i := range operations {
		if op := &operations[i]; op.method == method && matchTemplate(op.template[1:], path) &&
			(found == nil || strings.Count(op.template, "{") < strings.Count(found.template, "{")) {
			found = op
		}
	}
	return found
}

// matchTemplate reports whether path has the template's segments, "{...}"
// matching any one non-empty segment.
func matchTemplate(template, path string) bool {
	for template != "" || path != "" {
		var t, p string
		t, template, _ = strings.Cut(template, "/")
		p, path, _ = strings.Cut(path, "/")
		if p == "" || (!strings.HasPrefix(t, "{") && t != p) {
			return false
		}
	}
	return true
}

// pathArgs are the values of a template's "{...}" segments, in order. A
// template has at most three. It is an array rather than a slice, so that
// a request carries them without an allocation of their own.
type pathArgs [3]string

// path fills the template's "{...}" segments with args, in order. It
// returns the path relative to the base URL, without its leading slash.
// pathSegment validates and escapes each arg under the placeholder's name.
// A missing or dot-segment id is a *ValidationError.
func (op *operation) path(args pathArgs) (string, error) {
	if args == (pathArgs{}) && strings.IndexByte(op.template, '{') < 0 {
		return op.template[1:], nil
	}
	var b strings.Builder
	b.Grow(len(op.template) + 40)
	rest, n := op.template[1:], 0
	for ; n < len(args); n++ {
		open := strings.IndexByte(rest, '{')
		end := strings.IndexByte(rest, '}')
		if open < 0 || end < open {
			break
		}
		seg, err := pathSegment(rest[open+1:end], args[n])
		if err != nil {
			return "", err
		}
		b.WriteString(rest[:open])
		b.WriteString(seg)
		rest = rest[end+1:]
	}
	extra := false
	for _, a := range args[n:] {
		extra = extra || a != ""
	}
	if extra || strings.IndexByte(rest, '{') >= 0 {
		// A method and its declaration disagree. That is a bug of the SDK,
		// which the contract tests catch, reported rather than sent.
		return "", fmt.Errorf("rail0: %s: the path arguments %q do not fit the template %s", op.id, args, op.template)
	}
	b.WriteString(rest)
	return b.String(), nil
}

// classOf names what repeating a request does. Reads are opRead. A write is
// its operation's class. A write with no declared operation is opKeyed: the
// contract does not name it. So it is repeated only when it carries an
// Idempotency-Key.
func classOf(method string, op *operation) opClass {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return opRead
	}
	if op != nil {
		return op.class
	}
	return opKeyed
}

// opClass says what repeating an operation would do (ops.Class). The retry
// rules read it (operationClass).
type opClass = ops.Class

// The classes, as the root names them.
const (
	opOnce       = ops.Once
	opRead       = ops.Read
	opRepeatable = ops.Repeatable
	opKeyed      = ops.Keyed
)

// pathSegment validates an id that goes into a request path and returns it
// escaped. Empty, "." and ".." are refused. Escaping leaves the dots as
// they are, and a dot segment would address another resource: GET
// /payments/.. is GET /.
func pathSegment(field, id string) (string, error) {
	switch id {
	case "":
		return "", &ValidationError{Field: field, Reason: "is required"}
	case ".", "..":
		return "", &ValidationError{Field: field, Reason: fmt.Sprintf("%q is a dot segment, not an id", id)}
	}
	return url.PathEscape(id), nil
}

// routeOf names the contract operation op of a request, its template and
// the payment id it addresses. path is relative to the base URL, segments
// escaped. op is as its method declared it, or lookup's. It is nil when
// the contract does not name it. A path the contract does not name is its
// own route.
func routeOf(op *operation, path string) (operation, template, paymentID string) {
	if op != nil {
		operation, template = op.id, op.template
	} else {
		template = "/" + path
	}
	if rest, ok := strings.CutPrefix(path, "payments/"); ok {
		id, _, _ := strings.Cut(rest, "/")
		if u, err := url.PathUnescape(id); err == nil {
			id = u
		}
		paymentID = id
	}
	return operation, template, paymentID
}
