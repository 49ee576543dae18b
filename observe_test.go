package rail0

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rail0/rail0-go/internal/leaktest"
	"github.com/rail0/rail0-go/ratelimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A successful call carries its whole story: the throttled first attempt
// with its request id, Retry-After and the server-given wait, the limiter's
// admissions, and the final answer.
func TestSuccessCarriesTranscript(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMemScript(throttled("2"), step{status: 200, body: paymentBody})
		c := newTestClient(t, "https://api.rail0.test", memClient(srv), WithToken("t"), WithRetryOn429(true),
			withRand(func() float64 { return 0 }))
		p, err := c.Payments.Get(context.Background(), "p1")
		require.NoError(t, err)
		require.NotNil(t, p.Response)
		call := p.Response.Call
		require.NotNil(t, call)
		assert.Equal(t, 2, p.Response.Attempts)
		assert.Equal(t, "req-xx", p.Response.RequestID)
		assert.Equal(t, OutcomeOK, call.Outcome)
		assert.Equal(t, "https://api.rail0.test/payments/p1", call.URL)
		require.Len(t, call.Attempts, 2)
		first := call.Attempts[0]
		assert.Equal(t, 429, first.StatusCode)
		assert.Equal(t, "req-x", first.RequestID)
		assert.Equal(t, 2*time.Second, first.RetryAfter)
		assert.True(t, first.Retry)
		assert.True(t, first.ServerWait)
		assert.Equal(t, ReasonRateLimited, first.Reason)
		assert.Equal(t, 2*time.Second, first.Wait)
		assert.Positive(t, first.ResponseBytes)
		// The retry waits out the instruction, and the limiter holds it
		// for the window's probes (nothing of this partition's went
		// through before the 429).
		retried := 2*time.Second + rampWait(2*time.Second)
		assert.Equal(t, retried, call.Attempts[1].Sent.Sub(first.Sent))
		assert.Equal(t, retried, call.Duration)
		// WithRetryOn429 gates every attempt on the cooldown: admitted at
		// once, the retry after the wait too.
		require.Len(t, call.Limiter, 2)
		assert.Equal(t, 1, call.Limiter[0].Before)
		assert.Equal(t, 2, call.Limiter[1].Before)
		assert.Equal(t, "session:", call.Limiter[0].Partition[:8])

		text := call.String()
		lines := strings.Split(text, "\n")
		assert.Len(t, lines, 5, text)
		assert.Contains(t, lines[0], "call 1 GET /payments/p1 (getPayment): ok after 2 attempt(s) in "+retried.String())
		assert.Contains(t, lines[2], "#1 ")
		assert.Contains(t, lines[2], "429")
		// The partition state the answer left: closed until the retry's
		// slot (2 s and rampWait's 5 ms), paced at one request a window
		// since none of its requests went through before the 429.
		assert.Contains(t, lines[2], "request_id=req-x retry_after=2s closed_until=00:00:02.005 budget=1/2s -> retry in 2s (rate_limited, server-given)")
		assert.Contains(t, lines[4], "#2 ")
		assert.Contains(t, lines[4], "200")
		assert.Contains(t, lines[4], "-> return")
		assert.NotContains(t, text, "Bearer")
	})
}

// A pacing wait and a refusal by the limiter are in the transcript; the
// refused call's error carries it.
func TestTranscriptRecordsLimiterWaitsAndRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMemScript(step{status: 200, body: paymentBody})
		c := newTestClient(t, "https://api.rail0.test", memClient(srv), WithToken("t"),
			WithPacing(Pacing{Session: Budget{Limit: 1, Period: 10 * time.Second}, Margin: time.Second}),
			WithMaxRetryWait(20*time.Second))
		_, err := c.Payments.Get(context.Background(), "a")
		require.NoError(t, err)
		p, err := c.Payments.Get(context.Background(), "b")
		require.NoError(t, err)
		require.Len(t, p.Response.Call.Limiter, 1)
		w := p.Response.Call.Limiter[0]
		// The gateway's next window opens at 10 s; the call goes the clock
		// allowance (a five-hundredth of the period) after it.
		assert.Equal(t, 10020*time.Millisecond, w.Wait)
		assert.False(t, w.Cooldown)
		assert.False(t, w.Refused)
		assert.Contains(t, p.Response.Call.String(), "limiter held #1 for 10.02s (pacing)")

		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = c.Payments.Get(ctx, "c")
		call := CallOf(err)
		require.NotNil(t, call, "%v", err)
		assert.Equal(t, OutcomeRateLimited, call.Outcome)
		assert.Empty(t, call.Attempts)
		require.Len(t, call.Limiter, 1)
		assert.True(t, call.Limiter[0].Refused)
		assert.Contains(t, call.String(), "limiter refused #1")
	})
}

