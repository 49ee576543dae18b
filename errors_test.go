package rail0

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Rule 1: RetryAfter is always surfaced, uncapped, at zero retries.
func TestAPIErrorCarriesRetryAfterOn429(t *testing.T) {
	srv := newScriptServer(t, throttled("60"))
	c := newTestClient(t, srv.URL, WithToken("secret-token"))

	_, err := c.Payments.Get(context.Background(), "p1")

	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusTooManyRequests, apiErr.StatusCode)
	assert.Equal(t, CodeRateLimited, apiErr.Code)
	assert.Equal(t, 60*time.Second, apiErr.RetryAfter)
	assert.Equal(t, "req-x", apiErr.RequestID)
	assert.Equal(t, "Too many requests", apiErr.Title)
	assert.Equal(t, http.MethodGet, apiErr.Method)
	assert.Equal(t, "/payments/p1", apiErr.Path)
	assert.Len(t, apiErr.Call.Attempts, 1)
	assert.Equal(t, ReasonRetryOn429Off, apiErr.Call.NotRetried(), "returned as it is: no limit refused a retry")
	assert.False(t, apiErr.Call.Attempts[0].Refused)
	assert.True(t, errors.Is(err, ErrRateLimited))
	assert.False(t, errors.Is(err, ErrNotFound))
	assert.NotEmpty(t, apiErr.Hint())
	assert.NotContains(t, err.Error(), "\n")
	assert.Contains(t, err.Error(), "retry after 1m0s")
	assert.NotContains(t, err.Error(), "secret-token")
	assert.Len(t, srv.requests(), 1, "no retry by default")
}

// Issue 27 item 4: a handler passes a 429 on with RetryAfterHeader: whole
// seconds rounded up (never sooner than the gateway said), at least 1.
func TestRetryAfterHeaderRoundsUp(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "1", -5 * time.Second: "1", time.Nanosecond: "1", 999 * time.Millisecond: "1", time.Second: "1",
		time.Second + time.Nanosecond: "2", 59*time.Second + 900*time.Millisecond: "60", time.Minute: "60",
		maxDuration: "9223372037",
	} {
		assert.Equal(t, want, (&APIError{RetryAfter: d}).RetryAfterHeader(), "%v", d)
	}
	// End to end: the time left of a closure the client answers itself.
	synctest.Test(t, func(t *testing.T) {
		srv, opt := newPipeScript(t, throttled("30"))
		c := newTestClient(t, srv.URL, opt, WithToken("tok"))
		_, err := c.Payments.Get(context.Background(), "p1")
		require.ErrorIs(t, err, ErrRateLimited)
		time.Sleep(10*time.Second + 500*time.Millisecond)
		_, err = c.Payments.Get(context.Background(), "p2")
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		require.True(t, apiErr.NotSent)
		assert.Equal(t, "20", apiErr.RetryAfterHeader(), "19.5 s left")
	})
}

// Rule 1: RetryAfter is zero when absent or unusable, and on other statuses.
func TestAPIErrorRetryAfterZeroWhenNoInstruction(t *testing.T) {
	for _, ra := range []string{"", "0", "-5", "garbage", "Sun, 06 Nov 1994 08:49:37 GMT"} {
		t.Run("retry-after "+ra, func(t *testing.T) {
			srv := newScriptServer(t, throttled(ra))
			c := newTestClient(t, srv.URL)
			_, err := c.Health.Get(context.Background())
			var apiErr *APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, 429, apiErr.StatusCode)
			assert.Zero(t, apiErr.RetryAfter)
		})
	}
	srv := newScriptServer(t, step{status: 422, body: `{"code":"amount_exceeds_capturable","title":"Capture larger than escrow","detail":"Only 15.00 is still held.","status":"invalid_state","error":"amount_exceeds_capturable"}`})
	c := newTestClient(t, srv.URL)
	_, err := c.Payments.Get(context.Background(), "p1")
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Zero(t, apiErr.RetryAfter)
	assert.Equal(t, CodeAmountExceedsCapturable, apiErr.Code)
	assert.Equal(t, "invalid_state", apiErr.Category)
	assert.Equal(t, "Only 15.00 is still held.", apiErr.Detail)
	assert.Equal(t, "lower the amount to at most capturable_amount", apiErr.Hint())
}

// The code falls back to error, then status; the text to message, then HTTP <status>.
func TestAPIErrorFallbackChain(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		body       string
		wantCode   ErrorCode
		wantDetail string
	}{
		{"legacy error and message", 422, `{"error":"not_capturable","status":"invalid_state","message":"Not capturable."}`, CodeNotCapturable, "Not capturable."},
		{"status only", 403, `{"status":"forbidden"}`, CodeForbidden, "HTTP 403"},
		{"empty body", 404, ``, "", "HTTP 404"},
		{"HTML page from a proxy", 502, `<html><body><h1>502 Bad Gateway</h1></body></html>`, "", "HTTP 502"},
		{"JSON that is not an object", 400, `["a"]`, "", "HTTP 400"},
		{"truncated JSON", 409, `{"code":"conf`, "", "HTTP 409"},
		{"detail with line breaks stays one line", 422, `{"code":"invalid_amount","detail":"bad\namount"}`, CodeInvalidAmount, "bad\namount"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newScriptServer(t, step{status: tt.status, header: map[string]string{"Content-Type": "text/html"}, body: tt.body})
			c := newTestClient(t, srv.URL, WithMaxRetries(0))
			_, err := c.Payments.Get(context.Background(), "p1")
			var apiErr *APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, tt.status, apiErr.StatusCode)
			assert.Equal(t, tt.wantCode, apiErr.Code)
			assert.Equal(t, tt.wantDetail, apiErr.Detail)
			assert.Equal(t, tt.body, string(apiErr.Body), "the raw body is kept")
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

// An error body is read up to 1 MiB and never fails the call.
func TestAPIErrorHugeBodyIsCut(t *testing.T) {
	huge := strings.Repeat("x", 5<<20)
	srv := newScriptServer(t, step{status: 500, header: map[string]string{"Content-Type": "text/plain"}, body: huge})
	c := newTestClient(t, srv.URL, WithMaxRetries(0))
	_, err := c.Payments.Get(context.Background(), "p1")
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 500, apiErr.StatusCode)
	assert.Len(t, apiErr.Body, maxErrorBody)
	assert.Equal(t, "HTTP 500", apiErr.Detail)
}

