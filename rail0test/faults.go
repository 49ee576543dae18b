package rail0test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path"
	"strconv"
	"sync"
	"time"
)

// FaultKind says what a Fault does to a matching request.
type FaultKind int

const (
	// FaultStatus answers Status (default 503) without running the handler.
	// The answer carries Body (default: a JSON error envelope) and
	// ContentType. When RetryAfter is not empty, it also carries that raw
	// Retry-After value. That may be anything: "5", "-1", "99999999", an
	// HTTP-date or garbage.
	FaultStatus FaultKind = iota + 1
	// FaultStatusAfter runs the handler, throws its response away and
	// answers as FaultStatus does. The write happened but the client sees an
	// error, as behind a proxy that timed out.
	FaultStatusAfter
	// FaultStall waits Delay (real time) before handling the request
	// normally. The wait ends early when the client gives up or the server
	// closes.
	FaultStall
	// FaultDropBefore closes the connection without a response before the
	// handler runs. The request was never executed.
	FaultDropBefore
	// FaultDropAfter runs the handler, then closes the connection without a
	// response. The request was executed but the client cannot know it.
	FaultDropAfter
	// FaultTruncate runs the handler, then sends its status and headers
	// with the full Content-Length. But it sends only half of the body before
	// closing the connection.
	FaultTruncate
	// FaultGzipLie runs the handler, then sends its body gzip-compressed
	// with Content-Encoding: gzip. Its Content-Length is larger than the
	// bytes that follow before the connection closes.
	FaultGzipLie
)

// String names the kind.
func (k FaultKind) String() string {
	switch k {
	case FaultStatus:
		return "status"
	case FaultStatusAfter:
		return "status_after"
	case FaultStall:
		return "stall"
	case FaultDropBefore:
		return "drop_before"
	case FaultDropAfter:
		return "drop_after"
	case FaultTruncate:
		return "truncate"
	case FaultGzipLie:
		return "gzip_lie"
	}
	return "FaultKind(" + strconv.Itoa(int(k)) + ")"
}

// Fault describes a failure to inject. Empty match fields match everything.
type Fault struct {
	// Method matches the request method, e.g. "POST".
	Method string
	// Route matches the route pattern exactly, as Ledger names it.
	// Examples are "POST /payments" and "POST /payments/{id}/{operation}".
	Route string
	// Path matches the URL path with path.Match syntax, e.g. "/payments/*/capture".
	Path string
	// Times is how many matching requests the fault hits before it retires
	// itself. Zero means every matching request until Remove or Clear.
	Times int
	// Rate, when in (0, 1), hits a matching request with that probability.
	// It is drawn from the server's seeded source (see WithSeed). 0 hits
	// every match.
	Rate float64
	// Every, when above 1, hits only every Every-th matching request: the
	// Every-th, the 2·Every-th, and so on. That makes a deterministic
	// intermittent failure.
	Every int

	// Kind says what happens to a request the fault hits.
	Kind FaultKind
	// Status is the status code of FaultStatus and FaultStatusAfter (default 503).
	Status int
	// RetryAfter, when not empty, is sent verbatim as the Retry-After header of
	// FaultStatus and FaultStatusAfter.
	RetryAfter string
	// Body, when not empty, is sent verbatim by FaultStatus and
	// FaultStatusAfter instead of a JSON error envelope. It may be an HTML
	// page, truncated JSON, anything.
	Body string
	// ContentType goes with Body (default application/json).
	ContentType string
	// Delay is how long FaultStall waits.
	Delay time.Duration
}

func (f *Fault) after() bool {
	switch f.Kind {
	case FaultStatusAfter, FaultDropAfter, FaultTruncate, FaultGzipLie:
		return true
	}
	return false
}

// Faults holds the faults of a server. It is safe for concurrent use.
//
// Faults act in front of the gateway, like a misbehaving proxy. A fault may
// answer or drop a request before the handler. Such a request is neither
// counted by the rate limiter nor recorded in the Ledger. The "after" kinds
// let the request through the rate limiter and the handler first.
type Faults struct {
	mu     sync.Mutex
	rng    *rand.Rand
	nextID int
	active []*activeFault
	hits   map[int]int
}

type activeFault struct {
	id   int
	f    Fault
	left int // remaining hits; -1 for unlimited
	seen int // matching requests so far, for Every
}

func newFaults(seed uint64, initial []Fault) *Faults {
	fs := &Faults{}
	fs.reset(seed, initial)
	return fs
}

// reset uninstalls every fault and forgets the hit counts.
// It reseeds the random source and installs initial, as a new server would.
func (fs *Faults) reset(seed uint64, initial []Fault) {
	fs.mu.Lock()
	fs.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	fs.nextID, fs.active, fs.hits = 0, nil, map[int]int{}
	fs.mu.Unlock()
	for _, f := range initial {
		fs.Add(f)
	}
}

