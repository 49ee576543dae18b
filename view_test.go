package rail0

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 22 item 1: one client serves a request/response handler (retries
// off, RetryAfter passed on) and a background job (RetryOn429 on). A 429
// the handler's call gets closes the partition for the job's calls, and
// teaches the budget they are paced at: one cooldown, one learned budget.
// With two clients, the job's calls would go into the closed window and be
// refused.
func TestOneClientServesAHandlerAndAJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const limit, period = 5, 2 * time.Second
		g := newFixedWindow(limit, period)
		events := &eventLog{}
		c := newTestClient(t, "https://gateway.test", WithHTTPClient(pipeClient(t, g)), WithToken("tok"),
			withRand(func() float64 { return 0 }), WithObserver(events))
		handler := c.With(WithRetryOn429(false))
		job := c.With(WithRetryOn429(true))
		ctx := context.Background()

		// The job uses the window's budget; the handler's next call is refused.
		for i := range limit {
			_, err := job.Payments.Get(ctx, fmt.Sprintf("job-%d", i))
			require.NoError(t, err)
		}
		start := time.Now()
		_, err := handler.Payments.Get(ctx, "handler-1")
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, http.StatusTooManyRequests, apiErr.StatusCode)
		assert.Equal(t, period, apiErr.RetryAfter, "the handler passes the gateway's instruction on")
		require.NotNil(t, apiErr.Call)
		assert.Len(t, apiErr.Call.Attempts, 1)
		// The handler's calls are never held back, even while the partition
		// is closed: its own caller decides when to come back.
		_, err = handler.Payments.Get(ctx, "handler-2")
		require.ErrorIs(t, err, ErrRateLimited)
		assert.Zero(t, time.Since(start), "a handler's call waited")
		refused := len(g.arrivals())

		// The job's calls wait for the reopening and keep to the budget the
		// handler's 429 taught: no call before the reopening, and each window
		// lets through the budget. The learned budget is probed (package
		// ratelimit, issue 21 item 1): a window in which more calls wait than
		// the budget admits sends one request beyond it, which the gateway
		// refuses and the job retries; that is the only 429 and the only retry
		// a window may see, and the last window, where no call waits beyond
		// the budget, sees none.
		const windows = 3
		errs := runCalls(job, 4, windows*limit)
		for _, err := range errs {
			require.NoError(t, err)
		}
		accepted, probes := map[int]int{}, map[int]int{}
		for _, a := range g.arrivals()[refused:] {
			assert.GreaterOrEqual(t, a.at, period, "the job sent %s before the partition reopened", a.path)
			if a.status == http.StatusTooManyRequests {
				probes[g.window(a)]++
			} else {
				accepted[g.window(a)]++
			}
		}
		probed := 0
		for w := 1; w <= windows; w++ {
			assert.LessOrEqual(t, accepted[w], limit, "window %d", w)
			assert.LessOrEqual(t, probes[w], 1, "window %d: more refused than the probe", w)
			probed += probes[w]
		}
		assert.Zero(t, probes[windows], "the last window: no call waits beyond the budget")
		assert.Len(t, accepted, windows, "every call done in the windows after the reopening")
		assert.Equal(t, probed, events.retries(), "only the probes needed a retry")
	})
}

