package rail0

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// policyRow is one scripted scenario, run twice: its first answer through
// the pure policy (decide), and all its answers end to end through NewClient
// against a real server. A unit test alone passes with the wiring missing;
// the end-to-end run alone cannot say which rule acted.
type policyRow struct {
	name  string
	op    *operation // the operation the row's request performs
	args  pathArgs   // its path arguments
	key   string     // Idempotency-Key, for POSTs
	steps []step
	opts  []Option
	// warmup calls of the same request go first on the client, each
	// answered by the next step; what they teach the client's limiter
	// acts on the row's call, which takes the steps after them.
	warmup   int
	attempts int // the row's call's requests
	// outcome is "ok", "api", "unknown" or "transport".
	outcome string
	status  int
	// notSent: the row's call comes back unsent, refused by the limiter
	// (Call.NotRetried is ReasonLimiter). Its rule is the limiter's, not
	// decide's: package ratelimit's TestReserveWithinInstructions.
	notSent bool
	reasons []RetryReason
}

var policyRows = []policyRow{
	{name: "429 with retries off is reported", op: getPayment, args: pathArgs{"p1"}, steps: []step{throttled("60")},
		attempts: 1, outcome: "api", status: 429, reasons: []RetryReason{ReasonRetryOn429Off}},
	{name: "429 retried on GET", op: getPayment, args: pathArgs{"p1"}, steps: []step{throttled("60"), {status: 200, body: `{}`}},
		opts: []Option{WithRetryOn429(true)}, attempts: 2, outcome: "ok", reasons: []RetryReason{ReasonRateLimited}},
	{name: "429 retried on POST without a key", op: submitPaymentOperation, args: pathArgs{"p1", "capture"}, steps: []step{throttled("1"), {status: 201, body: `{}`}},
		opts: []Option{WithRetryOn429(true)}, attempts: 2, outcome: "ok", reasons: []RetryReason{ReasonRateLimited}},
	{name: "429 without Retry-After is a guess", op: getPayment, args: pathArgs{"p1"}, steps: []step{throttled(""), {status: 200, body: `{}`}},
		opts: []Option{WithRetryOn429(true)}, attempts: 2, outcome: "ok", reasons: []RetryReason{ReasonRateLimitedGuess}},
	{name: "429 that does not fit the allowance", op: getPayment, args: pathArgs{"p1"}, steps: []step{throttled("60")},
		opts: []Option{WithRetryOn429(true), WithMaxRetryWait(0)}, attempts: 1, outcome: "api", status: 429,
		reasons: []RetryReason{ReasonAllowance}},
	{name: "429 asking longer than the allowance is refused, not capped", op: getPayment, args: pathArgs{"p1"}, steps: []step{throttled("600"), {status: 200, body: `{}`}},
		opts: []Option{WithRetryOn429(true)}, attempts: 1, outcome: "api", status: 429,
		reasons: []RetryReason{ReasonAllowance}},
	{name: "503 with Retry-After retried as a server wait", op: getPayment, args: pathArgs{"p1"},
		steps:    []step{{status: 503, header: map[string]string{"Retry-After": "1"}}, {status: 200, body: `{}`}},
		attempts: 2, outcome: "ok", reasons: []RetryReason{ReasonServerError}},
	{name: "503 asking longer than the allowance is refused", op: getPayment, args: pathArgs{"p1"},
		steps:    []step{{status: 503, header: map[string]string{"Retry-After": "600"}}, {status: 200, body: `{}`}},
		attempts: 1, outcome: "api", status: 503, reasons: []RetryReason{ReasonAllowance}},
	{name: "503 retried on GET", op: getPayment, args: pathArgs{"p1"}, steps: []step{{status: 503}, {status: 200, body: `{}`}},
		attempts: 2, outcome: "ok", reasons: []RetryReason{ReasonServerError}},
	{name: "503 on POST without a key is not repeated", op: submitPaymentOperation, args: pathArgs{"p1", "capture"}, steps: []step{{status: 503}, {status: 201, body: `{}`}},
		attempts: 1, outcome: "unknown", status: 503, reasons: []RetryReason{ReasonUnsafe}},
	{name: "503 on POST with a key is retried", op: createPayment, key: "k", steps: []step{{status: 503}, {status: 201, body: `{}`}},
		attempts: 2, outcome: "ok", reasons: []RetryReason{ReasonServerError}},
	{name: "500s until MaxRetries", op: getPayment, args: pathArgs{"p1"}, steps: []step{{status: 500}},
		attempts: 3, outcome: "api", status: 500,
		reasons: []RetryReason{ReasonServerError, ReasonServerError, ReasonMaxRetries}},
	{name: "connection closed after a GET was written", op: getPayment, args: pathArgs{"p1"}, steps: []step{{hangUp: true}, {status: 200, body: `{}`}},
		attempts: 2, outcome: "ok", reasons: []RetryReason{ReasonTransport}},
	{name: "a GET whose connection keeps breaking", op: getPayment, args: pathArgs{"p1"}, steps: []step{{hangUp: true}},
		opts: []Option{WithMaxRetries(1)}, attempts: 2, outcome: "transport",
		reasons: []RetryReason{ReasonTransport, ReasonMaxRetries}},
	{name: "connection closed after a POST was written", op: submitPaymentOperation, args: pathArgs{"p1", "capture"}, steps: []step{{hangUp: true}, {status: 201, body: `{}`}},
		attempts: 1, outcome: "unknown", reasons: []RetryReason{ReasonUnsafe}},
	{name: "520 on a capture: outcome unknown", op: submitPaymentOperation, args: pathArgs{"p1", "capture"}, steps: []step{{status: 520}, {status: 202, body: `{}`}},
		attempts: 1, outcome: "unknown", status: 520, reasons: []RetryReason{ReasonUnsafe}},
	{name: "524 on a capture: outcome unknown", op: submitPaymentOperation, args: pathArgs{"p1", "capture"}, steps: []step{{status: 524}, {status: 202, body: `{}`}},
		attempts: 1, outcome: "unknown", status: 524, reasons: []RetryReason{ReasonUnsafe}},
	{name: "507 on a capture: outcome unknown", op: submitPaymentOperation, args: pathArgs{"p1", "capture"}, steps: []step{{status: 507}, {status: 202, body: `{}`}},
		attempts: 1, outcome: "unknown", status: 507, reasons: []RetryReason{ReasonUnsafe}},
	{name: "507 on a read is definitive", op: getPayment, args: pathArgs{"p1"}, steps: []step{{status: 507}, {status: 200, body: `{}`}},
		attempts: 1, outcome: "api", status: 507},
	{name: "502 on rotate_secret: outcome unknown", op: rotateWebhookSecret, args: pathArgs{"w1"},
		steps: []step{{status: 502}, {status: 200, body: `{}`}}, attempts: 1, outcome: "unknown", status: 502,
		reasons: []RetryReason{ReasonUnsafe}},
	{name: "502 on enable is retried", op: enableWebhook, args: pathArgs{"w1"},
		steps: []step{{status: 502}, {status: 200, body: `{}`}}, attempts: 2, outcome: "ok",
		reasons: []RetryReason{ReasonServerError}},
	{name: "502 on a prepare is retried", op: preparePaymentOperation, args: pathArgs{"p1", "capture"},
		steps: []step{{status: 502}, {status: 200, body: `{}`}}, attempts: 2, outcome: "ok",
		reasons: []RetryReason{ReasonServerError}},
	{name: "502 on a report by hash is retried", op: submitPaymentOperationByHash, args: pathArgs{"p1", "capture"},
		steps: []step{{status: 502}, {status: 202, body: `{}`}}, attempts: 2, outcome: "ok",
		reasons: []RetryReason{ReasonServerError}},
	{name: "a definitive 422", op: submitPaymentOperation, args: pathArgs{"p1", "capture"}, steps: []step{{status: 422,
		body: `{"code":"invalid_amount","title":"Invalid amount","detail":"Not a valid amount.","status":"invalid_amount"}`}},
		attempts: 1, outcome: "api", status: 422},
	// Issue 22, item 2, the seed: a Retry-After of 600 s (allowance 3 min,
	// cap 60 s) closes the partition for the calls that cannot wait the
	// rest of it: the next call comes back at once, unsent.
	{name: "after a Retry-After beyond the allowance, the next call is not sent", op: getPayment, args: pathArgs{"p1"},
		steps: []step{throttled("600"), {status: 200, body: `{}`}}, warmup: 1,
		opts: []Option{WithRetryOn429(true), WithRetryAfterCap(DefaultRetryAfterCap)}, attempts: 0, outcome: "api", status: 429, notSent: true},
	// Issue 22, item 3, the seed: Retry-After: 1 on every 429, a 2.5 s
	// allowance. The second 429 proves the header short (one call went
	// through before); the doubled wait is clamped to the 1.5 s left.
	{name: "a distrusted wait is clamped to what is left", op: getPayment, args: pathArgs{"p1"},
		steps: []step{{status: 200, body: `{}`}, throttled("1"), throttled("1"), {status: 200, body: `{}`}}, warmup: 1,
		opts:     []Option{WithRetryOn429(true), WithMaxRetryWait(2500 * time.Millisecond), WithRetryAfterCap(DefaultRetryAfterCap)},
		attempts: 3, outcome: "ok", reasons: []RetryReason{ReasonRateLimited, ReasonRetryAfterDistrustedClamped}},
	{name: "a 422 without the gateway's envelope on a submit", op: submitPaymentOperation, args: pathArgs{"p1", "capture"}, steps: []step{{status: 422, body: `{"code":"invalid_amount"}`}},
		attempts: 1, outcome: "unknown", status: 422},
}

