package rail0

import (
	"fmt"
	"net/http"
	"strings"
)

// operation is one operation of the gateway contract, declared as a
// package-level value beside the method that performs it, the way go-github
// writes //meta:operation above each method: the value's name and id are the
// contract's operationId, then its method, its path template relative to the
// base URL with the leading slash Call.Route shows ("{...}" stands for one
// segment), what repeating it does and why (the gateway guide, sections 4
// and 9). The method passes it to do in its request with the path's
// arguments, and do builds the path from the template (path), so the route,
// the transcript's names and the retry class come with the request: nothing
// matches a path against the templates at run time, and a path cannot stray
// from its template. Adding
// an endpoint is one declaration and one method in the resource's file;
// TestOperationsMatchTheContract holds every declaration against the
// contract (testdata/openapi.json).
type operation struct {
	id, method, template string
	class                opClass
	why                  string
}

// pathArgs are the values of a template's "{...}" segments, in order; a
// template has at most three. An array rather than a slice, so that a
// request carries them without an allocation of their own.
type pathArgs [3]string

// path fills the template's "{...}" segments, in order, with args, each
// validated and escaped by pathSegment under the placeholder's name (a
// missing or dot-segment id is a *ValidationError), and returns the path
// relative to the base URL, without its leading slash.
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
		// A method and its declaration disagree: a bug of the SDK, which
		// the contract tests catch, reported rather than sent.
		return "", fmt.Errorf("rail0: %s: the path arguments %q do not fit the template %s", op.id, args, op.template)
	}
	b.WriteString(rest)
	return b.String(), nil
}

// classOf names what repeating a request does: reads are opRead; a write is
// its operation's class, or opKeyed when it has no declared operation (a
// request the contract does not name), so that it is repeated only when it
// carries an Idempotency-Key.
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
