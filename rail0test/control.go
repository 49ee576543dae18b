package rail0test

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// controlPrefix is where WithControl mounts the control surface.
// Its requests bypass faults, the rate limiter and the Ledger.
const controlPrefix = "/_rail0test/"

// controlRoutes builds the control surface:
//
//	GET    /_rail0test/clock                 {"now": RFC 3339 time}
//	POST   /_rail0test/clock/advance?by=2h   moves the clock forward; {"now": ...}
//	POST   /_rail0test/reset                 Server.Reset
//	GET    /_rail0test/ledger                the executions, oldest first; filters:
//	                                         route, method, path, idempotency_key,
//	                                         payment_id, operation, status
//	DELETE /_rail0test/ledger                forgets the executions
//	POST   /_rail0test/faults                body: a ParseFault line; {"id": n}
//	GET    /_rail0test/faults/{id}           {"id": n, "hits": n, "installed": bool}
//	DELETE /_rail0test/faults                removes every fault
//	DELETE /_rail0test/faults/{id}           removes one fault
//
// POST /_rail0test/clock/advance also takes {"by": "2h"} as a JSON body.
func (s *Server) controlRoutes() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("GET "+controlPrefix+"clock", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"now": s.Clock.Now().UTC().Format(time.RFC3339Nano)})
	})
	m.HandleFunc("POST "+controlPrefix+"clock/advance", s.handleAdvance)
	m.HandleFunc("POST "+controlPrefix+"reset", func(w http.ResponseWriter, _ *http.Request) {
		s.Reset()
		writeJSON(w, http.StatusOK, map[string]any{"reset": true})
	})
	m.HandleFunc("GET "+controlPrefix+"ledger", s.handleLedger)
	m.HandleFunc("DELETE "+controlPrefix+"ledger", func(w http.ResponseWriter, _ *http.Request) {
		s.Ledger.Reset()
		w.WriteHeader(http.StatusNoContent)
	})
	m.HandleFunc("POST "+controlPrefix+"faults", s.handleAddFault)
	m.HandleFunc("DELETE "+controlPrefix+"faults", func(w http.ResponseWriter, _ *http.Request) {
		s.Faults.Clear()
		w.WriteHeader(http.StatusNoContent)
	})
	m.HandleFunc("GET "+controlPrefix+"faults/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, ok := faultID(w, r)
		if !ok {
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "hits": s.Faults.Hits(id), "installed": s.Faults.installed(id)})
	})
	m.HandleFunc("DELETE "+controlPrefix+"faults/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, ok := faultID(w, r)
		if !ok {
			return
		}
		s.Faults.Remove(id)
		w.WriteHeader(http.StatusNoContent)
	})
	m.HandleFunc(controlPrefix, func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{status: http.StatusNotFound, code: "not_found", title: "Not found",
			detail: "No control route matches " + r.Method + " " + r.URL.Path + "."})
	})
	return m
}

// serveControl answers a control request from a loopback client addressed
// by a loopback name. It refuses every other one. The surface can reset the
// server, move its clock and install faults. So it must not be reachable
// from another machine, nor from a web page through DNS rebinding.
//
// It also refuses what a browser sends on behalf of a page of another
// origin (see sameOrigin). The developer's browser is a loopback client
// too. Any page open in it could otherwise reach the surface with a no-cors
// fetch or a form post.
func (s *Server) serveControl(w http.ResponseWriter, r *http.Request) {
	if !loopbackPeer(r.RemoteAddr) || !loopbackHost(r.Host) {
		writeError(w, errForbidden("forbidden", "The control surface answers loopback clients only."))
		return
	}
	if !sameOrigin(r) {
		writeError(w, errForbidden("forbidden", "The control surface refuses requests that a web page of another origin makes."))
		return
	}
	s.control.ServeHTTP(w, r)
}

