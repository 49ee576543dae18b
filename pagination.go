package rail0

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// SortKey names a field to sort a list by; Desc reverses one. Other field
// names can be used as SortKey("field").
type SortKey string

// The sort keys of the lists.
const (
	// Payments sort by these; a payment's transactions too.
	SortCreatedAt SortKey = "created_at"
	SortUpdatedAt SortKey = "updated_at"
	SortAmount    SortKey = "amount"
	SortStatus    SortKey = "status"
	// A payment's transactions also sort by these.
	SortOperation   SortKey = "operation"
	SortBlockNumber SortKey = "block_number"
	// Disputes sort by these, and by SortStatus.
	SortOpenedAt SortKey = "opened_at"
	SortClosedAt SortKey = "closed_at"
)

// Desc returns the key sorting in descending order ("-field").
func (k SortKey) Desc() SortKey {
	if strings.HasPrefix(string(k), "-") {
		return k
	}
	return "-" + k
}

// ListOptions selects a page of a paginated list. Embed it in a list's
// params; the zero value asks for the server's defaults.
type ListOptions struct {
	// Page is the 1-based page number; zero means the first page.
	Page int64
	// PerPage is the page size, at most 100; zero means the server default.
	PerPage int64
	// Sort orders the list: keys applied in turn.
	Sort []SortKey
}

// encode adds the page, per_page and sort parameters that are set.
func (o ListOptions) encode(q url.Values) {
	if o.Page > 0 {
		q.Set("page", strconv.FormatInt(o.Page, 10))
	}
	if o.PerPage > 0 {
		q.Set("per_page", strconv.FormatInt(o.PerPage, 10))
	}
	if len(o.Sort) > 0 {
		keys := make([]string, len(o.Sort))
		for i, k := range o.Sort {
			keys[i] = string(k)
		}
		q.Set("sort", strings.Join(keys, ","))
	}
}

// Page is one page of a paginated list, with the gateway's pagination
// headers. When a header is missing, each field falls back:
//   - TotalCount to the number of items;
//   - Page to the page asked for;
//   - PerPage to the page size asked for.
type Page[T any] struct {
	Items []T
	// TotalCount is the number of items across all pages (x-total-count).
	TotalCount int64
	// Page is this page's number (x-page).
	Page int64
	// PerPage is the page size the server used (x-per-page).
	PerPage int64
	// Response is the metadata of the call that fetched this page.
	Response *Response `json:"-"`
}

// List is a list that the gateway returns whole, not paginated. It carries
// the metadata of the call that returned it.
type List[T any] struct {
	Items []T
	// Response is the metadata of the call that returned the list.
	Response *Response `json:"-"`
}

// HasNext reports whether pages follow this one.
func (p *Page[T]) HasNext() bool {
	return len(p.Items) > 0 && p.PerPage > 0 && p.Page*p.PerPage < p.TotalCount
}

// listPage fetches one page of the list op, its path filled with args. q
// is its query; it is not modified.
func listPage[T any](ctx context.Context, c *Client, op *operation, args pathArgs, q url.Values) (*Page[T], error) {
	var items []T
	resp, err := c.do(ctx, &request{op: op, args: args, query: q}, &items)
	if err != nil {
		return nil, err
	}
	p := &Page[T]{Items: items, Response: resp}
	p.TotalCount = headerInt(resp.Header, "X-Total-Count", int64(len(items)))
	p.Page = headerInt(resp.Header, "X-Page", queryInt(q, "page", 1))
	p.PerPage = headerInt(resp.Header, "X-Per-Page", queryInt(q, "per_page", int64(len(items))))
	return p, nil
}

// listWhole runs r, whose answer is a whole list (not paginated).
func listWhole[T any](ctx context.Context, c *Client, r *request) (*List[T], error) {
	var out List[T]
	resp, err := c.do(ctx, r, &out.Items)
	if err != nil {
		return nil, err
	}
	out.Response = resp
	return &out, nil
}

// listAll walks every page from the one q asks for (the first by default).
// It stops on the first error, which it yields. It checks ctx before each
// page. q is copied, never modified. Pages the server does not advance,
// or items past its x-total-count, stop the walk with a *PaginationError.
// Going on would ask for the same page forever and yield duplicates.
func listAll[T any](ctx context.Context, c *Client, op *operation, args pathArgs, q url.Values) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		path, err := op.path(args)
		if err != nil {
			yield(zero, err)
			return
		}
		pq := url.Values{}
		for k, v := range q {
			pq[k] = append([]string(nil), v...)
		}
		page := queryInt(q, "page", 1)
		for {
			if err := ctx.Err(); err != nil {
				yield(zero, err)
				return
			}
			pq.Set("page", strconv.FormatInt(page, 10))
			p, err := listPage[T](ctx, c, op, args, pq)
			if err != nil {
				yield(zero, err)
				return
			}
			if p.Page != page {
				yield(zero, &PaginationError{Path: "/" + path, Page: page, ServerPage: p.Page, TotalCount: p.TotalCount,
					Reason: fmt.Sprintf("the server answered page %d: its pages do not advance", p.Page)})
				return
			}
			for i, item := range p.Items {
				if pos := (p.Page-1)*p.PerPage + int64(i); pos >= p.TotalCount {
					yield(zero, &PaginationError{Path: "/" + path, Page: page, ServerPage: p.Page, TotalCount: p.TotalCount,
						Reason: fmt.Sprintf("the server sent item %d of a list whose x-total-count is %d", pos+1, p.TotalCount)})
					return
				}
				if !yield(item, nil) {
					return
				}
			}
			if !p.HasNext() {
				return
			}
			page = p.Page + 1
		}
	}
}

// PaginationError stops an All… iterator when the server's pages cannot be
// walked safely. That is one of:
//   - a page other than the one asked for: x-page does not advance, so
//     walking on would repeat it forever and yield duplicates;
//   - more items than the server's own x-total-count.
//
// The items yielded before it are genuine. The page-level List methods
// still work.
type PaginationError struct {
	// Path is the list's path (relative to the base URL, without the query).
	Path string
	// Page is the page asked for; ServerPage is the x-page answered.
	Page       int64
	ServerPage int64
	// TotalCount is the x-total-count of that answer.
	TotalCount int64
	// Reason says what was wrong.
	Reason string
}

// Error returns one readable line.
func (e *PaginationError) Error() string {
	return fmt.Sprintf("rail0: GET %s: pagination stopped at page %d: %s", e.Path, e.Page, e.Reason)
}

// headerInt parses an integer header, or returns def when it is missing or
// malformed.
func headerInt(h http.Header, name string, def int64) int64 {
	if v := h.Get(name); v != "" {
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n >= 0 {
			return n
		}
	}
	return def
}

func queryInt(q url.Values, name string, def int64) int64 {
	if v := q.Get(name); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return def
}
