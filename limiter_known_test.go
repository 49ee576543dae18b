package rail0

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 27 item 3: one client serves a handler (RetryOn429 off) and a job.
// Once the gateway said the partition is closed, the handler's calls are
// answered at once, not sent, with the time actually left as RetryAfter,
// until the instruction runs out; then they go to the gateway again. The
// transcript, the observers and the log say why (ReasonKnownClosed).
func TestHandlerIsAnsweredLocallyWhileTheDoorIsShut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, opt := newPipeScript(t, throttled("30"), step{status: http.StatusOK, body: paymentBody})
		var logs bytes.Buffer
		events := &eventLog{}
		c := newTestClient(t, srv.URL, opt, WithToken("tok"), WithObserver(events),
			WithLogger(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))))
		handler := c.With(WithRetryOn429(false), WithLabel("handler"))
		ctx := context.Background()

		_, err := handler.Payments.Get(ctx, "p1")
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		require.False(t, apiErr.NotSent, "the first 429 is the gateway's")
		assert.Equal(t, 30*time.Second, apiErr.RetryAfter)

		time.Sleep(10 * time.Second)
		start := time.Now()
		for i := range 50 {
			_, err = handler.Payments.Get(ctx, "p2")
			require.ErrorIs(t, err, ErrRateLimited, "call %d", i)
		}
		assert.Zero(t, time.Since(start), "the handler's calls were held")
		assert.Len(t, srv.requests(), 1, "the handler knocked on a door the gateway said is shut")
		require.ErrorAs(t, err, &apiErr)
		assert.True(t, apiErr.NotSent)
		assert.Equal(t, 20*time.Second, apiErr.RetryAfter, "RetryAfter is the time actually left")
		call := CallOf(err)
		require.NotNil(t, call)
		assert.Empty(t, call.Attempts)
		assert.Equal(t, ReasonKnownClosed, call.NotRetried())
		assert.Equal(t, "handler", call.Label)
		assert.Contains(t, call.String(), "known_closed")
		assert.Equal(t, 50, events.closedLocally(), "the observer heard each local answer with its reason")
		assert.Equal(t, 50, strings.Count(logs.String(), `"reason":"known_closed"`), "each local answer is logged with its reason")

		// The instruction ran out: the next call goes to the gateway.
		time.Sleep(20 * time.Second)
		_, err = handler.Payments.Get(ctx, "p3")
		require.NoError(t, err)
		assert.Len(t, srv.requests(), 2)
	})
}

