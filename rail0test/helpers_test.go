package rail0test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if code == 0 && flag.Lookup("test.run").Value.String() == "" {
		// The whole suite ran: it must have validated a response of every
		// operation of the contract except the indexer's /sync routes.
		if missing := unexercised(); len(missing) > 0 {
			fmt.Fprintf(os.Stderr, "operations never validated against the contract: %v\n", missing)
			code = 1
		}
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutines left behind: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// exercised records the operationIds whose responses validate checked.
var exercised sync.Map

func unexercised() []string {
	doc, err := openapi3.NewLoader().LoadFromData(contractDocument)
	if err != nil {
		return []string{err.Error()}
	}
	var missing []string
	for path, item := range doc.Paths.Map() {
		if strings.HasPrefix(path, "/sync/") {
			continue
		}
		for _, op := range item.Operations() {
			if _, ok := exercised.Load(op.OperationID); !ok {
				missing = append(missing, op.OperationID)
			}
		}
	}
	sort.Strings(missing)
	return missing
}

// epoch is a fixed start for manual clocks: a multiple of 60 s since the Unix epoch.
var epoch = time.Unix(1_789_380_000, 0).UTC()

// harness drives a Server over raw HTTP and validates every response against the
// contract (openapi.json) with kin-openapi.
type harness struct {
	t      *testing.T
	srv    *Server
	clock  *ManualClock
	doc    *openapi3.T
	router routers.Router
	errSch *openapi3.Schema
}

func newHarness(t *testing.T, opts ...Option) *harness {
	t.Helper()
	clock := NewManualClock(epoch)
	srv := NewServer(append([]Option{WithClock(clock), WithSeed(7), WithoutRateLimits()}, opts...)...)
	t.Cleanup(srv.Close)
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(contractDocument)
	if err != nil {
		t.Fatalf("load contract: %v", err)
	}
	doc.Servers = openapi3.Servers{{URL: srv.URL}}
	// In OpenAPI 3.1 (JSON Schema 2020-12) the empty schema of
	// PaymentDetail.signing_payload accepts null, which the README's example shows;
	// kin-openapi only lets null through a schema whose type lists "null", so list
	// every JSON type there, which is what {} means.
	for _, part := range doc.Components.Schemas["PaymentDetail"].Value.AllOf {
		if sp := part.Value.Properties["signing_payload"]; sp != nil {
			sp.Value.Type = &openapi3.Types{"null", "object", "array", "string", "number", "integer", "boolean"}
		}
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatalf("router: %v", err)
	}
	return &harness{t: t, srv: srv, clock: clock, doc: doc, router: router,
		errSch: doc.Components.Schemas["Error"].Value}
}

// result is one response, already read.
type result struct {
	status int
	header http.Header
	body   []byte
}

func (r *result) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
	return m
}

func (r *result) list(t *testing.T) []map[string]any {
	t.Helper()
	var l []map[string]any
	if err := json.Unmarshal(r.body, &l); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
	return l
}

// reqOpt adjusts a request before it is sent.
type reqOpt func(*http.Request)

func withHeader(k, v string) reqOpt { return func(r *http.Request) { r.Header.Set(k, v) } }

// call sends a request and validates the response against the contract.
func (h *harness) call(method, path, token string, body any, opts ...reqOpt) *result {
	h.t.Helper()
	res, req := h.send(method, path, token, body, opts...)
	h.validate(req, res)
	return res
}

func (h *harness) send(method, path, token string, body any, opts ...reqOpt) (*result, *http.Request) {
	h.t.Helper()
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			h.t.Fatal(err)
		}
	}
	req, err := http.NewRequestWithContext(h.t.Context(), method, h.srv.URL+path, bytes.NewReader(data))
	if err != nil {
		h.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for _, o := range opts {
		o(req)
	}
	resp, err := h.srv.HTTPClient().Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("%s %s: read: %v", method, path, err)
	}
	req.Body = io.NopCloser(bytes.NewReader(data))
	return &result{status: resp.StatusCode, header: resp.Header, body: b}, req
}

