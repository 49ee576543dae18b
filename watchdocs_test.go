package rail0

import (
	"bytes"
	"context"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