// The door is the client's: a 429 the job's view got shuts it for the
// handler's view, and so does an exhausted quota (RateLimit remaining 0)
// until its reset. An absurd Retry-After shuts it for ten RetryAfterCaps
// at most. An answer to a request sent after the closure proves it over.
func TestTheDoorIsTheClients(t *testing.T) {
	get := func(c *Client, id string) error {
		_, err := c.Payments.Get(context.Background(), id)
		return err
	}
	notSent := func(t *testing.T, err error) time.Duration {
		t.Helper()
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		require.True(t, apiErr.NotSent, "sent: %v", err)
		return apiErr.RetryAfter
	}
	t.Run("a job's 429", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, opt := newPipeScript(t, throttled("8"), step{status: http.StatusOK, body: paymentBody})
			c := newTestClient(t, srv.URL, opt, WithToken("tok"), WithRetryAfterCap(time.Millisecond))
			job, handler := c.With(WithRetryOn429(true)), c.With(WithRetryOn429(false))
			require.NoError(t, get(job, "j1"), "the job retries its 429 after the cap")
			// The job's retry went through after the 429: the door is open.
			require.NoError(t, get(handler, "h1"))
			assert.Len(t, srv.requests(), 3)
		})
	})
	t.Run("a 429 to another view", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, opt := newPipeScript(t, throttled("8"), step{status: http.StatusOK, body: paymentBody})
			c := newTestClient(t, srv.URL, opt, WithToken("tok"))
			require.ErrorIs(t, get(c, "j1"), ErrRateLimited)
			time.Sleep(3 * time.Second)
			assert.Equal(t, 5*time.Second, notSent(t, get(c.With(WithLabel("handler")), "h1")))
			assert.Len(t, srv.requests(), 1)
		})
	})
	t.Run("an exhausted quota", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, opt := newPipeScript(t,
				step{status: http.StatusOK, body: paymentBody, header: map[string]string{"RateLimit": `"default";r=0;t=5`}},
				step{status: http.StatusOK, body: paymentBody})
			c := newTestClient(t, srv.URL, opt, WithToken("tok"))
			require.NoError(t, get(c, "p1"))
			time.Sleep(2 * time.Second)
			assert.Equal(t, 3*time.Second, notSent(t, get(c, "p2")))
			time.Sleep(3 * time.Second)
			require.NoError(t, get(c, "p3"))
			assert.Len(t, srv.requests(), 2)
		})
	})
	t.Run("an absurd quota reset", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			// A 200 is no refusal: its reset shuts the door for the cap at
			// most, as the limiter closes the partition (the review found a
			// day's reset shut a handler out for ten caps).
			srv, opt := newPipeScript(t,
				step{status: http.StatusOK, body: paymentBody, header: map[string]string{"RateLimit": `"default";r=0;t=86400`}},
				step{status: http.StatusOK, body: paymentBody})
			c := newTestClient(t, srv.URL, opt, WithToken("tok"))
			require.NoError(t, get(c, "p1"))
			assert.Equal(t, DefaultRetryAfterCap, notSent(t, get(c, "p2")))
			time.Sleep(DefaultRetryAfterCap)
			require.NoError(t, get(c, "p3"))
			assert.Len(t, srv.requests(), 2)
		})
	})
	t.Run("an absurd Retry-After", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, opt := newPipeScript(t, throttled("31536000"), step{status: http.StatusOK, body: paymentBody})
			c := newTestClient(t, srv.URL, opt, WithToken("tok"))
			var apiErr *APIError
			require.ErrorAs(t, get(c, "p1"), &apiErr)
			assert.Equal(t, 365*24*time.Hour, apiErr.RetryAfter, "the caller still reads the gateway's word")
			assert.Equal(t, 10*DefaultRetryAfterCap, notSent(t, get(c, "p2")), "remembered for ten caps at most")
			time.Sleep(10 * DefaultRetryAfterCap)
			require.NoError(t, get(c, "p3"))
		})
	})
	t.Run("another partition", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, opt := newPipeScript(t, throttled("30"), step{status: http.StatusOK, body: paymentBody})
			c := newTestClient(t, srv.URL, opt, WithToken("tok"))
			require.ErrorIs(t, get(c, "p1"), ErrRateLimited)
			_, err := c.Chains.List(context.Background(), ChainListParams{}) // public: another budget
			assert.NotErrorIs(t, err, ErrRateLimited)
			assert.Len(t, srv.requests(), 2)
		})
	})
}

// closedLocally counts the calls the observer saw end on the client's own
// answer (ReasonKnownClosed).
func (l *eventLog) closedLocally() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.known
}

// Issue 29 item 9: Client.RateLimits tells, per partition, what the client
// knows, without a request: the configured budget, a 429's closure, what
// RateLimit fields advertised. Partition names never hold the token.
func TestRateLimitsWithoutARequest(t *testing.T) {
	const token = "tok-SECRET-ratelimits"
	session := partitionFor(token)
	t.Run("pacing", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, opt := newPipeScript(t, step{status: http.StatusOK, body: paymentBody})
			c := newTestClient(t, srv.URL, opt, WithToken(token), WithPacing(PublishedLimits()))
			assert.Equal(t, []RateLimitState{{Partition: "public", Budget: Budget{Limit: 100, Period: time.Minute}, Source: BudgetConfigured}},
				c.RateLimits(), "before any request")
			assert.Empty(t, srv.requests())
			_, err := c.Payments.Get(context.Background(), "p1")
			require.NoError(t, err)
			got := c.RateLimits()
			require.Len(t, got, 2)
			assert.Equal(t, "public", got[0].Partition)
			assert.Equal(t, RateLimitState{Partition: session, Budget: Budget{Limit: 300, Period: time.Minute}, Source: BudgetConfigured,
				Updated: time.Now()}, got[1])
			assert.Len(t, srv.requests(), 1, "RateLimits sent a request")
		})
	})
	t.Run("a 429", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, opt := newPipeScript(t, throttled("30"), step{status: http.StatusOK, body: paymentBody})
			c := newTestClient(t, srv.URL, opt, WithToken(token))
			assert.Empty(t, c.RateLimits(), "a client that neither paces nor heard anything knows nothing")
			_, err := c.Payments.Get(context.Background(), "p1")
			require.ErrorIs(t, err, ErrRateLimited)
			got := c.RateLimits()
			require.Len(t, got, 1)
			assert.Equal(t, session, got[0].Partition)
			assert.NotContains(t, got[0].Partition, token)
			assert.Equal(t, time.Now().Add(30*time.Second), got[0].ClosedUntil)
			assert.False(t, got[0].HasRemaining)
			if paced(got[0].Budget) {
				assert.Equal(t, BudgetLearned, got[0].Source, "a budget the limiter learned from the 429")
			}
			time.Sleep(30 * time.Second)
			assert.Zero(t, c.RateLimits()[0].ClosedUntil, "the instruction ran out")
			assert.Len(t, srv.requests(), 1)
		})
	})
	t.Run("RateLimit fields", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, opt := newPipeScript(t, step{status: http.StatusOK, body: paymentBody, header: map[string]string{
				"RateLimit-Policy": `"default";q=10;w=60`, "RateLimit": `"default";r=3;t=20`}})
			c := newTestClient(t, srv.URL, opt, WithToken(token), WithPacing(PublishedLimits()))
			_, err := c.Payments.Get(context.Background(), "p1")
			require.NoError(t, err)
			got := c.RateLimits()
			require.Len(t, got, 2)
			assert.Equal(t, RateLimitState{Partition: session, Budget: Budget{Limit: 10, Period: time.Minute}, Source: BudgetAdvertised,
				Remaining: 3, HasRemaining: true, Reset: time.Now().Add(20 * time.Second), Updated: time.Now()}, got[1])
			time.Sleep(20 * time.Second)
			assert.False(t, c.RateLimits()[1].HasRemaining, "what was left is unknown once the reset passed")
		})
	})
}

