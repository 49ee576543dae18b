package rail0

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
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

// The retry rules of issue 12 (items 9 to 17), each as a pure function and
// end to end through NewClient. Tests that wait run in a synctest bubble
// against an in-memory script (newMemScript), so their waits take no real
// time and their timings are exact.

const memURL = "https://api.rail0.test"

func half() float64 { return 0.5 }

// Item 9: a Retry-After longer than what is left of the allowance is
// refused at once, however the cap would have shortened it; the cap still
// bounds the waits the allowance admits.
func TestRetryAfterBeyondAllowanceRefusedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMemScript(throttled("600"), step{status: 200, body: paymentBody})
		ev := &eventLog{}
		c := newTestClient(t, memURL, memClient(srv), WithRetryOn429(true), WithObserver(ev), withRand(half))
		start := time.Now()

		_, err := c.Payments.Get(context.Background(), "p1")

		assert.Zero(t, time.Since(start), "no wait is started")
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, http.StatusTooManyRequests, apiErr.StatusCode)
		assert.Equal(t, 600*time.Second, apiErr.RetryAfter)
		assert.Equal(t, ReasonAllowance, apiErr.Call.NotRetried(), "the transcript says why")
		assert.Len(t, srv.requests(), 1)
		require.Len(t, ev.all(), 1)
		assert.Equal(t, ReasonAllowance, ev.all()[0].Reason)
		assert.Equal(t, map[RetryReason]int{ReasonAllowance: 1}, ev.refusals())
	})
}

// Item 9, the deadline: 120 s asked, 90 s left; the capped 60 s would fit,
// but the server said the window stays closed longer than the call lasts.
func TestRetryAfterBeyondDeadlineRefusedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMemScript(throttled("120"), step{status: 200, body: paymentBody})
		ev := &eventLog{}
		c := newTestClient(t, memURL, memClient(srv), WithRetryOn429(true), WithObserver(ev), withRand(half))
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		start := time.Now()

		_, err := c.Payments.Get(ctx, "p1")

		assert.Zero(t, time.Since(start))
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.NotErrorIs(t, err, context.DeadlineExceeded, "refused before the deadline")
		assert.Equal(t, ReasonDeadline, apiErr.Call.NotRetried())
		assert.Len(t, srv.requests(), 1)
		assert.Equal(t, map[RetryReason]int{ReasonDeadline: 1}, ev.refusals())
	})
}

// Item 9, the Ruby rule: an instruction the allowance admits is still
// capped (100 s asked, 60 s cap, 3 min allowance: 60 s + 5% jitter).
func TestRetryAfterCapBoundsAdmittedWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMemScript(throttled("100"), step{status: 200, body: paymentBody})
		c := newTestClient(t, memURL, memClient(srv), WithRetryOn429(true), withRand(half))

		_, err := c.Payments.Get(context.Background(), "p1")

		require.NoError(t, err)
		reqs := srv.requests()
		require.Len(t, reqs, 2)
		assert.Equal(t, 63*time.Second, reqs[1].at.Sub(reqs[0].at))
	})
}

// Item 10: the wait fits the deadline, the retry does not (the server takes
// 5 s, the deadline falls 1.5 s into it). The caller still gets the 429,
// and the deadline.
func TestDeadlineThatFitsTheWaitButNotTheRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMemScript(throttled("10"), step{status: 200, body: paymentBody, delay: 5 * time.Second})
		c := newTestClient(t, memURL, memClient(srv), WithRetryOn429(true), withRand(half))
		ctx, cancel := context.WithTimeout(context.Background(), 12*time.Second)
		defer cancel()

		_, err := c.Payments.Get(ctx, "p1")

		require.Error(t, err)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr, "the 429 must not be lost: %v", err)
		assert.Equal(t, http.StatusTooManyRequests, apiErr.StatusCode)
		assert.Equal(t, "req-x", apiErr.RequestID)
		assert.Equal(t, 10*time.Second, apiErr.RetryAfter)
		assert.Len(t, apiErr.Call.Attempts, 2)
		var te *TransportError
		assert.False(t, errors.As(err, &te))
		assert.Len(t, srv.requests(), 2)
	})
}

// Item 10 on a write: the retried POST may have reached the server before
// the deadline, so the outcome is unknown, and the 429 and the deadline are
// both still reachable through it.
func TestDeadlineOnTheRetryOfAWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMemScript(throttled("10"), step{status: 202, body: `{}`, delay: 5 * time.Second})
		c := newTestClient(t, memURL, memClient(srv), WithRetryOn429(true), withRand(half))
		ctx, cancel := context.WithTimeout(context.Background(), 12*time.Second)
		defer cancel()

		_, err := c.Payments.Submit(ctx, "p1", OpCapture, PaymentSubmitParams{SignedTransaction: "0x02f8b1"})

		assert.ErrorIs(t, err, ErrOutcomeUnknown)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, http.StatusTooManyRequests, apiErr.StatusCode)
	})
}

