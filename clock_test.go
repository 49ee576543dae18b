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

// Issue 22 item 4: a client whose clock is ten minutes off the gateway's
// signs in, because Issued At is dated by the clock the gateway's Date
// headers tell (the nonce's answer, before the message is built). It
// failed with 422 invalid_siwe ("Issued At is too far").
func TestSignInDatesIssuedAtByTheGatewayClock(t *testing.T) {
	for _, offset := range []time.Duration{10 * time.Minute, -10 * time.Minute, 3 * time.Hour, 0} {
		t.Run(fmt.Sprint("gateway ", offset), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newSIWEGateway(t, offset)
				c := newTestClient(t, g.url, g.opt, WithSigner(newSIWESigner()))
				sess, err := c.Session(context.Background())
				require.NoError(t, err)
				assert.True(t, sess.ExpiresAt.After(g.now()))
				assert.InDelta(t, float64(offset), float64(c.ClockOffset()), float64(time.Second))
			})
		})
	}
}

// The session is replaced before it expires on the gateway's clock: a job
// whose clock is ten minutes behind, calling once a minute, never sends a
// token the gateway has seen expire. It sent one ten minutes' worth of
// calls late, each answered 401 and then signed in again.
func TestTokenSourceRefreshesByTheGatewayClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newSIWEGateway(t, 10*time.Minute)
		c := newTestClient(t, g.url, g.opt, WithSigner(newSIWESigner()))
		ctx := context.Background()
		for minute := range 95 {
			_, err := c.Payments.Get(ctx, "p")
			require.NoError(t, err, "minute %d", minute)
			time.Sleep(time.Minute)
		}
		logins, expired := g.counts()
		assert.Zero(t, expired, "a call was sent with a token the gateway had seen expire")
		assert.Equal(t, 4, logins, "one sign-in per 28 minutes (30-minute sessions, 2-minute margin)")
	})
}

// Issue 22 item 4: the hint of an invalid_siwe names the clock when the
// Date headers show it far off, and the message layout otherwise.
func TestInvalidSIWEHintNamesTheClock(t *testing.T) {
	for _, tc := range []struct {
		offset time.Duration
		want   string
	}{
		{10 * time.Minute, "behind the gateway's"},
		{-time.Hour, "ahead of the gateway's"},
		{0, "build the sign-in message in the exact EIP-4361 layout"},
		{10 * time.Second, "build the sign-in message in the exact EIP-4361 layout"},
	} {
		t.Run(tc.offset.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newSIWEGateway(t, tc.offset)
				c := newTestClient(t, g.url, g.opt)
				signer := newSIWESigner()
				n, err := c.Auth.CreateNonce(context.Background())
				require.NoError(t, err)
				// A message built by hand with the local clock, as a caller
				// that signs elsewhere might.
				m := SIWEMessage{Domain: "gateway.test", Address: signer.Address(), Statement: StatementLogin,
					URI: g.url, ChainID: 1, Nonce: n.Nonce, IssuedAt: time.Now().Add(-6 * time.Minute)}
				sig, err := signMessage(context.Background(), signer, m.String())
				require.NoError(t, err)
				_, err = c.Auth.Verify(context.Background(), AuthVerifyParams{Message: m.String(), Signature: sig})
				var apiErr *APIError
				require.ErrorAs(t, err, &apiErr)
				assert.Equal(t, CodeInvalidSIWE, apiErr.Code)
				assert.Contains(t, apiErr.Hint(), tc.want)
				if tc.offset.Abs() >= clockHintOffset {
					assert.Contains(t, apiErr.Hint(), "the local clock is about "+tc.offset.Abs().String()[:2])
				}
				assert.Contains(t, apiErr.Hint(), "EIP-4361", "the layout stays in the hint")
			})
		})
	}
}

