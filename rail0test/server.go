package rail0test

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/hex"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

//go:embed openapi.json
var contractDocument []byte

// Catalog values seeded into every server.
const (
	// TestChainID is the seeded test chain, Base Sepolia.
	TestChainID int64 = 84532
	// MainnetChainID is the seeded mainnet chain, Base, which has USDC but no RAIL0
	// deployment (creating a payment there answers no_active_contract).
	MainnetChainID int64 = 8453
	// TestTokenAddress is the 6-decimal USDC on the test chain.
	TestTokenAddress = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
	// RetiredTokenAddress is an inactive EURC on the test chain: listed by GET /tokens
	// unless active=true, refused for new payments.
	RetiredTokenAddress = "0x808456652fdb597867f38412077A9182bf77359F"
	// MainnetTokenAddress is USDC on Base mainnet.
	MainnetTokenAddress = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
	// ContractAddress is the RAIL0 contract on the test chain.
	// It is the README's example address, in EIP-55 form.
	ContractAddress = "0x7C1E3b52fa9d4C26E0a1F83B5D9E6a4c2b0f8e31"
)

// Server is an in-process RAIL0 gateway listening on a loopback port.
type Server struct {
	// URL is the base URL, e.g. "http://127.0.0.1:41233", with no trailing slash.
	URL string
	// Clock is the clock the server reads: the one given to WithClock, or
	// the system clock. WithControl may add the control surface's offset to
	// it, when that clock cannot move itself. Choose it with WithClock; do not
	// replace it afterwards.
	Clock Clock
	// Faults injects failures into matching requests.
	Faults *Faults
	// Ledger records every request that reached a handler.
	Ledger *Ledger
	// Merchant is the demo merchant: a member of the demo account and its payee wallet.
	Merchant Party
	// Buyer is the demo buyer, an account-less address.
	Buyer Party
	// ChainID, Token and Contract name the seeded test chain, its USDC and
	// its RAIL0 contract. The addresses are in EIP-55 form, ready for POST
	// /payments.
	ChainID  int64
	Token    string
	Contract string

	cfg       config
	ts        *httptest.Server
	mux       *http.ServeMux
	control   *http.ServeMux // nil unless WithControl
	handler   http.Handler
	ent       *entropy
	limiter   *rateLimiter
	log       *slog.Logger
	domains   []string
	jwtSecret atomic.Pointer[[]byte]
	start     time.Time // the Clock's time at NewServer, to which Reset returns it

	mu     sync.Mutex
	st     *state
	health string // what GET /health reports; see SetHealth

	ctx        context.Context
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	hookClient *http.Client
	closeOnce  sync.Once
}

// NewServer starts a gateway on 127.0.0.1 and returns it. Call Close when done.
func NewServer(opts ...Option) *Server {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	s := &Server{
		Clock:    cfg.clock,
		cfg:      cfg,
		ent:      newEntropy(cfg.seed),
		Merchant: demoParty("merchant"),
		Buyer:    demoParty("buyer"),
		ChainID:  TestChainID,
		Token:    common.HexToAddress(TestTokenAddress).Hex(),
		Contract: common.HexToAddress(ContractAddress).Hex(),
	}
	s.log = cfg.logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if cfg.control {
		if _, ok := cfg.clock.(advancer); !ok {
			s.Clock = &offsetClock{base: cfg.clock}
		}
	}
	s.start = s.Clock.Now()
	s.newJWTSecret()
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.hookClient = &http.Client{Transport: &http.Transport{
		Proxy:             nil,
		DisableKeepAlives: true,
	}}
	s.Faults = newFaults(s.ent.uint64(), cfg.faults)
	s.Ledger = &Ledger{}
	s.limiter = newRateLimiter(cfg, s.Clock)
	s.Merchant.AccountID = s.seed()
	s.mux = s.routes()
	if cfg.control {
		s.control = s.controlRoutes()
	}
	s.handler = http.HandlerFunc(s.serve)

	s.ts = httptest.NewUnstartedServer(s.handler)
	s.ts.Config.BaseContext = func(net.Listener) context.Context { return s.ctx }
	s.ts.Start()
	s.URL = s.ts.URL
	s.domains = cfg.siweDomains
	if len(s.domains) == 0 {
		host := "127.0.0.1"
		if u, err := url.Parse(s.URL); err == nil {
			host = u.Hostname()
		}
		s.domains = []string{host, "localhost"}
	}
	return s
}