func unavailable(retryAfter string) step {
	return step{status: http.StatusServiceUnavailable, header: map[string]string{"Retry-After": retryAfter},
		body: `{"code":"unavailable","detail":"maintenance"}`}
}

// Item 11: a 503's Retry-After is a server wait: the retry goes out after
// the instruction plus additive jitter (2 s + 5%), not after a guess.
func TestRetryAfterOn503IsAServerWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMemScript(unavailable("2"), step{status: 200, body: paymentBody})
		ev := &eventLog{}
		c := newTestClient(t, memURL, memClient(srv), WithObserver(ev), withRand(half))

		_, err := c.Payments.Get(context.Background(), "p1")

		require.NoError(t, err)
		reqs := srv.requests()
		require.Len(t, reqs, 2)
		assert.Equal(t, 2100*time.Millisecond, reqs[1].at.Sub(reqs[0].at))
		require.Len(t, ev.all(), 1)
		assert.Equal(t, 2*time.Second, ev.all()[0].RetryAfter)
		assert.Equal(t, ReasonServerError, ev.all()[0].Reason)
	})
}

// Item 11: the 503's wait counts against the allowance like a 429's, and
// one that does not fit comes back at once, refused by the allowance.
func TestRetryAfterOn503BeyondAllowance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMemScript(unavailable("2"), step{status: 200, body: paymentBody})
		ev := &eventLog{}
		c := newTestClient(t, memURL, memClient(srv), WithMaxRetryWait(time.Second), WithObserver(ev), withRand(half))
		start := time.Now()

		_, err := c.Payments.Get(context.Background(), "p1")

		assert.Zero(t, time.Since(start))
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, http.StatusServiceUnavailable, apiErr.StatusCode)
		assert.Equal(t, ReasonAllowance, apiErr.Call.NotRetried())
		assert.Equal(t, 2*time.Second, apiErr.RetryAfter)
		assert.Len(t, srv.requests(), 1)
		assert.Equal(t, map[RetryReason]int{ReasonAllowance: 1}, ev.refusals())
	})
}

// Item 12: 20 concurrent GETs in a 503 storm. Without a budget each makes
// 3 attempts (60 requests); the client-wide budget allows 20 retries
// (100 tokens, 5 each), so the storm costs 40. 429s are not governed by
// the budget: with it empty, a 429 is still retried. Successes refill it.
func TestRetryBudgetCapsAStorm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		steps := make([]step, 0, 42)
		for range 40 {
			steps = append(steps, step{status: 503})
		}
		steps = append(steps, throttled("1"), step{status: 200, body: paymentBody}, step{status: 404, body: `{"code":"not_found"}`})
		srv := newMemScript(steps...)
		ev := &eventLog{}
		c := newTestClient(t, memURL, memClient(srv), WithRetryOn429(true), WithObserver(ev))

		var wg sync.WaitGroup
		var failed, saidBudget atomic.Int32
		for range 20 {
			wg.Go(func() {
				_, err := c.Payments.Get(context.Background(), "p1")
				var apiErr *APIError
				if errors.As(err, &apiErr) && apiErr.StatusCode == 503 {
					failed.Add(1)
					if apiErr.Call.NotRetried() == ReasonRetryBudget {
						saidBudget.Add(1)
					}
				}
			})
		}
		wg.Wait()

		assert.Equal(t, int32(20), failed.Load())
		assert.Len(t, srv.requests(), 40, "the storm must not triple the load")
		assert.Equal(t, 20, ev.retries())
		assert.Zero(t, c.quota.left())
		refusals := ev.refusals()
		assert.NotZero(t, refusals[ReasonRetryBudget])
		assert.Equal(t, 20, refusals[ReasonRetryBudget]+refusals[ReasonMaxRetries], "every call ends on one limit")
		budgetEvents := 0
		for _, e := range ev.all() {
			if e.Reason == ReasonRetryBudget {
				budgetEvents++
				assert.False(t, e.Retry)
			}
		}
		assert.Equal(t, refusals[ReasonRetryBudget], budgetEvents)
		assert.Equal(t, int32(budgetEvents), saidBudget.Load(), "the errors say the budget stopped them")

		_, err := c.Payments.Get(context.Background(), "p1")
		require.NoError(t, err, "a 429 is retried with the budget empty")
		assert.Len(t, srv.requests(), 42)
		assert.Equal(t, successCredit, c.quota.left(), "a success gives a token back")
		_, err = c.Payments.Get(context.Background(), "p1")
		require.ErrorIs(t, err, ErrNotFound)
		assert.Equal(t, 2*successCredit, c.quota.left(), "so does a 4xx: the gateway is answering")
	})
}

