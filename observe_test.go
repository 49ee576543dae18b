package rail0

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

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

func (r *recorder) SendAttempt(ctx context.Context, call *Call, h AttemptHeader) {
	r.note(ctx, "send")
	h.Set("Traceparent", "00-trace")
	h.Set("Authorization", "Bearer stolen")
	h.Set("Idempotency-Key", "other")
	h.Set("X-Bad", "a\r\nInjected: 1")
	h.Set("Bad Name", "1") // not a field name: dropped, not a failed attempt
}

func (r *recorder) EndAttempt(ctx context.Context, call *Call, a *Attempt) {
	r.note(ctx, "attempt "+http.StatusText(a.StatusCode)+" "+string(a.Reason))
	if a.PartitionState != nil {
		r.mu.Lock()
		r.partitions = append(r.partitions, *a.PartitionState)
		r.mu.Unlock()
	}
}

func (r *recorder) EndCall(ctx context.Context, call *Call, err error) {
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
