package rail0

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// siweGateway is a gateway whose clock is offset from the local one: it
// dates its answers (Date) by its clock, refuses a SIWE message whose
// Issued At is more than five minutes from it (invalid_siwe, "Issued At is
// too far"), issues sessions that expire on it, and serves GET
// /payments/{id} to a session it has not seen expire. It runs on the
// in-memory network of pipeServer, for synctest bubbles.
type siweGateway struct {
	t        *testing.T
	offset   time.Duration
	lifetime time.Duration
	url      string
	opt      Option
	// beforeNonce, when set, may answer POST /auth/nonces itself.
	beforeNonce func(w http.ResponseWriter) bool

	mu      sync.Mutex
	seen    []string
	logins  int
	tokens  map[string]time.Time
	expired int // requests made with a token expired on the gateway's clock
}

func newSIWEGateway(t *testing.T, offset time.Duration) *siweGateway {
	g := &siweGateway{t: t, offset: offset, lifetime: 30 * time.Minute, tokens: map[string]time.Time{}}
	srv, opt := pipeServer(t, g)
	g.url, g.opt = srv.URL, opt
	return g
}

func (g *siweGateway) now() time.Time { return time.Now().Add(g.offset) }

func (g *siweGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	g.seen = append(g.seen, r.Method+" "+r.URL.Path)
	n := len(g.seen) // read under the lock: requests arrive concurrently
	g.mu.Unlock()
	w.Header().Set("Date", g.now().UTC().Format(http.TimeFormat))
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/auth/nonces":
		if g.beforeNonce != nil && g.beforeNonce(w) {
			return
		}
		authWriteJSON(w, http.StatusCreated, `{"nonce":"n`+fmt.Sprint(n)+`","expires_at":"`+g.now().Add(5*time.Minute).Format(time.RFC3339)+`"}`)
	case r.Method == http.MethodPost && r.URL.Path == "/auth":
		var body struct{ Message, Signature string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		m := siweLayout.FindStringSubmatch(body.Message)
		if m == nil {
			authWriteJSON(w, http.StatusUnprocessableEntity, `{"code":"invalid_siwe","title":"Invalid SIWE","detail":"Malformed message.","status":"invalid_siwe"}`)
			return
		}
		at, err := time.Parse(time.RFC3339, m[7])
		if err != nil || at.Sub(g.now()).Abs() > 5*time.Minute {
			authWriteJSON(w, http.StatusUnprocessableEntity, `{"code":"invalid_siwe","title":"Invalid SIWE","detail":"Issued At is too far from the current time.","status":"invalid_siwe"}`)
			return
		}
		if !siweRecovers(m[2], body.Message, body.Signature) {
			authWriteJSON(w, http.StatusUnprocessableEntity, `{"code":"signer_mismatch","title":"Refused","detail":"Wrong signer.","status":"signer_mismatch"}`)
			return
		}
		g.mu.Lock()
		g.logins++
		tok := fmt.Sprintf("jwt-%d", g.logins)
		exp := g.now().Add(g.lifetime).Truncate(time.Second)
		g.tokens[tok] = exp
		g.mu.Unlock()
		authWriteJSON(w, http.StatusCreated, fmt.Sprintf(`{"token":%q,"address":%q,"account_id":null,"name":null,"expires_at":%q}`,
			tok, m[2], exp.Format(time.RFC3339)))
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/payments/"):
		g.mu.Lock()
		exp, ok := g.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if ok && !g.now().Before(exp) {
			g.expired++
			ok = false
		}
		g.mu.Unlock()
		if !ok {
			authWriteJSON(w, http.StatusUnauthorized, `{"code":"unauthorized","title":"Unauthorized","detail":"Token expired.","status":"unauthorized"}`)
			return
		}
		authWriteJSON(w, http.StatusOK, paymentBody)
	default:
		g.t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
	}
}

func (g *siweGateway) requests() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.seen)
}

func (g *siweGateway) paths() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.seen...)
}

func (g *siweGateway) counts() (logins, expired int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.logins, g.expired
}

// writeThrottled answers as the gateway's throttle does: 429 with
// Retry-After and the rate_limited envelope.
func writeThrottled(w http.ResponseWriter, retryAfter string) {
	w.Header().Set("Retry-After", retryAfter)
	authWriteJSON(w, http.StatusTooManyRequests, rateLimitedBody)
}