// Each setting of a view applies to its calls only, end to end: the
// client's calls keep the client's settings.
func TestViewSettingsApplyPerCall(t *testing.T) {
	type run struct {
		name     string
		opts     []Option
		call     []Option
		steps    []step
		attempts int
		refused  bool
	}
	for _, r := range []run{
		{"RetryOn429 on for the view", nil, []Option{WithRetryOn429(true)},
			[]step{throttled("1"), {status: 200, body: paymentBody}}, 2, false},
		{"RetryOn429 off for the view", []Option{WithRetryOn429(true)}, []Option{WithRetryOn429(false)},
			[]step{throttled("1"), {status: 200, body: paymentBody}}, 1, false},
		{"MaxRetryWait shorter than the instruction", []Option{WithRetryOn429(true)}, []Option{WithMaxRetryWait(time.Second)},
			[]step{throttled("5"), {status: 200, body: paymentBody}}, 1, true},
		{"MaxRetryWait longer than the client's", []Option{WithRetryOn429(true), WithMaxRetryWait(time.Second)}, []Option{WithMaxRetryWait(time.Minute)},
			[]step{throttled("5"), {status: 200, body: paymentBody}}, 2, false},
		{"MaxRetries zero", nil, []Option{WithMaxRetries(0)},
			[]step{{status: 502}, {status: 200, body: paymentBody}}, 1, false},
		{"MaxRetries above the client's", []Option{WithMaxRetries(0)}, []Option{WithMaxRetries(3)},
			[]step{{status: 502}, {status: 502}, {status: 502}, {status: 200, body: paymentBody}}, 4, false},
	} {
		t.Run(r.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// The view's call gets the view's settings...
				s, opt := newPipeScript(t, r.steps...)
				c := newTestClient(t, s.URL, append([]Option{opt}, r.opts...)...)
				_, err := c.With(r.call...).Payments.Get(context.Background(), "p")
				assert.Len(t, s.requests(), r.attempts)
				var apiErr *APIError
				if errors.As(err, &apiErr) {
					require.NotNil(t, apiErr.Call)
					assert.Equal(t, r.refused, apiErr.Call.NotRetried() == ReasonAllowance)
				}

				// ...and the same call on the client gets the client's.
				s2, opt2 := newPipeScript(t, r.steps...)
				c2 := newTestClient(t, s2.URL, append([]Option{opt2}, r.opts...)...)
				_ = c2.With(r.call...)
				_, _ = c2.Payments.Get(context.Background(), "p")
				assert.NotEqual(t, r.attempts, len(s2.requests()), "the view changed its client's settings")
			})
		})
	}
}

// A view of a view applies both, the later one winning, and leaves the
// views it was made from as they were.
func TestViewOfAView(t *testing.T) {
	c := newTestClient(t, "https://api.rail0.xyz", WithMaxRetries(1))
	a := c.With(WithRetryOn429(true), WithMaxRetryWait(time.Minute))
	b := a.With(WithMaxRetryWait(time.Second), WithMaxRetries(4))
	assert.Equal(t, policy{retryOn429: true, retryAfterCap: DefaultRetryAfterCap, maxRetryWait: time.Second, maxRetries: 4, base: defaultBackoffBase}, b.policy)
	assert.Equal(t, policy{retryOn429: true, retryAfterCap: DefaultRetryAfterCap, maxRetryWait: time.Minute, maxRetries: 1, base: defaultBackoffBase}, a.policy)
	assert.Equal(t, policy{retryAfterCap: DefaultRetryAfterCap, maxRetryWait: DefaultMaxRetryWait, maxRetries: 1, base: defaultBackoffBase}, c.policy)
	for _, v := range []*Client{a, b} {
		assert.Same(t, c.clientState, v.clientState, "a view shares its client's state")
		assert.Same(t, v, v.Payments.client, "a view's services call through the view")
		assert.Same(t, v, v.Auth.client)
		assert.Same(t, v, v.Discovery.client)
	}
	assert.Same(t, c, c.Webhooks.client)
	// Within one With too, the later setting wins.
	assert.Equal(t, 3, c.With(WithMaxRetries(1), WithRetryOn429(true), WithMaxRetries(3)).policy.maxRetries)
}

// A view costs one allocation, whatever it sets.
func TestViewIsCheap(t *testing.T) {
	c := newTestClient(t, "https://api.rail0.xyz")
	opts := []Option{WithRetryOn429(true), WithMaxRetries(1)}
	assert.Equal(t, 1.0, testing.AllocsPerRun(100, func() { _ = c.With(opts...) }))
}

