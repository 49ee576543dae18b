package rail0

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heldGateway answers every request with a payment once released, and
// records each request and whether its context had ended by then.
type heldGateway struct {
	release chan struct{}
	mu      sync.Mutex
	seen    []seenRequest
	gone    int // requests whose context ended before the answer
}

func newHeldGateway() *heldGateway { return &heldGateway{release: make(chan struct{})} }

func (g *heldGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	g.seen = append(g.seen, seenRequest{method: r.Method, path: r.URL.Path, header: r.Header.Clone()})
	g.mu.Unlock()
	select {
	case <-g.release:
	case <-r.Context().Done():
		g.mu.Lock()
		g.gone++
		g.mu.Unlock()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", "req-shared")
	if r.Method == http.MethodPost {
		w.WriteHeader(http.StatusCreated)
	}
	io.WriteString(w, paymentBody)
}

func (g *heldGateway) count() (requests, gone int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.seen), g.gone
}

// Eight concurrent reads of one payment share one request (WithSharedReads):
// each caller gets its own copy of the answer, its Response and its
// transcript, and keeps its own context. A caller whose context ends,
// the first one included, returns at once without cancelling the request
// the others wait for.
func TestIdenticalReadsShareOneRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newHeldGateway()
		_, tr := pipeTransport(t, g)
		c := newTestClient(t, "https://gateway.test", WithHTTPClient(&http.Client{Transport: tr}), WithToken("tok"),
			WithSharedReads(true))

		// The first caller starts the flight, then gives up.
		firstCtx, cancelFirst := context.WithCancel(context.Background())
		firstDone := make(chan error, 1)
		go func() {
			_, err := c.Payments.Get(firstCtx, "p1")
			firstDone <- err
		}()
		synctest.Wait()

		const n = 8
		results := make([]*PaymentDetail, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { results[i], errs[i] = c.Payments.Get(context.Background(), "p1") })
		}
		synctest.Wait()
		cancelFirst()
		err := <-firstDone
		require.ErrorIs(t, err, context.Canceled, "the first caller returns at once")
		var te *TransportError
		require.ErrorAs(t, err, &te)
		synctest.Wait()
		requests, gone := g.count()
		assert.Equal(t, 1, requests)
		assert.Zero(t, gone, "the request goes on for the others")

		close(g.release)
		wg.Wait()
		requests, gone = g.count()
		assert.Equal(t, 1, requests, "one request for nine callers")
		assert.Zero(t, gone)
		for i := range n {
			require.NoError(t, errs[i])
			assert.Equal(t, "0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a4b", results[i].ID)
			assert.Equal(t, "req-shared", results[i].Response.RequestID)
			for j := range i {
				assert.NotSame(t, results[i], results[j], "each caller its own value")
				assert.NotSame(t, results[i].Response, results[j].Response)
				assert.NotSame(t, results[i].Response.Call, results[j].Response.Call)
			}
		}
		// Changing one caller's answer changes no other's.
		results[0].Response.Header.Set("X-Request-Id", "mine")
		results[0].Response.Call.Attempts[0].StatusCode = 599
		results[0].Transactions = append(results[0].Transactions, Transaction{ID: "t"})
		assert.Equal(t, "req-shared", results[1].Response.Header.Get("X-Request-Id"))
		assert.Equal(t, http.StatusOK, results[1].Response.Call.Attempts[0].StatusCode)
		assert.Empty(t, results[1].Transactions)

		// The flight is over: the next read sends its own request.
		_, err = c.Payments.Get(context.Background(), "p1")
		require.NoError(t, err)
		requests, _ = g.count()
		assert.Equal(t, 2, requests)
	})
}

// When every caller has left, the shared request is cancelled; no
// goroutine is left behind (synctest.Test would fail).
func TestSharedReadCancelledWhenEveryCallerLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newHeldGateway()
		_, tr := pipeTransport(t, g)
		c := newTestClient(t, "https://gateway.test", WithHTTPClient(&http.Client{Transport: tr}), WithToken("tok"),
			WithSharedReads(true))
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				_, err := c.Payments.Get(ctx, "p1")
				assert.ErrorIs(t, err, context.Canceled)
			})
		}
		synctest.Wait()
		cancel()
		wg.Wait()
		synctest.Wait()
		requests, gone := g.count()
		assert.Equal(t, 1, requests)
		assert.Equal(t, 1, gone, "the request was cancelled")
	})
}

