package rail0

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"time"
)

// This file shares one request among identical reads in flight at once
// (WithSharedReads). Eight concurrent Payments.Get of one id send one
// request. The first starts a flight, and the others join it. Each decodes
// the answer into its own value. The flight is a call like any other
// (send.go). It runs on a goroutine of its own, under a context no caller
// can cancel. Each caller waits with its own context and leaves when it
// ends. The request is cancelled only when every caller has left. Only
// reads are shared, and only among calls made with the same credential and
// the same retry settings. So a flight never carries one session's answer
// to another.

// flightKey names the reads that may share one request.
type flightKey struct {
	method string
	url    string // the request's URL, query included
	cred   [sha256.Size]byte
	policy policy // the view's settings, so a handler's call waits no longer than its own
	poll   bool   // a poll skips the closed-partition refusal and yields its turn (request.poll)
}

// flights are the shared reads in flight on a client.
type flights struct {
	mu sync.Mutex
	m  map[flightKey]*flight
}

// flight is one shared read: the call, the callers waiting for it, and what
// it got.
type flight struct {
	done    chan struct{} // closed when the call has returned
	waiters int           // callers still waiting (flights.mu)
	cancel  context.CancelFunc
	wait    rateWait      // the rate-limit wait the call is in, if any (flights.mu)
	changed chan struct{} // closed and replaced when wait changes (flights.mu)

	// Set before done is closed, read-only after.
	resp *Response
	body []byte // the 2xx body each caller decodes
	err  error
	st   *callState
}

// WithSharedReads lets identical reads in flight at once share one request
// (off by default). Concurrent GETs with the same URL, credential and retry
// settings send it once. Each caller gets its own copy of the answer.
//
// Each caller waits with its own context. One whose context ends returns
// at once, with a *TransportError holding the context's error. The request
// goes on for the others. It is cancelled only when every caller has left.
//
// The shared request is one call, with one transcript; each caller gets a
// copy. It is one report to the observers, under the first caller's
// context values (its trace). It has no deadline of its own, so it may
// wait out a 429 longer than a caller's deadline. A caller whose deadline
// comes first gets a 429 at once, as its own call would have. It is
// NotSent, and its RetryAfter is the wait left. Writes and Client.Raw are
// never shared.
func WithSharedReads(on bool) Option {
	return func(c *config) error {
		c.sharedReads = on
		return nil
	}
}

// shareable reports whether r may share a request. It must be a read the
// contract names, made by the SDK's own methods.
func shareable(r *request) bool {
	return r.op != nil && classOf(r.op.method, r.op) == opRead && !r.raw && r.body == nil &&
		r.identify == nil && r.onRateWait == nil
}

// doShared is do for a shareable read on a client WithSharedReads. It
// joins the flight of an identical read, or starts one.
func (c *Client) doShared(ctx context.Context, r *request, out any) (*Response, error) {
	path, err := r.op.path(r.args)
	if err != nil {
		return nil, err
	}
	v := c.forCaller(ctx)
	key := flightKey{method: r.op.method, url: v.resolve(path, r.query), policy: v.policy, poll: r.poll}
	token := ""
	if !r.anonymous && v.tokenSource != nil {
		if token, err = v.bearer(ctx, "", true); err != nil || token == "" {
			if err != nil && ctx.Err() == nil {
				// The call reports the failure as its own, without asking
				// the token source (signing in) a second time.
				st, sctx, perr := v.prepare(ctx, r)
				if perr != nil {
					return nil, perr
				}
				return st.end(sctx, nil, err)
			}
			return v.doOne(ctx, r, out) // it sends no token, or its context ended
		}
		key.cred = sha256.Sum256([]byte(token))
	}
	f := v.flights.join(key, func(f *flight) {
		fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f.cancel = cancel
		own := *r
		own.query = cloneQuery(r.query)
		own.onRateWait = func(w rateWait) { v.flights.publish(f, w) }
		go v.fly(fctx, key, f, &own, out, token)
	})
	defer v.flights.leave(key, f)
	for {
		w, changed := v.flights.waitOf(f)
		left := w.until.Sub(v.now())
		if left > 0 && left >= timeLeft(ctx, v.now()) {
			// The call's own request would not have waited past its
			// deadline: the 429 comes back at once.
			return nil, w.sharedRefusal(left)
		}
		select {
		case <-f.done:
			return f.answer(out)
		case <-changed:
		case <-ctx.Done():
			if left := w.until.Sub(v.now()); left > 0 {
				return nil, w.sharedRefusal(left).withCause(ctx.Err())
			}
			return nil, &TransportError{Method: r.op.method, Path: "/" + path, Err: ctx.Err()}
		}
	}
}

// sharedRefusal is the 429 a caller of a shared read gets that does not
// wait for it. The shared request waits out a rate limit, with left to go.
func (w rateWait) sharedRefusal(left time.Duration) *APIError {
	return notSentError(w.method, w.path, left,
		"not sent: the shared read this call joined is waiting out a rate limit for longer than the call may wait")
}

