package rail0

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rail0/rail0-go/internal/secret"
	"github.com/rail0/rail0-go/ratelimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The answers of sign-in, webhook creation and secret rotation carry a
// credential. When such an answer cannot be decoded, the *DecodeError keeps
// none of its body (and nothing else shows the credential); other
// operations still keep the start of the body for diagnosis.
func TestCredentialAnswersKeepNoBodyInErrors(t *testing.T) {
	const token, secret = "eyJhbGciOiJIUzI1NiJ9.SESSION-TOKEN.sig", "whsec-SHARED-SECRET"
	tests := []struct {
		name     string
		status   int
		body     string
		call     func(ctx context.Context, c *Client) error
		keepBody bool
	}{
		{"sign-in with a malformed expires_at", http.StatusCreated,
			`{"token":"` + token + `","address":"0x5B38Da6a701c568545dCfcB03FcB875f56beddC4","account_id":null,"name":null,"expires_at":"tomorrow"}`,
			func(ctx context.Context, c *Client) error {
				_, err := c.Auth.Verify(ctx, AuthVerifyParams{Message: "message", Signature: "0xsig"})
				return err
			}, false},
		{"webhook creation with a malformed created_at", http.StatusCreated,
			`{"id":"wh-1","name":"n","shared_secret":"` + secret + `","created_at":"yesterday"}`,
			func(ctx context.Context, c *Client) error {
				_, err := c.Webhooks.Create(ctx, WebhookCreateParams{Name: "n", CallbackURL: "https://example.com/h", Topic: TopicPaymentsCaptured})
				return err
			}, false},
		{"secret rotation with a truncated body", http.StatusOK,
			`{"id":"wh-1","shared_secret":"` + secret + `","name":`,
			func(ctx context.Context, c *Client) error { _, err := c.Webhooks.RotateSecret(ctx, "wh-1"); return err }, false},
		{"Raw of the sign-in with a truncated body", http.StatusCreated,
			`{"token":"` + token + `","address":"0x5B38Da6a701c568545dCfcB03FcB875f56beddC4","expires_at":`,
			func(ctx context.Context, c *Client) error {
				var out json.RawMessage
				_, err := c.Raw(ctx, RawRequest{Method: http.MethodPost, Path: []string{"auth"}, Body: map[string]string{"message": "m"}, Public: true}, &out)
				return err
			}, false},
		{"Raw of an endpoint the SDK does not know, answering a secret", http.StatusOK,
			`{"id":"k1","api_secret":"` + secret + `","created_at":"yesterday"}`,
			func(ctx context.Context, c *Client) error {
				var out struct {
					CreatedAt time.Time `json:"created_at"`
				}
				_, err := c.Raw(ctx, RawRequest{Method: http.MethodPost, Path: []string{"api_keys"}, Class: IdempotentWithKey}, &out)
				return err
			}, false},
		{"a payment keeps its body", http.StatusOK, `{"id":"p1","status":`,
			func(ctx context.Context, c *Client) error { _, err := c.Payments.Get(ctx, "p1"); return err }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newScriptServer(t, step{status: tt.status, body: tt.body})
			c := newTestClient(t, srv.URL, WithToken("tok"))

			err := tt.call(context.Background(), c)

			var decodeErr *DecodeError
			require.ErrorAs(t, err, &decodeErr)
			if tt.keepBody {
				assert.NotEmpty(t, decodeErr.Body)
				return
			}
			assert.Nil(t, decodeErr.Body)
			for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
				out := fmt.Sprintf(verb, err)
				assert.NotContains(t, out, "SESSION-TOKEN", verb)
				assert.NotContains(t, out, "SHARED-SECRET", verb)
			}
		})
	}
}

// recordingLimiter records the partition of every reservation.
type recordingLimiter struct {
	ratelimit.Limiter
	mu         sync.Mutex
	partitions []string
}

func (l *recordingLimiter) Reserve(ctx context.Context, r ratelimit.Reservation) (ratelimit.Admission, error) {
	l.mu.Lock()
	l.partitions = append(l.partitions, r.Partition)
	l.mu.Unlock()
	return l.Limiter.Reserve(ctx, r)
}

func (l *recordingLimiter) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.partitions
	l.partitions = nil
	return p
}