func TestSentinelsMatchByStatus(t *testing.T) {
	for status, sentinel := range map[int]error{429: ErrRateLimited, 401: ErrUnauthorized, 403: ErrForbidden, 404: ErrNotFound} {
		e := &APIError{StatusCode: status}
		assert.ErrorIs(t, e, sentinel)
		for other, s := range map[int]error{429: ErrRateLimited, 401: ErrUnauthorized, 403: ErrForbidden, 404: ErrNotFound} {
			if other != status {
				assert.NotErrorIs(t, e, s)
			}
		}
	}
}

// Rule 2: one flag alone retries a 429, with a one-second Retry-After (in a
// synctest bubble, so the second passes on the fake clock).
func TestRetryOn429AloneRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, viaPipe := newPipeScript(t, throttled("1"), step{status: 200, body: paymentBody})
		c := newTestClient(t, srv.URL, viaPipe, WithRetryOn429(true))

		p, err := c.Payments.Get(context.Background(), "p1")

		require.NoError(t, err)
		assert.Equal(t, "0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a4b", p.ID)
		reqs := srv.requests()
		require.Len(t, reqs, 2)
		gap := reqs[1].at.Sub(reqs[0].at)
		assert.GreaterOrEqual(t, gap, time.Second, "the retry must not go out before Retry-After")
	})
}

// Rule 2: off by default, even with MaxRetries set.
func TestRetryOn429OffByDefault(t *testing.T) {
	srv := newScriptServer(t, throttled("1"), step{status: 200, body: paymentBody})
	c := newTestClient(t, srv.URL, WithMaxRetries(5))
	_, err := c.Payments.Get(context.Background(), "p1")
	require.ErrorIs(t, err, ErrRateLimited)
	assert.Len(t, srv.requests(), 1)
}

// Rule 2 and 8: a POST is retried on 429 like a GET, with the same body and
// the same Idempotency-Key on every attempt.
func TestPOSTRetriedOn429WithSameIdempotencyKey(t *testing.T) {
	srv := newScriptServer(t, throttled("60"), throttled("60"), step{status: 201, body: paymentBody})
	c := newTestClient(t, srv.URL, WithRetryOn429(true), WithRetryAfterCap(20*time.Millisecond))

	p, err := c.Payments.Create(context.Background(), PaymentCreateParams{
		ChainID: 84532, Mode: ModeAuthorize, Amount: "25.00",
		Token: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
		Payer: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4", Payee: "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2",
	})

	require.NoError(t, err)
	assert.False(t, p.Replayed)
	reqs := srv.requests()
	require.Len(t, reqs, 3)
	key := reqs[0].header.Get("Idempotency-Key")
	assert.NotEmpty(t, key)
	for _, r := range reqs {
		assert.Equal(t, http.MethodPost, r.method)
		assert.Equal(t, key, r.header.Get("Idempotency-Key"))
		assert.Equal(t, reqs[0].body, r.body)
		assert.Equal(t, "application/json", r.header.Get("Content-Type"))
	}
	assert.JSONEq(t, `{"chain_id":84532,"mode":"authorize","amount":"25.00","token":"0x036CbD53842c5426634e7929541eC2318f3dCF7e","payer":"0x5B38Da6a701c568545dCfcB03FcB875f56beddC4","payee":"0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2"}`, reqs[0].body)

	// A second call gets a fresh key; a caller-supplied key is sent as given.
	_, err = c.Payments.Create(context.Background(), PaymentCreateParams{ChainID: 1, Mode: ModeCharge, Amount: "1", Token: "t", Payer: "a", Payee: "b", IdempotencyKey: "order-1042"})
	require.NoError(t, err)
	reqs = srv.requests()
	assert.Equal(t, "order-1042", reqs[len(reqs)-1].header.Get("Idempotency-Key"))
}

// A replay of an Idempotency-Key answers 200: Replayed tells the caller.
func TestCreateReplayed(t *testing.T) {
	srv := newScriptServer(t, step{status: 200, body: paymentBody})
	c := newTestClient(t, srv.URL)
	p, err := c.Payments.Create(context.Background(), PaymentCreateParams{ChainID: 1, Mode: ModeCharge, Amount: "1", Token: "t", Payer: "a", Payee: "b"})
	require.NoError(t, err)
	assert.True(t, p.Replayed)
}