// The rows' first answers through the pure policy.
func TestPolicyRowsDecide(t *testing.T) {
	for _, row := range policyRows {
		t.Run(row.name, func(t *testing.T) {
			cfg := config{retryAfterCap: DefaultRetryAfterCap}
			for _, opt := range row.opts {
				require.NoError(t, opt(&cfg))
			}
			p := cfg.call.apply(policy{retryAfterCap: cfg.retryAfterCap, maxRetryWait: DefaultMaxRetryWait,
				maxRetries: DefaultMaxRetries, base: defaultBackoffBase})
			if row.notSent {
				return // no answer to decide on: the limiter refused the call
			}
			first := row.steps[row.warmup]
			o := outcome{op: classOf(row.op.method, row.op), idempotencyKey: row.key != "", status: first.status, failed: first.hangUp}
			if ra, ok := parseRetryAfter(first.header["Retry-After"], time.Now()); ok {
				o.retryAfter, o.hasRetryAfter = ra, true
			}
			d := decide(p, o, budget{attempts: 1, deadline: maxDuration, tokens: retryBudgetSize}, 0.5)
			if len(row.reasons) == 0 {
				assert.False(t, d.relevant, "no retry decision expected")
				return
			}
			assert.Equal(t, row.reasons[0], d.reason)
			assert.Equal(t, row.attempts > 1, d.retry)
		})
	}
}