// sameOrigin reports whether r is not a browser's request on behalf of a
// page of another origin.
//
// A browser marks such a request with Sec-Fetch-Site; every browser does
// since 2023. It also sends Origin on every POST or DELETE, older browsers
// too. A program such as curl or a test client sends neither and is let
// through. So a request is refused in two cases:
//   - Sec-Fetch-Site is present and is neither same-origin nor none. none
//     is a URL typed into the address bar.
//   - Origin is present and is not this server's own origin. A page on
//     another loopback port is same-site but not same-origin. And "null"
//     (a sandboxed frame, a file: page) is no origin at all.
//
// This is the rule of http.CrossOriginProtection, applied to every method.
// That handler differs in three ways. It lets GET, HEAD and OPTIONS through
// unchecked. It compares Origin with the Host without the scheme. And it
// answers with its own plain-text 403.
//
// A non-simple content type (application/json) is not required. Every
// browser that can send a no-cors POST also sends Origin. And curl users of
// rail0-gateway send plain-text fault rules and bodiless POSTs.
func sameOrigin(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return false
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	return strings.EqualFold(origin, scheme+r.Host)
}

func loopbackPeer(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (s *Server) handleAdvance(w http.ResponseWriter, r *http.Request) {
	by := r.URL.Query().Get("by")
	if by == "" {
		var body struct {
			By *string `json:"by"`
		}
		if e := decodeBody(r, &body); e != nil {
			writeError(w, e)
			return
		}
		if body.By == nil {
			writeError(w, errMissing("by", http.StatusBadRequest))
			return
		}
		by = *body.By
	}
	d, err := time.ParseDuration(by)
	if err != nil || d < 0 {
		writeError(w, errBadRequest("invalid_param", "by", "by must be a non-negative duration such as 90s or 170h."))
		return
	}
	c, ok := s.Clock.(advancer)
	if !ok { // only a Clock given to WithClock can lack Advance
		writeError(w, errUnprocessable("clock_not_movable", "Clock cannot move",
			"The server's clock has no Advance method."))
		return
	}
	c.Advance(d)
	writeJSON(w, http.StatusOK, map[string]any{"now": s.Clock.Now().UTC().Format(time.RFC3339Nano)})
}

func (s *Server) handleLedger(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	status := -1
	if v := q.Get("status"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			writeError(w, errBadRequest("invalid_param", "status", "status must be an integer."))
			return
		}
		status = n
	}
	match := func(name, value string) bool { return !q.Has(name) || q.Get(name) == value }
	out := []map[string]any{}
	for _, e := range s.Ledger.Executions() {
		if !match("route", e.Route) || !match("method", e.Method) || !match("path", e.Path) ||
			!match("idempotency_key", e.IdempotencyKey) || !match("payment_id", e.PaymentID) ||
			!match("operation", e.Operation) || status >= 0 && e.Status != status {
			continue
		}
		out = append(out, map[string]any{
			"route":           e.Route,
			"method":          e.Method,
			"path":            e.Path,
			"idempotency_key": e.IdempotencyKey,
			"payment_id":      e.PaymentID,
			"operation":       e.Operation,
			"status":          e.Status,
			"request_id":      e.RequestID,
			"at":              e.At.UTC().Format(time.RFC3339Nano),
		})
	}
	writeJSON(w, http.StatusOK, out)
}

// faultID reads the {id} of a fault route, answering 400 when it is not a number.
func faultID(w http.ResponseWriter, r *http.Request) (int, bool) {
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil {
		writeError(w, errBadRequest("invalid_param", "id", "The fault id must be an integer."))
		return 0, false
	}
	return id, true
}

func (s *Server) handleAddFault(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		writeError(w, errBadRequest("bad_request", "", "The request body could not be read."))
		return
	}
	f, err := ParseFault(string(data))
	if err != nil {
		writeError(w, errBadRequest("invalid_param", "fault", strings.TrimPrefix(err.Error(), "rail0test: ")+"."))
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{"id": s.Faults.Add(f)})
}
