package rail0

import (
	"context"
	"errors"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sleepRecorder replaces the sleep between polls: it records each wait and
// returns at once (or the context's error), so tests never sleep.
type sleepRecorder struct {
	mu    sync.Mutex
	waits []time.Duration
	// onSleep, when set, runs before each recorded wait returns.
	onSleep func(n int)
}

// on installs r as c's sleep between polls and returns c.
func (r *sleepRecorder) on(c *Client) *Client {
	c.pollSleep = func(ctx context.Context, d time.Duration) error {
		r.mu.Lock()
		r.waits = append(r.waits, d)
		n := len(r.waits)
		r.mu.Unlock()
		if r.onSleep != nil {
			r.onSleep(n)
		}
		return ctx.Err()
	}
	return c
}

func (r *sleepRecorder) all() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.waits...)
}

func TestWaitForTransaction(t *testing.T) {
	t.Parallel()
	t.Run("polls until confirmed with a growing interval", func(t *testing.T) {
		t.Parallel()
		srv, c := newMuxServer(t)
		srv.on("GET /payments/p",
			muxOK(paymentDetailJSON(StatusAuthorized, "", txJSON("tx1", OpCapture, TxPending, ""))),
			muxOK(paymentDetailJSON(StatusAuthorized, "", txJSON("tx1", OpCapture, TxSubmitting, ""))),
			muxOK(paymentDetailJSON(StatusAuthorized, "", txJSON("tx1", OpCapture, TxSubmitted, ""))),
			muxOK(paymentDetailJSON(StatusAuthorized, "", txJSON("tx1", OpCapture, TxSubmitted, ""))),
			muxOK(paymentDetailJSON(StatusCaptured, "", txJSON("tx0", OpAuthorize, TxConfirmed, ""), txJSON("tx1", OpCapture, TxConfirmed, ""))))
		rec := &sleepRecorder{}
		tx, err := rec.on(c).Payments.WaitForTransaction(context.Background(), "p", "tx1",
			PaymentWaitForTransactionParams{PollInterval: time.Second, MaxPollInterval: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if tx.ID != "tx1" || tx.Status != TxConfirmed {
			t.Errorf("tx = %+v", tx)
		}
		if tx.Response == nil || tx.Response.Call.Operation != "getPayment" {
			t.Errorf("tx.Response = %+v, want the last poll's", tx.Response)
		}
		want := []time.Duration{time.Second, 1500 * time.Millisecond, 2 * time.Second, 2 * time.Second}
		if got := rec.all(); !slices.Equal(got, want) {
			t.Errorf("waits = %v, want %v", got, want)
		}
	})
	t.Run("failed transaction is a typed error", func(t *testing.T) {
		t.Parallel()
		srv, c := newMuxServer(t)
		srv.on("GET /payments/p", muxOK(paymentDetailJSON(StatusAuthorized, "", txJSON("tx1", OpCapture, TxFailed, "nonce_too_low"))))
		_, err := (&sleepRecorder{}).on(c).Payments.WaitForTransaction(context.Background(), "p", "tx1", PaymentWaitForTransactionParams{})
		var tfe *TransactionFailedError
		if !errors.As(err, &tfe) || !errors.Is(err, ErrTransactionFailed) {
			t.Fatalf("error = %v, want a *TransactionFailedError", err)
		}
		if tfe.Code != CodeNonceTooLow || tfe.Title != "Nonce too low" || tfe.Detail != "Prepare the step again." || tfe.Transaction.ID != "tx1" {
			t.Errorf("error fields = %+v", tfe)
		}
		if !strings.Contains(err.Error(), "nonce_too_low") {
			t.Errorf("message %q lacks the code", err)
		}
	})
	t.Run("unknown transaction", func(t *testing.T) {
		t.Parallel()
		srv, c := newMuxServer(t)
		srv.on("GET /payments/p", muxOK(paymentDetailJSON(StatusAuthorized, "", txJSON("tx1", OpCapture, TxPending, ""))))
		_, err := (&sleepRecorder{}).on(c).Payments.WaitForTransaction(context.Background(), "p", "nope", PaymentWaitForTransactionParams{})
		if !errors.Is(err, ErrUnknownTransaction) {
			t.Fatalf("error = %v, want ErrUnknownTransaction", err)
		}
	})
	t.Run("a 429 waits at least Retry-After and goes on", func(t *testing.T) {
		t.Parallel()
		srv, c := newMuxServer(t)
		srv.on("GET /payments/p",
			muxReply{status: 429, header: map[string]string{"Retry-After": "60"},
				body: `{"code": "rate_limited", "title": "Too many requests", "detail": "Request limit reached for this period; retry after the Retry-After delay.", "status": "rate_limited"}`},
			muxOK(paymentDetailJSON(StatusAuthorized, "", txJSON("tx1", OpCapture, TxConfirmed, ""))))
		rec := &sleepRecorder{}
		c.rand = half // the additive jitter: half of its tenth
		if _, err := rec.on(c).Payments.WaitForTransaction(context.Background(), "p", "tx1", PaymentWaitForTransactionParams{}); err != nil {
			t.Fatal(err)
		}
		if got := rec.all(); len(got) != 1 || got[0] != 63*time.Second {
			t.Errorf("waits = %v, want [1m3s]", got)
		}
	})
	t.Run("a hostile Retry-After is capped by RetryAfterCap", func(t *testing.T) {
		t.Parallel()
		srv, c := newMuxServer(t)
		c.policy.retryAfterCap = 5 * time.Second
		srv.on("GET /payments/p",
			muxReply{status: 429, header: map[string]string{"Retry-After": "999999999"}},
			muxOK(paymentDetailJSON(StatusAuthorized, "", txJSON("tx1", OpCapture, TxConfirmed, ""))))
		rec := &sleepRecorder{}
		c.rand = half
		if _, err := rec.on(c).Payments.WaitForTransaction(context.Background(), "p", "tx1", PaymentWaitForTransactionParams{}); err != nil {
			t.Fatal(err)
		}
		if got := rec.all(); len(got) != 1 || got[0] != 5250*time.Millisecond {
			t.Errorf("waits = %v, want [5.25s]", got)
		}
	})
	t.Run("other errors end the wait", func(t *testing.T) {
		t.Parallel()
		srv, c := newMuxServer(t)
		srv.on("GET /payments/p", muxReply{status: 403,
			body: `{"code": "not_a_participant", "title": "Forbidden", "detail": "Not your payment.", "status": "forbidden"}`})
		_, err := (&sleepRecorder{}).on(c).Payments.WaitForTransaction(context.Background(), "p", "tx1", PaymentWaitForTransactionParams{})
		if !errors.Is(err, ErrForbidden) {
			t.Fatalf("error = %v, want ErrForbidden", err)
		}
	})
	t.Run("honours ctx", func(t *testing.T) {
		t.Parallel()
		srv, c := newMuxServer(t)
		srv.on("GET /payments/p", muxOK(paymentDetailJSON(StatusAuthorized, "", txJSON("tx1", OpCapture, TxSubmitted, ""))))
		ctx, cancel := context.WithCancel(context.Background())
		rec := &sleepRecorder{onSleep: func(n int) {
			if n == 2 {
				cancel()
			}
		}}
		_, err := rec.on(c).Payments.WaitForTransaction(ctx, "p", "tx1", PaymentWaitForTransactionParams{})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error = %v, want context.Canceled", err)
		}
		if n := len(srv.requests()); n != 2 {
			t.Errorf("polled %d times, want 2 (none after cancel)", n)
		}
	})
}

func TestWaitForStatus(t *testing.T) {
	t.Parallel()
	srv, c := newMuxServer(t)
	srv.on("GET /payments/p", muxOK(paymentDetailJSON(StatusSigned, "")), muxOK(paymentDetailJSON(StatusCharged, "")))
	rec := &sleepRecorder{}
	p, err := rec.on(c).Payments.WaitForStatus(context.Background(), "p", PaymentWaitForStatusParams{Statuses: []PaymentStatus{StatusAuthorized, StatusCharged}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != StatusCharged || len(rec.all()) != 1 {
		t.Errorf("status %s after %d waits", p.Status, len(rec.all()))
	}
	var ve *ValidationError
	if _, err := c.Payments.WaitForStatus(context.Background(), "p", PaymentWaitForStatusParams{}); !errors.As(err, &ve) || ve.Field != "statuses" {
		t.Errorf("no status: %v, want a ValidationError", err)
	}
}

// The polling settings of WaitForStatus, WaitForTransaction and PayerSign
// are in their params: zero is the default pace, growing by half from
// DefaultPollInterval to DefaultMaxPollInterval; values below
// MinPollInterval are raised to it; a negative value or a last interval
// below the first is a *ValidationError before any request.
func TestPollSettings(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, "https://api.rail0.xyz")
	intervals := func(first, last time.Duration, n int) []time.Duration {
		t.Helper()
		cfg, err := c.newWaitConfig(first, last)
		if err != nil {
			t.Fatal(err)
		}
		var got []time.Duration
		for range n {
			got = append(got, cfg.next())
		}
		return got
	}
	want := []time.Duration{time.Second, 1500 * time.Millisecond, 2250 * time.Millisecond, 3375 * time.Millisecond,
		5062500 * time.Microsecond, 7593750 * time.Microsecond, 10 * time.Second, 10 * time.Second}
	if got := intervals(0, 0, 8); !slices.Equal(got, want) {
		t.Errorf("default intervals = %v, want %v", got, want)
	}
	if got := intervals(time.Millisecond, time.Millisecond, 2); !slices.Equal(got, []time.Duration{MinPollInterval, MinPollInterval}) {
		t.Errorf("intervals below the floor = %v, want MinPollInterval", got)
	}
	if got := intervals(20*time.Second, 0, 2); !slices.Equal(got, []time.Duration{20 * time.Second, 20 * time.Second}) {
		t.Errorf("a first interval above the default's last = %v", got)
	}
	huge := time.Duration(math.MaxInt64 - 1)
	for _, d := range intervals(huge/2, huge, 4) {
		if d < huge/2 {
			t.Fatalf("interval overflowed to %v", d)
		}
	}

	srv, c := newMuxServer(t)
	var ve *ValidationError
	for _, p := range []PaymentWaitForTransactionParams{
		{PollInterval: 5 * time.Second, MaxPollInterval: time.Second},
		{PollInterval: -time.Second},
		{MaxPollInterval: -time.Second},
	} {
		if _, err := c.Payments.WaitForTransaction(context.Background(), "p", "tx1", p); !errors.As(err, &ve) || ve.Field != "poll_interval" {
			t.Errorf("WaitForTransaction(%+v) = %v, want a *ValidationError", p, err)
		}
		_, err := c.Payments.WaitForStatus(context.Background(), "p", PaymentWaitForStatusParams{
			Statuses: []PaymentStatus{StatusSigned}, PollInterval: p.PollInterval, MaxPollInterval: p.MaxPollInterval})
		if !errors.As(err, &ve) || ve.Field != "poll_interval" {
			t.Errorf("WaitForStatus(%+v) = %v, want a *ValidationError", p, err)
		}
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d requests sent with invalid poll settings", n)
	}
}

// A failed transaction's text comes from the gateway; its Error() stays on
// one line whatever that text holds.
func TestTransactionFailedErrorIsOneLine(t *testing.T) {
	e := &TransactionFailedError{PaymentID: "p", Code: "nonce_too_low\nx", Detail: "line one\r\nline two"}
	if got := e.Error(); strings.ContainsAny(got, "\r\n") {
		t.Fatalf("Error() = %q spans lines", got)
	}
	if !errors.Is(e, ErrTransactionFailed) {
		t.Fatal("errors.Is(ErrTransactionFailed) must hold")
	}
}

// A poll's 429 whose wait cannot end before the deadline is not waited
// out: the 429 comes back at once (the retry contract's "do not start a
// wait you cannot finish"), not a bare context error at the deadline.
func TestWaitForStatusReturnsA429ItCannotWaitOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMemScript(throttled("60"))
		c := newTestClient(t, memURL, memClient(s), WithToken("tok"))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		_, err := c.Payments.WaitForStatus(ctx, "p1", PaymentWaitForStatusParams{Statuses: []PaymentStatus{StatusAuthorized}})
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.ErrorIs(t, err, ErrRateLimited)
		assert.Equal(t, 60*time.Second, apiErr.RetryAfter)
		assert.Zero(t, time.Since(start), "started a wait that could not end before the deadline")
		assert.Len(t, s.requests(), 1)
	})
}