// Rule 8: a POST without an Idempotency-Key is not retried on 502: the
// caller learns the outcome is unknown, and still sees the 502.
func TestPOSTNotRetriedOn502(t *testing.T) {
	srv := newScriptServer(t, step{status: 502, header: map[string]string{"Content-Type": "text/html"}, body: "<html>Bad Gateway</html>"}, step{status: 202, body: `{}`})
	ev := &eventLog{}
	c := newTestClient(t, srv.URL, WithObserver(ev))

	_, err := c.do(context.Background(), &request{op: submitPaymentOperation, args: pathArgs{"p1", "capture"}, body: map[string]string{"signed_transaction": "0x02"}}, nil)

	require.Error(t, err)
	assert.ErrorIs(t, err, ErrOutcomeUnknown)
	var unknown *OutcomeUnknownError
	require.ErrorAs(t, err, &unknown)
	assert.Empty(t, unknown.IdempotencyKey)
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, 502, apiErr.StatusCode)
	assert.Len(t, srv.requests(), 1, "a capture must never be sent twice blindly")
	events := ev.all()
	require.Len(t, events, 1)
	assert.False(t, events[0].Retry)
	assert.Equal(t, ReasonUnsafe, events[0].Reason)
}

// Rule 8: the same 502 is retried on GET, and on a POST that carries a key.
func TestSafeRequestsRetriedOn502(t *testing.T) {
	t.Run("GET", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, viaPipe := newPipeScript(t, step{status: 502, body: "bad gateway"}, step{status: 200, body: paymentBody})
			c := newTestClient(t, srv.URL, viaPipe)
			_, err := c.Payments.Get(context.Background(), "p1")
			require.NoError(t, err)
			assert.Len(t, srv.requests(), 2)
		})
	})
	t.Run("POST with Idempotency-Key", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, viaPipe := newPipeScript(t, step{status: 503}, step{status: 201, body: paymentBody})
			c := newTestClient(t, srv.URL, viaPipe)
			_, err := c.Payments.Create(context.Background(), PaymentCreateParams{ChainID: 1, Mode: ModeCharge, Amount: "1", Token: "t", Payer: "a", Payee: "b"})
			require.NoError(t, err)
			reqs := srv.requests()
			require.Len(t, reqs, 2)
			assert.Equal(t, reqs[0].header.Get("Idempotency-Key"), reqs[1].header.Get("Idempotency-Key"))
		})
	})
	t.Run("GET gives up after MaxRetries with the last answer", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, viaPipe := newPipeScript(t, step{status: 500, body: `{"code":"boom","detail":"d","title":"t","status":"boom"}`})
			c := newTestClient(t, srv.URL, viaPipe, WithMaxRetries(2))
			_, err := c.Payments.Get(context.Background(), "p1")
			var apiErr *APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, 500, apiErr.StatusCode)
			assert.Len(t, apiErr.Call.Attempts, 3)
			assert.NotErrorIs(t, err, ErrOutcomeUnknown)
			assert.Len(t, srv.requests(), 3)
		})
	})
	t.Run("keyed POST that keeps failing: outcome unknown, key reported", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, viaPipe := newPipeScript(t, step{status: 500})
			c := newTestClient(t, srv.URL, viaPipe, WithMaxRetries(1))
			_, err := c.Payments.Create(context.Background(), PaymentCreateParams{ChainID: 1, Mode: ModeCharge, Amount: "1", Token: "t", Payer: "a", Payee: "b", IdempotencyKey: "k1"})
			var unknown *OutcomeUnknownError
			require.ErrorAs(t, err, &unknown)
			assert.Equal(t, "k1", unknown.IdempotencyKey)
			assert.Len(t, unknown.Call.Attempts, 2)
		})
	})
}

// Rule 8: a connection closed after the request was written.
func TestConnectionClosedAfterWrite(t *testing.T) {
	t.Run("POST without key: outcome unknown, one attempt", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, viaPipe := newPipeScript(t, step{hangUp: true})
			c := newTestClient(t, srv.URL, viaPipe)
			_, err := c.do(context.Background(), &request{op: submitPaymentOperation, args: pathArgs{"p1", "capture"}, body: map[string]string{}}, nil)
			assert.ErrorIs(t, err, ErrOutcomeUnknown)
			var apiErr *APIError
			assert.False(t, errors.As(err, &apiErr), "no answer came back")
			assert.Len(t, srv.requests(), 1)
		})
	})
	t.Run("GET retried", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, viaPipe := newPipeScript(t, step{hangUp: true}, step{status: 200, body: paymentBody})
			ev := &eventLog{}
			c := newTestClient(t, srv.URL, viaPipe, WithObserver(ev))
			_, err := c.Payments.Get(context.Background(), "p1")
			require.NoError(t, err)
			assert.Len(t, srv.requests(), 2)
			events := ev.all()
			require.Len(t, events, 1)
			assert.Equal(t, ReasonTransport, events[0].Reason)
			assert.NotEmpty(t, events[0].Err)
			assert.Less(t, events[0].Wait, defaultBackoffBase)
		})
	})
	t.Run("GET gives up with a TransportError", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, viaPipe := newPipeScript(t, step{hangUp: true})
			c := newTestClient(t, srv.URL, viaPipe, WithMaxRetries(1))
			_, err := c.Payments.Get(context.Background(), "p1")
			var te *TransportError
			require.ErrorAs(t, err, &te)
			assert.True(t, te.Sent)
			assert.Len(t, te.Call.Attempts, 2)
			assert.NotErrorIs(t, err, ErrOutcomeUnknown)
		})
	})
}