// validate checks a response against the contract: the operation's schema for its
// status, the Error schema for every error body, and X-Request-Id everywhere.
func (h *harness) validate(req *http.Request, res *result) {
	h.t.Helper()
	if res.header.Get("X-Request-Id") == "" {
		h.t.Errorf("%s %s: no X-Request-Id", req.Method, req.URL.Path)
	}
	if h.router == nil { // a bare harness built by a test that validates nothing
		return
	}
	route, params, err := h.router.FindRoute(req)
	if err != nil {
		h.t.Errorf("%s %s: not in the contract: %v", req.Method, req.URL.Path, err)
		return
	}
	exercised.Store(route.Operation.OperationID, true)
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status: res.status,
		Header: res.header,
		Body:   io.NopCloser(bytes.NewReader(res.body)),
		Options: &openapi3filter.Options{
			MultiError: true,
		},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		h.t.Errorf("%s %s -> %d violates the contract: %v\nbody: %s", req.Method, req.URL.Path, res.status, err, res.body)
	}
	// Every error body is an Error envelope; a 503 from /health is a Health report.
	if res.status >= 400 && res.status != 429 && len(res.body) > 0 && req.URL.Path != "/health" {
		var v any
		if err := json.Unmarshal(res.body, &v); err != nil {
			h.t.Errorf("%s %s -> %d: error body is not JSON: %s", req.Method, req.URL.Path, res.status, res.body)
		} else if err := h.errSch.VisitJSON(v); err != nil {
			h.t.Errorf("%s %s -> %d: error body violates Error: %v", req.Method, req.URL.Path, res.status, err)
		}
	}
}

// expect asserts a status and, for error bodies, a code.
func expect(t *testing.T, res *result, status int, code string) {
	t.Helper()
	if res.status != status {
		t.Fatalf("status = %d, want %d; body %s", res.status, status, res.body)
	}
	if code != "" {
		if got := res.json(t)["code"]; got != code {
			t.Fatalf("code = %v, want %s; body %s", got, code, res.body)
		}
	}
}

func personalSign(t *testing.T, key *ecdsa.PrivateKey, msg string) string {
	t.Helper()
	sig, err := crypto.Sign(personalHash([]byte(msg)), key)
	if err != nil {
		t.Fatal(err)
	}
	sig[64] += 27
	return hexutil.Encode(sig)
}

// signTypedData signs an EIP-712 document exactly as received from the gateway.
func signTypedData(t *testing.T, key *ecdsa.PrivateKey, payload any) string {
	t.Helper()
	raw, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	var td apitypes.TypedData
	if err := json.Unmarshal(raw, &td); err != nil {
		t.Fatalf("typed data: %v", err)
	}
	digest, _, err := apitypes.TypedDataAndHash(td)
	if err != nil {
		t.Fatalf("typed data hash: %v", err)
	}
	sig, err := crypto.Sign(digest, key)
	if err != nil {
		t.Fatal(err)
	}
	sig[64] += 27
	return hexutil.Encode(sig)
}

// signTx builds and signs the EIP-1559 transaction described by unsigned_transaction.
func signTx(t *testing.T, key *ecdsa.PrivateKey, unsigned string) string {
	t.Helper()
	return signTxWith(t, key, unsigned, nil)
}

// signTxWith is signTx with the transaction changed by mutate (when not nil)
// before it is signed: how a test sends what a tampering client would.
func signTxWith(t *testing.T, key *ecdsa.PrivateKey, unsigned string, mutate func(*types.DynamicFeeTx)) string {
	t.Helper()
	var u struct {
		ChainID  int64           `json:"chain_id"`
		Nonce    uint64          `json:"nonce"`
		To       string          `json:"to"`
		Value    string          `json:"value"`
		Data     string          `json:"data"`
		GasLimit uint64          `json:"gas_limit"`
		Tip      json.RawMessage `json:"max_priority_fee_per_gas"`
		Fee      json.RawMessage `json:"max_fee_per_gas"`
	}
	if err := json.Unmarshal([]byte(unsigned), &u); err != nil {
		t.Fatalf("unsigned_transaction: %v", err)
	}
	num := func(raw json.RawMessage) *big.Int {
		n, ok := new(big.Int).SetString(strings.Trim(string(raw), `"`), 10)
		if !ok {
			t.Fatalf("bad number %s", raw)
		}
		return n
	}
	to := common.HexToAddress(u.To)
	chainID := big.NewInt(u.ChainID)
	inner := &types.DynamicFeeTx{
		ChainID: chainID, Nonce: u.Nonce, GasTipCap: num(u.Tip), GasFeeCap: num(u.Fee), Gas: u.GasLimit,
		To: &to, Value: num(json.RawMessage(u.Value)), Data: common.FromHex(u.Data),
	}
	if mutate != nil {
		mutate(inner)
	}
	tx := types.NewTx(inner)
	signed, err := types.SignTx(tx, types.LatestSignerForChainID(chainID), key)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := signed.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return hexutil.Encode(raw)
}