// Handler returns the gateway as an http.Handler, to serve it on another
// listener. cmd/rail0-gateway does this. It shares state with the server at
// URL.
func (s *Server) Handler() http.Handler { return s.handler }

// Close stops the listener and cancels stalled requests and webhook
// deliveries. It waits for every goroutine the server started.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.cancel()
		s.ts.Close()
		s.wg.Wait()
		s.hookClient.CloseIdleConnections()
	})
}

// SetHealth sets what GET /health reports.
//   - "ok" is the default.
//   - "degraded" answers 200: background workers are down.
//   - "error" answers 503 with a Health body: the database is down.
//
// Other values are ignored. Only the health report changes. Every other
// endpoint keeps working.
func (s *Server) SetHealth(status string) {
	switch status {
	case "ok", "degraded", "error":
		s.mu.Lock()
		s.health = status
		s.mu.Unlock()
	}
}

// Reset returns the server to the state NewServer left it in:
//   - the seeded catalog and demo account, with the same ids;
//   - no payments, sessions, webhooks or nonces;
//   - an empty Ledger and the faults of WithFaults only;
//   - fresh rate-limit counters and health "ok";
//   - the Clock back at its start time, when the server can set it. It can
//     for a ManualClock, or through the control surface's offset.
//
// Session tokens issued before are refused afterwards, unless WithJWTSecret
// fixed the signing key. Webhook deliveries still retrying are dropped.
// Requests in flight during a Reset may see either state.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch c := s.Clock.(type) {
	case *offsetClock:
		c.offset.Store(0)
	case interface{ Set(time.Time) }:
		c.Set(s.start)
	}
	s.ent.rewind()
	s.Faults.reset(s.ent.uint64(), s.cfg.faults)
	s.seed()
	s.health = ""
	s.Ledger.Reset()
	s.limiter.reset()
	s.newJWTSecret()
}

// newJWTSecret installs the WithJWTSecret key or a new random one.
func (s *Server) newJWTSecret() {
	key := s.cfg.jwtSecret
	if len(key) == 0 {
		key = []byte(hex.EncodeToString(randomSecret(32)))
	}
	s.jwtSecret.Store(&key)
}

// jwtKey is the current session signing key.
func (s *Server) jwtKey() []byte { return *s.jwtSecret.Load() }

// HTTPClient returns an *http.Client configured for the server.
// Close closes its idle connections.
func (s *Server) HTTPClient() *http.Client { return s.ts.Client() }

// seed replaces the state with the catalog and the demo merchant account.
// It returns the account's id. Call it with s.mu held, or before the server
// is shared.
func (s *Server) seed() string {
	st := &state{
		accounts: map[string]*account{},
		byID:     map[string]*payment{},
		nonces:   map[string]*nonceRecord{},
		revoked:  map[string]bool{},
		idem:     map[string]idempotencyRecord{},
		balances: map[common.Address]map[common.Address]*big.Int{},
		nonceOf:  map[common.Address]uint64{},
	}
	s.st = st
	testnet := &chain{
		ChainID: TestChainID, Name: "Base Sepolia", NativeSymbol: "ETH", NetworkType: "testnet",
		ExplorerURL: "https://sepolia.basescan.org", Active: true, nextBlock: 31044000,
		Contract: &contract{ID: s.ent.uuid(), Address: common.HexToAddress(ContractAddress), Active: true},
	}
	mainnet := &chain{
		ChainID: MainnetChainID, Name: "Base", NativeSymbol: "ETH", NetworkType: "mainnet",
		ExplorerURL: "https://basescan.org", Active: true, nextBlock: 38000000,
	}
	st.chains = []*chain{testnet, mainnet}
	usdc := &token{ID: s.ent.uuid(), ChainID: TestChainID, Symbol: "USDC", Name: "USDC", Version: "2",
		Address: common.HexToAddress(TestTokenAddress), Decimals: 6, Active: true}
	eurc := &token{ID: s.ent.uuid(), ChainID: TestChainID, Symbol: "EURC", Name: "EURC", Version: "2",
		Address: common.HexToAddress(RetiredTokenAddress), Decimals: 6, Active: false}
	mainUSDC := &token{ID: s.ent.uuid(), ChainID: MainnetChainID, Symbol: "USDC", Name: "USD Coin", Version: "2",
		Address: common.HexToAddress(MainnetTokenAddress), Decimals: 6, Active: true}
	st.tokens = []*token{usdc, eurc, mainUSDC}

	merchant := common.HexToAddress(s.Merchant.Address)
	acc := &account{ID: s.ent.uuid(), Name: "Demo Merchant", Members: map[common.Address]bool{merchant: true}}
	st.accounts[acc.ID] = acc
	label := "Demo payee"
	st.wallets = append(st.wallets, &wallet{
		ID: s.ent.uuid(), AccountID: acc.ID, Address: merchant, Label: &label, Active: true,
		Holdings: []*holding{
			{TokenID: usdc.ID, Active: true, Default: true},
			{TokenID: mainUSDC.ID, Active: true},
		},
	})
	return acc.ID
}