// Every retry decision an Observer hears names its call: two concurrent
// calls to one path are told apart.
func TestRetryDecisionsCarryCallID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMemScript(step{status: 503}, step{status: 503}, step{status: 200, body: paymentBody})
		ev := &eventLog{}
		c := newTestClient(t, "https://api.rail0.test", memClient(srv), WithToken("t"), WithObserver(ev),
			withRand(func() float64 { return 0.5 }))
		var wg sync.WaitGroup
		ids := make([]uint64, 2)
		for i := range 2 {
			wg.Go(func() {
				p, err := c.Payments.Get(context.Background(), "same")
				if err == nil {
					ids[i] = p.Response.Call.ID
				}
			})
		}
		wg.Wait()
		events := ev.all()
		require.Len(t, events, 2)
		assert.NotEqual(t, events[0].CallID, events[1].CallID)
		assert.ElementsMatch(t, []uint64{events[0].CallID, events[1].CallID}, ids)
	})
}

// recorder is an Observer that writes down what it is told.
type recorder struct {
	mu         sync.Mutex
	events     []string
	partitions []PartitionState
}

type ctxMark struct{}

func (r *recorder) note(ctx context.Context, s string) {
	if ctx.Value(ctxMark{}) != "call" {
		s += " (without the call's context)"
	}
	r.mu.Lock()
	r.events = append(r.events, s)
	r.mu.Unlock()
}

func (r *recorder) StartCall(ctx context.Context, call *Call) context.Context {
	ctx = context.WithValue(ctx, ctxMark{}, "call")
	r.note(ctx, "start "+call.Operation)
	return ctx
}

func (r *recorder) SendAttempt(ctx context.Context, _ *Call, h AttemptHeader) {
	r.note(ctx, "send")
	h.Set("Traceparent", "00-trace")
	h.Set("Authorization", "Bearer stolen")
	h.Set("Idempotency-Key", "other")
	h.Set("X-Bad", "a\r\nInjected: 1")
	h.Set("Bad Name", "1") // not a field name: dropped, not a failed attempt
}

func (r *recorder) EndAttempt(ctx context.Context, _ *Call, a *Attempt) {
	r.note(ctx, "attempt "+http.StatusText(a.StatusCode)+" "+string(a.Reason))
	if a.PartitionState != nil {
		r.mu.Lock()
		r.partitions = append(r.partitions, *a.PartitionState)
		r.mu.Unlock()
	}
}

func (r *recorder) EndCall(ctx context.Context, call *Call, _ error) {
	r.note(ctx, "end "+string(call.Outcome))
}

// The Observer sees each call begin, every attempt and its end, in the
// call's own context, and may add a header to every attempt but not replace
// the SDK's own.
func TestObserverSeesEveryAttempt(t *testing.T) {
	srv := newScriptServer(t, step{status: 503}, step{status: 201, body: paymentBody})
	var rec recorder
	c := newTestClient(t, srv.URL, WithToken("tok"), WithObserver(&rec), withRand(func() float64 { return 0 }))
	_, err := c.Payments.Create(context.Background(), PaymentCreateParams{ChainID: 1, Mode: ModeCharge, Amount: "1", Token: "t",
		Payer: "a", Payee: "b", IdempotencyKey: "key-1"})
	require.NoError(t, err)
	assert.Equal(t, []string{
		"start createPayment", "send", "attempt Service Unavailable server_error", "send", "attempt Created ", "end ok",
	}, rec.events)
	for _, r := range srv.requests() {
		assert.Equal(t, "00-trace", r.header.Get("Traceparent"))
		assert.Equal(t, "Bearer tok", r.header.Get("Authorization"))
		assert.Equal(t, "key-1", r.header.Get("Idempotency-Key"))
		assert.Empty(t, r.header.Get("X-Bad"))
		assert.Empty(t, r.header.Get("Injected"))
	}

	_, err = NewClient(srv.URL, WithObserver(nil))
	assert.Error(t, err)
}