// Reads are shared only with the same credential and settings, and only
// with the option; writes never are.
func TestWhatIsNotShared(t *testing.T) {
	type tokenKey struct{}
	for _, tt := range []struct {
		name     string
		opts     []Option
		call     func(c *Client, i int) error
		requests int
	}{
		{"off by default", nil, func(c *Client, _ int) error {
			_, err := c.Payments.Get(context.Background(), "p1")
			return err
		}, 4},
		{"another token", []Option{WithSharedReads(true)}, func(c *Client, i int) error {
			ctx := context.WithValue(context.Background(), tokenKey{}, fmt.Sprintf("tok-%d", i%2))
			_, err := c.Payments.Get(ctx, "p1")
			return err
		}, 2},
		{"another view's settings", []Option{WithSharedReads(true)}, func(c *Client, i int) error {
			_, err := c.With(WithMaxRetries(i%2)).Payments.Get(context.Background(), "p1")
			return err
		}, 2},
		{"another URL", []Option{WithSharedReads(true)}, func(c *Client, i int) error {
			_, err := c.Payments.Get(context.Background(), fmt.Sprintf("p%d", i))
			return err
		}, 4},
		{"writes", []Option{WithSharedReads(true)}, func(c *Client, _ int) error {
			_, err := c.Payments.Create(context.Background(), PaymentCreateParams{ChainID: 1, Mode: ModeCharge, Amount: "1", Token: "t", Payer: "a", Payee: "b", IdempotencyKey: "k"})
			return err
		}, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newHeldGateway()
				_, tr := pipeTransport(t, g)
				opts := append([]Option{WithHTTPClient(&http.Client{Transport: tr}), WithTokenSource(func(ctx context.Context) (string, error) {
					if tok, ok := ctx.Value(tokenKey{}).(string); ok {
						return tok, nil
					}
					return "tok", nil
				})}, tt.opts...)
				c := newTestClient(t, "https://gateway.test", opts...)
				var wg sync.WaitGroup
				for i := range 4 {
					wg.Go(func() { assert.NoError(t, tt.call(c, i)) })
				}
				synctest.Wait()
				close(g.release)
				wg.Wait()
				requests, _ := g.count()
				assert.Equal(t, tt.requests, requests)
			})
		})
	}
}

// A shared read whose sign-in fails returns that failure: it does not sign
// in a second time. On main the read asked the token source, and on a
// failure made the call alone, which asked it again: a second nonce
// request at once after the first one's 429 (before its Retry-After), or,
// when the door was known shut, the gateway's 429 reported as one the
// client answered itself (NotSent).
func TestSharedReadSignsInOnce(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts []Option
	}{
		{"a handler", []Option{WithRetryOn429(false)}},
		{"a job that cannot wait that long", []Option{WithRetryOn429(true), WithCooldown(false), WithMaxRetryWait(10 * time.Second)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				gw := newSIWEGateway(t, 0)
				gw.beforeNonce = func(w http.ResponseWriter) bool {
					writeThrottled(w, "30")
					return true
				}
				c := newTestClient(t, gw.url, append([]Option{gw.opt, WithSigner(newSIWESigner()), WithSharedReads(true)}, tt.opts...)...)
				_, err := c.Payments.Get(context.Background(), "p")
				var apiErr *APIError
				require.ErrorAs(t, err, &apiErr)
				assert.Equal(t, http.StatusTooManyRequests, apiErr.StatusCode)
				assert.False(t, apiErr.NotSent, "the gateway's 429 reported as not sent: %v", err)
				assert.Equal(t, 30*time.Second, apiErr.RetryAfter)
				assert.Equal(t, []string{"POST /auth/nonces"}, gw.paths(), "the sign-in was made twice")
			})
		})
	}
}

