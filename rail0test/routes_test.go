package rail0test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rail0/rail0-go/internal/ops"
)

// The fake gateway serves the SDK's operation table: every operation has a
// handler, every handler is an operation's, and the mux routes a request
// of each operation to that operation's pattern, the route Ledger and
// Fault name.
func TestEveryOperationHasAHandler(t *testing.T) {
	srv := NewServer()
	defer srv.Close()
	handlers := srv.handlers()
	rows := ops.All()
	for i, op := range rows {
		if handlers[ops.ID(i)] == nil {
			t.Errorf("%s (%s %s) has no handler", op.ID, op.Method, op.Template)
			continue
		}
		path := op.Template
		for strings.Contains(path, "{") {
			open, end := strings.Index(path, "{"), strings.Index(path, "}")
			path = path[:open] + "p1" + path[end+1:]
		}
		if _, route := srv.mux.Handler(httptest.NewRequest(op.Method, path, nil)); route != pattern(ops.ID(i)) {
			t.Errorf("%s %s is routed to %q, not %s's pattern %q", op.Method, path, route, op.ID, pattern(ops.ID(i)))
		}
	}
	for id := range handlers {
		if id < 0 || int(id) >= len(rows) {
			t.Errorf("a handler for operation %d, which the table does not have", id)
		}
	}
}