// now is the server clock in UTC.
// It is truncated to whole seconds like the gateway's timestamps.
func (s *Server) now() time.Time {
	return s.Clock.Now().UTC().Truncate(time.Second)
}

// reqInfo travels in the request context.
// Handlers use it to tell the ledger what they resolved: the payment's
// UUID, the operation.
type reqInfo struct {
	requestID string
	paymentID string
	operation string
}

type reqInfoKey struct{}

func info(r *http.Request) *reqInfo {
	if ri, ok := r.Context().Value(reqInfoKey{}).(*reqInfo); ok {
		return ri
	}
	return &reqInfo{}
}

// serve is the whole pipeline: request id, faults, rate limiting.
// Then comes the routed handler, with the ledger recording that it ran.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	rid := r.Header.Get("X-Request-Id")
	if !validRequestID(rid) {
		rid = s.ent.uuid()
	}
	w.Header().Set("X-Request-Id", rid)
	// The Date of every answer is the server's clock, as a real gateway's
	// is. net/http would write the system clock. A client learns the
	// gateway's time from it.
	w.Header().Set("Date", s.Clock.Now().UTC().Format(http.TimeFormat))
	ri := &reqInfo{requestID: rid}
	r = r.WithContext(context.WithValue(r.Context(), reqInfoKey{}, ri))

	if s.control != nil && strings.HasPrefix(r.URL.Path, controlPrefix) {
		s.serveControl(w, r)
		return
	}
	_, route := s.mux.Handler(r)
	fault := s.Faults.match(r.Method, route, r.URL.Path)
	if fault != nil {
		if done := s.applyFaultBefore(w, r, fault); done {
			return
		}
	}
	if s.limiter.enabled() {
		if throttled := s.limiter.check(w, r, s.sessionToken(r)); throttled {
			s.log.Debug("rail0test: throttled", "method", r.Method, "path", r.URL.Path, "request_id", rid)
			return
		}
	}
	if fault != nil && fault.after() {
		s.applyFaultAfter(w, r, fault, route)
		return
	}
	s.run(w, r, route)
}

// run executes the routed handler and records the execution in the ledger.
func (s *Server) run(w http.ResponseWriter, r *http.Request, route string) {
	rec := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	s.mux.ServeHTTP(rec, r)
	ri := info(r)
	s.Ledger.record(Execution{
		Route:          route,
		Method:         r.Method,
		Path:           r.URL.Path,
		IdempotencyKey: r.Header.Get("Idempotency-Key"),
		PaymentID:      ri.paymentID,
		Operation:      ri.operation,
		Status:         rec.status,
		RequestID:      ri.requestID,
		At:             s.Clock.Now(),
	})
	s.log.Debug("rail0test: request", "method", r.Method, "path", r.URL.Path, "status", rec.status, "request_id", ri.requestID)
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 255 {
		return false
	}
	for _, c := range id {
		if !(c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (sw *statusWriter) WriteHeader(code int) {
	if !sw.wrote {
		sw.status, sw.wrote = code, true
	}
	sw.ResponseWriter.WriteHeader(code)
}

func (sw *statusWriter) Write(b []byte) (int, error) {
	sw.wrote = true
	return sw.ResponseWriter.Write(b)
}

// bufferWriter captures a handler's response so a fault can mangle it.
type bufferWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newBufferWriter() *bufferWriter { return &bufferWriter{header: http.Header{}} }

func (b *bufferWriter) Header() http.Header { return b.header }

func (b *bufferWriter) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}

func (b *bufferWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}

// keccak is the 32-byte Keccak-256 digest of the concatenated parts.
func keccak(parts ...[]byte) common.Hash { return crypto.Keccak256Hash(parts...) }
