package rail0

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rail0/rail0-go/ratelimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Redirects are never followed, on the default client and on a caller's
// client that would follow them: a 302 (GET) or 307 (POST with a body) to
// another port of the same host name, which Go's own rule (same host name)
// would hand the Authorization header, comes back as an *APIError with the
// Location, after one attempt, and nothing reaches the other origin.
func TestRedirectsAreNeverFollowed(t *testing.T) {
	var reached atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached.Add(1)
		w.Write([]byte(paymentBody))
	}))
	defer other.Close()
	followAll := func(*http.Request, []*http.Request) error { return nil }
	tests := []struct {
		name   string
		status int
		client *http.Client // nil: the SDK's default client
		call   func(ctx context.Context, c *Client) error
	}{
		{"default client, GET 302", http.StatusFound, nil, func(ctx context.Context, c *Client) error {
			_, err := c.Payments.Get(ctx, "p1")
			return err
		}},
		{"default client, POST 307 with a body", http.StatusTemporaryRedirect, nil, func(ctx context.Context, c *Client) error {
			_, err := c.Webhooks.Create(ctx, WebhookCreateParams{Name: "n", CallbackURL: "https://example.com/h", Topic: TopicPaymentsCaptured})
			return err
		}},
		{"caller's client with Go's default policy, GET 302", http.StatusFound, &http.Client{}, func(ctx context.Context, c *Client) error {
			_, err := c.Payments.Get(ctx, "p1")
			return err
		}},
		{"caller's client following everything, POST 308", http.StatusPermanentRedirect, &http.Client{CheckRedirect: followAll}, func(ctx context.Context, c *Client) error {
			_, err := c.Auth.Logout(ctx)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reached.Store(0)
			// Same host name, another port: Go keeps Authorization on such a
			// redirect, since it compares host names only.
			target := "http://127.0.0.1:" + strconv.Itoa(other.Listener.Addr().(*net.TCPAddr).Port) + "/elsewhere"
			srv := newScriptServer(t, step{status: tt.status, header: map[string]string{"Location": target}})
			opts := []Option{WithToken("tok-SECRET")}
			var before func(*http.Request, []*http.Request) error
			if tt.client != nil {
				before = tt.client.CheckRedirect
				opts = append(opts, WithHTTPClient(tt.client))
			}
			c := newTestClient(t, srv.URL, opts...)

			err := tt.call(context.Background(), c)

			var apiErr *APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, tt.status, apiErr.StatusCode)
			assert.Equal(t, target, apiErr.Location)
			assert.Len(t, apiErr.Call.Attempts, 1)
			assert.Len(t, srv.requests(), 1)
			assert.Zero(t, reached.Load(), "the redirect was followed")
			if tt.client != nil {
				assert.Equal(t, fmt.Sprintf("%p", before), fmt.Sprintf("%p", tt.client.CheckRedirect), "the caller's client was modified")
			}
		})
	}
}

// tlsHost is one HTTPS server of a tlsNet, counting the TLS handshakes it
// served: each one is a connection a client had to open.
type tlsHost struct {
	srv        *httptest.Server
	handshakes atomic.Int32
}

// newTLSNet starts an HTTPS server per host name on an in-memory network
// (pipeListener, so that a synctest bubble's clock advances past the
// waits) and returns one Transport that reaches them all, as a program's
// shared Transport would. The names must be under example.com, which the
// httptest certificate covers.
func newTLSNet(t *testing.T, handlers map[string]http.Handler) (*http.Transport, map[string]*tlsHost) {
	t.Helper()
	hosts := map[string]*tlsHost{}
	listeners := map[string]*pipeListener{}
	roots := x509.NewCertPool()
	for name, h := range handlers {
		ln := newPipeListener()
		host := &tlsHost{srv: httptest.NewUnstartedServer(h)}
		host.srv.Listener.Close()
		host.srv.Listener = ln
		host.srv.TLS = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			host.handshakes.Add(1)
			return nil, nil
		}}
		host.srv.StartTLS()
		roots.AddCert(host.srv.Certificate())
		hosts[name], listeners[name+":443"] = host, ln
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			ln, ok := listeners[addr]
			if !ok {
				return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("no such host")}
			}
			return ln.dial(ctx, network, addr)
		},
		TLSClientConfig: &tls.Config{RootCAs: roots},
	}
	t.Cleanup(func() {
		for _, h := range hosts {
			h.srv.Close()
		}
		tr.CloseIdleConnections()
	})
	return tr, hosts
}

// refusingLimiter admits the first attempt of a call and refuses every
// later reservation: the retry's turn never fits.
type refusingLimiter struct {
	ratelimit.Limiter
	reserved atomic.Int32
}