// An option a view cannot apply makes every call of the view fail with its
// *ValidationError before anything is sent: a method, a flow, an iterator.
// The view takes NewClient's options; an invalid value is refused, and so
// is every option that sets what the view shares with its client (the
// logger, the signer, the limiter, the pins, ...), even a valid one.
func TestInvalidViewOptionRefusesEveryCall(t *testing.T) {
	s := newScriptServer(t, step{status: 200, body: paymentBody})
	c := newTestClient(t, s.URL, WithToken("tok"), WithSigner(newSIWESigner()))
	for _, tc := range []struct {
		field string
		opts  []Option
	}{
		{"max_retries", []Option{WithMaxRetries(-1)}},
		{"max_retry_wait", []Option{WithRetryOn429(true), WithMaxRetryWait(-time.Second)}},
		{"option", []Option{nil}},
		{"option", []Option{WithRetryOn429(true), WithLogger(slog.New(slog.DiscardHandler))}},
		{"option", []Option{WithCooldown(false)}},
		{"option", []Option{WithSigner(newSIWESigner())}},
		{"option", []Option{WithRetryAfterCap(time.Second)}},
		{"option", []Option{WithToken("other")}},
		{"option", []Option{WithPacing(PublishedLimits())}},
		{"option", []Option{WithTrustedContracts(map[int64]string{1: "0x0000000000000000000000000000000000000001"})}},
		{"option", []Option{WithMaxRetries(1), WithUserAgent("shop/1")}},
	} {
		v := c.With(tc.opts...)
		calls := map[string]error{}
		_, calls["Get"] = v.Payments.Get(context.Background(), "p")
		_, calls["Capture"] = v.Payments.Capture(context.Background(), "p", PaymentCaptureParams{Amount: "1.00"})
		for _, err := range v.Payments.All(context.Background(), PaymentListParams{}) {
			calls["All"] = err
			break
		}
		_, calls["a view of the view"] = v.With(WithRetryOn429(false)).Payments.Get(context.Background(), "p")
		for name, err := range calls {
			var ve *ValidationError
			if assert.ErrorAs(t, err, &ve, name) {
				assert.Equal(t, tc.field, ve.Field, name)
			}
		}
	}
	assert.Empty(t, s.requests(), "a call of an invalid view was sent")
}

// Every request of an iterator honours the view: a page answered 429 is
// retried through a view with RetryOn429, and returned through the client.
func TestIteratorHonoursTheView(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		page := func(n, total int) step {
			return step{status: 200, body: `[` + paymentBody + `]`, header: map[string]string{
				"X-Page": fmt.Sprint(n), "X-Per-Page": "1", "X-Total-Count": fmt.Sprint(total)}}
		}
		steps := []step{page(1, 3), throttled("1"), page(2, 3), throttled("1"), page(3, 3)}
		s, opt := newPipeScript(t, steps...)
		c := newTestClient(t, s.URL, opt, WithToken("tok"))
		var n int
		for _, err := range c.With(WithRetryOn429(true)).Payments.All(context.Background(), PaymentListParams{}) {
			require.NoError(t, err)
			n++
		}
		assert.Equal(t, 3, n)
		assert.Len(t, s.requests(), 5, "each throttled page was retried once")

		s2, opt2 := newPipeScript(t, steps...)
		c2 := newTestClient(t, s2.URL, opt2, WithToken("tok"))
		var last error
		for _, err := range c2.Payments.All(context.Background(), PaymentListParams{}) {
			last = err
		}
		assert.ErrorIs(t, last, ErrRateLimited, "the client's own iterator does not retry 429s")
	})
}

// The sign-in a call triggers honours the view the call was made through:
// a job's view waits out a 429 on the nonce, a handler's view returns it at
// once, whatever the client's own setting.
func TestSignInHonoursTheCallersView(t *testing.T) {
	for _, tc := range []struct {
		name      string
		clientOn  bool
		view      Option
		wantCalls int // requests the server sees
		wantErr   bool
	}{
		{"a job's view on a client that does not retry", false, WithRetryOn429(true), 4, false},
		{"a handler's view on a client that retries", true, WithRetryOn429(false), 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var nonces atomic.Int32
				gw := newSIWEGateway(t, 0)
				gw.beforeNonce = func(w http.ResponseWriter) bool {
					if nonces.Add(1) == 1 {
						writeThrottled(w, "1")
						return true
					}
					return false
				}
				c := newTestClient(t, gw.url, gw.opt, WithSigner(newSIWESigner()), WithRetryOn429(tc.clientOn))
				start := time.Now()
				_, err := c.With(tc.view).Payments.Get(context.Background(), "p")
				if tc.wantErr {
					require.ErrorIs(t, err, ErrRateLimited)
					assert.Zero(t, time.Since(start), "the handler's call slept through the sign-in's 429")
				} else {
					require.NoError(t, err)
				}
				assert.Equal(t, tc.wantCalls, gw.requests(), strings.Join(gw.paths(), " "))
			})
		})
	}
}