// The same rows end to end: the headers cross a real transport, and the
// hooks must be wired for the outcomes to match.
func TestPolicyRowsEndToEnd(t *testing.T) {
	for _, row := range policyRows {
		t.Run(row.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv, viaPipe := newPipeScript(t, row.steps...)
				ev := &eventLog{}
				opts := append([]Option{viaPipe, WithObserver(ev), WithRetryAfterCap(20 * time.Millisecond), withRand(func() float64 { return 0.5 })}, row.opts...)
				c := newTestClient(t, srv.URL, opts...)
				var body any
				if row.op.method == http.MethodPost {
					body = map[string]string{"amount": "1.00"}
				}
				r := &request{op: row.op, args: row.args, body: body, idempotencyKey: row.key}
				for range row.warmup {
					c.do(context.Background(), r, nil)
				}
				warm, heard := len(srv.requests()), len(ev.all())
				_, err := c.do(context.Background(), r, nil)

				assert.Len(t, srv.requests()[warm:], row.attempts)
				var apiErr *APIError
				var unknown *OutcomeUnknownError
				var transport *TransportError
				switch row.outcome {
				case "ok":
					assert.NoError(t, err)
				case "api":
					require.ErrorAs(t, err, &apiErr)
					assert.Equal(t, row.status, apiErr.StatusCode)
					assert.False(t, errors.As(err, &unknown))
					assert.Equal(t, row.notSent, apiErr.NotSent)
					if row.notSent {
						assert.Equal(t, ReasonLimiter, apiErr.Call.NotRetried())
					}
				case "unknown":
					require.ErrorAs(t, err, &unknown)
					assert.ErrorIs(t, err, ErrOutcomeUnknown)
					if row.status != 0 {
						require.ErrorAs(t, err, &apiErr)
						assert.Equal(t, row.status, apiErr.StatusCode)
					}
				case "transport":
					require.ErrorAs(t, err, &transport)
				}
				var reasons []RetryReason
				for _, e := range ev.all()[heard:] {
					reasons = append(reasons, e.Reason)
				}
				assert.Equal(t, row.reasons, reasons)
			})
		})
	}
}