// A wait for a poll's 429 that the context ends returns an error matching
// both the context's error and the 429 it was waiting out.
func TestWaitForTransactionCancelledAfterA429KeepsIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMemScript(throttled("30"))
		c := newTestClient(t, memURL, memClient(s), WithToken("tok"))
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(10*time.Second, cancel)
		_, err := c.Payments.WaitForTransaction(ctx, "p1", "tx1", PaymentWaitForTransactionParams{})
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, ErrRateLimited)
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr, "the last 429 is not reported")
		assert.Equal(t, http.StatusTooManyRequests, apiErr.StatusCode)
	})
}

// F1c: WaitForTransaction with the hash sent counts only the row carrying
// it: a row of that id confirmed under another hash, or confirmed without
// one, is not this step and ends the wait with ErrUnknownTransaction, never
// a success. F2: the id the caller typed compares ignoring case.
func TestWaitForTransactionTiedToTheHash(t *testing.T) {
	t.Parallel()
	sent := fixtureSignedHash().String()
	other := "0x" + strings.Repeat("ab", 32)
	row := func(status TransactionStatus, hash string) string {
		s := txJSON("tx1", OpCapture, status, "")
		if hash != "" {
			s = strings.Replace(s, `"transaction_hash": null`, `"transaction_hash": "`+hash+`"`, 1)
		}
		return paymentDetailJSON(StatusAuthorized, "", s)
	}
	for _, tc := range []struct {
		name, txID, hash string
		polls            []string
		ok               bool
	}{
		{"confirmed under the hash sent", "tx1", sent, []string{row(TxPending, ""), row(TxSubmitted, sent), row(TxConfirmed, sent)}, true},
		{"the hash in capitals", "tx1", "0x" + strings.ToUpper(sent[2:]), []string{row(TxConfirmed, sent)}, true},
		{"confirmed under another hash", "tx1", sent, []string{row(TxConfirmed, other)}, false},
		{"submitted under another hash", "tx1", sent, []string{row(TxSubmitted, other)}, false},
		{"confirmed without a hash", "tx1", sent, []string{row(TxConfirmed, "")}, false},
		{"no hash given: the id alone, as before", "tx1", "", []string{row(TxConfirmed, other)}, true},
		{"the id typed in capitals", "TX1", sent, []string{row(TxConfirmed, sent)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, c := newMuxServer(t)
			replies := make([]muxReply, len(tc.polls))
			for i, b := range tc.polls {
				replies[i] = muxOK(b)
			}
			srv.on("GET /payments/p", replies...)
			// A wait that never ends (a regression) fails at the deadline
			// rather than spinning: the recorder's sleeps are instant.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			tx, err := (&sleepRecorder{}).on(c).Payments.WaitForTransaction(ctx, "p", tc.txID, PaymentWaitForTransactionParams{TransactionHash: tc.hash})
			if tc.ok {
				require.NoError(t, err)
				assert.Equal(t, TxConfirmed, tx.Status)
				return
			}
			require.ErrorIs(t, err, ErrUnknownTransaction)
			assert.Nil(t, tx)
		})
	}
	t.Run("a malformed hash, before any request", func(t *testing.T) {
		t.Parallel()
		srv, c := newMuxServer(t)
		_, err := c.Payments.WaitForTransaction(context.Background(), "p", "tx1", PaymentWaitForTransactionParams{TransactionHash: "0x1234"})
		var ve *ValidationError
		require.ErrorAs(t, err, &ve)
		assert.Equal(t, "transaction_hash", ve.Field)
		assert.Empty(t, srv.requests())
	})
	// The condition itself: a confirmed row of another hash is never done
	// without an error.
	h := fixtureSignedHash()
	other2 := other
	_, done, err := waitCondition{transactionID: "tx1", hash: &h}.check(&PaymentDetail{Transactions: []Transaction{{ID: "tx1", Status: TxConfirmed, TransactionHash: &other2}}})
	if !done || !errors.Is(err, ErrUnknownTransaction) {
		t.Errorf("check of a row under another hash = %v, %v; want done with ErrUnknownTransaction", done, err)
	}
}