func TestRetryQuota(t *testing.T) {
	q := newRetryQuota()
	require.Equal(t, retryBudgetSize, q.left())
	d := q.spend(func(tokens int) decision {
		assert.Equal(t, retryBudgetSize, tokens)
		return decision{retry: true, cost: retryCost}
	})
	assert.True(t, d.retry)
	assert.Equal(t, retryBudgetSize-retryCost, q.left())
	q.spend(func(int) decision { return decision{} })
	assert.Equal(t, retryBudgetSize-retryCost, q.left(), "a decision that does not retry costs nothing")
	q.credit(successCredit)
	assert.Equal(t, retryBudgetSize-retryCost+successCredit, q.left())
	q.credit(1000)
	assert.Equal(t, retryBudgetSize, q.left(), "the budget never grows past its size")
	for q.left() >= timeoutRetryCost {
		q.spend(func(int) decision { return decision{retry: true, cost: timeoutRetryCost} })
	}
	d = q.spend(func(tokens int) decision {
		return decide(policy{maxRetries: 2, base: time.Second, retryAfterCap: time.Minute},
			outcome{op: opRead, failed: true, timeout: true}, budget{attempts: 1, deadline: maxDuration, tokens: tokens}, 0)
	})
	assert.Equal(t, ReasonRetryBudget, d.reason)
	assert.GreaterOrEqual(t, q.left(), 0)
}

// Item 13 end to end: any 5xx on a submit is ErrOutcomeUnknown and is never
// sent twice; rotate_secret is not repeated; enable is.
func TestAmbiguousWritesDecidedPerOperation(t *testing.T) {
	for _, status := range []int{500, 502, 507, 520, 524} {
		t.Run("capture submit "+http.StatusText(status), func(t *testing.T) {
			srv := newScriptServer(t, step{status: status}, step{status: 202, body: `{}`})
			c := newTestClient(t, srv.URL, withRand(func() float64 { return 0 }))
			_, err := c.Payments.Submit(context.Background(), "p1", OpCapture, PaymentSubmitParams{SignedTransaction: "0x02f8b1"})
			assert.ErrorIs(t, err, ErrOutcomeUnknown)
			var apiErr *APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, status, apiErr.StatusCode)
			assert.Len(t, srv.requests(), 1)
		})
	}
	t.Run("rotate_secret", func(t *testing.T) {
		srv := newScriptServer(t, step{status: 502}, step{status: 200, body: `{"id":"w1","shared_secret":"s"}`})
		c := newTestClient(t, srv.URL, withRand(func() float64 { return 0 }))
		_, err := c.Webhooks.RotateSecret(context.Background(), "w1")
		assert.ErrorIs(t, err, ErrOutcomeUnknown)
		assert.Len(t, srv.requests(), 1, "a second rotation would invalidate the first one's secret")
	})
	t.Run("enable", func(t *testing.T) {
		srv := newScriptServer(t, step{status: 502}, step{status: 200, body: `{"id":"w1"}`})
		c := newTestClient(t, srv.URL, withRand(func() float64 { return 0 }))
		_, err := c.Webhooks.Enable(context.Background(), "w1")
		require.NoError(t, err)
		assert.Len(t, srv.requests(), 2)
	})
	t.Run("report by hash", func(t *testing.T) {
		srv := newScriptServer(t, step{status: 503}, step{status: 202, body: `{"id":"t1","operation":"capture","status":"submitted","transaction_hash":"0x` + strings.Repeat("ab", 32) + `"}`})
		c := newTestClient(t, srv.URL, withRand(func() float64 { return 0 }))
		_, err := c.Payments.SubmitByHash(context.Background(), "p1", OpCapture, PaymentSubmitByHashParams{TransactionHash: "0x" + strings.Repeat("ab", 32)})
		require.NoError(t, err)
		assert.Len(t, srv.requests(), 2)
	})
}

// closedLimiter admits the first reservation and then refuses every other
// one, as a cooldown set by another call would.
type closedLimiter struct{ n atomic.Int32 }

func (l *closedLimiter) Reserve(context.Context, ratelimit.Reservation) (ratelimit.Admission, error) {
	if l.n.Add(1) == 1 {
		return ratelimit.Admission{OK: true}, nil
	}
	return ratelimit.Admission{Wait: 10 * time.Minute, Cooldown: true}, nil
}