// Rule 8: a request that was provably never sent is retried on any method,
// and its failure says nothing ran.
func TestNeverSentRetriedOnAnyMethod(t *testing.T) {
	mock := httpmock.NewMockTransport()
	mock.RegisterResponder(http.MethodPost, "=~.*", httpmock.NewErrorResponder(&net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}))
	c := newTestClient(t, "https://api.rail0.test", WithHTTPClient(&http.Client{Transport: mock}), WithMaxRetries(2), withRand(func() float64 { return 0 }))

	_, err := c.do(context.Background(), &request{op: submitPaymentOperation, args: pathArgs{"p1", "capture"}, body: map[string]string{}}, nil)

	var te *TransportError
	require.ErrorAs(t, err, &te)
	assert.False(t, te.Sent)
	assert.Len(t, te.Call.Attempts, 3)
	assert.NotErrorIs(t, err, ErrOutcomeUnknown)
	assert.Equal(t, 3, mock.GetTotalCallCount())
}

// A real refused connection (nothing listens) is classified as never sent.
func TestDialRefusedIsNotSent(t *testing.T) {
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	c := newTestClient(t, "http://"+addr, WithMaxRetries(1), withRand(func() float64 { return 0 }))
	_, err = c.do(context.Background(), &request{op: createPayment, body: map[string]string{}}, nil)
	var te *TransportError
	require.ErrorAs(t, err, &te)
	assert.False(t, te.Sent)
	assert.Len(t, te.Call.Attempts, 2)
}

// Rule 5: the allowance bounds the summed waiting; when the next wait does
// not fit, the last 429 comes back at once, with its uncapped RetryAfter.
// With a 60 s instruction, a jitter draw of 0.5 and a 150 s allowance:
// waits of 63 s (the instruction plus half its tenth, issue 27: never the
// window's reopening before it) fit twice (63 <= 150, 63 <= 87), and then
// not (60 > 24). The final error's RetryAfter is still the server's.
func TestAllowanceExhaustedReturnsLast429(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMemScript(throttled("60"))
		ev := &eventLog{}
		c := newTestClient(t, "https://api.rail0.test", memClient(srv),
			WithRetryOn429(true),
			WithMaxRetryWait(150*time.Second),
			WithObserver(ev), withRand(func() float64 { return 0.5 }))

		_, err := c.Payments.Get(context.Background(), "p1")

		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, 60*time.Second, apiErr.RetryAfter, "RetryAfter is the server's value, uncapped")
		assert.Equal(t, ReasonAllowance, apiErr.Call.NotRetried())
		assert.Len(t, apiErr.Call.Attempts, 3)
		assert.Len(t, srv.requests(), 3)
		events := ev.all()
		require.Len(t, events, 3)
		for _, e := range events[:2] {
			assert.True(t, e.Retry)
			assert.Equal(t, 63*time.Second, e.Wait, "the instruction plus its additive jitter")
		}
		assert.False(t, events[2].Retry)
		assert.Equal(t, ReasonAllowance, events[2].Reason)
		assert.Equal(t, 2, ev.retries())
		assert.Equal(t, map[RetryReason]int{ReasonAllowance: 1}, ev.refusals())
		assert.Equal(t, retryBudgetSize, c.quota.left(), "429 retries do not draw on the retry budget")
	})
}

// Rule 5: with no allowance at all, nothing waits.
func TestZeroAllowanceRefusesAtOnce(t *testing.T) {
	srv := newScriptServer(t, throttled("1"))
	c := newTestClient(t, srv.URL, WithRetryOn429(true), WithMaxRetryWait(0))
	_, err := c.Payments.Get(context.Background(), "p1")
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, ReasonAllowance, apiErr.Call.NotRetried())
	assert.Len(t, srv.requests(), 1)
}

// Rule 5: a wait that would end after the deadline is not started: the 429
// comes back while the context is still alive.
func TestDeadlineTooShortReturns429AtOnce(t *testing.T) {
	srv := newScriptServer(t, throttled("60"))
	c := newTestClient(t, srv.URL, WithRetryOn429(true))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	_, err := c.Payments.Get(ctx, "p1")

	require.NoError(t, ctx.Err(), "the call must not hold the caller until the deadline")
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, ReasonDeadline, apiErr.Call.NotRetried())
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, 60*time.Second, apiErr.RetryAfter)
	assert.Len(t, srv.requests(), 1)
}

// Rule 6: a context that ends during a wait returns an error that is both
// the context error and the last 429.
func TestContextCanceledDuringWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, viaPipe := newPipeScript(t, throttled("30"))
		ctx, cancel := context.WithCancel(context.Background())
		cancelSoon := attemptHook(func(*Call, *Attempt) { go func() { time.Sleep(50 * time.Millisecond); cancel() }() })
		c := newTestClient(t, srv.URL, viaPipe, WithRetryOn429(true), WithObserver(cancelSoon))

		_, err := c.Payments.Get(ctx, "p1")

		assert.ErrorIs(t, err, context.Canceled)
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, 30*time.Second, apiErr.RetryAfter)
		assert.Equal(t, 429, apiErr.StatusCode)
		assert.Contains(t, err.Error(), "context canceled")
		assert.Len(t, srv.requests(), 1)
	})
}