// Add installs f and returns its id.
// Faults are tried in the order they were added. The first one that
// matches and fires applies.
func (fs *Faults) Add(f Fault) int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.nextID++
	left := -1
	if f.Times > 0 {
		left = f.Times
	}
	fs.active = append(fs.active, &activeFault{id: fs.nextID, f: f, left: left})
	return fs.nextID
}

// Remove uninstalls the fault with id.
func (fs *Faults) Remove(id int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i, a := range fs.active {
		if a.id == id {
			fs.active = append(fs.active[:i], fs.active[i+1:]...)
			return
		}
	}
}

// Clear uninstalls every fault.
func (fs *Faults) Clear() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.active = nil
}

// Hits returns how many requests the fault with id has hit so far.
func (fs *Faults) Hits(id int) int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.hits[id]
}

// installed reports whether the fault with id is still installed.
func (fs *Faults) installed(id int) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, a := range fs.active {
		if a.id == id {
			return true
		}
	}
	return false
}

// Pending returns how many faults are still installed.
func (fs *Faults) Pending() int {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return len(fs.active)
}

// match picks the fault that fires for a request, consuming one of its hits.
func (fs *Faults) match(method, route, urlPath string) *Fault {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i, a := range fs.active {
		f := &a.f
		if f.Method != "" && f.Method != method || f.Route != "" && f.Route != route {
			continue
		}
		if f.Path != "" {
			if ok, _ := path.Match(f.Path, urlPath); !ok {
				continue
			}
		}
		if f.Every > 1 {
			a.seen++
			if a.seen%f.Every != 0 {
				continue
			}
		}
		if f.Rate > 0 && f.Rate < 1 && fs.rng.Float64() >= f.Rate {
			continue
		}
		fs.hits[a.id]++
		if a.left > 0 {
			a.left--
			if a.left == 0 {
				fs.active = append(fs.active[:i], fs.active[i+1:]...)
			}
		}
		out := *f
		return &out
	}
	return nil
}

// applyFaultBefore applies the pre-handler part of f.
// It reports whether the request is finished.
func (s *Server) applyFaultBefore(w http.ResponseWriter, r *http.Request, f *Fault) bool {
	switch f.Kind {
	case FaultStatus:
		writeFault(w, f)
		return true
	case FaultDropBefore:
		dropConnection(w)
		return true
	case FaultStall:
		t := time.NewTimer(f.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return true
		case <-s.ctx.Done():
			dropConnection(w)
			return true
		}
	}
	return false
}

// applyFaultAfter runs the handler into a buffer.
// Then it delivers the response the way f says.
func (s *Server) applyFaultAfter(w http.ResponseWriter, r *http.Request, f *Fault, route string) {
	buf := newBufferWriter()
	// The buffered header starts with what the pipeline already set (X-Request-Id,
	// rate-limit headers).
	for k, v := range w.Header() {
		buf.header[k] = v
	}
	s.run(buf, r, route)
	if buf.status == 0 {
		buf.status = http.StatusOK
	}
	switch f.Kind {
	case FaultStatusAfter:
		writeFault(w, f)
	case FaultDropAfter:
		dropConnection(w)
	case FaultTruncate:
		body := buf.body.Bytes()
		buf.header.Set("Content-Length", strconv.Itoa(len(body)))
		writeRaw(w, buf.status, buf.header, body[:len(body)/2])
	case FaultGzipLie:
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		_, _ = zw.Write(buf.body.Bytes())
		_ = zw.Close()
		buf.header.Set("Content-Encoding", "gzip")
		buf.header.Set("Content-Length", strconv.Itoa(gz.Len()+64))
		writeRaw(w, buf.status, buf.header, gz.Bytes())
	}
}

func writeFault(w http.ResponseWriter, f *Fault) {
	status := f.Status
	if status == 0 {
		status = http.StatusServiceUnavailable
	}
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	if f.Body == "" {
		writeError(w, &apiError{status: status, code: "injected_fault", title: http.StatusText(status),
			detail: "This response was injected by rail0test."})
		return
	}
	ct := f.ContentType
	if ct == "" {
		ct = "application/json; charset=utf-8"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(status)
	_, _ = w.Write([]byte(f.Body))
}

// dropConnection closes the client connection without writing a response.
func dropConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Not hijackable (HTTP/2): abort the response, which resets the stream.
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// writeRaw writes an HTTP/1.1 response by hand on the hijacked connection,
// then closes it. Written by hand, the headers can disagree with the body.
func writeRaw(w http.ResponseWriter, status int, h http.Header, body []byte) {
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	defer conn.Close()
	bw := bufio.NewWriter(conn)
	if brw != nil {
		bw = brw.Writer
	}
	_, _ = fmt.Fprintf(bw, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	h.Set("Connection", "close")
	_ = h.Write(bw)
	_, _ = bw.WriteString("\r\n")
	_, _ = bw.Write(body)
	_ = bw.Flush()
}
