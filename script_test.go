package rail0

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

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
	if call.NotRetried() == ReasonLimiter {
		l.mu.Lock()
		l.limiter++
		l.mu.Unlock()
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