func (l *closedLimiter) Release(context.Context, string, int64) error { return nil }

func (l *closedLimiter) Observe(context.Context, string, ratelimit.Observation) (ratelimit.Feedback, error) {
	return ratelimit.Feedback{}, nil
}

// Item 14: when the limiter refuses the retry locally, the caller gets the
// server's last 429 (its request id, headers and body), not an error built
// by the SDK; the transcript says the limiter refused the retry.
func TestLimiterRefusalReturnsTheServers429(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMemScript(throttled("1"), step{status: 200, body: paymentBody})
		ev := &eventLog{}
		c := newTestClient(t, memURL, memClient(srv), WithRetryOn429(true), WithLimiter(&closedLimiter{}), WithObserver(ev), withRand(half))

		_, err := c.Payments.Get(context.Background(), "p1")

		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, http.StatusTooManyRequests, apiErr.StatusCode)
		assert.Equal(t, "req-x", apiErr.RequestID)
		assert.Equal(t, "1", apiErr.Header.Get("Retry-After"))
		assert.Equal(t, rateLimitedBody, string(apiErr.Body))
		assert.Equal(t, time.Second, apiErr.RetryAfter)
		assert.False(t, apiErr.NotSent, "this 429 came from the server")
		assert.Equal(t, ReasonLimiter, apiErr.Call.NotRetried())
		assert.Len(t, apiErr.Call.Attempts, 1)
		assert.Len(t, srv.requests(), 1)
		assert.Equal(t, map[RetryReason]int{ReasonLimiter: 1}, ev.refusals())
	})
}

// Item 14 for a 5xx: the server's 503 comes back, not a made-up 429.
func TestLimiterRefusalAfterA503ReturnsThe503(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMemScript(step{status: 503, body: `{"code":"unavailable"}`}, step{status: 200, body: paymentBody})
		c := newTestClient(t, memURL, memClient(srv), WithPacing(PublishedLimits()), WithLimiter(&closedLimiter{}), withRand(half))

		_, err := c.Payments.Get(context.Background(), "p1")

		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, http.StatusServiceUnavailable, apiErr.StatusCode)
		assert.Equal(t, "req-x", apiErr.RequestID)
		assert.Equal(t, ReasonLimiter, apiErr.Call.NotRetried())
		assert.False(t, apiErr.NotSent)
	})
}

// Item 15: an HTTP-date Retry-After is read against the answer's Date.
func TestRetryAfterOf(t *testing.T) {
	local := time.Date(2026, 9, 14, 10, 0, 0, 0, time.UTC)
	date := func(d time.Duration) string { return local.Add(d).Format(http.TimeFormat) }
	tests := []struct {
		name       string
		date       string
		retryAfter string
		want       time.Duration
		ok         bool
	}{
		{"server clock 30 s ahead", date(30 * time.Second), date(32 * time.Second), 2 * time.Second, true},
		{"server clock 30 s behind", date(-30 * time.Second), date(-28 * time.Second), 2 * time.Second, true},
		{"no Date: the local clock", "", date(2 * time.Second), 2 * time.Second, true},
		{"malformed Date: the local clock", "yesterday", date(2 * time.Second), 2 * time.Second, true},
		{"delta-seconds ignore Date", date(time.Hour), "5", 5 * time.Second, true},
		{"a date before the server's now", date(30 * time.Second), date(10 * time.Second), 0, false},
		{"no Retry-After", date(0), "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.date != "" {
				h.Set("Date", tt.date)
			}
			if tt.retryAfter != "" {
				h.Set("Retry-After", tt.retryAfter)
			}
			got, ok := retryAfterOf(h, local)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

// Item 15 end to end: with the server's clock 30 s ahead (or behind), a
// 2 s HTTP-date instruction is a 2 s wait, plus jitter.
func TestHTTPDateRetryAfterUsesTheServersClock(t *testing.T) {
	for _, skew := range []time.Duration{30 * time.Second, -30 * time.Second} {
		t.Run(skew.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				server := time.Now().Add(skew)
				step429 := throttled("")
				step429.header["Date"] = server.UTC().Format(http.TimeFormat)
				step429.header["Retry-After"] = server.Add(2 * time.Second).UTC().Format(http.TimeFormat)
				srv := newMemScript(step429, step{status: 200, body: paymentBody})
				ev := &eventLog{}
				c := newTestClient(t, memURL, memClient(srv), WithRetryOn429(true), WithObserver(ev), withRand(half))

				_, err := c.Payments.Get(context.Background(), "p1")

				require.NoError(t, err)
				reqs := srv.requests()
				require.Len(t, reqs, 2)
				// The instruction read against the server's clock (2 s,
				// not 2 s ± 30 s), plus its additive jitter (the draw
				// 0.5: half a tenth of it).
				assert.Equal(t, 2*time.Second+100*time.Millisecond, reqs[1].at.Sub(reqs[0].at))
				require.Len(t, ev.all(), 1)
				assert.Equal(t, ReasonRateLimited, ev.all()[0].Reason)
				assert.Equal(t, 2*time.Second, ev.all()[0].RetryAfter)
			})
		})
	}
}