// An X-RateLimit-Reset given as a Unix time is on the gateway's clock: it
// is read against the gateway's time, not the local one.
func TestRateLimitResetReadsTheGatewayClock(t *testing.T) {
	// Not in a bubble: a Unix time is told from delta seconds by its size,
	// and the bubble's clock starts in 2000.
	gateway := time.Now().Add(10 * time.Minute)
	s := newScriptServer(t, step{status: http.StatusTooManyRequests, body: rateLimitedBody, header: map[string]string{
		"Date":                  gateway.UTC().Format(http.TimeFormat),
		"X-RateLimit-Limit":     "300",
		"X-RateLimit-Remaining": "0",
		"X-RateLimit-Reset":     fmt.Sprint(gateway.Add(30 * time.Second).Unix()),
	}})
	c := newTestClient(t, s.URL)
	_, err := c.Health.Get(context.Background())
	var apiErr *APIError
	require.ErrorAs(t, err, &apiErr)
	// The Date says the second, not the instant: within a second and a half.
	require.NotNil(t, apiErr.Call)
	require.NotEmpty(t, apiErr.Call.Attempts)
	require.NotNil(t, apiErr.Call.Attempts[0].RateLimit)
	assert.InDelta(t, float64(30*time.Second), float64(apiErr.Call.Attempts[0].RateLimit.Reset), float64(1500*time.Millisecond))
}

// The estimator, answer by answer: each Date bounds the offset to
// [Date − arrival, Date + 1 s − departure]; the estimate is the middle of
// what the answers agree on; one answer that disagrees moves nothing, and
// two in a row move it; nonsense is ignored; within two seconds the
// clocks agree.
func TestGatewayClock(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	type answer struct {
		date     string
		sent     time.Duration // after t0
		arrived  time.Duration
		estimate time.Duration // offset() after it
	}
	date := func(d time.Duration) string { return t0.Add(d).Format(http.TimeFormat) }
	for _, tc := range []struct {
		name    string
		answers []answer
	}{
		{"none", nil},
		{"ten minutes ahead, 100 ms round trip", []answer{
			{date(10 * time.Minute), 0, 100 * time.Millisecond, 10*time.Minute + 450*time.Millisecond},
		}},
		{"answers narrow it", []answer{
			{date(10 * time.Minute), 0, 800 * time.Millisecond, 10*time.Minute + 100*time.Millisecond},
			{date(10*time.Minute + 2*time.Second), 1500 * time.Millisecond, 1600 * time.Millisecond, 10*time.Minute + 700*time.Millisecond},
		}},
		{"one outlier moves nothing", []answer{
			{date(-10 * time.Minute), 0, 0, -10*time.Minute + 500*time.Millisecond},
			{date(time.Hour), time.Second, time.Second, -10*time.Minute + 500*time.Millisecond},
			{date(-10*time.Minute + 2*time.Second), 2 * time.Second, 2 * time.Second, -10*time.Minute + 500*time.Millisecond},
		}},
		{"two in a row move it", []answer{
			{date(-10 * time.Minute), 0, 0, -10*time.Minute + 500*time.Millisecond},
			{date(5 * time.Minute), time.Second, time.Second, -10*time.Minute + 500*time.Millisecond},
			{date(5*time.Minute + time.Second), 2 * time.Second, 2 * time.Second, 5*time.Minute - 500*time.Millisecond},
		}},
		{"in sync", []answer{{date(0), 0, 50 * time.Millisecond, 0}}},
		{"within the dead band", []answer{{date(time.Second), 0, 0, 0}}},
		{"malformed, absent, beyond a day", []answer{
			{"yesterday", 0, 0, 0},
			{"", 0, 0, 0},
			{date(25 * time.Hour), 0, 0, 0},
			{date(-25 * time.Hour), 0, 0, 0},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g gatewayClock
			assert.Zero(t, g.offset())
			for i, a := range tc.answers {
				h := http.Header{}
				if a.date != "" {
					h.Set("Date", a.date)
				}
				g.sample(h, t0.Add(a.sent), t0.Add(a.arrived))
				assert.Equal(t, a.estimate, g.offset(), "after answer %d", i+1)
			}
		})
	}
}
