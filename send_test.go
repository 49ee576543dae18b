package rail0

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rail0/rail0-go/ratelimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The CheckRetry hook decides and never waits, even after a transport
// error, when go-retryablehttp hands Backoff no response: the call's
// Backoff reads the wait from the call's own state, so go-retryablehttp's
// timer is the one wait between an answer and its retry.
func TestCheckRetryNeverWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestClient(t, "https://gateway.test", withRand(func() float64 { return 0.5 }))
		st, ctx, err := c.prepare(context.Background(), &request{method: http.MethodGet, path: "payments/p1"})
		require.NoError(t, err)
		call := st.call
		st.report(ctx, event{kind: attemptSent, req: &http.Request{Header: http.Header{}}})
		reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}

		start := time.Now()
		retry, err := st.rc.CheckRetry(ctx, nil, reset)

		assert.Zero(t, time.Since(start), "CheckRetry waited")
		require.True(t, retry)
		require.NoError(t, err)
		wait := st.rc.Backoff(st.rc.RetryWaitMin, st.rc.RetryWaitMax, 0, nil)
		assert.Equal(t, defaultBackoffBase/2, wait, "the decided wait: half the first window at the draw 0.5")
		assert.Equal(t, wait, call.Attempts[0].Wait, "the wait reported is the wait taken")
		assert.Zero(t, st.rc.Backoff(st.rc.RetryWaitMin, st.rc.RetryWaitMax, 0, nil), "a decided wait paces one retry only")
	})
}

// Each call sends with a go-retryablehttp client of its own, whose hooks
// belong to that call: two calls in flight at once each see only their own
// answers, and the context a call's attempts carry is the caller's.
func TestEachCallHasItsOwnHooks(t *testing.T) {
	type ctxKey struct{}
	var mu sync.Mutex
	var seen []context.Context
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		seen = append(seen, r.Context())
		mu.Unlock()
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
	})
	c := newTestClient(t, "https://gateway.test", WithHTTPClient(&http.Client{Transport: rt}))
	ctx := context.WithValue(context.Background(), ctxKey{}, "caller")
	a := c.newCall(&request{method: http.MethodGet, path: "payments/a"})
	b := c.newCall(&request{method: http.MethodGet, path: "payments/b"})
	require.NotSame(t, &a.rc, &b.rc)

	_, err := a.run(ctx, nil, "tok")
	require.NoError(t, err)
	assert.Equal(t, 1, a.attempts)
	assert.Zero(t, b.attempts, "one call's hook counted another call's attempt")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, 1)
	assert.Equal(t, ctx, seen[0], "the attempt carries the caller's context, with nothing added")
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A token source of the caller's own that hands out a new token when asked
// again after a 401 gets the call sent once more with it, like a
// TokenSource: the client learns which session a call used from the token
// the source returned, not from a note the source leaves in the context. A
// source that returns the refused token again gets the 401 back after one
// request.
func TestAnySourceWithANewTokenGetsTheResend(t *testing.T) {
	srv := newScriptServer(t, step{status: http.StatusUnauthorized, body: `{"code":"unauthorized","title":"Unauthorized","detail":"Token revoked.","status":"unauthorized"}`},
		step{status: http.StatusOK, body: paymentBody})
	var mu sync.Mutex
	var asked []string
	tokens := []string{"tok-1", "tok-2"}
	c := newTestClient(t, srv.URL, WithTokenSource(func(ctx context.Context) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		refused := ""
		if n, ok := ctx.Value(sessionRefusalKey{}).(sessionRefusal); ok {
			refused = n.token
		}
		asked = append(asked, refused)
		return tokens[min(len(asked), len(tokens))-1], nil
	}))

	p, err := c.Payments.Get(context.Background(), "p1")

	require.NoError(t, err)
	assert.Equal(t, 2, p.Response.Attempts)
	assert.Equal(t, ReasonSessionRefused, p.Response.Call.Attempts[0].Reason)
	assert.Equal(t, []string{"", "tok-1"}, asked, "asked once, then once more with the refused token")
	reqs := srv.requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "Bearer tok-1", reqs[0].header.Get("Authorization"))
	assert.Equal(t, "Bearer tok-2", reqs[1].header.Get("Authorization"))

	// A fixed token: asked again, the same token; the 401 comes back.
	same := newScriptServer(t, step{status: http.StatusUnauthorized, body: `{"code":"unauthorized","title":"Unauthorized","detail":"Token revoked.","status":"unauthorized"}`})
	fixed := newTestClient(t, same.URL, WithToken("tok-fixed"))
	_, err = fixed.Payments.Get(context.Background(), "p1")
	require.ErrorIs(t, err, ErrUnauthorized)
	assert.Len(t, same.requests(), 1)
}