// Item 16: refusals are counted apart. The attempt limit here; the
// allowance, deadline, limiter and retry-budget counts are pinned by the
// tests of items 9, 11, 12 and 14.
func TestRefusalsCountedByReason(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMemScript(step{status: 500}, step{status: 500}, step{status: 500}, throttled("600"))
		ev := &eventLog{}
		c := newTestClient(t, memURL, memClient(srv), WithRetryOn429(true), WithObserver(ev), withRand(half))

		_, err := c.Payments.Get(context.Background(), "p1")
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, ReasonMaxRetries, apiErr.Call.NotRetried())
		_, err = c.Payments.Get(context.Background(), "p1")
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, ReasonAllowance, apiErr.Call.NotRetried())

		assert.Equal(t, map[RetryReason]int{ReasonMaxRetries: 1, ReasonAllowance: 1}, ev.refusals())
	})
}

// A transport failure that is not retried says why too.
func TestTransportErrorSaysWhyNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMemScript(step{hangUp: true})
		ev := &eventLog{}
		c := newTestClient(t, memURL, memClient(srv), WithMaxRetries(1), WithObserver(ev), withRand(half))

		_, err := c.Payments.Get(context.Background(), "p1")

		var te *TransportError
		require.ErrorAs(t, err, &te)
		assert.Equal(t, ReasonMaxRetries, te.Call.NotRetried())
		assert.Len(t, te.Call.Attempts, 2)
		assert.Equal(t, map[RetryReason]int{ReasonMaxRetries: 1}, ev.refusals())
	})
}

// Item 17: a 429 with RetryOn429 off is reported: the observer hears an
// attempt that says it is not retried and why, and the log has an info
// line.
func TestRateLimitWithRetryOffIsReported(t *testing.T) {
	srv := newScriptServer(t, throttled("60"))
	ev := &eventLog{}
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	c := newTestClient(t, srv.URL, WithObserver(ev), WithLogger(logger))

	_, err := c.Payments.Get(context.Background(), "p1")

	require.ErrorIs(t, err, ErrRateLimited)
	events := ev.all()
	require.Len(t, events, 1)
	assert.False(t, events[0].Retry)
	assert.Equal(t, ReasonRetryOn429Off, events[0].Reason)
	assert.Equal(t, 60*time.Second, events[0].RetryAfter)
	assert.Equal(t, http.StatusTooManyRequests, events[0].StatusCode)
	assert.Equal(t, "req-x", events[0].RequestID)
	line := strings.TrimSpace(buf.String())
	assert.Contains(t, line, `"level":"INFO"`)
	assert.Contains(t, line, `"reason":"retry_on_429_off"`)
	assert.Contains(t, line, `"will_retry":false`)
	assert.NotContains(t, line, "\n")
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.False(t, apiErr.Call.Attempts[0].Refused, "nothing was refused: the caller handles 429s")
	assert.Equal(t, ReasonRetryOn429Off, apiErr.Call.NotRetried())
	assert.Empty(t, ev.refusals())
}

// A keyed payment creation answered 503 (it may have run), retried, then
// answered 429 with RetryOn429 off: the outcome is unknown, and the caller
// gets the key to repeat it with, not a plain 429 that invites a second
// payment.
func TestMaybeExecutedWriteEndingOnAnotherAnswerIsUnknown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMemScript(step{status: 503}, throttled("1"))
		c := newTestClient(t, memURL, memClient(srv), WithToken("t"), withRand(half))
		_, err := c.Payments.Create(context.Background(), PaymentCreateParams{ChainID: 1, Mode: ModeCharge, Amount: "1",
			Token: "t", Payer: "a", Payee: "b", IdempotencyKey: "order-1"})
		require.ErrorIs(t, err, ErrOutcomeUnknown)
		var oe *OutcomeUnknownError
		require.ErrorAs(t, err, &oe)
		assert.Equal(t, "order-1", oe.IdempotencyKey)
		var ae *APIError
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, http.StatusTooManyRequests, ae.StatusCode)
	})
}