// The public operations (security: [] in the contract) send no
// Authorization, never call the token source (so never sign in) and take
// their turn on the public rate-limit partition; a session operation does
// all three the other way.
func TestPublicOperationsAreSentAnonymously(t *testing.T) {
	srv := newScriptServer(t, step{status: http.StatusOK, body: `[]`})
	var sourced atomic.Int32
	limiter := &recordingLimiter{Limiter: ratelimit.NewMemory()}
	c := newTestClient(t, srv.URL, WithRetryOn429(true), WithLimiter(limiter),
		WithTokenSource(func(context.Context) (string, error) { sourced.Add(1); return "tok-SESSION", nil }))
	ctx := context.Background()
	public := map[string]func() error{
		"Chains.List": func() error { _, err := c.Chains.List(ctx, ChainListParams{}); return err },
		"Tokens.List": func() error { _, err := c.Tokens.List(ctx, TokenListParams{}); return err },
		"PaymentMethods.List": func() error {
			_, err := c.PaymentMethods.List(ctx, PaymentMethodListParams{AccountID: "acct"})
			return err
		},
	}
	for name, call := range public {
		require.NoError(t, call(), name)
		reqs := srv.requests()
		assert.Empty(t, reqs[len(reqs)-1].header.Get("Authorization"), name)
		assert.Equal(t, []string{"public"}, limiter.take(), name)
	}
	assert.Zero(t, sourced.Load(), "a public operation called the token source")

	_, err := c.Disputes.List(ctx, DisputeListParams{})
	require.NoError(t, err)
	reqs := srv.requests()
	assert.Equal(t, "Bearer tok-SESSION", reqs[len(reqs)-1].header.Get("Authorization"))
	assert.Equal(t, int32(1), sourced.Load())
	assert.Equal(t, []string{partitionFor("tok-SESSION")}, limiter.take())
}

// Ids that are empty or a dot segment are refused with a *ValidationError
// naming the field, before anything is sent, on every method that takes an
// id; any other id is escaped into one segment.
func TestDotSegmentIdsRefused(t *testing.T) {
	var seen []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.RequestURI)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, WithToken("tok"))
	ctx := context.Background()
	calls := map[string]func(id string) error{
		"Payments.Get": func(id string) error { _, err := c.Payments.Get(ctx, id); return err },
		"Payments.SubmitSignature": func(id string) error {
			_, err := c.Payments.SubmitSignature(ctx, id, PaymentSubmitSignatureParams{Signature: "0xsig"})
			return err
		},
		"Payments.ListTransactions": func(id string) error {
			_, err := c.Payments.ListTransactions(ctx, id, PaymentListTransactionsParams{})
			return err
		},
		"Payments.PrepareVoid": func(id string) error {
			_, err := c.Payments.Prepare(ctx, id, OpVoid, PaymentPrepareParams{})
			return err
		},
		"Webhooks.Get":          func(id string) error { _, err := c.Webhooks.Get(ctx, id); return err },
		"Webhooks.Delete":       func(id string) error { _, err := c.Webhooks.Delete(ctx, id); return err },
		"Webhooks.RotateSecret": func(id string) error { _, err := c.Webhooks.RotateSecret(ctx, id); return err },
		"Webhooks.Redeliver callback_id": func(id string) error {
			_, err := c.Webhooks.Redeliver(ctx, "wh-1", id)
			return err
		},
		"Wallets.Get account_id":              func(id string) error { _, err := c.Wallets.Get(ctx, id, "w-1"); return err },
		"Wallets.Deactivate":                  func(id string) error { _, err := c.Wallets.Deactivate(ctx, "acct", id); return err },
		"Wallets.StopAcceptingToken token_id": func(id string) error { _, err := c.Wallets.StopAcceptingToken(ctx, "acct", "w-1", id); return err },
		"Wallets.Balances": func(id string) error {
			_, err := c.Wallets.Balances(ctx, "acct", id, WalletBalancesParams{})
			return err
		},
		"Webhooks.ListEventCallbacks": func(id string) error {
			_, err := c.Webhooks.ListEventCallbacks(ctx, id, WebhookListEventCallbacksParams{})
			return err
		},
	}
	for name, call := range calls {
		for _, id := range []string{"", ".", ".."} {
			err := call(id)
			var ve *ValidationError
			if assert.ErrorAs(t, err, &ve, "%s(%q)", name, id) {
				assert.Contains(t, []string{"id", "account_id", "token_id", "callback_id"}, ve.Field)
			}
		}
	}
	assert.Empty(t, seen, "a refused id was sent")

	_, err := c.Payments.Get(ctx, "a/../..")
	require.NoError(t, err)
	_, err = c.Payments.Get(ctx, "...")
	require.NoError(t, err)
	assert.Equal(t, []string{"GET /payments/a%2F..%2F..", "GET /payments/..."}, seen)
}

