package rail0

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// sendingClient returns the HTTP client the SDK sends every attempt with.
// It is built from hc: the caller's, from WithHTTPClient, or the SDK's own.
// It has the same Transport, cookie Jar and Timeout. It never follows
// redirects (noRedirects). Nobody can close its Transport through it.
//
// go-retryablehttp calls HTTPClient.CloseIdleConnections whenever Do
// returns a failure: a context that ends during a wait, a retry the limiter
// refuses, a connection that breaks. The Transport is shared, since
// WithHTTPClient hands over the program's. So one cancelled call would
// close the program's idle connections to every host. Behind TLS, each
// would cost the next request a handshake. Idle connections are the
// business of the Transport's owner, and expire by its IdleConnTimeout. So
// the RoundTrippers below have no CloseIdleConnections method. That makes
// http.Client.CloseIdleConnections do nothing.
func sendingClient(hc *http.Client) *http.Client {
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	out := &http.Client{Transport: keepIdle{rt}, Jar: hc.Jar, CheckRedirect: noRedirects}
	if hc.Timeout > 0 {
		// net/http enforces Client.Timeout through the request's context
		// only for the RoundTrippers it knows (*http.Transport, HTTP/2).
		// Around any other, it starts a goroutine and a timer per request
		// (a dozen allocations). A client of rt's own, inside, keeps the
		// timeout on the cheap path, reading the body included.
		out.Transport = timeoutClient{&http.Client{Transport: rt, Timeout: hc.Timeout, CheckRedirect: noRedirects}}
	}
	return out
}

// keepIdle sends through rt and hides rt's CloseIdleConnections (see
// sendingClient).
type keepIdle struct{ rt http.RoundTripper }

func (k keepIdle) RoundTrip(req *http.Request) (*http.Response, error) { return k.rt.RoundTrip(req) }

// timeoutClient sends through an http.Client that applies a Timeout. It
// hides its CloseIdleConnections (see sendingClient). It never follows a
// redirect, since the client's CheckRedirect is noRedirects. So it is one
// round trip, as a RoundTripper must be.
type timeoutClient struct{ hc *http.Client }

func (t timeoutClient) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.hc.Do(req)
	if ue, ok := err.(*url.Error); ok {
		// The outer client wraps the failure in its own *url.Error. That
		// gives one "Get <url>:" prefix, as without this layer.
		return nil, ue.Err
	}
	return resp, err
}

// noRedirects is the CheckRedirect of every HTTP client the SDK sends
// with. The gateway never redirects. Following a redirect would carry the
// bearer token (and a signed transaction) to wherever it points. The 3xx
// comes back as an *APIError with its Location.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// attemptTimer bounds each request it sends through rt to d
// (WithAttemptTimeout), reading the answer's body included. Its cut is an
// *attemptTimeoutError. So the rules and the caller tell it from the end of
// the call's own context.
type attemptTimer struct {
	rt http.RoundTripper
	d  time.Duration
}

func (t attemptTimer) RoundTrip(req *http.Request) (*http.Response, error) {
	parent := req.Context()
	ctx, cancel := context.WithTimeout(parent, t.d)
	resp, err := t.rt.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, t.cut(ctx, parent, err)
	}
	resp.Body = &timedBody{rc: resp.Body, t: t, ctx: ctx, parent: parent, cancel: cancel}
	return resp, nil
}

// cut returns err, or the attempt's timeout when the timer, not the
// caller, ended ctx.
func (t attemptTimer) cut(ctx, parent context.Context, err error) error {
	if ctx.Err() == nil || parent.Err() != nil {
		return err
	}
	return &attemptTimeoutError{d: t.d, notSent: isNotSent(err)}
}

// timedBody is an answer's body under its attempt's timer, which it stops
// when closed.
type timedBody struct {
	rc          io.ReadCloser
	t           attemptTimer
	ctx, parent context.Context
	cancel      context.CancelFunc
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF {
		err = b.t.cut(b.ctx, b.parent, err)
	}
	return n, err
}

func (b *timedBody) Close() error {
	b.cancel()
	return b.rc.Close()
}

// attemptTimeoutError is an attempt that WithAttemptTimeout cut. It is a
// net.Error whose Timeout is true, and not context.DeadlineExceeded. The
// call's own context did not end.
type attemptTimeoutError struct {
	d       time.Duration
	notSent bool // the connection was not open yet: nothing was sent
}

func (e *attemptTimeoutError) Error() string {
	return fmt.Sprintf("attempt timed out after %v (WithAttemptTimeout)", e.d)
}

// Timeout reports true, since the attempt took too long.
func (e *attemptTimeoutError) Timeout() bool { return true }

// Temporary reports true, as net/http's own timeouts do.
func (e *attemptTimeoutError) Temporary() bool { return true }
