package rail0

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// pipeServer starts an httptest.Server for h on an in-memory network
// (pipeListener) and returns it with an option for a client that reaches it
// there. Called inside a synctest bubble, every request still crosses a real
// net/http server and transport (headers, hang-ups and connection reuse as
// on a socket), while the bubble's fake clock advances past the waits: a
// loopback socket is not durably blocking and would hold the clock still.
// The server and the client's connections are closed when the test ends,
// inside the bubble.
func pipeServer(t *testing.T, h http.Handler) (*httptest.Server, Option) {
	t.Helper()
	srv, transport := pipeTransport(t, h)
	return srv, WithHTTPClient(&http.Client{Transport: transport})
}

// pipeTransport is pipeServer for a test that builds its own http.Client:
// it returns the Transport that reaches the server.
func pipeTransport(t *testing.T, h http.Handler) (*httptest.Server, *http.Transport) {
	t.Helper()
	ln := newPipeListener()
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	transport := &http.Transport{DialContext: ln.dial}
	t.Cleanup(func() {
		srv.Close()
		transport.CloseIdleConnections()
	})
	return srv, transport
}

// newPipeScript is newScriptServer on the in-memory network of pipeServer,
// for tests in a synctest bubble; the option makes a client reach it.
func newPipeScript(t *testing.T, steps ...step) (*scriptServer, Option) {
	t.Helper()
	s := &scriptServer{steps: steps}
	var opt Option
	s.Server, opt = pipeServer(t, http.HandlerFunc(s.serve))
	return s, opt
}