// Rule 6 with a deadline: the wait fits when it starts, but the deadline is
// moved up by a parent context.
func TestDeadlineDuringWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, viaPipe := newPipeScript(t, throttled("1"))
		c := newTestClient(t, srv.URL, viaPipe, WithRetryOn429(true))
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		// A 1 s wait does not fit 300 ms: refused at once, no DeadlineExceeded.
		_, err := c.Payments.Get(ctx, "p1")
		assert.NotErrorIs(t, err, context.DeadlineExceeded)
		assert.ErrorIs(t, err, ErrRateLimited)
	})
}

// Rule 7: per-call state. A 429's Retry-After paces only the attempt after
// it: the next failure (a 503) waits a guess, not the server's 1 s.
func TestOneResponseNeverPacesAnotherAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, viaPipe := newPipeScript(t, throttled("1"), step{status: 503}, step{status: 200, body: paymentBody})
		ev := &eventLog{}
		c := newTestClient(t, srv.URL, viaPipe, WithRetryOn429(true), WithObserver(ev), withRand(func() float64 { return 0.99 }))

		_, err := c.Payments.Get(context.Background(), "p1")

		require.NoError(t, err)
		events := ev.all()
		require.Len(t, events, 2)
		assert.Equal(t, ReasonRateLimited, events[0].Reason)
		assert.GreaterOrEqual(t, events[0].Wait, time.Second)
		assert.Equal(t, ReasonServerError, events[1].Reason)
		assert.Less(t, events[1].Wait, defaultBackoffBase)
		reqs := srv.requests()
		require.Len(t, reqs, 3)
		assert.GreaterOrEqual(t, reqs[1].at.Sub(reqs[0].at), time.Second)
		assert.Less(t, reqs[2].at.Sub(reqs[1].at), time.Second, "the 503 must not be paced by the earlier Retry-After")
	})
}

// Rule 7: concurrent calls on one client do not share waits.
func TestConcurrentCallsKeepTheirOwnWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var slowSeen atomic.Int32
		srv, viaPipe := pipeServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/payments/slow" && slowSeen.Add(1) == 1 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			io.WriteString(w, paymentBody)
		}))
		ev := &eventLog{}
		// The client-wide cooldown (issue 6) deliberately makes other calls wait
		// out a 429; this test is about the hooks' per-call state, so it is off.
		c := newTestClient(t, srv.URL, viaPipe, WithRetryOn429(true), WithCooldown(false), WithObserver(ev))
		done := make(chan error, 1)
		go func() {
			_, err := c.Payments.Get(context.Background(), "slow")
			done <- err
		}()
		synctest.Wait() // the slow call waits out its Retry-After
		require.Equal(t, int32(1), slowSeen.Load())
		start := time.Now()
		_, err := c.Payments.Get(context.Background(), "fast")
		require.NoError(t, err)
		assert.Less(t, time.Since(start), 900*time.Millisecond, "another call's Retry-After must not pace this one")
		require.NoError(t, <-done)
		require.Len(t, ev.all(), 1)
		assert.Equal(t, "/payments/slow", ev.all()[0].Path)
	})
}

// Rule 9: every retry decision is logged with attempt, status, wait and
// will_retry, and the token never is.
func TestRetriesAreLoggedWithoutTheToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newMemScript(throttled("60"), throttled("60"))
		var buf bytes.Buffer
		logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c := newTestClient(t, "https://api.rail0.test", memClient(srv), WithToken("tok-SECRET-123"), WithLogger(logger),
			WithRetryOn429(true), WithMaxRetryWait(100*time.Second))

		_, err := c.Payments.Get(context.Background(), "p1")
		require.ErrorIs(t, err, ErrRateLimited)

		out := buf.String()
		assert.NotContains(t, out, "tok-SECRET-123")
		var lines []string // the retry decisions; the debug lines of each attempt are checked elsewhere
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if !strings.Contains(l, `"level":"DEBUG"`) {
				lines = append(lines, l)
			}
		}
		require.Len(t, lines, 2)
		assert.Contains(t, lines[0], `"attempt":1`)
		assert.Contains(t, lines[0], `"status":429`)
		assert.Contains(t, lines[0], `"will_retry":true`)
		assert.Contains(t, lines[0], `"wait":`)
		assert.Contains(t, lines[1], `"will_retry":false`)
		assert.Contains(t, lines[1], `"reason":"allowance_exhausted"`)
		assert.Equal(t, "Bearer tok-SECRET-123", srv.requests()[0].header.Get("Authorization"))
	})
}

// The client is silent without a logger, even when retrying.
func TestSilentByDefault(t *testing.T) {
	var buf bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(prev)
	srv := newScriptServer(t, throttled("60"), step{status: 200, body: paymentBody})
	c := newTestClient(t, srv.URL, WithRetryOn429(true), WithRetryAfterCap(time.Millisecond))
	_, err := c.Payments.Get(context.Background(), "p1")
	require.NoError(t, err)
	assert.Empty(t, buf.String())
}

// A 2xx body that does not decode is a typed error that keeps the status.
func TestUndecodableSuccessBody(t *testing.T) {
	srv := newScriptServer(t, step{status: 200, header: map[string]string{"Content-Type": "text/html"}, body: "<html>maintenance</html>"})
	c := newTestClient(t, srv.URL)
	_, err := c.Payments.Get(context.Background(), "p1")
	var de *DecodeError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, 200, de.StatusCode)
	assert.Equal(t, "text/html", de.ContentType)
	assert.Equal(t, "<html>maintenance</html>", string(de.Body))
}