// A caller of a shared read whose deadline comes before the end of the
// 429 wait the shared request is in gets that 429 at once, as its own call
// would have: NotSent, RetryAfter the wait left. Before, it waited until
// its deadline and got a *TransportError "request not sent after 0
// attempt(s)", without the wait. A caller whose deadline leaves room, and
// one without, get the answer of the retry.
func TestSharedReadCallerThatCannotWaitGets429(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		requests := 0
		h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			mu.Lock()
			requests++
			n := requests
			mu.Unlock()
			if n == 1 {
				// Every caller has joined before the answer.
				time.Sleep(100 * time.Millisecond)
				writeThrottled(w, "2")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, paymentBody)
		})
		_, tr := pipeTransport(t, h)
		c := newTestClient(t, "https://gateway.test", WithHTTPClient(&http.Client{Transport: tr}), WithToken("tok"),
			WithSharedReads(true), WithRetryOn429(true))

		type result struct {
			err error
			at  time.Duration
		}
		start := time.Now()
		get := func(timeout time.Duration) <-chan result {
			ch := make(chan result, 1)
			go func() {
				ctx := context.Background()
				if timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, timeout)
					defer cancel()
				}
				_, err := c.Payments.Get(ctx, "p1")
				ch <- result{err, time.Since(start)}
			}()
			return ch
		}
		patient := get(0)
		synctest.Wait()
		hurried := get(time.Second)
		roomy := get(5 * time.Second)

		r := <-hurried
		var apiErr *APIError
		require.ErrorAs(t, r.err, &apiErr)
		assert.Equal(t, http.StatusTooManyRequests, apiErr.StatusCode)
		assert.True(t, apiErr.NotSent, "this caller sent nothing of its own: %v", r.err)
		assert.Greater(t, apiErr.RetryAfter, time.Second, "the wait left, longer than the deadline")
		assert.LessOrEqual(t, apiErr.RetryAfter, 2200*time.Millisecond, "the wait left, at most Retry-After and its jitter")
		assert.Equal(t, 100*time.Millisecond, r.at, "at once when the 429 came, not at the deadline")

		for _, ch := range []<-chan result{patient, roomy} {
			r := <-ch
			require.NoError(t, r.err)
			assert.GreaterOrEqual(t, r.at, 2100*time.Millisecond, "after the 429 and its Retry-After")
		}
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, 2, requests, "one request and its retry for three callers")
	})
}

// A poll (a wait's read, which skips the door and yields its turn) and a
// plain read of the same payment do not share a request: a handler's Get
// joining a poll's flight skipped its own door. Two polls still share.
func TestPollAndReadDoNotShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newHeldGateway()
		_, tr := pipeTransport(t, g)
		c := newTestClient(t, "https://gateway.test", WithHTTPClient(&http.Client{Transport: tr}), WithToken("tok"),
			WithSharedReads(true))
		var wg sync.WaitGroup
		for _, poll := range []bool{true, true, false, false} {
			wg.Go(func() {
				_, err := c.Payments.get(context.Background(), "p1", poll)
				assert.NoError(t, err)
			})
		}
		synctest.Wait()
		close(g.release)
		wg.Wait()
		requests, _ := g.count()
		assert.Equal(t, 2, requests, "one request for the polls, one for the reads")
	})
}

// A caller's copy of a shared answer shares no record another caller could
// change: the rate-limit state, the deprecation and each attempt's records
// are its own (the review found them shared).
func TestSharedAnswerCopiesShareNoRecord(t *testing.T) {
	rl := &RateLimitInfo{Limit: 5, Remaining: 1, HasRemaining: true}
	dep := &Deprecation{Deprecated: true, Link: "https://example.com/d"}
	ps := &PartitionState{Partition: "public"}
	resp := &Response{StatusCode: http.StatusOK, Header: http.Header{}, RateLimit: rl, Deprecation: dep,
		Call: &Call{Attempts: []Attempt{{RateLimit: rl, Deprecation: dep, PartitionState: ps}}}}
	c := copyResponse(resp)
	c.RateLimit.Remaining = 0
	c.Deprecation.Link = "mine"
	c.Call.Attempts[0].RateLimit.Remaining = 0
	c.Call.Attempts[0].Deprecation.Deprecated = false
	c.Call.Attempts[0].PartitionState.Partition = "mine"
	assert.Equal(t, int64(1), rl.Remaining)
	assert.Equal(t, "https://example.com/d", dep.Link)
	assert.True(t, dep.Deprecated)
	assert.Equal(t, "public", ps.Partition)
	assert.Nil(t, copyResponse(&Response{}).RateLimit, "nil stays nil")
}
