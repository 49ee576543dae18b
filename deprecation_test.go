package rail0

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Deprecation header in RFC 9745's form and its drafts' forms; Sunset
// as an HTTP-date (RFC 8594); anything else is ignored.
func TestDeprecationOf(t *testing.T) {
	sunset := time.Date(2026, 11, 11, 23, 59, 59, 0, time.UTC)
	for _, tt := range []struct {
		name string
		h    http.Header
		want *Deprecation
	}{
		{"neither", http.Header{}, nil},
		{"RFC 9745 date", http.Header{"Deprecation": {"@1688169599"}},
			&Deprecation{Deprecated: true, Date: time.Unix(1688169599, 0).UTC()}},
		{"a date before 1970", http.Header{"Deprecation": {"@-1"}}, &Deprecation{Deprecated: true, Date: time.Unix(-1, 0).UTC()}},
		{"legacy true", http.Header{"Deprecation": {"true"}}, &Deprecation{Deprecated: true}},
		{"draft boolean", http.Header{"Deprecation": {"?1"}}, &Deprecation{Deprecated: true}},
		{"legacy HTTP-date", http.Header{"Deprecation": {"Wed, 11 Nov 2026 23:59:59 GMT"}}, &Deprecation{Deprecated: true, Date: sunset}},
		{"sunset only", http.Header{"Sunset": {"Wed, 11 Nov 2026 23:59:59 GMT"}}, &Deprecation{Sunset: sunset}},
		{"both, and the links", http.Header{
			"Deprecation": {" @1688169599 "}, "Sunset": {"Wed, 11 Nov 2026 23:59:59 GMT"},
			"Link": {`<https://docs.example/next>; rel="next", <https://docs.example/sunset>; rel=sunset`, `<https://docs.example/dep>; rel="deprecation"`}},
			&Deprecation{Deprecated: true, Date: time.Unix(1688169599, 0).UTC(), Sunset: sunset, Link: "https://docs.example/dep"}},
		{"sunset link when no deprecation link", http.Header{"Sunset": {"Wed, 11 Nov 2026 23:59:59 GMT"},
			"Link": {`<https://docs.example/sunset>; rel="sunset"`}},
			&Deprecation{Sunset: sunset, Link: "https://docs.example/sunset"}},
		{"a link not http is dropped", http.Header{"Deprecation": {"true"}, "Link": {`<javascript:alert(1)>; rel="deprecation"`}},
			&Deprecation{Deprecated: true}},
		{"a huge link is dropped", http.Header{"Deprecation": {"true"}, "Link": {"<https://x.example/" + strings.Repeat("a", 600) + `>; rel="deprecation"`}},
			&Deprecation{Deprecated: true}},
		{"false is no deprecation", http.Header{"Deprecation": {"false"}}, nil},
		{"garbage", http.Header{"Deprecation": {"soon"}, "Sunset": {"tomorrow"}}, nil},
		{"a decimal is not an sf-date", http.Header{"Deprecation": {"@1688169599.5"}}, nil},
		{"too many digits", http.Header{"Deprecation": {"@1234567890123456"}}, nil},
		{"a date after 9999", http.Header{"Deprecation": {"@999999999999999"}}, nil},
		{"a date before year 0", http.Header{"Deprecation": {"@-999999999999999"}}, nil},
		{"the last second of 9999", http.Header{"Deprecation": {"@253402300799"}},
			&Deprecation{Deprecated: true, Date: time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)}},
		{"a link's query is redacted", http.Header{"Deprecation": {"true"}, "Link": {`<https://docs.example/dep?access_token=s3cret&page=2>; rel="deprecation"`}},
			&Deprecation{Deprecated: true, Link: "https://docs.example/dep?access_token=REDACTED&page=2"}},
		{"a link with user info is dropped", http.Header{"Deprecation": {"true"}, "Link": {`<https://user:s3cret@docs.example/dep>; rel="deprecation"`}},
			&Deprecation{Deprecated: true}},
		{"two values are invalid", http.Header{"Deprecation": {"true", "true"}}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, deprecationOf(tt.h, defaultSafeQuery))
		})
	}
}

// The log remembers a bounded number of operations.
func TestDeprecationNotesAreBounded(t *testing.T) {
	var n deprecationNotes
	assert.True(t, n.first("getPayment"))
	assert.False(t, n.first("getPayment"), "once per operation")
	for i := range 2 * maxDeprecationNotes {
		n.first(fmt.Sprintf("GET /things/%d", i))
	}
	assert.Len(t, n.seen, maxDeprecationNotes)
	assert.False(t, n.first("GET /one-more"))
}

// End to end: a deprecated endpoint's answers reach the Response and the
// observers on every call, and the log once per operation.
func TestDeprecationReachesResponseLogAndObservers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Deprecation", "@1688169599")
		w.Header().Set("Sunset", "Wed, 11 Nov 2026 23:59:59 GMT")
		w.Header().Set("Link", `<https://docs.rail0.example/v2>; rel="deprecation"`)
		if r.URL.Path == "/payments" {
			io.WriteString(w, `[]`)
			return
		}
		io.WriteString(w, paymentBody)
	}))
	defer srv.Close()
	var logs bytes.Buffer
	var mu sync.Mutex
	var heard []*Deprecation
	c := newTestClient(t, srv.URL, WithToken("tok"),
		WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))),
		WithObserver(attemptHook(func(_ *Call, a *Attempt) {
			mu.Lock()
			defer mu.Unlock()
			heard = append(heard, a.Deprecation)
		})))

	want := &Deprecation{Deprecated: true, Date: time.Unix(1688169599, 0).UTC(),
		Sunset: time.Date(2026, 11, 11, 23, 59, 59, 0, time.UTC), Link: "https://docs.rail0.example/v2"}
	for i := range 3 {
		p, err := c.Payments.Get(context.Background(), fmt.Sprintf("p%d", i))
		require.NoError(t, err)
		assert.Equal(t, want, p.Response.Deprecation)
		assert.Equal(t, want, p.Response.Call.Attempts[0].Deprecation)
	}
	page, err := c.Payments.List(context.Background(), PaymentListParams{})
	require.NoError(t, err)
	assert.Equal(t, want, page.Response.Deprecation)

	mu.Lock()
	assert.Equal(t, []*Deprecation{want, want, want, want}, heard, "every attempt, to the observers")
	mu.Unlock()
	out := logs.String()
	assert.Equal(t, 2, strings.Count(out, "rail0: the gateway deprecates this operation"), out)
	assert.Contains(t, out, "operation=getPayment")
	assert.Contains(t, out, "operation=listPayments")
	assert.Contains(t, out, "sunset=2026-11-11T23:59:59.000Z")
	assert.Contains(t, out, "link=https://docs.rail0.example/v2")

	assert.Contains(t, page.Response.Call.String(), " deprecated=2023-06-30 sunset=2026-11-11 -> return")

	// An answer without the headers has none.
	plain := newScriptServer(t, step{status: http.StatusOK, body: paymentBody})
	p, err := newTestClient(t, plain.URL, WithToken("tok")).Payments.Get(context.Background(), "p1")
	require.NoError(t, err)
	assert.Nil(t, p.Response.Deprecation)
}
