package rail0test

import (
	"sync"
	"time"
)

// Execution is one request that reached a handler.
// It was not throttled and not dropped before the handler ran. The handler
// may still have refused it (Status).
type Execution struct {
	// Route is the route pattern, e.g. "POST /payments/{id}/{operation}".
	Route string
	// Method and Path are the request's method and URL path.
	Method string
	Path   string
	// IdempotencyKey is the request's Idempotency-Key header, if any.
	IdempotencyKey string
	// PaymentID is the UUID of the payment the handler resolved, if any.
	PaymentID string
	// Operation is the payment operation of prepare and submit routes:
	// "capture", "dispute", "close_dispute", and so on.
	Operation string
	// Status is the status code the handler wrote.
	Status int
	// RequestID is the X-Request-Id of the response.
	RequestID string
	// At is the server clock's time when the handler finished.
	At time.Time
}

// Ledger records every handler execution.
// It is safe for concurrent use.
type Ledger struct {
	mu   sync.Mutex
	list []Execution
}

func (l *Ledger) record(e Execution) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = append(l.list, e)
}

// Executions returns a copy of every execution, oldest first.
func (l *Ledger) Executions() []Execution {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Execution(nil), l.list...)
}

// Count returns how many times the handler of route ran with
// Idempotency-Key key. An empty route matches every route. An empty key
// matches every request.
func (l *Ledger) Count(route, key string) int {
	return l.CountFunc(func(e Execution) bool {
		return (route == "" || e.Route == route) && (key == "" || e.IdempotencyKey == key)
	})
}

// CountOperation returns how many submit requests for operation on the
// payment paymentID reached their handler. It counts submits of a raw
// transaction and of a hash.
func (l *Ledger) CountOperation(paymentID, operation string) int {
	return l.CountFunc(func(e Execution) bool {
		return e.PaymentID == paymentID && e.Operation == operation && isSubmitRoute(e.Route)
	})
}

// CountFunc returns how many executions satisfy keep.
func (l *Ledger) CountFunc(keep func(Execution) bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.list {
		if keep(e) {
			n++
		}
	}
	return n
}

// Reset forgets every execution.
func (l *Ledger) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = nil
}

func isSubmitRoute(route string) bool {
	switch route {
	case routeSubmit, routeSubmitted, routeDisputeSubmit, routeDisputeSubmitted, routeCloseSubmit, routeCloseSubmitted:
		return true
	}
	return false
}
