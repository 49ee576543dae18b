package rail0test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// apiError is an error response in the gateway's envelope.
type apiError struct {
	status int
	code   string
	title  string
	detail string
	family string         // the older broad "status" field; code when empty
	extra  map[string]any // context fields such as param
	empty  bool           // answer with no body at all, as the gateway does for some 4xx
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	body := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if err != nil {
		// Every value written here is built from plain structs and maps.
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.empty {
		w.WriteHeader(e.status)
		return
	}
	family := e.family
	if family == "" {
		family = e.code
	}
	body := map[string]any{}
	for k, v := range e.extra {
		body[k] = v
	}
	body["code"] = e.code
	body["title"] = e.title
	body["detail"] = e.detail
	body["status"] = family
	body["message"] = e.detail
	body["error"] = e.code
	writeJSON(w, e.status, body)
}

func errUnauthorized(detail string) *apiError {
	return &apiError{status: http.StatusUnauthorized, code: "unauthorized", title: "Unauthorized", detail: detail}
}

func errForbidden(code, detail string) *apiError {
	return &apiError{status: http.StatusForbidden, code: code, title: "Forbidden", detail: detail, family: "forbidden"}
}

func errNotFound(resource string) *apiError {
	return &apiError{status: http.StatusNotFound, code: "not_found", title: "Not found",
		detail: "No " + resource + " matches this identifier.", extra: map[string]any{"resource": resource}}
}

func errBadRequest(code, param, detail string) *apiError {
	e := &apiError{status: http.StatusBadRequest, code: code, title: "Bad request", detail: detail}
	if param != "" {
		e.extra = map[string]any{"param": param}
	}
	return e
}

func errMissing(param string, status int) *apiError {
	return &apiError{status: status, code: "missing_param", title: "Missing parameter",
		detail: "The parameter " + param + " is required.", extra: map[string]any{"param": param}}
}

func errUnprocessable(code, title, detail string) *apiError {
	return &apiError{status: http.StatusUnprocessableEntity, code: code, title: title, detail: detail}
}

// errState is a 422 in the invalid_state family.
func errState(code, title, detail string) *apiError {
	return &apiError{status: http.StatusUnprocessableEntity, code: code, title: title, detail: detail, family: "invalid_state"}
}

// decodeBody reads a JSON object into v. An absent body leaves v untouched.
func decodeBody(r *http.Request, v any) *apiError {
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return errBadRequest("bad_request", "", "The request body could not be read.")
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &apiError{status: http.StatusUnprocessableEntity, code: "invalid_param", title: "Invalid parameter",
				detail: fmt.Sprintf("The parameter %s has the wrong type.", te.Field), extra: map[string]any{"param": te.Field}}
		}
		return errBadRequest("bad_request", "", "The request body is not a JSON object.")
	}
	return nil
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func tsPtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	v := ts(*t)
	return &v
}

// query parameter helpers.
// Each returns a 400 for a value it cannot accept.

func enumParam(q url.Values, name string, allowed ...string) (string, *apiError) {
	v := q.Get(name)
	if v == "" || slices.Contains(allowed, v) {
		return v, nil
	}
	return "", errBadRequest("invalid_param", name,
		fmt.Sprintf("%s must be one of %s.", name, strings.Join(allowed, ", ")))
}

func boolParam(q url.Values, name string) (*bool, *apiError) {
	switch q.Get(name) {
	case "":
		return nil, nil
	case "true", "1":
		v := true
		return &v, nil
	case "false", "0":
		v := false
		return &v, nil
	}
	return nil, errBadRequest("invalid_param", name, name+" must be true or false.")
}

func intParam(q url.Values, name string) (*int64, *apiError) {
	v := q.Get(name)
	if v == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, errBadRequest("invalid_param", name, name+" must be an integer.")
	}
	return &n, nil
}

func timeParam(q url.Values, name string) (*time.Time, *apiError) {
	v := q.Get(name)
	if v == "" {
		return nil, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, v); err == nil {
			return &t, nil
		}
	}
	return nil, errBadRequest("invalid_param", name, name+" must be an ISO-8601 time.")
}

// sortKeys maps a sort field to a comparison.
type sortKeys[T any] map[string]func(a, b T) int

// sortItems orders items by a spec such as "-created_at,status".
// Unknown fields are a 400. Ties keep insertion order.
func sortItems[T any](items []T, spec, def string, keys sortKeys[T]) *apiError {
	if spec == "" {
		spec = def
	}
	if spec == "" {
		return nil
	}
	type key struct {
		cmp  func(a, b T) int
		desc bool
	}
	var chain []key
	for _, f := range strings.Split(spec, ",") {
		f = strings.TrimSpace(f)
		desc := strings.HasPrefix(f, "-")
		f = strings.TrimPrefix(f, "-")
		c, ok := keys[f]
		if !ok {
			return errBadRequest("invalid_param", "sort", "Cannot sort by "+strconv.Quote(f)+".")
		}
		chain = append(chain, key{c, desc})
	}
	slices.SortStableFunc(items, func(a, b T) int {
		for _, k := range chain {
			if c := k.cmp(a, b); c != 0 {
				if k.desc {
					return -c
				}
				return c
			}
		}
		return 0
	})
	return nil
}

func byTime[T any](f func(T) time.Time) func(a, b T) int {
	return func(a, b T) int { return f(a).Compare(f(b)) }
}

func byString[T any](f func(T) string) func(a, b T) int {
	return func(a, b T) int { return cmp.Compare(f(a), f(b)) }
}

// paginate cuts one page out of items.
// It sets x-total-count, x-page and x-per-page.
func paginate[T any](w http.ResponseWriter, r *http.Request, items []T) ([]T, *apiError) {
	q := r.URL.Query()
	page, perPage := int64(1), int64(25)
	if v := q.Get("page"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return nil, errBadRequest("invalid_param", "page", "page must be a positive integer.")
		}
		page = n
	}
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return nil, errBadRequest("invalid_param", "per_page", "per_page must be a positive integer.")
		}
		perPage = min(n, 100)
	}
	w.Header().Set("X-Total-Count", strconv.Itoa(len(items)))
	w.Header().Set("X-Page", strconv.FormatInt(page, 10))
	w.Header().Set("X-Per-Page", strconv.FormatInt(perPage, 10))
	// A page past the end is empty. Compare page numbers rather than
	// offsets: (page-1)*perPage overflows for a page near the int64 limit.
	total := int64(len(items))
	if page-1 >= (total+perPage-1)/perPage {
		return []T{}, nil
	}
	start := (page - 1) * perPage
	end := min(start+perPage, total)
	return items[start:end], nil
}

// writePage sorts items by the request's sort parameter, or def when it is
// absent. It cuts the requested page and sets the pagination headers. It
// writes the page as a bare JSON array of view(item).
func writePage[T any](w http.ResponseWriter, r *http.Request, items []T, def string, keys sortKeys[T], view func(T) map[string]any) {
	if e := sortItems(items, r.URL.Query().Get("sort"), def, keys); e != nil {
		writeError(w, e)
		return
	}
	page, e := paginate(w, r, items)
	if e != nil {
		writeError(w, e)
		return
	}
	out := make([]map[string]any, 0, len(page))
	for _, item := range page {
		out = append(out, view(item))
	}
	writeJSON(w, http.StatusOK, out)
}