// Debug: one line per attempt with its facts, success included; info: the
// retries and refusals; warn: what the user must act on (an unknown
// outcome). No line holds the token.
func TestLogLevels(t *testing.T) {
	srv := newScriptServer(t, step{status: 503}, step{status: 200, body: paymentBody})
	var buf bytes.Buffer
	c := newTestClient(t, srv.URL, WithToken("tok-SECRET"), withRand(func() float64 { return 0 }),
		WithLogger(slogJSON(&buf)))
	_, err := c.Payments.Get(context.Background(), "p1")
	require.NoError(t, err)
	lines := logLines(t, &buf)
	require.Len(t, lines, 3)
	assert.Equal(t, "DEBUG", lines[0]["level"])
	assert.Equal(t, "rail0: attempt", lines[0]["msg"])
	assert.Equal(t, "INFO", lines[1]["level"])
	assert.Equal(t, "rail0: retrying", lines[1]["msg"])
	last := lines[2]
	assert.Equal(t, "DEBUG", last["level"])
	for k, v := range map[string]any{"method": "GET", "path": "/payments/p1", "status": 200.0, "attempt": 2.0,
		"request_id": "req-xx", "request_bytes": 0.0, "call_id": 1.0} {
		assert.Equal(t, v, last[k], k)
	}
	assert.Equal(t, float64(len(paymentBody)), last["response_bytes"])
	assert.Contains(t, last, "duration")

	// A capture whose outcome is unknown: the refusal at info, the
	// outcome at warn.
	buf.Reset()
	srv2 := newScriptServer(t, step{status: 502})
	c2 := newTestClient(t, srv2.URL, WithToken("tok-SECRET"), WithLogger(slogJSON(&buf)))
	_, err = c2.Payments.Submit(context.Background(), "p1", OpCapture, PaymentSubmitParams{SignedTransaction: "0x02f8"})
	require.ErrorIs(t, err, ErrOutcomeUnknown)
	lines = logLines(t, &buf)
	require.Len(t, lines, 3)
	assert.Equal(t, []any{"DEBUG", "INFO", "WARN"}, []any{lines[0]["level"], lines[1]["level"], lines[2]["level"]})
	assert.Equal(t, "outcome_unknown", lines[1]["reason"])
	assert.Equal(t, "rail0: outcome unknown; read the resource before doing this again", lines[2]["msg"])
	assert.NotContains(t, buf.String(), "tok-SECRET")
}

func slogJSON(buf *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		out = append(out, m)
	}
	return out
}

// Describe keeps the descriptor's unknown fields.
func TestDescribeKeepsUnknownFields(t *testing.T) {
	srv := newScriptServer(t, step{status: 200, body: `{"name":"RAIL0","api_version":"1","openapi":"/openapi.json","health":"/health","region":"eu"}`})
	c := newTestClient(t, srv.URL)
	d, err := c.Discovery.Describe(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "RAIL0", d.Name)
	assert.Equal(t, "1", d.APIVersion)
	assert.Equal(t, map[string]json.RawMessage{"region": json.RawMessage(`"eu"`)}, d.Extra)
	assert.Equal(t, "getRoot", d.Response.Call.Operation)
}

// A 503's Retry-After is a server-given wait in the transcript; a guess is
// marked as one.
func TestTranscriptWaitSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMemScript(step{status: 503, header: map[string]string{"Retry-After": "3"}}, step{status: 503}, step{status: 200, body: paymentBody})
		c := newTestClient(t, "https://api.rail0.test", memClient(srv), WithToken("t"), withRand(func() float64 { return 0.5 }))
		p, err := c.Payments.Get(context.Background(), "p1")
		require.NoError(t, err)
		a := p.Response.Call.Attempts
		require.Len(t, a, 3)
		assert.True(t, a[0].ServerWait)
		assert.Equal(t, 3*time.Second, a[0].RetryAfter)
		assert.Equal(t, ReasonServerError, a[0].Reason)
		assert.False(t, a[1].ServerWait)
		assert.True(t, a[1].Retry)
		assert.Contains(t, p.Response.Call.String(), "(server_error, guessed)")
	})
}