// Error-body decoding never fails, never panics, and always yields a code
// that came from the body and a one-line message.
func FuzzAPIErrorBody(f *testing.F) {
	f.Add(429, "60", []byte(rateLimitedBody))
	f.Add(502, "", []byte("<html><body>Bad Gateway</body></html>"))
	f.Add(422, "garbage", []byte(`{"error":"not_capturable","status":"invalid_state","message":"x"}`))
	f.Add(500, "-1", []byte(`{"code":`))
	f.Add(404, "", []byte{})
	f.Fuzz(func(t *testing.T, status int, retryAfter string, body []byte) {
		h := http.Header{}
		h.Set("Retry-After", retryAfter)
		e := newAPIError(&callState{method: "GET", path: "/x"}, status, h, body, time.Unix(1789381370, 0))
		if e.Detail == "" {
			t.Fatal("empty detail")
		}
		if strings.ContainsAny(e.Error(), "\r\n") {
			t.Fatalf("Error() spans lines: %q", e.Error())
		}
		if e.RetryAfter < 0 {
			t.Fatalf("negative RetryAfter %v", e.RetryAfter)
		}
		// JSON escapes and invalid UTF-8 (decoded as U+FFFD) may change
		// the text; otherwise the code is the body's own.
		if e.Code != "" && utf8.Valid(body) && !bytes.ContainsRune(body, '\\') && !bytes.Contains(body, []byte(e.Code)) {
			t.Fatalf("code %q not from the body", e.Code)
		}
	})
}

// A request id of any length from the answer is kept to 128 bytes: it goes
// into errors, logs, transcripts and spans.
func TestRequestIDIsBounded(t *testing.T) {
	srv := newScriptServer(t, step{status: 404, header: map[string]string{"X-Request-Id": strings.Repeat("r", 10000)}})
	c := newTestClient(t, srv.URL, WithToken("t"))
	_, err := c.Payments.Get(context.Background(), "p1")
	var ae *APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, strings.Repeat("r", 128), ae.RequestID)
	require.NotNil(t, ae.Call)
	assert.Len(t, ae.Call.RequestID(), 128)
}

// contractErrorsPath is the module's copy of section 9 ("Errors") of the
// gateway's contract guide, the only place the contract names its error
// codes (openapi.json carries a few as examples only). It is kept verbatim:
// TestContractErrorsCopyMatchesGuide compares it with the guide when a
// shared checkout of the guide is near.
const contractErrorsPath = "testdata/gateway_errors.md"

// contractCodes returns the codes of the "Known codes" table in order.
func contractCodes(t *testing.T) []ErrorCode {
	t.Helper()
	data, err := os.ReadFile(contractErrorsPath)
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(data), "Known codes")
	if !ok {
		t.Fatalf("%s has no \"Known codes\" table", contractErrorsPath)
	}
	tick := regexp.MustCompile("`([a-z_]+)`")
	var codes []ErrorCode
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(line, "| `") {
			continue
		}
		for _, m := range tick.FindAllStringSubmatch(cells[1], -1) {
			codes = append(codes, ErrorCode(m[1]))
		}
	}
	if len(codes) < 60 {
		t.Fatalf("read %d codes from %s: the table's layout changed", len(codes), contractErrorsPath)
	}
	return codes
}

// TestEveryContractCodeHasAHint walks the codes the contract names: each
// has a constant and a hint, reached through APIError.Hint as a caller
// would. A code added to the contract without a hint fails here.
func TestEveryContractCodeHasAHint(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("errors.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range contractCodes(t) {
		if !bytes.Contains(src, []byte(`ErrorCode = "`+code+`"`)) {
			t.Errorf("%s has no ErrorCode constant", code)
		}
		e := &APIError{StatusCode: http.StatusUnprocessableEntity, Code: code}
		hint := e.Hint()
		switch {
		case hint == "":
			t.Errorf("%s has no hint", code)
		case hint != strings.TrimSpace(hint) || strings.HasSuffix(hint, ".") || oneLine(hint) != hint:
			t.Errorf("%s: hint %q is not one clause in the house form (no final period, one line)", code, hint)
		}
	}
	// Every hint belongs to a code of the contract: a typo in a constant
	// would otherwise keep a hint nobody can reach.
	known := map[ErrorCode]bool{}
	for _, code := range contractCodes(t) {
		known[code] = true
	}
	for code := range hints {
		if !known[code] {
			t.Errorf("hint for %s, which the contract does not name", code)
		}
	}
}

