package rail0

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rail0/rail0-go/ratelimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests pin the one way to watch a call: the transcript, the
// logger and the Observer hear the same decisions, at the same points.

// newTokens is a token source that gives a new token each time it is asked,
// as a TokenSource does after a 401.
func newTokens() func(context.Context) (string, error) {
	var mu sync.Mutex
	n := 0
	return func(context.Context) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("tok-%d", n), nil
	}
}

const unauthorizedBody = `{"code":"unauthorized","title":"Unauthorized","detail":"token revoked","status":"unauthorized"}`

// The 401 after which the client got a new token and sent the call again
// is reported once that decision is taken: EndAttempt hears
// session_refused, the debug line of the attempt comes before the info line
// of the decision, and the transcript says the call went again at once
// with a new token (not a guessed wait).
func TestSessionRefusedIsReportedOnceDecided(t *testing.T) {
	srv := newScriptServer(t, step{status: 401, body: unauthorizedBody}, step{status: 200, body: paymentBody})
	var rec recorder
	var buf bytes.Buffer
	c := newTestClient(t, srv.URL, WithTokenSource(newTokens()), WithObserver(&rec), WithLogger(slogJSON(&buf)))

	p, err := c.Payments.Get(context.Background(), "p1")

	require.NoError(t, err)
	assert.Equal(t, []string{"start getPayment", "send", "attempt Unauthorized session_refused", "send", "attempt OK ", "end ok"}, rec.events)
	lines := logLines(t, &buf)
	require.Len(t, lines, 3)
	assert.Equal(t, []any{"rail0: attempt", "rail0: retrying", "rail0: attempt"}, []any{lines[0]["msg"], lines[1]["msg"], lines[2]["msg"]})
	assert.Equal(t, 401.0, lines[0]["status"])
	assert.Equal(t, "session_refused", lines[1]["reason"])
	assert.Equal(t, true, lines[1]["will_retry"])
	first := p.Response.Call.Attempts[0]
	assert.True(t, first.Retry)
	assert.Zero(t, first.Wait)
	assert.False(t, first.ServerWait)
	text := p.Response.Call.String()
	assert.Contains(t, text, "401 in ")
	assert.Contains(t, text, "-> sent again at once with a new token (session_refused)")
	assert.NotContains(t, text, "guessed")
}

// A 401 that is not sent again (a second one, or a write that must not run
// twice) is reported as it is, once.
func TestUnretried401IsReportedOnce(t *testing.T) {
	srv := newScriptServer(t, step{status: 401, body: unauthorizedBody}, step{status: 401, body: unauthorizedBody})
	var rec recorder
	c := newTestClient(t, srv.URL, WithTokenSource(newTokens()), WithObserver(&rec))

	_, err := c.Payments.Get(context.Background(), "p1")

	require.ErrorIs(t, err, ErrUnauthorized)
	assert.Equal(t, []string{"start getPayment", "send", "attempt Unauthorized session_refused", "send", "attempt Unauthorized ",
		"end api_error"}, rec.events)
	assert.Empty(t, CallOf(err).NotRetried(), "a 401 is no retry matter")
}

// Observers add up: each hears every call in the order given, and each
// StartCall's context reaches the next one and the call.
func TestObserversAddUp(t *testing.T) {
	srv := newScriptServer(t, step{status: 503}, step{status: 200, body: paymentBody})
	first, second := &eventLog{}, &recorder{}
	c := newTestClient(t, srv.URL, WithToken("t"), WithObserver(first), WithObserver(second), withRand(func() float64 { return 0 }))

	_, err := c.Payments.Get(context.Background(), "p1")

	require.NoError(t, err)
	require.Len(t, first.all(), 1)
	assert.Equal(t, ReasonServerError, first.all()[0].Reason)
	assert.Equal(t, []string{"start getPayment", "send", "attempt Service Unavailable server_error", "send", "attempt OK ", "end ok"}, second.events)
	for _, r := range srv.requests() {
		assert.Equal(t, "00-trace", r.header.Get("Traceparent"), "the second observer's header")
	}
}