// A redirect is logged at warn: the base URL is wrong or a proxy is in
// the way.
func TestRedirectLoggedAtWarn(t *testing.T) {
	srv := newScriptServer(t, step{status: 302, header: map[string]string{"Location": "https://elsewhere.example/"}})
	var buf bytes.Buffer
	c := newTestClient(t, srv.URL, WithToken("t"), WithLogger(slogJSON(&buf)))
	_, err := c.Payments.Get(context.Background(), "p1")
	require.Error(t, err)
	lines := logLines(t, &buf)
	last := lines[len(lines)-1]
	assert.Equal(t, "WARN", last["level"])
	assert.Equal(t, "rail0: redirect not followed; check the base URL", last["msg"])
	assert.Equal(t, 1.0, last["call_id"])
}

// Attempt.Refused marks exactly the limits that stop a retry, the reasons
// package rail0stats counts as refusals; ReasonLimiter is one too, found by
// Call.NotRetried since no attempt carries it.
func TestRefusalReasons(t *testing.T) {
	limits := map[RetryReason]bool{ReasonAllowance: true, ReasonDeadline: true, ReasonMaxRetries: true,
		ReasonRetryBudget: true, ReasonLimiter: true}
	for _, r := range []RetryReason{ReasonRateLimited, ReasonRateLimitedGuess, ReasonRetryOn429Off, ReasonServerError,
		ReasonNotSent, ReasonTransport, ReasonAllowance, ReasonDeadline, ReasonMaxRetries, ReasonRetryBudget,
		ReasonUnsafe, ReasonLimiter, ReasonSessionRefused, ReasonRetryAfterDistrusted, ReasonRetryAfterDistrustedClamped} {
		assert.Equal(t, limits[r], isRefusal(r), r)
	}
}

// A 429 closes the call's partition: the transcript's attempt holds when
// it reopens and the budget learned, under the partition's name (never the
// token), and the Observer reads it at EndAttempt.
func TestTranscriptHoldsPartitionState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMemScript(throttled("2"), step{status: 200, body: paymentBody})
		var rec recorder
		c := newTestClient(t, memURL, memClient(srv), WithToken("tok-secret"), WithRetryOn429(true), WithObserver(&rec),
			withRand(func() float64 { return 0 }))
		start := time.Now()
		p, err := c.Payments.Get(context.Background(), "p1")
		require.NoError(t, err)
		ps := p.Response.Call.Attempts[0].PartitionState
		require.NotNil(t, ps)
		assert.True(t, strings.HasPrefix(ps.Partition, "session:"), ps.Partition)
		assert.NotContains(t, ps.Partition, "tok-secret")
		// Nothing of the partition's went through before its first 429:
		// it reopens for the probes of the window that follows.
		assert.Equal(t, start.Add(2*time.Second+rampWait(2*time.Second)), ps.CooldownUntil)
		assert.Contains(t, p.Response.Call.String(), " closed_until=")
		require.Len(t, rec.partitions, 1, "the observer heard it at EndAttempt")
		assert.Equal(t, *ps, rec.partitions[0])
	})
}

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

// These tests hold the claims of the package doc, the README and the doc
// comments of the watching surface (Call, Attempt, Observer, WithLogger)
// against what the SDK does, one claim per test.