// TestContractErrorsCopyMatchesGuide keeps testdata/gateway_errors.md equal
// to section 9 of the shared contract guide when a checkout of it is in a
// parent directory; the module's copy is authoritative elsewhere.
func TestContractErrorsCopyMatchesGuide(t *testing.T) {
	t.Parallel()
	var guide []byte
	for i, dir := 0, ".."; i < 4 && guide == nil; i, dir = i+1, filepath.Join(dir, "..") {
		data, err := os.ReadFile(filepath.Join(dir, "shared", "gateway", "README.md"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		guide = data
	}
	if guide == nil {
		t.Skip("no shared checkout of the contract guide; the module's copy is authoritative")
	}
	_, section, ok := strings.Cut(string(guide), "\n## 9. Errors\n")
	if !ok {
		t.Fatal("the guide has no section 9. Errors")
	}
	section, _, _ = strings.Cut(section, "\n## 10. ")
	copied, err := os.ReadFile(contractErrorsPath)
	if err != nil {
		t.Fatal(err)
	}
	if want := "## 9. Errors\n" + section + "\n"; string(copied) != want {
		t.Fatalf("%s differs from section 9 of the contract guide: copy the section again and give every new code a hint", contractErrorsPath)
	}
}

// hostileText is gateway text built to act on whatever prints it: an ANSI
// colour and screen clear, an OSC 8 hyperlink and an OSC 52 clipboard write,
// a forged second log record after U+2028 and a newline, a right-to-left
// override that displays "exe.txt" as "txt.exe", C1 controls, DEL, NUL, a
// zero-width space and a byte that is not UTF-8.
const hostileText = "Only 15.00\x1b[31m is held\x1b[2J;\x1b]8;;https://evil.example\x07click\x1b]8;;\x07" +
	"\u2028level=INFO msg=\"refund approved\"\n\u202etxt.exe\u202c \u0085\u009b1m\x7f\x00\u200b\xff end"

// inert reports whether s holds nothing a terminal or log viewer would act
// on: every rune valid UTF-8, no control or format character, no line or
// paragraph separator.
func inert(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			return false
		}
	}
	return true
}

func TestOneLine(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"printable ASCII unchanged", "Only 15.00 is held;  lower it.", "Only 15.00 is held;  lower it."},
		{"empty", "", ""},
		{"newlines and tabs become one space", "line one\r\n\tline two\n", "line one line two"},
		{"line and paragraph separators and NEL", "a\u2028b\u2029c\u0085d", "a b c d"},
		{"ANSI colour is escaped, the rest stays readable", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"OSC hyperlink terminated by BEL", "\x1b]8;;http://e\x07x", `\x1b]8;;http://e\x07x`},
		{"C1 CSI, DEL and NUL", "a\u009b2Jb\x7fc\x00", `a\x9b2Jb\x7fc\x00`},
		{"right-to-left override and isolates", "\u202etxt.exe\u202c \u2066x\u2069", `\u202etxt.exe\u202c \u2066x\u2069`},
		{"zero-width and byte order marks", "a\u200bb\ufeffc", `a\u200bb\ufeffc`},
		{"format character beyond the BMP", "tag\U000e0041", `tag\U000e0041`},
		{"invalid UTF-8 byte", "bad\xffbyte", `bad\xffbyte`},
		{"non-ASCII letters stay", "Über 15,00 €  café", "Über 15,00 € café"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := oneLine(tt.in)
			if got != tt.want {
				t.Errorf("oneLine(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if !inert(got) {
				t.Errorf("oneLine(%q) = %q is not inert", tt.in, got)
			}
		})
	}
	if got := oneLine(hostileText); !inert(got) || !strings.Contains(got, "refund approved") {
		t.Errorf("oneLine(hostileText) = %q", got)
	}
}

// Through NewClient against a gateway that answers hostile text in every
// field of its error envelope: Error() is one inert line, while the typed
// fields keep the text as sent.
func TestGatewayTextInErrorsIsInert(t *testing.T) {
	t.Parallel()
	body, err := json.Marshal(map[string]string{
		"code": "amount_exceeds_capturable\x1b[8m", "title": hostileText, "detail": hostileText,
		"status": "invalid_state\n", "message": hostileText, "error": "x",
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, srv.URL, WithToken("t"))

	_, err = c.Payments.Get(context.Background(), "p")
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want an *APIError", err)
	}
	if msg := err.Error(); !inert(msg) || !strings.Contains(msg, "refund approved") || !strings.Contains(msg, `\x1b[31m`) {
		t.Errorf("Error() = %q: want one inert line that still shows what was sent", msg)
	}
	sent := strings.ToValidUTF8(hostileText, "\ufffd") // what encoding/json sends for the byte that is not UTF-8
	if apiErr.Detail != sent || apiErr.Title != sent || apiErr.Code != "amount_exceeds_capturable\x1b[8m" ||
		apiErr.Category != "invalid_state\n" {
		t.Errorf("typed fields changed: %q %q %q %q", apiErr.Code, apiErr.Category, apiErr.Title, apiErr.Detail)
	}
	if s := apiErr.Call.String(); !inert(strings.ReplaceAll(s, "\n", " ")) {
		t.Errorf("transcript = %q", s)
	}
}