// After a 401, a source that fails when asked for a new session fails the
// call with its own error, and nothing more is sent.
func TestSourceFailingAfterARefusal(t *testing.T) {
	srv := newScriptServer(t, step{status: http.StatusUnauthorized, body: `{"code":"unauthorized","title":"Unauthorized","detail":"Token revoked.","status":"unauthorized"}`})
	boom := errors.New("vault sealed")
	c := newTestClient(t, srv.URL, WithTokenSource(func(ctx context.Context) (string, error) {
		if _, ok := ctx.Value(sessionRefusalKey{}).(sessionRefusal); ok {
			return "", boom
		}
		return "tok-1", nil
	}))
	_, err := c.Payments.Get(context.Background(), "p1")
	require.ErrorIs(t, err, boom)
	assert.True(t, strings.HasPrefix(err.Error(), "rail0: token source: "), err.Error())
	assert.Len(t, srv.requests(), 1)
}

// TestMain fails the package's tests if a goroutine started by this package
// outlives them. It is a small stand-in for goleak, which the root package's
// tests do not import: a user's go mod tidy loads them, and they must cost
// nothing beyond the standard library, testify and httpmock.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := leakedGoroutines(5 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines of package rail0 outlived the tests:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// leakedGoroutines waits up to patience for every goroutine running code of
// this module (other than the test runner's) to end, and returns the stacks
// of those that did not.
func leakedGoroutines(patience time.Duration) string {
	deadline := time.Now().Add(patience)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var leaked []string
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "github.com/rail0/rail0-go") && !strings.Contains(g, "rail0-go.TestMain") &&
				!strings.Contains(g, "rail0-go.leakedGoroutines") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// step is one scripted answer of a scriptServer.
type step struct {
	status int
	header map[string]string
	body   string
	// hangUp closes the connection after reading the request, without an
	// answer: the request reached the server, its outcome is unknown.
	hangUp bool
	// delay is how long the server takes before answering (it gives up
	// when the request's context ends).
	delay time.Duration
}

// seenRequest is what a scriptServer recorded of one request.
type seenRequest struct {
	method string
	path   string
	query  string
	header http.Header
	body   string
	at     time.Time
}

// scriptServer is a real HTTP server (httptest) that answers with scripted
// steps in order, repeating the last one, and records every request. End-to-
// end tests use it so that headers cross a real transport boundary.
type scriptServer struct {
	*httptest.Server
	mu    sync.Mutex
	steps []step
	seen  []seenRequest
}

func newScriptServer(t *testing.T, steps ...step) *scriptServer {
	t.Helper()
	s := &scriptServer{steps: steps}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *scriptServer) serve(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
	}
	s.mu.Lock()
	n := len(s.seen)
	s.seen = append(s.seen, seenRequest{
		method: r.Method, path: r.URL.Path, query: r.URL.RawQuery,
		header: r.Header.Clone(), body: string(body), at: time.Now(),
	})
	st := s.steps[min(n, len(s.steps)-1)]
	s.mu.Unlock()
	if st.delay > 0 {
		t := time.NewTimer(st.delay)
		defer t.Stop()
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
	}
	if st.hangUp {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
			}
		}
		return
	}
	w.Header().Set("X-Request-Id", "req-"+strings.Repeat("x", n+1))
	for k, v := range st.header {
		w.Header().Set(k, v)
	}
	if st.body != "" && w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(st.status)
	io.WriteString(w, st.body)
}

// newMemScript returns a scriptServer that is not listening: its
// RoundTrip hands each request to the script in memory. A client built with
// memClient(s) inside a synctest bubble then waits on the bubble's fake
// clock only (a real loopback connection is not "durably blocked", so time
// in a bubble would not advance past it).
func newMemScript(steps ...step) *scriptServer { return &scriptServer{steps: steps} }

// RoundTrip implements http.RoundTripper for a script made by newMemScript.
// A hangUp step is a connection reset after the request was read.
func (s *scriptServer) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	st := s.steps[min(len(s.seen), len(s.steps)-1)]
	s.mu.Unlock()
	rec := httptest.NewRecorder()
	s.serve(rec, r)
	if r.Body != nil {
		r.Body.Close()
	}
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	if st.hangUp {
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	}
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

// memClient is an option that sends through s in memory.
func memClient(s *scriptServer) Option { return WithHTTPClient(&http.Client{Transport: s}) }

func (s *scriptServer) requests() []seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seenRequest(nil), s.seen...)
}

// newTestClient builds a client for srv through NewClient, as a user would.
func newTestClient(t *testing.T, url string, opts ...Option) *Client {
	t.Helper()
	c, err := NewClient(url, opts...)
	require.NoError(t, err)
	return c
}

// withRand injects the uniform draw used for jitter.
func withRand(f func() float64) Option {
	return func(c *config) error { c.rand = f; return nil }
}

// eventLog is an Observer that keeps the retry decisions it hears: every
// attempt whose answer was a retry matter (Reason set), as EndAttempt hands
// it over, and the calls the limiter stopped.
type eventLog struct {
	mu      sync.Mutex
	events  []retryEvent
	limiter int // calls that ended on a limiter refusal
	known   int // calls the client answered itself (ReasonKnownClosed)
}

// retryEvent is one retry decision as an Observer hears it.
type retryEvent struct {
	Attempt
	CallID uint64
	Path   string
}

func (l *eventLog) StartCall(ctx context.Context, _ *Call) context.Context { return ctx }