// Package doc, "What a call tells": "each retry decision reaches every one
// of them" (the transcript, the logger, the observers). A retry, a refusal
// by a limit and a refusal by the limiter, each seen by all three.
func TestEachDecisionReachesEverySink(t *testing.T) {
	for _, tt := range []struct {
		name   string
		steps  []step
		opts   []Option
		calls  int
		reason RetryReason
		retry  bool
		msg    string // the info line
		line   string // in the transcript's text
	}{
		{"a retry", []step{{status: 503}, {status: 200, body: paymentBody}}, nil, 1,
			ReasonServerError, true, "rail0: retrying", "-> retry in 250ms (server_error, guessed)"},
		{"a limit refuses the retry", []step{throttled("600")}, []Option{WithRetryOn429(true)}, 1,
			ReasonAllowance, false, "rail0: not retrying", "-> return (allowance_exhausted)"},
		{"the limiter refuses the call", []step{{status: 200, body: paymentBody}},
			[]Option{WithPacing(Pacing{Session: Budget{Limit: 1, Period: time.Hour}}), WithMaxRetryWait(time.Second)}, 2,
			ReasonLimiter, false, "rail0: not sent: the rate-limit wait does not fit the call's allowance or deadline",
			"limiter refused #1: pacing wait of"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newMemScript(tt.steps...)
				ev := &eventLog{}
				var buf bytes.Buffer
				c := newTestClient(t, memURL, append([]Option{memClient(srv), WithToken("t"), WithObserver(ev),
					WithLogger(slogJSON(&buf)), withRand(half)}, tt.opts...)...)
				var call *Call
				for range tt.calls {
					p, err := c.Payments.Get(context.Background(), "p1")
					if call = CallOf(err); err == nil {
						call = p.Response.Call
					}
				}
				// The transcript.
				if tt.reason == ReasonLimiter {
					assert.Equal(t, ReasonLimiter, call.NotRetried())
					assert.True(t, call.Limiter[len(call.Limiter)-1].Refused)
				} else {
					a := call.Attempts[0]
					assert.Equal(t, tt.reason, a.Reason)
					assert.Equal(t, tt.retry, a.Retry)
				}
				assert.Contains(t, call.String(), tt.line)
				// The observer.
				if tt.reason == ReasonLimiter {
					assert.Equal(t, map[RetryReason]int{ReasonLimiter: 1}, ev.refusals())
				} else {
					require.Len(t, ev.all(), 1)
					assert.Equal(t, tt.reason, ev.all()[0].Reason)
					assert.Equal(t, tt.retry, ev.all()[0].Retry)
				}
				// The logger, at info.
				var info []map[string]any
				for _, l := range logLines(t, &buf) {
					if l["level"] == "INFO" {
						info = append(info, l)
					}
				}
				require.Len(t, info, 1, buf.String())
				assert.Equal(t, tt.msg, info[0]["msg"])
				assert.Equal(t, float64(call.ID), info[0]["call_id"])
				if tt.reason != ReasonLimiter {
					assert.Equal(t, string(tt.reason), info[0]["reason"])
					assert.Equal(t, tt.retry, info[0]["will_retry"])
				}
			})
		})
	}
}

// Attempt.Retry: "the SDK decided to send the call again after Wait. The
// next attempt follows unless ... the limiter refuses it (a refused
// LimiterWait then ends the call)".
func TestRetryDecidedThenRefusedByTheLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMemScript(throttled("1"), step{status: 200, body: paymentBody})
		c := newTestClient(t, memURL, memClient(srv), WithToken("t"), WithRetryOn429(true), WithLimiter(&closedLimiter{}), withRand(half))
		_, err := c.Payments.Get(context.Background(), "p1")
		call := CallOf(err)
		require.NotNil(t, call)
		require.Len(t, call.Attempts, 1)
		assert.True(t, call.Attempts[0].Retry, "the decision was to retry")
		last := call.Limiter[len(call.Limiter)-1]
		assert.True(t, last.Refused)
		assert.Equal(t, 2, last.Before, "the refused admission is the retry's")
		assert.Equal(t, ReasonLimiter, call.NotRetried())
		assert.Contains(t, call.String(), "limiter refused #2")
	})
}

// Observer: "Its methods are called synchronously on the calling
// goroutine", and the call does not return before EndCall.
func TestObserverRunsOnTheCallingGoroutine(t *testing.T) {
	srv := newScriptServer(t, step{status: 503}, step{status: 200, body: paymentBody})
	caller := goroutineID()
	obs := &goroutineWatcher{}
	c := newTestClient(t, srv.URL, WithToken("t"), WithObserver(obs), withRand(func() float64 { return 0 }))
	_, err := c.Payments.Get(context.Background(), "p1")
	require.NoError(t, err)
	assert.Equal(t, []string{"StartCall", "SendAttempt", "EndAttempt", "SendAttempt", "EndAttempt", "EndCall"}, obs.points)
	for i, id := range obs.ids {
		assert.Equal(t, caller, id, "%s ran on another goroutine", obs.points[i])
	}
}

// goroutineWatcher notes each Observer method called and the goroutine it
// ran on.
type goroutineWatcher struct {
	mu     sync.Mutex
	points []string
	ids    []string
}