// A sign-in that a handler's view led, and whose 429 it returned at once,
// does not fail the job's call waiting for it: the job signs in itself,
// with its own settings, and waits the 429 out.
func TestSharedSignInDoesNotShareTheHandlersSettings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var nonces atomic.Int32
		gw := newSIWEGateway(t, 0)
		gw.beforeNonce = func(w http.ResponseWriter) bool {
			if nonces.Add(1) > 1 {
				return false
			}
			<-release
			writeThrottled(w, "1")
			return true
		}
		c := newTestClient(t, gw.url, gw.opt, WithSigner(newSIWESigner()))
		ctx := context.Background()
		var handlerErr, jobErr error
		done := make(chan struct{}, 2)
		go func() {
			_, handlerErr = c.With(WithRetryOn429(false)).Payments.Get(ctx, "p")
			done <- struct{}{}
		}()
		synctest.Wait() // the handler's sign-in is under way, its nonce held
		go func() {
			_, jobErr = c.With(WithRetryOn429(true)).Payments.Get(ctx, "p")
			done <- struct{}{}
		}()
		synctest.Wait() // the job waits for the handler's sign-in
		close(release)
		<-done
		<-done
		assert.ErrorIs(t, handlerErr, ErrRateLimited)
		assert.NoError(t, jobErr, "the job inherited the handler's refusal")
	})
}

// BenchmarkWith is the cost of a view: one allocation, whatever it sets.
func BenchmarkWith(b *testing.B) {
	c, err := NewClient("https://api.rail0.xyz")
	if err != nil {
		b.Fatal(err)
	}
	opts := []Option{WithRetryOn429(true), WithMaxRetryWait(time.Minute), WithMaxRetries(1)}
	b.ReportAllocs()
	for b.Loop() {
		_ = c.With(opts...)
	}
}

// An option With does not take is refused as a *ValidationError whatever
// its value: NewClient's options report an invalid value in several forms
// (a *ValidationError, a plain error), and With promises one. The refused
// view signs in no more than it sends.
func TestRefusedViewOptionIsAlwaysAValidationError(t *testing.T) {
	s := newScriptServer(t, step{status: 200, body: paymentBody})
	c := newTestClient(t, s.URL, WithSigner(newSIWESigner()))
	for name, opt := range map[string]Option{
		"WithRetryAfterCap(-1)": WithRetryAfterCap(-1),
		"WithSigner(nil)":       WithSigner(nil),
		`WithToken("")`:         WithToken(""),
		"WithLimiter(nil)":      WithLimiter(nil),
	} {
		v := c.With(opt)
		_, err := v.Payments.Get(context.Background(), "p1")
		var ve *ValidationError
		if assert.ErrorAs(t, err, &ve, name) {
			assert.Equal(t, "option", ve.Field, name)
			assert.NotContains(t, ve.Error(), "rail0: rail0:", name)
		}
		_, err = v.Session(context.Background())
		assert.ErrorAs(t, err, &ve, "%s: Session", name)
	}
	assert.Empty(t, s.requests(), "a call of a refused view was sent")
}

// A view's settings reach the sign-in its calls need, through the context
// handed to the client's token source; they are not for another client
// that a WithTokenSource function calls with that context (a vault, a
// second gateway), which keeps its own settings.
func TestViewSettingsStayWithTheirClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		other := newMemScript(throttled("1"), step{status: 200, body: `{"id":"p1"}`})
		unrelated := newTestClient(t, "https://other.test", memClient(other), WithToken("x")) // RetryOn429 off
		gw := newMemScript(step{status: 200, body: `{"id":"p1"}`})
		c := newTestClient(t, "https://gateway.test", memClient(gw), WithTokenSource(func(ctx context.Context) (string, error) {
			if _, err := unrelated.Payments.Get(ctx, "p1"); err != nil {
				return "", err
			}
			return "tok", nil
		}))
		_, err := c.With(WithRetryOn429(true)).Payments.Get(context.Background(), "p1")
		assert.ErrorIs(t, err, ErrRateLimited, "the unrelated client's 429 comes back through the token source")
		assert.Len(t, other.requests(), 1, "the unrelated client (RetryOn429 off) retried a 429 under the view's settings")
		assert.Empty(t, gw.requests())
	})
}

