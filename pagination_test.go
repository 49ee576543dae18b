package rail0

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pagedServer serves total payments, perPage at a time, under /api/v1, with
// or without the pagination headers.
func pagedServer(t *testing.T, total, perPage int, headers bool, failPage int) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/payments", func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		page, _ := strconv.Atoi(r.URL.Query().Get("page"))
		if page == 0 {
			page = 1
		}
		if page == failPage {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		if headers {
			w.Header().Set("x-total-count", strconv.Itoa(total))
			w.Header().Set("x-page", strconv.Itoa(page))
			w.Header().Set("x-per-page", strconv.Itoa(perPage))
		}
		fmt.Fprint(w, "[")
		for i := (page - 1) * perPage; i < min(page*perPage, total); i++ {
			if i > (page-1)*perPage {
				fmt.Fprint(w, ",")
			}
			fmt.Fprintf(w, `{"id":"p%d","status":"authorized","amount":"1"}`, i)
		}
		fmt.Fprint(w, "]")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, &calls
}

func TestListPageMetadata(t *testing.T) {
	srv, _ := pagedServer(t, 57, 25, true, 0)
	c := newTestClient(t, srv.URL+"/api/v1")
	p, err := c.Payments.List(context.Background(), PaymentListParams{ListOptions: ListOptions{Page: 2, PerPage: 25}})
	require.NoError(t, err)
	assert.Len(t, p.Items, 25)
	assert.Equal(t, int64(57), p.TotalCount)
	assert.Equal(t, int64(2), p.Page)
	assert.Equal(t, int64(25), p.PerPage)
	assert.True(t, p.HasNext())
	assert.Equal(t, "p25", p.Items[0].ID)
}

func TestListPageWithoutHeadersFallsBack(t *testing.T) {
	srv, _ := pagedServer(t, 7, 10, false, 0)
	c := newTestClient(t, srv.URL+"/api/v1")
	p, err := c.Payments.List(context.Background(), PaymentListParams{})
	require.NoError(t, err)
	assert.Equal(t, int64(7), p.TotalCount, "falls back to the array length")
	assert.Equal(t, int64(1), p.Page)
	assert.False(t, p.HasNext())
}

func TestListQueryEncoding(t *testing.T) {
	srv := newScriptServer(t, step{status: 200, body: `[]`})
	c := newTestClient(t, srv.URL)
	disputed := false
	_, err := c.Payments.List(context.Background(), PaymentListParams{
		ListOptions: ListOptions{Page: 2, PerPage: 25, Sort: []SortKey{SortCreatedAt.Desc(), SortStatus}},
		Status:      StatusAuthorized, Mode: ModeAuthorize, ChainID: 84532, Disputed: &disputed, MinAmount: "100",
	})
	require.NoError(t, err)
	assert.Equal(t, "chain_id=84532&disputed=false&min_amount=100&mode=authorize&page=2&per_page=25&sort=-created_at%2Cstatus&status=authorized", srv.requests()[0].query)
}

func TestAllWalksEveryPage(t *testing.T) {
	srv, calls := pagedServer(t, 57, 25, true, 0)
	c := newTestClient(t, srv.URL+"/api/v1")
	params := PaymentListParams{ListOptions: ListOptions{PerPage: 25}, Status: StatusAuthorized}
	before := params
	var ids []string
	for p, err := range c.Payments.All(context.Background(), params) {
		require.NoError(t, err)
		ids = append(ids, p.ID)
	}
	assert.Len(t, ids, 57)
	assert.Equal(t, "p56", ids[56])
	assert.Equal(t, int32(3), calls.Load())
	assert.Equal(t, before, params, "the caller's params are not mutated")
}

func TestAllStopsWhenTheLoopBreaks(t *testing.T) {
	srv, calls := pagedServer(t, 57, 25, true, 0)
	c := newTestClient(t, srv.URL+"/api/v1")
	n := 0
	for _, err := range c.Payments.All(context.Background(), PaymentListParams{}) {
		require.NoError(t, err)
		n++
		if n == 3 {
			break
		}
	}
	assert.Equal(t, int32(1), calls.Load())
}

func TestAllStopsOnFirstError(t *testing.T) {
	srv, calls := pagedServer(t, 57, 25, true, 2)
	c := newTestClient(t, srv.URL+"/api/v1", WithMaxRetries(0))
	var n int
	var gotErr error
	for _, err := range c.Payments.All(context.Background(), PaymentListParams{}) {
		if err != nil {
			gotErr = err
			continue
		}
		n++
	}
	assert.Equal(t, 25, n)
	var apiErr *APIError
	require.ErrorAs(t, gotErr, &apiErr)
	assert.Equal(t, 500, apiErr.StatusCode)
	assert.Equal(t, int32(2), calls.Load())
}

func TestAllHonoursContext(t *testing.T) {
	srv, calls := pagedServer(t, 57, 25, true, 0)
	c := newTestClient(t, srv.URL+"/api/v1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n int
	var gotErr error
	for _, err := range c.Payments.All(ctx, PaymentListParams{}) {
		if err != nil {
			gotErr = err
			break
		}
		n++
		if n == 25 {
			cancel()
		}
	}
	assert.ErrorIs(t, gotErr, context.Canceled)
	assert.Equal(t, 25, n)
	assert.Equal(t, int32(1), calls.Load())
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
