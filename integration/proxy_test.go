package integration_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"testing"

	"github.com/rail0/rail0-go/rail0test"
)

// proxyHooks is what a test proxy in front of rail0test does besides
// passing requests on, as a compromised gateway or a man in the middle
// would; each hook may be nil. The proxies of the attack tests (swapProxy,
// liar, rawProxy, afterwardsProxy) are each a set of these hooks and the
// state they read.
type proxyHooks struct {
	// front answers a request itself when it returns true (the proxy's
	// own catalog): the gateway never sees that request.
	front func(w http.ResponseWriter, r *http.Request) bool
	// in rewrites a request on its way to the gateway.
	in func(r *http.Request)
	// out rewrites an answer on its way back (resp.Request is the request
	// the gateway answered).
	out func(resp *http.Response) error
}

// newProxy starts a server in front of gw that passes each request on
// through hooks, and stops it when the test ends.
func newProxy(t *testing.T, gw *rail0test.Server, hooks proxyHooks) *httptest.Server {
	target, err := url.Parse(gw.URL)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	if hooks.in != nil {
		direct := rp.Director
		rp.Director = func(r *http.Request) {
			direct(r)
			hooks.in(r)
		}
	}
	rp.ModifyResponse = hooks.out
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hooks.front != nil && hooks.front(w, r) {
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// drain reads body to its end and closes it.
func drain(body io.ReadCloser) ([]byte, error) {
	defer body.Close()
	return io.ReadAll(body)
}

// withBody returns raw as a message body and its length, setting the
// Content-Length of h to match: for a request or an answer whose body a
// proxy replaces.
func withBody(h http.Header, raw []byte) (io.ReadCloser, int64) {
	h.Set("Content-Length", strconv.Itoa(len(raw)))
	return io.NopCloser(bytes.NewReader(raw)), int64(len(raw))
}