// A poll's 429 is waited out as any server-given wait: min(Retry-After,
// RetryAfterCap), plus additive jitter U[0, 10%), so that pollers told the
// same number do not come back together (issue 27, item 1). Four
// default clients (RetryOn429 off, so the poll loop waits it out itself)
// each drew another jitter. On main every one polled again at exactly
// 10 s after its 429.
func TestWaitForStatusSpreadsThe429sWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var gaps []time.Duration
		for i := range 4 {
			srv, opt := newPipeScript(t, throttled("10"), step{status: http.StatusOK, body: paymentBody})
			u := 0.2 * float64(i+1)
			c := newTestClient(t, srv.URL, opt, WithToken("tok"), withRand(func() float64 { return u }))
			_, err := c.Payments.WaitForStatus(context.Background(), "p", PaymentWaitForStatusParams{Statuses: []PaymentStatus{StatusUnsigned}})
			require.NoError(t, err)
			seen := srv.requests()
			require.Len(t, seen, 2)
			gap := seen[1].at.Sub(seen[0].at)
			assert.GreaterOrEqual(t, gap, 10*time.Second, "client %d polled before the Retry-After", i)
			assert.Less(t, gap, 11*time.Second, "client %d: the jitter adds a tenth at most", i)
			assert.NotContains(t, gaps, gap, "client %d polled again at the same time as another", i)
			gaps = append(gaps, gap)
		}
	})
}