// Call.NotRetried says why the last answer came back: the reason of the
// last attempt when no retry followed it, the limiter when it refused, and
// nothing for an answer that was no retry matter.
func TestCallNotRetried(t *testing.T) {
	for _, tt := range []struct {
		name string
		call Call
		want RetryReason
	}{
		{"no attempt, no refusal", Call{}, ""},
		{"a success", Call{Attempts: []Attempt{{N: 1, StatusCode: 200}}}, ""},
		{"a refused retry", Call{Attempts: []Attempt{{N: 1, StatusCode: 429, Reason: ReasonAllowance, Refused: true}}}, ReasonAllowance},
		{"retried, then a 404", Call{Attempts: []Attempt{{N: 1, StatusCode: 503, Retry: true, Reason: ReasonServerError}, {N: 2, StatusCode: 404}}}, ""},
		{"RetryOn429 off", Call{Attempts: []Attempt{{N: 1, StatusCode: 429, Reason: ReasonRetryOn429Off}}}, ReasonRetryOn429Off},
		{"the limiter refused the retry", Call{Attempts: []Attempt{{N: 1, StatusCode: 429, Retry: true, Reason: ReasonRateLimited}},
			Limiter: []LimiterWait{{Before: 1}, {Before: 2, Refused: true}}}, ReasonLimiter},
		{"the limiter refused the first attempt", Call{Limiter: []LimiterWait{{Before: 1, Refused: true}}}, ReasonLimiter},
		{"the context ended the wait", Call{Attempts: []Attempt{{N: 1, StatusCode: 429, Retry: true, Reason: ReasonRateLimited}}}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.call.NotRetried())
		})
	}
}

// The limiter's admissions reach an Observer through the transcript: each
// admission is in Call.Limiter before the attempt it admitted leaves
// (SendAttempt), and a refusal is there when the call ends (EndCall).
func TestObserverReadsAdmissionsFromTheTranscript(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMemScript(step{status: 200, body: paymentBody})
		var seen []string
		obs := admissionWatcher(func(point string, call *Call) {
			seen = append(seen, fmt.Sprintf("%s %d", point, len(call.Limiter)))
		})
		c := newTestClient(t, memURL, memClient(srv), WithToken("t"), WithObserver(obs),
			WithPacing(Pacing{Session: Budget{Limit: 1, Period: time.Minute}}), WithMaxRetryWait(time.Second))
		_, err := c.Payments.Get(context.Background(), "a")
		require.NoError(t, err)
		_, err = c.Payments.Get(context.Background(), "b")
		require.ErrorIs(t, err, ErrRateLimited)
		assert.Equal(t, []string{"send 1", "end 1", "end 1"}, seen)
		assert.True(t, CallOf(err).Limiter[0].Refused)
	})
}

// admissionWatcher is an Observer that notes how many admissions the
// transcript holds when an attempt leaves and when the call ends.
type admissionWatcher func(point string, call *Call)

func (f admissionWatcher) StartCall(ctx context.Context, _ *Call) context.Context { return ctx }

func (f admissionWatcher) SendAttempt(_ context.Context, call *Call, _ AttemptHeader) {
	f("send", call)
}

func (f admissionWatcher) EndAttempt(context.Context, *Call, *Attempt) {}

func (f admissionWatcher) EndCall(_ context.Context, call *Call, _ error) { f("end", call) }

// Every log line about a call carries its call_id, the limiter's warnings
// included.
func TestLimiterWarningsCarryTheCallID(t *testing.T) {
	srv := newScriptServer(t, throttled("1"), step{status: 200, body: paymentBody})
	var buf bytes.Buffer
	c := newTestClient(t, srv.URL, WithToken("t"), WithRetryOn429(true), WithRetryAfterCap(time.Millisecond),
		WithLimiter(failingLimiter{}), WithLogger(slogJSON(&buf)))
	_, err := c.Payments.Get(context.Background(), "p1")
	require.NoError(t, err)
	warnings := 0
	for _, l := range logLines(t, &buf) {
		assert.Equal(t, 1.0, l["call_id"], "%v", l)
		if l["level"] == "WARN" {
			warnings++
			assert.True(t, strings.HasPrefix(l["msg"].(string), "rail0: rate limiter unavailable"), l["msg"])
			assert.Equal(t, "/payments/p1", l["path"])
		}
	}
	assert.GreaterOrEqual(t, warnings, 2, buf.String())
}

// failingLimiter is a Limiter whose store cannot be reached.
type failingLimiter struct{}

var errLimiterDown = fmt.Errorf("limiter down")

func (failingLimiter) Reserve(context.Context, ratelimit.Reservation) (ratelimit.Admission, error) {
	return ratelimit.Admission{}, errLimiterDown
}

func (failingLimiter) Observe(context.Context, string, ratelimit.Observation) (ratelimit.Feedback, error) {
	return ratelimit.Feedback{}, errLimiterDown
}

func (failingLimiter) Release(context.Context, string, int64) error { return errLimiterDown }