func (l *eventLog) SendAttempt(context.Context, *Call, AttemptHeader) {}

func (l *eventLog) EndAttempt(_ context.Context, call *Call, a *Attempt) {
	if a.Reason == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, retryEvent{Attempt: *a, CallID: call.ID, Path: call.Path})
}

func (l *eventLog) EndCall(_ context.Context, call *Call, _ error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch call.NotRetried() {
	case ReasonLimiter:
		l.limiter++
	case ReasonKnownClosed:
		l.known++
	}
}

func (l *eventLog) all() []retryEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]retryEvent(nil), l.events...)
}

// attemptHook is an Observer that calls itself at every EndAttempt: what
// a test does once a retry decision is taken, before the wait.
type attemptHook func(call *Call, a *Attempt)

func (f attemptHook) StartCall(ctx context.Context, _ *Call) context.Context { return ctx }

func (f attemptHook) SendAttempt(context.Context, *Call, AttemptHeader) {}

func (f attemptHook) EndAttempt(_ context.Context, call *Call, a *Attempt) { f(call, a) }

func (f attemptHook) EndCall(context.Context, *Call, error) {}

// retries counts the decisions to retry.
func (l *eventLog) retries() int {
	n := 0
	for _, e := range l.all() {
		if e.Retry {
			n++
		}
	}
	return n
}

// refusals counts, by reason, the retries a limit stopped: the refused
// attempts and the limiter's refusals.
func (l *eventLog) refusals() map[RetryReason]int {
	out := map[RetryReason]int{}
	for _, e := range l.all() {
		if e.Refused {
			out[e.Reason]++
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.limiter > 0 {
		out[ReasonLimiter] += l.limiter
	}
	return out
}

const (
	rateLimitedBody = `{"code":"rate_limited","title":"Too many requests","detail":"Request limit reached for this period; retry after the Retry-After delay.","status":"rate_limited"}`
	paymentBody     = `{"id":"0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a4b","rail0_id":"0x9f2c4e1a7b3d5c8e0f6a2b4d6c8e0a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e2f","status":"unsigned","mode":"authorize","amount":"25000000","payer":"0x5B38Da6a701c568545dCfcB03FcB875f56beddC4","payee":"0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2","token":"0x036CbD53842c5426634e7929541eC2318f3dCF7e","authorization_expiry":1789985700,"refund_expiry":1791972900,"disputed":false,"created_at":"2026-09-14T10:15:00Z","updated_at":"2026-09-14T10:15:00Z","chain_id":84532,"transactions":[],"signing_payload":{"primaryType":"TransferWithAuthorization"}}`
)

func throttled(retryAfter string) step {
	h := map[string]string{}
	if retryAfter != "" {
		h["Retry-After"] = retryAfter
	}
	return step{status: http.StatusTooManyRequests, header: h, body: rateLimitedBody}
}

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
	// DialTLSContext: the pipe is taken as a connection past TLS, so an
	// https:// base URL reaches the server too.
	transport := &http.Transport{DialContext: ln.dial, DialTLSContext: ln.dial}
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

// The answers of sign-in, webhook creation and secret rotation carry a
// credential. When such an answer cannot be decoded, the *DecodeError keeps
// none of its body (and nothing else shows the credential); other
// operations still keep the start of the body for diagnosis.
func TestCredentialAnswersKeepNoBodyInErrors(t *testing.T) {
	const token, secret = "eyJhbGciOiJIUzI1NiJ9.SESSION-TOKEN.sig", "whsec-SHARED-SECRET"
	tests := []struct {
		name     string
		status   int
		body     string
		call     func(ctx context.Context, c *Client) error
		keepBody bool
	}{
		{"sign-in with a malformed expires_at", http.StatusCreated,
			`{"token":"` + token + `","address":"0x5B38Da6a701c568545dCfcB03FcB875f56beddC4","account_id":null,"name":null,"expires_at":"tomorrow"}`,
			func(ctx context.Context, c *Client) error {
				_, err := c.Auth.Verify(ctx, AuthVerifyParams{Message: "message", Signature: "0xsig"})
				return err
			}, false},
		{"webhook creation with a malformed created_at", http.StatusCreated,
			`{"id":"wh-1","name":"n","shared_secret":"` + secret + `","created_at":"yesterday"}`,
			func(ctx context.Context, c *Client) error {
				_, err := c.Webhooks.Create(ctx, WebhookCreateParams{Name: "n", CallbackURL: "https://example.com/h", Topic: TopicPaymentsCaptured})
				return err
			}, false},
		{"secret rotation with a truncated body", http.StatusOK,
			`{"id":"wh-1","shared_secret":"` + secret + `","name":`,
			func(ctx context.Context, c *Client) error { _, err := c.Webhooks.RotateSecret(ctx, "wh-1"); return err }, false},
		{"Raw of the sign-in with a truncated body", http.StatusCreated,
			`{"token":"` + token + `","address":"0x5B38Da6a701c568545dCfcB03FcB875f56beddC4","expires_at":`,
			func(ctx context.Context, c *Client) error {
				var out json.RawMessage
				_, err := c.Raw(ctx, RawRequest{Method: http.MethodPost, Path: []string{"auth"}, Body: map[string]string{"message": "m"}, Public: true}, &out)
				return err
			}, false},
		{"Raw of an endpoint the SDK does not know, answering a secret", http.StatusOK,
			`{"id":"k1","api_secret":"` + secret + `","created_at":"yesterday"}`,
			func(ctx context.Context, c *Client) error {
				var out struct {
					CreatedAt time.Time `json:"created_at"`
				}
				_, err := c.Raw(ctx, RawRequest{Method: http.MethodPost, Path: []string{"api_keys"}, Class: IdempotentWithKey}, &out)
				return err
			}, false},
		{"a payment keeps its body", http.StatusOK, `{"id":"p1","status":`,
			func(ctx context.Context, c *Client) error { _, err := c.Payments.Get(ctx, "p1"); return err }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newScriptServer(t, step{status: tt.status, body: tt.body})
			c := newTestClient(t, srv.URL, WithToken("tok"))

			err := tt.call(context.Background(), c)

			var decodeErr *DecodeError
			require.ErrorAs(t, err, &decodeErr)
			if tt.keepBody {
				assert.NotEmpty(t, decodeErr.Body)
				return
			}
			assert.Nil(t, decodeErr.Body)
			for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
				out := fmt.Sprintf(verb, err)
				assert.NotContains(t, out, "SESSION-TOKEN", verb)
				assert.NotContains(t, out, "SHARED-SECRET", verb)
			}
		})
	}
}