func (l *refusingLimiter) Reserve(ctx context.Context, _ ratelimit.Reservation) (ratelimit.Admission, error) {
	if l.reserved.Add(1) == 1 {
		return ratelimit.Admission{OK: true}, nil
	}
	return ratelimit.Admission{Wait: time.Hour}, nil
}

// A call that fails never closes the idle connections of the Transport it
// was given: not through a 429 storm, a 503 storm, a context cancelled
// during a retry's wait, a retry the limiter refuses, nor a connection that
// breaks under a write. go-retryablehttp closes idle connections whenever
// it returns a failure, and the Transport is the program's: the program's
// connection to another host must survive, and the SDK's own next call
// must not pay a new TLS handshake.
func TestFailedCallsKeepTheTransportsConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var status int
		var hangUp bool
		gateway := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			mu.Lock()
			s, hang := status, hangUp
			mu.Unlock()
			if hang {
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close()
				}
				return
			}
			w.Header().Set("Content-Type", "application/json")
			switch s {
			case http.StatusTooManyRequests:
				w.Header().Set("Retry-After", "30")
				w.WriteHeader(s)
				io.WriteString(w, rateLimitedBody)
			case http.StatusOK:
				io.WriteString(w, paymentBody)
			default:
				w.WriteHeader(s)
				io.WriteString(w, `{"code":"error","title":"Error","detail":"storm","status":"error"}`)
			}
		})
		other := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
		tr, hosts := newTLSNet(t, map[string]http.Handler{"gateway.example.com": gateway, "other.example.com": other})
		answer := func(s int, hang bool) {
			mu.Lock()
			status, hangUp = s, hang
			mu.Unlock()
		}

		// The program's own request to another host leaves one idle
		// connection in the shared Transport.
		program := &http.Client{Transport: tr}
		getOther := func() {
			t.Helper()
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://other.example.com/", nil)
			require.NoError(t, err)
			resp, err := program.Do(req)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		getOther()
		require.EqualValues(t, 1, hosts["other.example.com"].handshakes.Load())

		var cancelOnRetry context.CancelFunc // called by the calling goroutine only
		client := func(opts ...Option) *Client {
			c, err := NewClient("https://gateway.example.com", append([]Option{
				WithHTTPClient(&http.Client{Transport: tr}), WithToken("tok"), WithRetryOn429(true),
				WithMaxRetryWait(70 * time.Second),
				WithObserver(attemptHook(func(_ *Call, a *Attempt) {
					if cancelOnRetry != nil && a.Retry {
						cancelOnRetry()
					}
				})),
			}, opts...)...)
			require.NoError(t, err)
			return c
		}
		c := client()
		get := func(c *Client, cancelDuringWait bool) error {
			t.Helper()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cancelOnRetry = nil
			if cancelDuringWait {
				cancelOnRetry = cancel
			}
			_, err := c.Payments.Get(ctx, "p1")
			return err
		}

		answer(http.StatusOK, false)
		require.NoError(t, get(c, false))

		// Each storm runs on a client of its own (its limiter's cooldown
		// stays its own), all on the program's Transport.
		// A 429 storm: retries until the allowance refuses the next wait.
		answer(http.StatusTooManyRequests, false)
		err := get(client(), false)
		require.ErrorIs(t, err, ErrRateLimited)
		assert.Greater(t, len(CallOf(err).Attempts), 1)
		// A 429 whose wait is cut short by the caller.
		err = get(client(), true)
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, err, ErrRateLimited)

		// A 503 storm: the retries run out; then one cut short in its wait.
		answer(http.StatusServiceUnavailable, false)
		err = get(client(), false)
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, http.StatusServiceUnavailable, apiErr.StatusCode)
		assert.Len(t, apiErr.Call.Attempts, 3)
		require.ErrorIs(t, get(client(), true), context.Canceled)

		// A 429 whose retry the limiter will not admit in time.
		answer(http.StatusTooManyRequests, false)
		refusing := client(WithLimiter(&refusingLimiter{Limiter: ratelimit.NewMemory()}))
		err = get(refusing, false)
		require.ErrorAs(t, err, &apiErr)
		assert.False(t, apiErr.NotSent, "the server's own last answer")
		assert.Equal(t, ReasonLimiter, apiErr.Call.NotRetried())

		// Every failure so far was an answer on the one connection the
		// gateway needed: the next call reuses it.
		answer(http.StatusOK, false)
		require.NoError(t, get(c, false))
		assert.EqualValues(t, 1, hosts["gateway.example.com"].handshakes.Load(),
			"a failed call closed the SDK's idle connection to the gateway")

		// A connection that breaks under a submit (outcome unknown) is
		// gone; the next call needs one new connection, no more.
		answer(0, true)
		_, err = c.Payments.Submit(context.Background(), "p1", OpCapture, PaymentSubmitParams{SignedTransaction: "0x02f8"})
		require.ErrorIs(t, err, ErrOutcomeUnknown)
		answer(http.StatusOK, false)
		require.NoError(t, get(c, false))
		assert.EqualValues(t, 2, hosts["gateway.example.com"].handshakes.Load())

		// The program's connection to the other host survived it all.
		getOther()
		assert.EqualValues(t, 1, hosts["other.example.com"].handshakes.Load(),
			"a failed call closed the program's idle connection to another host")
	})
}

