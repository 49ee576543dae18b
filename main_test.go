package rail0

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them. Idle
// keep-alive connections of the clients the tests create are not leaks (a
// client's pool lives as long as the client); a response body left open
// would show up as a connection stuck in a read, which
// TestNoConnectionLeftBusy checks directly.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
	)
}