// A header value net/http cannot send (CR, LF or another control byte) is
// a *ValidationError at once: nothing is sent and nothing is retried.
func TestInvalidHeaderValuesRefusedBeforeSending(t *testing.T) {
	srv := newScriptServer(t, step{status: http.StatusCreated, body: paymentBody})
	ctx := context.Background()
	params := PaymentCreateParams{ChainID: 84532, Mode: ModeAuthorize, Amount: "1.00",
		Token: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", Payer: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
		Payee: "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2"}
	for _, key := range []string{"key\r\nX-Injected: 1", "key\n", "key\x00", "key\x7f"} {
		c := newTestClient(t, srv.URL, WithToken("tok"))
		p := params
		p.IdempotencyKey = key
		_, err := c.Payments.Create(ctx, p)
		var ve *ValidationError
		if assert.ErrorAs(t, err, &ve, "key %q", key) {
			assert.Equal(t, "idempotency_key", ve.Field)
		}
		assert.False(t, errors.Is(err, ErrOutcomeUnknown), "key %q", key)
	}
	var sourced atomic.Int32
	c := newTestClient(t, srv.URL, WithTokenSource(func(context.Context) (string, error) { sourced.Add(1); return "tok\x00", nil }))
	_, err := c.Payments.Get(ctx, "p1")
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "token", ve.Field)
	assert.NotContains(t, err.Error(), "tok\x00")
	assert.Equal(t, int32(1), sourced.Load())
	assert.Empty(t, srv.requests(), "a request with an invalid header was sent")

	for _, opt := range []Option{WithUserAgent("app/1\x01"), WithToken("tok\x00"), WithToken("tok\r\n")} {
		_, err := NewClient(srv.URL, opt)
		assert.Error(t, err)
	}
}

// Session hands out a deep copy: writing through its pointer fields does
// not change what the next call returns.
func TestTokenSourceSessionIsADeepCopy(t *testing.T) {
	_, _, _, ts := newTokenSourceSetup(t)
	ctx := context.Background()
	s, err := ts.Session(ctx)
	require.NoError(t, err)
	require.NotNil(t, s.AccountID)
	require.NotNil(t, s.Name)
	require.NotNil(t, s.Response)
	account, name := *s.AccountID, *s.Name
	*s.AccountID, *s.Name, s.token = "tampered", "tampered", secret.New("tampered")
	s.Response.RequestID = "tampered"
	s.Response.Header.Set("X-Tampered", "1")

	again, err := ts.Session(ctx)
	require.NoError(t, err)
	assert.Equal(t, account, *again.AccountID)
	assert.Equal(t, name, *again.Name)
	assert.NotEqual(t, "tampered", again.Token())
	assert.NotEqual(t, "tampered", again.Response.RequestID)
	assert.Empty(t, again.Response.Header.Get("X-Tampered"))
}

// pageServer answers GET /payments with pages of size items whose x-page is
// page(asked) and whose x-total-count is total.
func pageServer(t *testing.T, size int, total int, page func(asked string) string) (*httptest.Server, *atomic.Int32) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		items := make([]string, size)
		for i := range items {
			items[i] = paymentBody
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Page", page(r.URL.Query().Get("page")))
		w.Header().Set("X-Per-Page", fmt.Sprint(size))
		w.Header().Set("X-Total-Count", fmt.Sprint(total))
		io.WriteString(w, "["+strings.Join(items, ",")+"]")
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// All… iterators stop with a *PaginationError when the server's pages do
// not advance or run past its own x-total-count, instead of asking for the
// same page forever and yielding duplicates; a consistent server is walked
// to its end.
func TestAllStopsOnPagesThatDoNotAdvance(t *testing.T) {
	tests := []struct {
		name      string
		size      int
		total     int
		page      func(asked string) string
		wantItems int
		wantHits  int32
		wantErr   string
	}{
		{"x-page stuck at 1", 2, 100, func(string) string { return "1" }, 2, 2, "do not advance"},
		{"more items than x-total-count", 2, 3, func(asked string) string { return asked }, 3, 2, "x-total-count is 3"},
		{"consistent pages", 2, 4, func(asked string) string { return asked }, 4, 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, hits := pageServer(t, tt.size, tt.total, tt.page)
			c := newTestClient(t, srv.URL, WithToken("tok"))
			var items int
			var err error
			for _, e := range c.Payments.All(context.Background(), PaymentListParams{}) {
				if e != nil {
					err = e
					break
				}
				if items++; items > 50 {
					break // the bug: it would go on forever
				}
			}
			assert.Equal(t, tt.wantItems, items)
			assert.Equal(t, tt.wantHits, hits.Load())
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			var pe *PaginationError
			require.ErrorAs(t, err, &pe)
			assert.Contains(t, pe.Error(), tt.wantErr)
			assert.Equal(t, "/payments", pe.Path)
		})
	}
}