// The settings of the caller's client still apply through the SDK's
// wrapping of its Transport: the Timeout bounds each attempt, reading the
// body included, and is reported as a timeout once; the Jar's cookies are
// sent.
func TestCallersClientSettingsApply(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mux := http.NewServeMux()
		mux.HandleFunc("GET /payments/slow", func(_ http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		})
		mux.HandleFunc("GET /payments/slowbody", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "1000")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, `{"id":`)
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		})
		mux.HandleFunc("GET /payments/p1", func(w http.ResponseWriter, r *http.Request) {
			if c, err := r.Cookie("affinity"); err != nil || c.Value != "a1" {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			io.WriteString(w, paymentBody)
		})
		_, tr := pipeTransport(t, mux)
		jar := &cookieJar{cookies: []*http.Cookie{{Name: "affinity", Value: "a1"}}}
		c, err := NewClient("https://gateway.test", WithHTTPClient(&http.Client{Transport: tr, Timeout: time.Second, Jar: jar}))
		require.NoError(t, err)

		for _, id := range []string{"slow", "slowbody"} {
			start := time.Now()
			_, err := c.Payments.Get(context.Background(), id)
			var te *TransportError
			require.ErrorAs(t, err, &te, id)
			var ne net.Error
			require.ErrorAs(t, err, &ne, id)
			assert.True(t, ne.Timeout(), id)
			if id == "slow" {
				assert.Equal(t, 1, strings.Count(err.Error(), `Get "https://gateway.test/payments/slow"`), err.Error())
			}
			assert.Less(t, time.Since(start), 5*time.Second, "every attempt is bounded by the Timeout")
		}
		_, err = c.Payments.Get(context.Background(), "p1")
		require.NoError(t, err)
	})
}

// cookieJar hands out the same cookies for every URL.
type cookieJar struct{ cookies []*http.Cookie }

func (j *cookieJar) SetCookies(*url.URL, []*http.Cookie) {}

func (j *cookieJar) Cookies(*url.URL) []*http.Cookie { return j.cookies }

// hangingGateway answers every request at once, but for the first
// hang[path] requests to a path, which it holds until the client gives up
// (or for a minute). It records what it was sent.
type hangingGateway struct {
	mu   sync.Mutex
	hang map[string]int
	seen []seenRequest
}

func (g *hangingGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	g.seen = append(g.seen, seenRequest{method: r.Method, path: r.URL.Path, header: r.Header.Clone()})
	hang := g.hang[r.URL.Path] > 0
	if hang {
		g.hang[r.URL.Path]--
	}
	g.mu.Unlock()
	if hang && strings.HasSuffix(r.URL.Path, "slowbody") {
		// The headers and the start of the body, then nothing.
		w.Header().Set("Content-Length", strconv.Itoa(len(paymentBody)))
		io.WriteString(w, paymentBody[:10])
		w.(http.Flusher).Flush()
	}
	if hang {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(time.Minute):
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodPost {
		w.WriteHeader(http.StatusCreated)
	}
	io.WriteString(w, paymentBody)
}

// hangNext makes the next n requests to path hang.
func (g *hangingGateway) hangNext(path string, n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hang[path] = n
}

func (g *hangingGateway) requests(method, path string) []seenRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []seenRequest
	for _, r := range g.seen {
		if r.method == method && r.path == path {
			out = append(out, r)
		}
	}
	return out
}