// labelLog is an Observer that keeps the label of every call at each of
// its four events.
type labelLog struct {
	mu     sync.Mutex
	events []string
}

func (l *labelLog) add(event string, call *Call) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, event+" "+call.Label)
}

func (l *labelLog) StartCall(ctx context.Context, call *Call) context.Context {
	l.add("start", call)
	return ctx
}
func (l *labelLog) SendAttempt(_ context.Context, call *Call, _ AttemptHeader) { l.add("send", call) }
func (l *labelLog) EndAttempt(_ context.Context, call *Call, _ *Attempt)       { l.add("attempt", call) }
func (l *labelLog) EndCall(_ context.Context, call *Call, _ error)             { l.add("end", call) }

// Issue 27 item 4: a view is watched on its own. Its label is in the
// transcript, reaches the observers at every event and every log line of
// the call; a view of a view takes the later label, and a label given to
// NewClient names the calls made outside any view.
func TestLabelNamesAViewsCalls(t *testing.T) {
	srv := newScriptServer(t, step{status: http.StatusOK, body: paymentBody})
	var logs strings.Builder
	events := &labelLog{}
	c := newTestClient(t, srv.URL, WithToken("tok"), WithObserver(events), WithLabel("app"), WithWireLog(true),
		WithLogger(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	ctx := context.Background()
	handler := c.With(WithRetryOn429(false), WithLabel("handler"))
	for _, tt := range []struct {
		c    *Client
		want string
	}{{handler, "handler"}, {handler.With(WithLabel("handler:v2")), "handler:v2"}, {c, "app"}, {c.With(WithMaxRetries(1)), "app"}} {
		logs.Reset()
		events.events = nil
		p, err := tt.c.Payments.Get(ctx, "p1")
		require.NoError(t, err)
		assert.Equal(t, tt.want, p.Response.Call.Label)
		assert.Contains(t, p.Response.Call.String(), "["+tt.want+"]")
		assert.Equal(t, []string{"start " + tt.want, "send " + tt.want, "attempt " + tt.want, "end " + tt.want}, events.events)
		lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
		require.NotEmpty(t, lines)
		for _, line := range lines {
			assert.Contains(t, line, `"label":"`+tt.want+`"`, "a log line without the view's label")
		}
	}
}

// A label is a bounded name chosen in code; anything else is refused, by
// NewClient and by With, before a call is sent.
func TestLabelIsChecked(t *testing.T) {
	for _, bad := range []string{"", "has space", "quote\"", strings.Repeat("x", 65), "é", "new\nline"} {
		_, err := NewClient("https://api.rail0.xyz", WithLabel(bad))
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, "%q", bad)
		assert.Equal(t, "label", ve.Field)
		c := newTestClient(t, "https://api.rail0.xyz")
		_, err = c.With(WithLabel(bad)).Payments.Get(context.Background(), "p1")
		require.ErrorAs(t, err, &ve, "%q", bad)
	}
	for _, good := range []string{"handler", "job-7", "svc.checkout:v2/http", strings.Repeat("x", 64)} {
		_, err := NewClient("https://api.rail0.xyz", WithLabel(good))
		require.NoError(t, err, good)
	}
}

// The sign-in a labelled view's call triggers carries the view's label:
// its requests are the view's cost.
func TestSignInCarriesTheCallersLabel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gw := newSIWEGateway(t, 0)
		events := &labelLog{}
		c := newTestClient(t, gw.url, gw.opt, WithSigner(newSIWESigner()), WithObserver(events))
		_, err := c.With(WithLabel("handler")).Payments.Get(context.Background(), "p")
		require.NoError(t, err)
		require.Greater(t, gw.requests(), 1, "no sign-in: %s", strings.Join(gw.paths(), " "))
		ends := 0
		for _, e := range events.events {
			if strings.HasPrefix(e, "end ") {
				ends++
				assert.Equal(t, "end handler", e)
			}
		}
		assert.Equal(t, gw.requests(), ends, "one call per request, each labelled")
	})
}