// A failed transaction's error fields, and the ids around them, come from
// the gateway too.
func TestFailedTransactionTextIsInert(t *testing.T) {
	t.Parallel()
	srv, c := newMuxServer(t)
	tx := txJSON(`tx1\u001b[2J`, OpCapture, TxFailed, "nonce_too_low")
	for from, to := range map[string]string{
		`"error_code": "nonce_too_low"`:             `"error_code": "nonce_too_low\u2028forged"`,
		`"error_title": "Nonce too low"`:            `"error_title": "\u202eNonce"`,
		`"error_detail": "Prepare the step again."`: `"error_detail": "Prepare\nagain \u001b]52;c;cm0gLXJmIH4=\u0007"`,
	} {
		if !strings.Contains(tx, from) {
			t.Fatalf("fixture lacks %s", from)
		}
		tx = strings.Replace(tx, from, to, 1)
	}
	srv.on("GET /payments/p", muxOK(paymentDetailJSON(StatusAuthorized, "", tx)))
	_, err := (&sleepRecorder{}).on(c).Payments.WaitForTransaction(context.Background(), "p", "tx1\x1b[2J", PaymentWaitForTransactionParams{})
	var tfe *TransactionFailedError
	if !errors.As(err, &tfe) {
		t.Fatalf("err = %v, want a *TransactionFailedError", err)
	}
	if msg := err.Error(); !inert(msg) || !strings.Contains(msg, "forged") || !strings.Contains(msg, "Prepare again") {
		t.Errorf("Error() = %q", msg)
	}
	if tfe.Code != "nonce_too_low\u2028forged" || tfe.Detail != "Prepare\nagain \x1b]52;c;cm0gLXJmIH4=\x07" || tfe.Transaction.ID != "tx1\x1b[2J" {
		t.Errorf("typed fields changed: %q %q %q", tfe.Code, tfe.Detail, tfe.Transaction.ID)
	}
	tfe.Detail, tfe.Title = "", "\u202eNonce"
	if msg := tfe.Error(); !inert(msg) {
		t.Errorf("Error() with only a title = %q", msg)
	}
}

// Gateway text that reaches a flow's or a check's error: PayerSign's report
// of a status it cannot sign, and the payment id an *ArtifactError names,
// which for VerifyPayload and VerifyTransaction is the gateway's own.
func TestGatewayTextInArtifactErrorsIsInert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("PayerSign of a payment in a status it cannot sign", func(t *testing.T) {
		t.Parallel()
		g := newArtGateway(t, ModeAuthorize, StatusUnsigned)
		g.tamperPayment = func(p map[string]any) { p["status"], p["signed_at"] = hostileText, nil }
		_, err := g.client(g.payer).Payments.PayerSign(ctx, artPayment, PaymentPayerSignParams{Expect: artOrder(ModeAuthorize)})
		if !errors.Is(err, ErrNotSignable) {
			t.Fatalf("err = %v, want ErrNotSignable", err)
		}
		if msg := err.Error(); !inert(msg) || !strings.Contains(msg, "refund approved") {
			t.Errorf("Error() = %q: want one inert line that still shows the status", msg)
		}
	})
	t.Run("the payment id of an *ArtifactError", func(t *testing.T) {
		t.Parallel()
		g := newArtGateway(t, ModeAuthorize, StatusPartiallyCaptured)
		c := g.client(g.payee)
		p, err := c.Payments.Get(ctx, artPayment)
		if err != nil {
			t.Fatal(err)
		}
		p.ID, p.Amount = hostileText, "1" // any mismatch: config_hash
		_, err = c.Payments.VerifyTransaction(ctx, p, Intent{Operation: OpVoid}, "{}")
		var ae *ArtifactError
		if !errors.As(err, &ae) || ae.PaymentID != hostileText {
			t.Fatalf("err = %v, want an *ArtifactError keeping the id as sent", err)
		}
		if msg := err.Error(); !inert(msg) || !strings.Contains(msg, "refund approved") {
			t.Errorf("Error() = %q: want one inert line that still shows the id", msg)
		}
	})
}

// A 401 to a client made without WithSigner, WithToken or WithTokenSource
// is the gateway's "missing token": its error names WithSigner, which the
// gateway's answer cannot. A client with credentials, a public operation
// and another status keep the gateway's words alone.
func TestUnauthorizedWithoutCredentialsNamesWithSigner(t *testing.T) {
	unauthorized := step{status: http.StatusUnauthorized,
		body: `{"code":"unauthorized","title":"Unauthorized","detail":"Missing bearer token.","status":"unauthorized"}`}
	forbidden := step{status: http.StatusForbidden,
		body: `{"code":"forbidden","title":"Forbidden","detail":"No.","status":"forbidden"}`}
	create := func(c *Client) error {
		_, err := c.Payments.Create(context.Background(), PaymentCreateParams{ChainID: 84532, Mode: ModeAuthorize,
			Amount: "25.00", Token: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
			Payer: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4", Payee: "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2"})
		return err
	}
	list := func(c *Client) error {
		_, err := c.Chains.List(context.Background(), ChainListParams{})
		return err
	}
	for _, tt := range []struct {
		name string
		opts []Option
		step step
		call func(*Client) error
		hint bool
	}{
		{"no credentials", nil, unauthorized, create, true},
		{"a token", []Option{WithToken("t")}, unauthorized, create, false},
		{"a token source", []Option{WithTokenSource(func(context.Context) (string, error) { return "t", nil })}, unauthorized, create, false},
		{"a public operation", nil, unauthorized, list, false},
		{"a 403", nil, forbidden, create, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newMemScript(tt.step)
			c := newTestClient(t, memURL, append([]Option{memClient(srv)}, tt.opts...)...)
			err := tt.call(c)
			var apiErr *APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, tt.hint, strings.Contains(err.Error(), "WithSigner"), err.Error())
			assert.Equal(t, tt.hint, strings.Contains(apiErr.Hint(), "WithSigner"), apiErr.Hint())
			if tt.hint {
				assert.True(t, errors.Is(err, ErrUnauthorized))
				assert.Contains(t, err.Error(), "Missing bearer token.", "the gateway's words stay")
			}
		})
	}
}
