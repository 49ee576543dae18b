package rail0

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 22, items 2 and 3: the server's own instruction (its Retry-After)
// is what a call is measured against, end to end through NewClient.

// refusedAtOnce calls c and checks the call comes back at once, unsent, as
// a 429 whose RetryAfter is what is left of the server's instruction.
func refusedAtOnce(t *testing.T, c *Client, srv *scriptServer, left time.Duration) {
	t.Helper()
	before, start := len(srv.requests()), time.Now()
	_, err := c.Payments.Get(context.Background(), "p2")
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusTooManyRequests, apiErr.StatusCode)
	assert.True(t, apiErr.NotSent)
	assert.ErrorIs(t, err, ErrRateLimited)
	assert.Equal(t, left, apiErr.RetryAfter, "what is left of the server's instruction")
	assert.Equal(t, ReasonLimiter, apiErr.Call.NotRetried(), "the transcript says why")
	require.NotEmpty(t, apiErr.Call.Limiter)
	lw := apiErr.Call.Limiter[len(apiErr.Call.Limiter)-1]
	assert.True(t, lw.Refused && lw.Cooldown)
	assert.Equal(t, left, lw.Wait)
	assert.Zero(t, time.Since(start), "a fresh call never waits for a refusal")
	assert.Len(t, srv.requests(), before, "nothing was sent")
}

// Item 2, the seed: a Retry-After of 600 s, with an allowance of 3 min and
// a cap of 60 s. The call that got it comes back at once (the capped 60 s
// would end in another 429), and so does every later call on the
// partition that cannot wait the rest of it, for as long as the server
// said and no longer. A call that can wait it out goes as the capped
// cooldown allows, and a call with RetryOn429 off still goes to the server.
func TestRetryAfterBeyondTheAllowanceClosesThePartition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, viaPipe := newPipeScript(t, throttled("600"), step{status: 200, body: paymentBody})
		ev := &eventLog{}
		c := newTestClient(t, srv.URL, viaPipe, WithRetryOn429(true), WithObserver(ev), withRand(half))
		start := time.Now()

		_, err := c.Payments.Get(context.Background(), "p1")

		var first *APIError
		require.ErrorAs(t, err, &first)
		assert.False(t, first.NotSent, "that 429 came from the server")
		assert.Equal(t, ReasonAllowance, first.Call.NotRetried())
		refusedAtOnce(t, c, srv, 600*time.Second)
		time.Sleep(5 * time.Minute)
		refusedAtOnce(t, c, srv, 5*time.Minute)

		// A request/response handler decides itself: it still goes.
		_, err = c.With(WithRetryOn429(false)).Payments.Get(context.Background(), "p3")
		require.NoError(t, err)
		// A job that may wait longer than the rest goes as the capped
		// cooldown allows: at once, its 60 s being over.
		before := time.Now()
		_, err = c.With(WithMaxRetryWait(15*time.Minute)).Payments.Get(context.Background(), "p4")
		require.NoError(t, err)
		assert.Zero(t, time.Since(before))
		assert.Len(t, srv.requests(), 3)

		// A call that may not wait at all is refused until the last
		// moment of the instruction, and no longer.
		never := c.With(WithMaxRetryWait(0))
		time.Sleep(time.Until(start.Add(600*time.Second - time.Millisecond)))
		refusedAtOnce(t, never, srv, time.Millisecond)
		time.Sleep(time.Millisecond)
		_, err = never.Payments.Get(context.Background(), "p5")
		require.NoError(t, err, "the server's instruction is over")
		assert.Len(t, srv.requests(), 4)
		assert.Equal(t, map[RetryReason]int{ReasonAllowance: 1, ReasonLimiter: 3}, ev.refusals())
	})
}

// Item 2, the cap's purpose: an absurd Retry-After (a year) must not park
// the client. The partition stays closed for ten RetryAfterCaps at most:
// then a call goes to the server again (and would learn a new instruction
// from its answer).
func TestAbsurdRetryAfterClosesForTenCapsAtMost(t *testing.T) {
	for _, cap := range []time.Duration{DefaultRetryAfterCap, 2 * time.Minute} {
		t.Run(fmt.Sprint("cap ", cap), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv, viaPipe := newPipeScript(t, throttled("31536000"), step{status: 200, body: paymentBody})
				c := newTestClient(t, srv.URL, viaPipe, WithRetryOn429(true), WithRetryAfterCap(cap), withRand(half))
				_, err := c.Payments.Get(context.Background(), "p1")
				require.ErrorIs(t, err, ErrRateLimited)

				refusedAtOnce(t, c, srv, 10*cap)
				time.Sleep(10 * cap)
				_, err = c.Payments.Get(context.Background(), "p5")
				require.NoError(t, err)
				assert.Len(t, srv.requests(), 2)
			})
		})
	}
}

// Item 3, the seed: every 429 says Retry-After: 1 and the allowance is
// 2.5 s. The first retry waits 1.05 s (the instruction plus half its tenth,
// the jitter draw being 0.5). The second 429 proves the header short and
// the limiter doubles the cooldown to 2 s, which no longer fits the 1.45 s
// left; the server's own instruction (1 s) does. The wait is clamped to what is left (of the
// deadline, less a round trip), never below the instruction, the attempt's
// reason says so, and the last try goes through in the gateway's next
// window, before the lengthened cooldown ends. It was refused with 1.5 s
// left.
func TestDistrustedWaitIsClampedToWhatIsLeft(t *testing.T) {
	const ms = time.Millisecond
	for _, tt := range []struct {
		name     string
		deadline time.Duration // zero: none
		wait     time.Duration // the clamped wait
	}{
		{"allowance", 0, 1450 * ms},
		{"deadline", 2600 * ms, 1549 * ms}, // 1.55 s left, less a round trip (1 ms at least)
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newFixedWindow(1, 2*time.Second)
				g.retryAfter = "1"
				maxWait := 2500 * ms
				if tt.deadline > 0 {
					maxWait = DefaultMaxRetryWait
				}
				c := newTestClient(t, "http://gateway.test", WithHTTPClient(pipeClient(t, g)), WithRetryOn429(true),
					WithMaxRetryWait(maxWait), withRand(half))
				_, err := c.Payments.Get(context.Background(), "p0")
				require.NoError(t, err)
				ctx := context.Background()
				if tt.deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.deadline)
					defer cancel()
				}

				p, err := c.Payments.Get(ctx, "p1")

				require.NoError(t, err)
				call := p.Response.Call
				require.Len(t, call.Attempts, 3, call.String())
				a := call.Attempts
				assert.Equal(t, ReasonRateLimited, a[0].Reason)
				assert.Equal(t, ReasonRetryAfterDistrustedClamped, a[1].Reason, call.String())
				assert.True(t, a[1].Retry && a[1].ServerWait)
				assert.Equal(t, tt.wait, a[1].Wait)
				assert.True(t, a[1].PartitionState.Distrusted)
				assert.Equal(t, a[1].Sent.Add(tt.wait), a[2].Sent, "the limiter let the clamped retry go")
				assert.Less(t, a[2].Sent, a[1].PartitionState.CooldownUntil, "before the lengthened cooldown ends")
				assert.GreaterOrEqual(t, a[2].Sent.Sub(a[1].Sent), a[1].RetryAfter, "never before the instruction")
				assert.Equal(t, http.StatusOK, a[2].StatusCode)
				assert.Zero(t, g.earlyRetries(0)-1, "only the retry the short header caused is early")
			})
		})
	}
}