// WithAttemptTimeout bounds each attempt, apart from the call's context:
// the attempt it cuts is a timeout, retried only where a broken connection
// would be (a read yes, a submit never, a keyed create with its key), and
// a view sets its own.
func TestAttemptTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := &hangingGateway{hang: map[string]int{}}
		_, tr := pipeTransport(t, g)
		hc := WithHTTPClient(&http.Client{Transport: tr}) // no Timeout of its own
		c := newTestClient(t, "https://gateway.test", hc, WithToken("tok"), withRand(func() float64 { return 0 }),
			WithAttemptTimeout(300*time.Millisecond))

		// A read: the cut attempt is retried at once (a zero draw).
		g.hangNext("/payments/p1", 1)
		start := time.Now()
		p, err := c.Payments.Get(context.Background(), "p1")
		require.NoError(t, err)
		assert.Equal(t, 300*time.Millisecond, time.Since(start), "one attempt cut at 300 ms, the retry answered at once")
		require.Len(t, p.Response.Call.Attempts, 2)
		first := p.Response.Call.Attempts[0]
		assert.Contains(t, first.Err, "attempt timed out after 300ms (WithAttemptTimeout)")
		assert.Equal(t, ReasonTransport, first.Reason)

		// A body that stops coming is cut too, reading included.
		g.hangNext("/payments/slowbody", 1)
		start = time.Now()
		_, err = c.Payments.Get(context.Background(), "slowbody")
		require.NoError(t, err)
		assert.Equal(t, 300*time.Millisecond, time.Since(start))

		// A submit: never sent again; the outcome is unknown; a timeout,
		// not the call's context.
		g.hangNext("/payments/p1/capture", 1)
		_, err = c.Payments.Submit(context.Background(), "p1", OpCapture, PaymentSubmitParams{SignedTransaction: "0x02f8"})
		require.ErrorIs(t, err, ErrOutcomeUnknown)
		assert.NotErrorIs(t, err, context.DeadlineExceeded, "the call's context did not end")
		var ne net.Error
		require.ErrorAs(t, err, &ne)
		assert.True(t, ne.Timeout())
		assert.Len(t, g.requests(http.MethodPost, "/payments/p1/capture"), 1)
		assert.Equal(t, ReasonUnsafe, CallOf(err).NotRetried())
		assert.NotEqual(t, OutcomeCanceled, CallOf(err).Outcome)

		// A keyed create: sent again with its key.
		g.hangNext("/payments", 1)
		_, err = c.Payments.Create(context.Background(), PaymentCreateParams{ChainID: 1, Mode: ModeCharge, Amount: "1", Token: "t", Payer: "a", Payee: "b"})
		require.NoError(t, err)
		creates := g.requests(http.MethodPost, "/payments")
		require.Len(t, creates, 2)
		assert.NotEmpty(t, creates[0].header.Get("Idempotency-Key"))
		assert.Equal(t, creates[0].header.Get("Idempotency-Key"), creates[1].header.Get("Idempotency-Key"))

		// A view sets its own bound; the client keeps its own.
		plain := newTestClient(t, "https://gateway.test", hc, WithToken("tok"))
		g.hangNext("/payments/p2", 1)
		start = time.Now()
		_, err = plain.Payments.Get(context.Background(), "p2")
		require.NoError(t, err, "without a bound, the attempt waits for the answer")
		assert.Equal(t, time.Minute, time.Since(start))
		g.hangNext("/payments/p2", 1)
		start = time.Now()
		_, err = plain.With(WithAttemptTimeout(time.Second), WithMaxRetries(0)).Payments.Get(context.Background(), "p2")
		var te *TransportError
		require.ErrorAs(t, err, &te)
		require.ErrorAs(t, err, &ne)
		assert.True(t, ne.Timeout())
		assert.Equal(t, time.Second, time.Since(start))
		g.hangNext("/payments/p2", 0)

		// The call's context deadline is the call's: its end is
		// context.DeadlineExceeded, whatever the attempt's bound.
		g.hangNext("/payments/p3", 1)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err = c.Payments.Get(ctx, "p3")
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, OutcomeCanceled, CallOf(err).Outcome)
	})
}

// Given to NewClient without WithHTTPClient, WithAttemptTimeout replaces
// the SDK's own 30 s Timeout, so a longer bound is not cut at 30 s; a
// negative one is refused.
func TestAttemptTimeoutReplacesTheDefaultTimeout(t *testing.T) {
	c := newTestClient(t, "https://api.rail0.xyz", WithAttemptTimeout(2*time.Minute))
	_, wrapped := c.hc.Transport.(timeoutClient)
	assert.False(t, wrapped, "no 30 s Timeout under the attempt's bound")
	assert.Equal(t, 2*time.Minute, c.policy.attemptTimeout)
	c = newTestClient(t, "https://api.rail0.xyz")
	_, wrapped = c.hc.Transport.(timeoutClient)
	assert.True(t, wrapped, "the default keeps its 30 s")

	_, err := NewClient("https://api.rail0.xyz", WithAttemptTimeout(-time.Second))
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "attempt_timeout", ve.Field)
}