// recordingLimiter records the partition of every reservation.
type recordingLimiter struct {
	ratelimit.Limiter
	mu         sync.Mutex
	partitions []string
}

func (l *recordingLimiter) Reserve(ctx context.Context, r ratelimit.Reservation) (ratelimit.Admission, error) {
	l.mu.Lock()
	l.partitions = append(l.partitions, r.Partition)
	l.mu.Unlock()
	return l.Limiter.Reserve(ctx, r)
}

func (l *recordingLimiter) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.partitions
	l.partitions = nil
	return p
}

// The public operations (security: [] in the contract) send no
// Authorization, never call the token source (so never sign in) and take
// their turn on the public rate-limit partition; a session operation does
// all three the other way.
func TestPublicOperationsAreSentAnonymously(t *testing.T) {
	srv := newScriptServer(t, step{status: http.StatusOK, body: `[]`})
	var sourced atomic.Int32
	limiter := &recordingLimiter{Limiter: ratelimit.NewMemory()}
	c := newTestClient(t, srv.URL, WithRetryOn429(true), WithLimiter(limiter),
		WithTokenSource(func(context.Context) (string, error) { sourced.Add(1); return "tok-SESSION", nil }))
	ctx := context.Background()
	public := map[string]func() error{
		"Chains.List": func() error { _, err := c.Chains.List(ctx, ChainListParams{}); return err },
		"Tokens.List": func() error { _, err := c.Tokens.List(ctx, TokenListParams{}); return err },
		"PaymentMethods.List": func() error {
			_, err := c.PaymentMethods.List(ctx, PaymentMethodListParams{AccountID: "acct"})
			return err
		},
	}
	for name, call := range public {
		require.NoError(t, call(), name)
		reqs := srv.requests()
		assert.Empty(t, reqs[len(reqs)-1].header.Get("Authorization"), name)
		assert.Equal(t, []string{"public"}, limiter.take(), name)
	}
	assert.Zero(t, sourced.Load(), "a public operation called the token source")

	_, err := c.Disputes.List(ctx, DisputeListParams{})
	require.NoError(t, err)
	reqs := srv.requests()
	assert.Equal(t, "Bearer tok-SESSION", reqs[len(reqs)-1].header.Get("Authorization"))
	assert.Equal(t, int32(1), sourced.Load())
	assert.Equal(t, []string{partitionFor("tok-SESSION")}, limiter.take())
}

// A header value net/http cannot send (CR, LF or another control byte) is
// a *ValidationError at once: nothing is sent and nothing is retried.
func TestInvalidHeaderValuesRefusedBeforeSending(t *testing.T) {
	srv := newScriptServer(t, step{status: http.StatusCreated, body: paymentBody})
	ctx := context.Background()
	params := PaymentCreateParams{ChainID: 84532, Mode: ModeAuthorize, Amount: "1.00",
		Token: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", Payer: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
		Payee: "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2"}
	for _, key := range []string{"key\r\nX-Injected: 1", "key\n", "key\x00", "key\x7f"} {
		c := newTestClient(t, srv.URL, WithToken("tok"))
		p := params
		p.IdempotencyKey = key
		_, err := c.Payments.Create(ctx, p)
		var ve *ValidationError
		if assert.ErrorAs(t, err, &ve, "key %q", key) {
			assert.Equal(t, "idempotency_key", ve.Field)
		}
		assert.False(t, errors.Is(err, ErrOutcomeUnknown), "key %q", key)
	}
	var sourced atomic.Int32
	c := newTestClient(t, srv.URL, WithTokenSource(func(context.Context) (string, error) { sourced.Add(1); return "tok\x00", nil }))
	_, err := c.Payments.Get(ctx, "p1")
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "token", ve.Field)
	assert.NotContains(t, err.Error(), "tok\x00")
	assert.Equal(t, int32(1), sourced.Load())
	assert.Empty(t, srv.requests(), "a request with an invalid header was sent")

	for _, opt := range []Option{WithUserAgent("app/1\x01"), WithToken("tok\x00"), WithToken("tok\r\n")} {
		_, err := NewClient(srv.URL, opt)
		assert.Error(t, err)
	}
}

