package rail0

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Redirects are never followed, on the default client and on a caller's
// client that would follow them: a 302 (GET) or 307 (POST with a body) to
// another port of the same host name, which Go's own rule (same host name)
// would hand the Authorization header, comes back as an *APIError with the
// Location, after one attempt, and nothing reaches the other origin.
func TestRedirectsAreNeverFollowed(t *testing.T) {
	var reached atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.Write([]byte(paymentBody))
	}))
	defer other.Close()
	followAll := func(*http.Request, []*http.Request) error { return nil }
	tests := []struct {
		name   string
		status int
		client *http.Client // nil: the SDK's default client
		call   func(ctx context.Context, c *Client) error
	}{
		{"default client, GET 302", http.StatusFound, nil, func(ctx context.Context, c *Client) error {
			_, err := c.Payments.Get(ctx, "p1")
			return err
		}},
		{"default client, POST 307 with a body", http.StatusTemporaryRedirect, nil, func(ctx context.Context, c *Client) error {
			_, err := c.Webhooks.Create(ctx, WebhookCreateParams{Name: "n", CallbackURL: "https://example.com/h", Topic: TopicPaymentsCaptured})
			return err
		}},
		{"caller's client with Go's default policy, GET 302", http.StatusFound, &http.Client{}, func(ctx context.Context, c *Client) error {
			_, err := c.Payments.Get(ctx, "p1")
			return err
		}},
		{"caller's client following everything, POST 308", http.StatusPermanentRedirect, &http.Client{CheckRedirect: followAll}, func(ctx context.Context, c *Client) error {
			_, err := c.Auth.Logout(ctx)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reached.Store(0)
			// Same host name, another port: Go keeps Authorization on such a
			// redirect, since it compares host names only.
			target := "http://127.0.0.1:" + strconv.Itoa(other.Listener.Addr().(*net.TCPAddr).Port) + "/elsewhere"
			srv := newScriptServer(t, step{status: tt.status, header: map[string]string{"Location": target}})
			opts := []Option{WithToken("tok-SECRET")}
			var before func(*http.Request, []*http.Request) error
			if tt.client != nil {
				before = tt.client.CheckRedirect
				opts = append(opts, WithHTTPClient(tt.client))
			}
			c := newTestClient(t, srv.URL, opts...)

			err := tt.call(context.Background(), c)

			var apiErr *APIError
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, tt.status, apiErr.StatusCode)
			assert.Equal(t, target, apiErr.Location)
			assert.Len(t, apiErr.Call.Attempts, 1)
			assert.Len(t, srv.requests(), 1)
			assert.Zero(t, reached.Load(), "the redirect was followed")
			if tt.client != nil {
				assert.Equal(t, fmt.Sprintf("%p", before), fmt.Sprintf("%p", tt.client.CheckRedirect), "the caller's client was modified")
			}
		})
	}
}

// Formatting the client, its options' results, what the observer hears,
// the transcript and errors never shows the token.
func TestTokenNeverFormatted(t *testing.T) {
	const secret = "tok-SECRET-42"
	srv := newScriptServer(t, throttled("60"), throttled("60"))
	ev := &eventLog{}
	c := newTestClient(t, srv.URL, WithToken(secret), WithRetryOn429(true),
		WithRetryAfterCap(time.Millisecond), WithMaxRetryWait(time.Millisecond), WithObserver(ev))
	_, err := c.Payments.Get(context.Background(), "p1")
	require.Error(t, err)
	require.NotEmpty(t, ev.all())
	for _, v := range []any{c, *c.Payments, err, ev.all(), CallOf(err), *CallOf(err)} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
			assert.NotContains(t, fmt.Sprintf(verb, v), secret, "verb %s on %T", verb, v)
		}
	}
}