// login signs in over raw HTTP, validating each step against the contract.
func (h *harness) login(p Party) string {
	h.t.Helper()
	n := h.call("POST", "/auth/nonces", "", nil)
	expect(h.t, n, http.StatusCreated, "")
	msg := h.srv.SIWEMessage(p.Address, n.json(h.t)["nonce"].(string), loginStatement)
	res := h.call("POST", "/auth", "", map[string]string{"message": msg, "signature": personalSign(h.t, p.Key(), msg)})
	expect(h.t, res, http.StatusCreated, "")
	return res.json(h.t)["token"].(string)
}

// stranger is a party the server has never seen.
func stranger(t *testing.T) Party {
	t.Helper()
	return demoParty("stranger " + t.Name())
}

// createPayment creates and signs a payment as the buyer; it returns the payment id.
func (h *harness) createPayment(buyer, mode, amount string, sign bool) string {
	h.t.Helper()
	res := h.call("POST", "/payments", buyer, map[string]any{
		"chain_id": h.srv.ChainID, "mode": mode, "amount": amount, "token": h.srv.Token,
		"payer": h.srv.Buyer.Address, "payee": h.srv.Merchant.Address,
	})
	expect(h.t, res, http.StatusCreated, "")
	p := res.json(h.t)
	id := p["id"].(string)
	if sign {
		sig := signTypedData(h.t, h.srv.Buyer.Key(), p["signing_payload"])
		expect(h.t, h.call("PUT", "/payments/"+id+"/sign", buyer, map[string]string{"signature": sig}), http.StatusOK, "")
	}
	return id
}

// step prepares, signs and submits op, then lets the chain confirm it. It returns
// the confirmed transaction.
func (h *harness) step(token string, signer *ecdsa.PrivateKey, id, op string, body map[string]any) map[string]any {
	h.t.Helper()
	prefix := "/payments/" + id + "/" + op
	if op == opCloseDispute {
		prefix = "/payments/" + id + "/dispute/close"
	}
	prep := h.call("POST", prefix+"/prepare", token, body)
	if prep.status != http.StatusCreated && prep.status != http.StatusOK {
		h.t.Fatalf("prepare %s: %d %s", op, prep.status, prep.body)
	}
	tx := prep.json(h.t)
	sub := h.call("POST", prefix, token, map[string]string{"signed_transaction": signTx(h.t, signer, tx["unsigned_transaction"].(string))})
	expect(h.t, sub, http.StatusAccepted, "")
	h.clock.Advance(h.srv.cfg.confirmationDelay + time.Second)
	txs := h.call("GET", "/payments/"+id+"/transactions?status=confirmed&operation="+op, token, nil)
	expect(h.t, txs, http.StatusOK, "")
	for _, x := range txs.list(h.t) {
		if x["id"] == tx["id"] {
			return x
		}
	}
	h.t.Fatalf("%s transaction %v not confirmed", op, tx["id"])
	return nil
}

// refund runs both refund phases as the payee and lets the chain confirm
// the transaction; it returns the confirmed transaction.
func (h *harness) refund(merchant, id, amount string) map[string]any {
	h.t.Helper()
	phase1 := h.call("POST", "/payments/"+id+"/refund/prepare", merchant, map[string]any{"amount": amount})
	expect(h.t, phase1, http.StatusOK, "")
	sig := signTypedData(h.t, h.srv.Merchant.Key(), phase1.json(h.t)["signing_payload"])
	return h.step(merchant, h.srv.Merchant.Key(), id, opRefund, map[string]any{"amount": amount, "signature": sig})
}

// preparedGas is the gas_limit of a prepared transaction.
func preparedGas(t *testing.T, prepared map[string]any) uint64 {
	t.Helper()
	var u unsignedTx
	if err := json.Unmarshal([]byte(prepared["unsigned_transaction"].(string)), &u); err != nil {
		t.Fatal(err)
	}
	return u.GasLimit
}