// revocationGateway is the sign-in routes of authGateway plus
// GET /payments/{id}, which answers 401 to revoked tokens. Requests with a
// revoked token are held until holdFor of them have arrived, so that all
// were sent with the old session; then one 401 goes out, and the others
// only once that call comes back with a new session: they are late 401s,
// arriving after the token source has signed in again.
type revocationGateway struct {
	*authGateway
	holdFor   int
	refuseAll bool // answer 401 to every token, at once

	mu       sync.Mutex
	revoked  map[string]bool
	held     int
	allIn    chan struct{} // closed when holdFor revoked requests arrived
	late     chan struct{} // closed when a new session is first used
	lateOnce sync.Once
	refused  int
	answered int
	logouts  int
}

func newRevocationGateway(t *testing.T, holdFor int) (*revocationGateway, *httptest.Server, *authClock) {
	clock := newAuthClock()
	g := &revocationGateway{
		authGateway: &authGateway{t: t, clock: clock, lifetime: 10 * time.Minute,
			nonces: map[string]bool{}, tokens: map[string]time.Time{}, verifyBegan: make(chan struct{}, 16)},
		holdFor: holdFor, revoked: map[string]bool{}, allIn: make(chan struct{}), late: make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+muxBasePath+"/auth/nonces", g.nonce)
	mux.HandleFunc("POST "+muxBasePath+"/auth", g.verify)
	mux.HandleFunc("GET "+muxBasePath+"/payments/{id}", g.payment)
	mux.HandleFunc("POST "+muxBasePath+"/payments/{id}/capture", g.payment) // the same 401 rules
	mux.HandleFunc("POST "+muxBasePath+"/auth/logout", func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.logouts++
		g.mu.Unlock()
		g.payment(w, r) // the same 401 rules
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return g, srv, clock
}

func (g *revocationGateway) payment(w http.ResponseWriter, r *http.Request) {
	refuse := func() {
		authWriteJSON(w, http.StatusUnauthorized, `{"code":"unauthorized","title":"Unauthorized","detail":"Token revoked.","status":"unauthorized"}`)
	}
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	g.mu.Lock()
	if g.refuseAll {
		g.refused++
		g.mu.Unlock()
		refuse()
		return
	}
	if !g.revoked[tok] {
		if len(g.revoked) > 0 {
			g.lateOnce.Do(func() { close(g.late) })
		}
		g.answered++
		g.mu.Unlock()
		authWriteJSON(w, http.StatusOK, paymentBody)
		return
	}
	g.held++
	n := g.held
	if n == g.holdFor {
		close(g.allIn)
	}
	g.mu.Unlock()
	for _, wait := range []chan struct{}{g.allIn, g.late} {
		if wait == g.late && n == 1 {
			break // the first 401 goes out at once
		}
		select {
		case <-wait:
		case <-r.Context().Done():
			return
		}
	}
	g.mu.Lock()
	g.refused++
	g.mu.Unlock()
	refuse()
}

func (g *revocationGateway) revoke(tok string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.revoked[tok] = true
}

// After a revocation, 40 concurrent calls that all carried the revoked
// session cost exactly one sign-in: each 401 drops only the session it was
// sent with (the late ones find a newer session and keep it), the sign-in
// is shared, and every call is sent once more and succeeds.
func TestRevokedSessionCostsOneSignIn(t *testing.T) {
	const workers = 40
	g, srv, clock := newRevocationGateway(t, workers)
	anon := newAuthClient(t, srv, clock)
	ts, err := loginTokenSource(anon.Auth, newSIWESigner(), SignIn{}, withSessionClock(clock.Now))
	require.NoError(t, err)
	c := newAuthClient(t, srv, clock, WithTokenSource(ts.Token))
	ctx := context.Background()
	_, err = c.Payments.Get(ctx, "p1")
	require.NoError(t, err)
	first, err := ts.Token(ctx)
	require.NoError(t, err)
	g.revoke(first)

	errs := make(chan error, workers)
	for range workers {
		go func() {
			_, err := c.Payments.Get(ctx, "p1")
			errs <- err
		}()
	}
	for range workers {
		assert.NoError(t, <-errs)
	}
	_, _, logins := g.counts()
	assert.Equal(t, 2, logins, "sign-ins: the first one and one after the revocation")
	g.mu.Lock()
	defer g.mu.Unlock()
	assert.Equal(t, workers, g.refused)
	assert.Equal(t, 1+workers, g.answered)
	now, err := ts.Token(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, first, now)
}

// A call refused 401 again after signing in again returns that 401: the
// call is sent once more, not more. A fixed token (WithToken) has no one to
// sign in again, so its 401 comes back after one attempt.
func TestUnauthorizedSentOnceMoreOnly(t *testing.T) {
	g, srv, clock := newRevocationGateway(t, 1)
	g.refuseAll = true
	anon := newAuthClient(t, srv, clock)
	ts, err := loginTokenSource(anon.Auth, newSIWESigner(), SignIn{}, withSessionClock(clock.Now))
	require.NoError(t, err)
	var logs bytes.Buffer // written by the calling goroutine only
	c := newAuthClient(t, srv, clock, WithTokenSource(ts.Token), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))

	_, err = c.Payments.Get(context.Background(), "p1")

	require.ErrorIs(t, err, ErrUnauthorized)
	// One call, one transcript: the 401 that made it sign in, then the
	// second 401 returned.
	call := CallOf(err)
	require.NotNil(t, call)
	require.Len(t, call.Attempts, 2)
	assert.True(t, call.Attempts[0].Retry)
	assert.Equal(t, ReasonSessionRefused, call.Attempts[0].Reason)
	assert.False(t, call.Attempts[1].Retry)
	_, _, logins := g.counts()
	assert.Equal(t, 2, logins)
	assert.Equal(t, 1, strings.Count(logs.String(), "reason=session_refused"), logs.String())
	assert.Equal(t, 1, strings.Count(call.String(), "-> sent again at once with a new token (session_refused)"), "the send after signing in again is a retry")
	assert.NotContains(t, logs.String(), "jwt-")
	g.mu.Lock()
	assert.Equal(t, 2, g.refused)
	g.mu.Unlock()

	// A write that must not run twice is not sent again after a 401: a
	// proxy might have answered 401 after the gateway ran it. The session is
	// dropped; the next call signs in.
	_, err = c.Payments.Submit(context.Background(), "p1", OpCapture, PaymentSubmitParams{SignedTransaction: "0x02f8"})
	require.ErrorIs(t, err, ErrUnauthorized)
	require.Len(t, CallOf(err).Attempts, 1)
	g.mu.Lock()
	assert.Equal(t, 3, g.refused)
	g.mu.Unlock()
	_, _, logins = g.counts()
	assert.Equal(t, 2, logins)

	fixed := newAuthClient(t, srv, clock, WithToken("tok-fixed"))
	_, err = fixed.Payments.Get(context.Background(), "p1")
	require.ErrorIs(t, err, ErrUnauthorized)
	g.mu.Lock()
	assert.Equal(t, 4, g.refused)
	g.mu.Unlock()

	// Logging out a session the gateway refuses does not sign in again.
	_, err = c.Auth.Logout(context.Background())
	require.ErrorIs(t, err, ErrUnauthorized)
	g.mu.Lock()
	assert.Equal(t, 1, g.logouts)
	assert.Equal(t, 5, g.refused)
	g.mu.Unlock()
	_, _, logins = g.counts()
	assert.Equal(t, 3, logins) // the session the submit's 401 dropped
}