// BenchmarkKnownClosed is a handler's call the client answers itself while
// the gateway's instruction runs: no request, no limiter.
func BenchmarkKnownClosed(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, rateLimitedBody)
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL, WithToken("tok"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Payments.Get(ctx, "p1"); !errors.Is(err, ErrRateLimited) {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Payments.Get(ctx, "p2"); !errors.Is(err, ErrRateLimited) {
			b.Fatal(err)
		}
	}
}

// What Client.RateLimits reports of an advertised budget is bounded as the
// limiter bounds it (issue 27, item 5): a RateLimit-Policy window longer
// than RetryAfterCap teaches nothing. On main one forged
// "session";q=1;w=86400 on an answer made RateLimits report the partition
// at one request a day, the budget a program planning a batch reads, while
// the limiter rightly ignored it.
func TestRateLimitsBoundsAnAdvertisedBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, opt := newPipeScript(t, step{status: http.StatusOK, body: paymentBody, header: map[string]string{
			"RateLimit-Policy": `"session";q=1;w=86400`}})
		c := newTestClient(t, srv.URL, opt, WithToken("tok"))
		_, err := c.Payments.Get(context.Background(), "p1")
		require.NoError(t, err)
		for _, s := range c.RateLimits() {
			assert.Zero(t, s.Budget, "partition %s: a window past the cap was taken as its budget", s.Partition)
			assert.Empty(t, s.Source, "partition %s", s.Partition)
		}
	})
}

// Issue 27 item 5, as RateLimits tells it: a budget RateLimit fields stated
// is forgotten when an answer stops carrying them, as the limiter forgets
// it. The review found it kept by a client that does not pace.
func TestRateLimitsForgetsAStatedBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, opt := newPipeScript(t,
			step{status: http.StatusOK, body: paymentBody, header: map[string]string{"RateLimit-Policy": `"session";q=5;w=10`}},
			step{status: http.StatusOK, body: paymentBody})
		c := newTestClient(t, srv.URL, opt, WithToken("tok"))
		stated := func() (n int) {
			for _, s := range c.RateLimits() {
				if s.Source == BudgetAdvertised {
					assert.Equal(t, Budget{Limit: 5, Period: 10 * time.Second}, s.Budget)
					n++
				}
			}
			return n
		}
		_, err := c.Payments.Get(context.Background(), "p1")
		require.NoError(t, err)
		require.Equal(t, 1, stated(), "the stated budget is known")
		_, err = c.Payments.Get(context.Background(), "p2")
		require.NoError(t, err)
		assert.Zero(t, stated(), "an answer without the fields forgets it")
		for _, s := range c.RateLimits() {
			assert.Zero(t, s.Budget, "partition %s", s.Partition)
		}
	})
}