// join returns the flight of key, counting the caller in. start begins one
// when there is none.
func (fs *flights) join(key flightKey, start func(*flight)) *flight {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f, ok := fs.m[key]; ok {
		f.waiters++
		return f
	}
	if fs.m == nil {
		fs.m = make(map[flightKey]*flight)
	}
	f := &flight{done: make(chan struct{}), changed: make(chan struct{}), waiters: 1}
	fs.m[key] = f
	start(f)
	return f
}

// publish tells f's callers of the rate-limit wait its call has started.
func (fs *flights) publish(f *flight, w rateWait) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f.wait = w
	close(f.changed)
	f.changed = make(chan struct{})
}

// waitOf returns f's current wait, and a channel closed when it changes.
func (fs *flights) waitOf(f *flight) (rateWait, <-chan struct{}) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return f.wait, f.changed
}

// leave counts a caller out of f. The last one out cancels the request if
// it is still running.
func (fs *flights) leave(key flightKey, f *flight) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f.waiters--; f.waiters > 0 {
		return
	}
	if fs.m[key] == f {
		delete(fs.m, key)
	}
	f.cancel()
}

// fly runs the shared call and keeps its answer. It decodes the answer into
// a value of out's type of its own. So the call reports a body that does
// not decode as any call does. Each caller decodes again into its own
// value.
func (c *Client) fly(ctx context.Context, key flightKey, f *flight, r *request, out any, token string) {
	defer close(f.done)
	defer c.flights.finished(key, f)
	var scratch any
	if out != nil {
		scratch = reflect.New(reflect.TypeOf(out).Elem()).Interface()
	}
	st, ctx, err := c.prepare(ctx, r)
	if err != nil {
		f.err = err
		return
	}
	resp, err := st.run(ctx, scratch, token)
	f.resp, f.err = st.end(ctx, resp, err)
	f.body, f.st = st.body, st
}

// finished takes f out of the flights a caller may join. A read made from
// now on sends its own request.
func (fs *flights) finished(key flightKey, f *flight) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.m[key] == f {
		delete(fs.m, key)
	}
}

// answer is the flight's answer as one caller gets it. The caller gets its
// own copy of the Response and its transcript, or of the error. It gets the
// body decoded into its own out.
func (f *flight) answer(out any) (*Response, error) {
	if f.err != nil {
		return nil, copyCallError(f.err)
	}
	resp := copyResponse(f.resp)
	if out != nil && resp.StatusCode != http.StatusNoContent {
		if err := json.Unmarshal(f.body, out); err != nil {
			// Not the type the flight decoded: this caller's own failure.
			failure := f.st.undecodable(resp, err)
			attachCall(failure, resp.Call)
			return nil, failure
		}
	}
	return resp, nil
}

// copyResponse returns a copy of resp that shares nothing a caller may
// change: its header, its transcript and the transcript's lists.
func copyResponse(resp *Response) *Response {
	out := *resp
	out.Header = resp.Header.Clone()
	out.RateLimit = clonePtr(resp.RateLimit)
	out.Deprecation = clonePtr(resp.Deprecation)
	out.Call = copyCall(resp.Call)
	return &out
}

// copyCall returns a copy of call with lists of its own, and attempts
// whose records are their own.
func copyCall(call *Call) *Call {
	if call == nil {
		return nil
	}
	out := *call
	out.Attempts = slices.Clone(call.Attempts)
	for i := range out.Attempts {
		a := &out.Attempts[i]
		a.RateLimit = clonePtr(a.RateLimit)
		a.Deprecation = clonePtr(a.Deprecation)
		a.PartitionState = clonePtr(a.PartitionState)
	}
	out.Limiter = slices.Clone(call.Limiter)
	return &out
}

// clonePtr returns a pointer to a copy of *p, or nil.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// copyCallError returns a copy of a call's error for one caller. The SDK's
// error types are copied with their transcript. Anything else is returned
// as it is.
func copyCallError(err error) error {
	switch e := err.(type) {
	case *APIError:
		c := *e
		c.Header = e.Header.Clone()
		c.Body = slices.Clone(e.Body)
		c.Call = copyCall(e.Call)
		return &c
	case *TransportError:
		c := *e
		c.Call = copyCall(e.Call)
		return &c
	case *DecodeError:
		c := *e
		c.Body = slices.Clone(e.Body)
		c.Call = copyCall(e.Call)
		return &c
	}
	return err
}

// cloneQuery returns a copy of q. The flight outlives its first caller,
// whose values it must not share.
func cloneQuery(q map[string][]string) map[string][]string {
	if q == nil {
		return nil
	}
	out := make(map[string][]string, len(q))
	for k, v := range q {
		out[k] = slices.Clone(v)
	}
	return out
}