// pipeListener is an in-memory network for an httptest.Server inside a
// synctest bubble: real sockets are not durably blocking, so the bubble's
// clock would never advance while a request is in flight.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// scriptedSessionGateway serves sign-ins and answers route with statuses,
// one per request, the last repeated. It returns a client signed in through
// a TokenSource with opts, and the number of requests route received.
func scriptedSessionGateway(t *testing.T, route string, statuses []int, opts ...Option) (*Client, func() int) {
	t.Helper()
	clock := &authClock{now: time.Now()} // the bubble's; the test lasts seconds
	g := &authGateway{t: t, clock: clock, lifetime: 10 * time.Minute,
		nonces: map[string]bool{}, tokens: map[string]time.Time{}, verifyBegan: make(chan struct{}, 16)}
	var mu sync.Mutex
	sent := 0
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+muxBasePath+"/auth/nonces", g.nonce)
	mux.HandleFunc("POST "+muxBasePath+"/auth", g.verify)
	method, path, _ := strings.Cut(route, " ")
	mux.HandleFunc(method+" "+muxBasePath+path, func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		status := statuses[min(sent, len(statuses)-1)]
		sent++
		mu.Unlock()
		switch status {
		case http.StatusTooManyRequests:
			w.Header().Set("Retry-After", "2")
			authWriteJSON(w, status, rateLimitedBody)
		case http.StatusUnauthorized:
			authWriteJSON(w, status, `{"code":"unauthorized","title":"Unauthorized","detail":"Token revoked."}`)
		case http.StatusOK, http.StatusCreated:
			authWriteJSON(w, status, paymentBody)
		default:
			authWriteJSON(w, status, `{"code":"error","title":"Error","detail":"scripted"}`)
		}
	})
	hc := pipeClient(t, mux)
	anon, err := NewClient("https://gateway.test"+muxBasePath, WithHTTPClient(hc))
	require.NoError(t, err)
	ts, err := loginTokenSource(anon.Auth, newSIWESigner(), SignIn{})
	require.NoError(t, err)
	c, err := NewClient("https://gateway.test"+muxBasePath, append([]Option{WithHTTPClient(hc), WithTokenSource(ts.Token)}, opts...)...)
	require.NoError(t, err)
	return c, func() int {
		mu.Lock()
		defer mu.Unlock()
		return sent
	}
}

