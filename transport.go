package rail0

import (
	"net/http"
	"net/url"
)

// sendingClient returns the HTTP client the SDK sends every attempt with,
// built from hc (the caller's, from WithHTTPClient, or the SDK's own): the
// same Transport, cookie Jar and Timeout, redirects never followed
// (noRedirects), and a Transport that nobody can close through it.
//
// go-retryablehttp calls HTTPClient.CloseIdleConnections whenever Do
// returns a failure: a context that ends during a wait, a retry the limiter
// refuses, a connection that breaks. The Transport is shared (WithHTTPClient
// hands over the program's), so one cancelled call would close the
// program's idle connections to every host, and behind TLS each would cost
// the next request a handshake. Idle connections are the business of the
// Transport's owner, and expire by its IdleConnTimeout; so the
// RoundTrippers below do not have a CloseIdleConnections method, which makes
// http.Client.CloseIdleConnections do nothing.
func sendingClient(hc *http.Client) *http.Client {
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	out := &http.Client{Transport: keepIdle{rt}, Jar: hc.Jar, CheckRedirect: noRedirects}
	if hc.Timeout > 0 {
		// net/http enforces Client.Timeout through the request's context
		// only for the RoundTrippers it knows (*http.Transport, HTTP/2);
		// around any other it starts a goroutine and a timer per request
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

// timeoutClient sends through an http.Client that applies a Timeout, and
// hides its CloseIdleConnections (see sendingClient). It never follows a
// redirect (the client's CheckRedirect is noRedirects), so it is one round
// trip, as a RoundTripper must be.
type timeoutClient struct{ hc *http.Client }

func (t timeoutClient) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.hc.Do(req)
	if ue, ok := err.(*url.Error); ok {
		// The outer client wraps the failure in its own *url.Error: one
		// "Get <url>:" prefix, as without this layer.
		return nil, ue.Err
	}
	return resp, err
}

// noRedirects is the CheckRedirect of every HTTP client the SDK sends with:
// the gateway never redirects, and following a redirect would carry the
// bearer token (and a signed transaction) to wherever it points. The 3xx
// comes back as an *APIError with its Location.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
