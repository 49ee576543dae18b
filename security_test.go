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

// The bearer token never follows a redirect to another host.
func TestAuthorizationNotSentToAnotherHostOnRedirect(t *testing.T) {
	var leaked atomic.Value
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Store(r.Header.Get("Authorization"))
		w.Write([]byte(paymentBody))
	}))
	defer other.Close()
	// Same IP, another host name: Go strips credentials when the host differs.
	otherURL := "http://localhost:" + strconv.Itoa(other.Listener.Addr().(*net.TCPAddr).Port)
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherURL+r.URL.Path, http.StatusFound)
	}))
	defer gw.Close()
	c := newTestClient(t, gw.URL, WithToken("tok-SECRET"))

	_, err := c.Payments.Get(context.Background(), "p1")

	require.NoError(t, err)
	got, _ := leaked.Load().(string)
	assert.Empty(t, got, "Authorization must not reach another host")
}

// Formatting the client, its options' results, events and errors never
// shows the token.
func TestTokenNeverFormatted(t *testing.T) {
	const secret = "tok-SECRET-42"
	srv := newScriptServer(t, throttled("60"), throttled("60"))
	var events []RetryEvent
	c := newTestClient(t, srv.URL, WithToken(secret), WithRetryOn429(true),
		WithRetryAfterCap(time.Millisecond), WithMaxRetryWait(time.Millisecond),
		WithOnRetry(func(ev RetryEvent) { events = append(events, ev) }))
	_, err := c.Payments.Get(context.Background(), "p1")
	require.Error(t, err)
	for _, v := range []any{c, *c.Payments, err, events, c.RetryStats()} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
			assert.NotContains(t, fmt.Sprintf(verb, v), secret, "verb %s on %T", verb, v)
		}
	}
}