// The send after a sign-in is a retry of the same call: the observer hears
// it as one (EndAttempt, once decided), and it spends the call's one
// allowance.
// Here a 429 (Retry-After 2 s) is retried, the retry meets a revoked
// session (401), the client signs in and sends again, and that send gets
// another 429: with 3 s of MaxRetryWait and 2 s already spent, the call
// returns it instead of waiting 2 s more, as it would with a fresh
// allowance.
func TestSessionRefusedResendSharesTheCallsAllowance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev := &eventLog{}
		c, sent := scriptedSessionGateway(t, "GET /payments/{id}",
			[]int{http.StatusTooManyRequests, http.StatusUnauthorized, http.StatusTooManyRequests, http.StatusOK},
			WithRetryOn429(true), WithMaxRetryWait(3*time.Second), WithObserver(ev))

		_, err := c.Payments.Get(context.Background(), "p1")

		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, http.StatusTooManyRequests, apiErr.StatusCode)
		assert.Len(t, apiErr.Call.Attempts, 3)
		assert.Equal(t, 3, sent(), "the last 429 was retried on a fresh allowance")
		assert.Equal(t, 2, ev.retries())
		assert.Equal(t, map[RetryReason]int{ReasonAllowance: 1}, ev.refusals())
		var reasons []RetryReason
		for _, e := range ev.all() {
			reasons = append(reasons, e.Reason)
		}
		assert.Equal(t, []RetryReason{ReasonRateLimited, ReasonSessionRefused, ReasonAllowance}, reasons)
	})
}

// The send after a 401 inherits the retries the policy counted: a 401
// after a 503 buys no fresh 5xx retries (WithMaxRetries bounds the call,
// not each send).
func TestSessionRefusedResendKeepsTheRetriesCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, sent := scriptedSessionGateway(t, "GET /payments/{id}",
			[]int{http.StatusServiceUnavailable, http.StatusUnauthorized, http.StatusServiceUnavailable},
			WithMaxRetries(2))

		_, err := c.Payments.Get(context.Background(), "p1")

		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, http.StatusServiceUnavailable, apiErr.StatusCode)
		assert.Equal(t, 4, sent(), "503, 401, 503, 503: two 5xx retries and the resend, not two more after it")
	})
}

// The send after a 401 inherits what the earlier attempts may have done: a
// write that an earlier attempt may have run ends as outcome unknown,
// whatever the last answer.
func TestSessionRefusedResendKeepsOutcomeUnknown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, sent := scriptedSessionGateway(t, "POST /payments",
			[]int{http.StatusServiceUnavailable, http.StatusUnauthorized, http.StatusConflict})

		_, err := c.Payments.Create(context.Background(), PaymentCreateParams{ChainID: 84532, Mode: ModeAuthorize,
			Amount: "1.00", Token: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
			Payer: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4", Payee: "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2",
			IdempotencyKey: "k1"})

		require.ErrorIs(t, err, ErrOutcomeUnknown, "the first 503 may have created the payment")
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, http.StatusConflict, apiErr.StatusCode)
		assert.Equal(t, 3, sent())
	})
}

// A call made with a token and answered 401 asks the token source once
// more; a source that then answers "" (it has no token any more) does not
// turn the call into a public one: the 401 is returned and nothing more is
// sent. It went out without a token before, on the public partition, where
// a caller who meant to act as itself got the gateway's answer to nobody.
func TestUnauthorizedThenNoTokenSendsNothingMore(t *testing.T) {
	var mu sync.Mutex
	var withToken, without int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.Header.Get("Authorization") == "" {
			without++
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"data": [], "pagination": {"total": 0, "limit": 20, "offset": 0}}`))
			return
		}
		withToken++
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"code": "unauthorized", "title": "Unauthorized", "detail": "The session has expired.", "status": "unauthorized"}`))
	}))
	t.Cleanup(srv.Close)
	asked := 0
	source := func(context.Context) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		asked++
		if asked == 1 {
			return "tok-1", nil
		}
		return "", nil
	}
	c := newTestClient(t, srv.URL, WithTokenSource(source))
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"a read", func() error { _, err := c.Payments.Get(context.Background(), "p1"); return err }},
		{"a list", func() error { _, err := c.Payments.List(context.Background(), PaymentListParams{}); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			withToken, without, asked = 0, 0, 0
			mu.Unlock()
			err := tc.call()
			var apiErr *APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, http.StatusUnauthorized, apiErr.StatusCode)
			assert.ErrorIs(t, err, ErrUnauthorized)
			require.NotNil(t, apiErr.Call)
			assert.Len(t, apiErr.Call.Attempts, 1)
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, 1, withToken, "the call went out once, with its token")
			assert.Equal(t, 0, without, "nothing went out without a token")
			assert.Equal(t, 2, asked, "the source was asked for the call and once after the 401")
		})
	}
}

