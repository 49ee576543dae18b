package rail0

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 22 item 7: the application's identity is added to the SDK's in the
// User-Agent, never in its place (stripe-go's AppInfo): the gateway's
// operator sees both.
func TestUserAgentAddsTheApplication(t *testing.T) {
	for _, tc := range []struct {
		opts []Option
		want string
	}{
		{nil, "rail0-go/" + Version},
		{[]Option{WithUserAgent("shop/2.1")}, "rail0-go/" + Version + " shop/2.1"},
		{[]Option{WithUserAgent("shop/2.1 (+https://shop.example/bot)")}, "rail0-go/" + Version + " shop/2.1 (+https://shop.example/bot)"},
		{[]Option{WithUserAgent("first/1"), WithUserAgent("shop/2.1 worker")}, "rail0-go/" + Version + " shop/2.1 worker"},
	} {
		s := newScriptServer(t, step{status: 200, body: `{"status":"ok"}`})
		c := newTestClient(t, s.URL, tc.opts...)
		_, err := c.Health.Get(context.Background())
		require.NoError(t, err)
		_, err = c.With(WithRetryOn429(true)).Health.Get(context.Background())
		require.NoError(t, err)
		for _, r := range s.requests() {
			assert.Equal(t, tc.want, r.header.Get("User-Agent"))
		}
	}
}

// What WithUserAgent accepts is RFC 9110's User-Agent after the SDK's
// product: products and comments, printable ASCII, bounded. Anything else
// is a *ValidationError from NewClient, before any request.
func TestWithUserAgentRefusesNonsense(t *testing.T) {
	for _, ua := range []string{
		"",
		"   ",
		" shop/2.1",
		"(comment first)",
		"shop/",
		"shop/2.1/3",
		"/2.1",
		"shop /2.1",
		"shop/2.1(no space)",
		"shop/2.1 (unbalanced",
		"shop/2.1 (bad \x01 byte)",
		"shop/2.1\r\nX-Evil: 1",
		"shop/2.1\x00",
		"café/1",
		"shop@home/1",
		"rail0-go/9.9",
		"shop/2.1 Rail0-Go/0.1.0",
		"shop/" + strings.Repeat("1", maxUserAgentApp),
	} {
		_, err := NewClient("https://api.rail0.xyz", WithUserAgent(ua))
		var ve *ValidationError
		if assert.ErrorAs(t, err, &ve, "%q", ua) {
			assert.Equal(t, "WithUserAgent", ve.Field)
			assert.NotContains(t, err.Error(), "\n", "%q", ua)
		}
	}
	for _, ua := range []string{
		"shop",
		"shop/2.1",
		"Shop_Bot/2.1-rc.1+build.7",
		"shop/2.1 (linux; +https://shop.example) worker/3",
		"shop/2.1 (nested (comment) \\) quoted)",
		"shop/2.1\tworker/3",
	} {
		_, err := NewClient("https://api.rail0.xyz", WithUserAgent(ua))
		assert.NoError(t, err, "%q", ua)
	}
}