func (w *goroutineWatcher) note(point string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.points = append(w.points, point)
	w.ids = append(w.ids, goroutineID())
}

func (w *goroutineWatcher) StartCall(ctx context.Context, _ *Call) context.Context {
	w.note("StartCall")
	return ctx
}

func (w *goroutineWatcher) SendAttempt(context.Context, *Call, AttemptHeader) { w.note("SendAttempt") }

func (w *goroutineWatcher) EndAttempt(context.Context, *Call, *Attempt) { w.note("EndAttempt") }

func (w *goroutineWatcher) EndCall(context.Context, *Call, error) { w.note("EndCall") }

// goroutineID is the id runtime.Stack prints for the running goroutine.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf), "goroutine "), " ")
	return id
}

// Attempt.PartitionState: a 429 or an exhausted quota is told on every
// client (a view that waits may be made later); a learned budget only on a
// client that waits for its limiter (WithRetryOn429 or WithPacing).
func TestPartitionStateWhenTheAnswerToldTheLimiter(t *testing.T) {
	advertised := step{status: http.StatusOK, body: paymentBody,
		header: map[string]string{"RateLimit-Policy": `"p";q=10;w=60`, "RateLimit": `"p";r=5;t=30`}}
	for _, tt := range []struct {
		name  string
		opts  []Option
		step  step
		state bool
	}{
		{"a 429, RetryOn429 off, no pacing", nil, throttled("60"), true},
		{"a 429, RetryOn429 on", []Option{WithRetryOn429(true), WithMaxRetryWait(0)}, throttled("60"), true},
		{"a 429, pacing", []Option{WithPacing(PublishedLimits()), WithMaxRetryWait(0)}, throttled("60"), true},
		{"a budget, RetryOn429 off, no pacing", nil, advertised, false},
		{"a budget, RetryOn429 on", []Option{WithRetryOn429(true)}, advertised, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newMemScript(tt.step)
				c := newTestClient(t, memURL, append([]Option{memClient(srv), WithToken("t")}, tt.opts...)...)
				resp, err := c.Payments.Get(context.Background(), "p1")
				call := CallOf(err)
				if err == nil {
					call = resp.Response.Call
				}
				require.Len(t, call.Attempts, 1)
				assert.Equal(t, tt.state, call.Attempts[0].PartitionState != nil)
			})
		})
	}
}

// headerKeeper is an Observer that keeps the AttemptHeader it was given,
// as one that logs or prints it for debugging would hold it.
type headerKeeper struct {
	mu sync.Mutex
	h  []AttemptHeader
}

func (k *headerKeeper) StartCall(ctx context.Context, _ *Call) context.Context { return ctx }
func (k *headerKeeper) SendAttempt(_ context.Context, _ *Call, h AttemptHeader) {
	k.mu.Lock()
	k.h = append(k.h, h)
	k.mu.Unlock()
}
func (k *headerKeeper) EndAttempt(context.Context, *Call, *Attempt) {}
func (k *headerKeeper) EndCall(context.Context, *Call, error)       {}

// The AttemptHeader an Observer gets holds the attempt's headers, the
// bearer token among them. Printed or logged, in any form (the observer's
// debug line, a struct of the caller's that keeps it), it shows none of
// them. On main fmt and slog's text handler printed its header map:
// "Authorization:[Bearer <token>]".
func TestAttemptHeaderShowsNoToken(t *testing.T) {
	const token = "tok-SECRET-attempt-header"
	srv := newMemScript(step{status: 200, body: paymentBody})
	k := &headerKeeper{}
	c := newTestClient(t, "https://api.rail0.test", memClient(srv), WithToken(token), WithObserver(k))
	_, err := c.Payments.Get(context.Background(), "p1")
	require.NoError(t, err)
	require.Len(t, k.h, 1)
	h := k.h[0]
	type caller struct {
		hdr AttemptHeader
		Hdr AttemptHeader
	}
	leaktest.NoSecret(t, map[string]any{"AttemptHeader": h, "*AttemptHeader": &h, "caller's struct": caller{h, h},
		"*caller's struct": &caller{h, h}}, leaktest.Forms(token))
	assert.Equal(t, "Bearer "+token, srv.requests()[0].header.Get("Authorization"), "the token was sent")
}