// sourceFuncs parses the package's own source files (not its tests) and
// returns each function by name ("Recv.Name" for a method) with its file.
func sourceFuncs(t *testing.T) map[string]*ast.FuncDecl {
	t.Helper()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	funcs := map[string]*ast.FuncDecl{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			key := fn.Name.Name
			if fn.Recv != nil {
				recv := fn.Recv.List[0].Type
				if star, ok := recv.(*ast.StarExpr); ok {
					recv = star.X
				}
				if id, ok := recv.(*ast.Ident); ok {
					key = id.Name + "." + key
				}
			}
			funcs[key] = fn
		}
	}
	return funcs
}

// A call tells about itself in one place: callState.report feeds the
// transcript, the observers and the logs. The Observer's methods are
// called there only, and a log line about a call is written there or in a
// helper only report calls.
func TestOneReport(t *testing.T) {
	funcs := sourceFuncs(t)
	calls := map[string]map[string]bool{} // callee's name -> callers
	for caller, fn := range funcs {
		ast.Inspect(fn, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			name := sel.Sel.Name
			if inner, ok := sel.X.(*ast.SelectorExpr); ok {
				switch inner.Sel.Name + "." + name {
				case "observer.StartCall", "observer.SendAttempt", "observer.EndAttempt", "observer.EndCall":
					assert.Equal(t, "callState.report", caller, "%s tells the observer; only report may", caller)
				case "logger.LogAttrs":
					name = "logger.LogAttrs"
				}
			}
			if calls[name] == nil {
				calls[name] = map[string]bool{}
			}
			calls[name][caller] = true
			return true
		})
	}
	require.NotEmpty(t, calls["logger.LogAttrs"])
	for writer := range calls["logger.LogAttrs"] {
		if writer == "callState.report" {
			continue
		}
		_, method, _ := strings.Cut(writer, ".")
		callers := calls[method]
		assert.Equal(t, map[string]bool{"callState.report": true}, callers, "%s writes a log line; only report may call it", writer)
	}
}

// An answer larger than WithMaxResponseSize is read no further than the
// limit, once: it is a *DecodeError wrapping a *ResponseTooLargeError, and
// the call is not repeated, since the same request gets the same answer.
// Before, a read was fetched three times. On a write that must not run
// twice, the oversized 2xx leaves the outcome unknown, and is not
// repeated either.
func TestOversizedAnswerIsNotFetchedAgain(t *testing.T) {
	const limit = 64 << 10
	big := `{"id":"p1","pad":"` + strings.Repeat("x", 3*limit) + `"}`
	for _, announced := range []bool{true, false} {
		t.Run(fmt.Sprintf("Content-Length %v", announced), func(t *testing.T) {
			var requests, posts atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				if r.Method == http.MethodPost {
					posts.Add(1)
				}
				w.Header().Set("Content-Type", "application/json")
				if announced {
					w.Header().Set("Content-Length", strconv.Itoa(len(big)))
				}
				io.WriteString(w, big)
			}))
			defer srv.Close()
			c := newTestClient(t, srv.URL, WithToken("tok"), WithMaxResponseSize(limit))

			_, err := c.Payments.Get(context.Background(), "p1")

			var tooLarge *ResponseTooLargeError
			require.ErrorAs(t, err, &tooLarge)
			assert.EqualValues(t, limit, tooLarge.Limit)
			want := int64(-1)
			if announced {
				want = int64(len(big))
			}
			assert.Equal(t, want, tooLarge.ContentLength)
			var decodeErr *DecodeError
			require.ErrorAs(t, err, &decodeErr, "the answer came: a decode error, not a transport one")
			assert.Equal(t, http.StatusOK, decodeErr.StatusCode)
			assert.LessOrEqual(t, len(decodeErr.Body), 1024)
			assert.EqualValues(t, 1, requests.Load(), "fetched once")
			assert.Equal(t, ReasonResponseTooLarge, CallOf(err).NotRetried())
			assert.Equal(t, OutcomeDecode, CallOf(err).Outcome)

			_, err = c.Payments.Submit(context.Background(), "p1", OpCapture, PaymentSubmitParams{SignedTransaction: "0x02f8"})
			require.ErrorIs(t, err, ErrOutcomeUnknown)
			require.ErrorAs(t, err, &tooLarge)
			assert.EqualValues(t, 1, posts.Load(), "a submit is never sent twice")
		})
	}
}

// The default limit is DefaultMaxResponseSize, 32 MiB: an answer that
// announces 48 MiB is refused before its body is read, in one request.
func TestDefaultResponseLimit(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Length", strconv.Itoa(48<<20))
		w.WriteHeader(http.StatusOK)
		w.Write(make([]byte, 1<<20)) // the rest never comes; the client does not wait for it
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, WithToken("tok"))
	_, err := c.Payments.Get(context.Background(), "p1")
	var tooLarge *ResponseTooLargeError
	require.ErrorAs(t, err, &tooLarge)
	assert.EqualValues(t, DefaultMaxResponseSize, tooLarge.Limit)
	assert.EqualValues(t, 1, requests.Load())

	_, err = NewClient("https://api.rail0.xyz", WithMaxResponseSize(0))
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "max_response_size", ve.Field)
}
