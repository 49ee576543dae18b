package integration_test

// The contract test proves that the SDK covers the gateway's contract and
// speaks it correctly, without a hand-written list of operation names:
//
//   - a recording server mounted under a non-empty base path routes every
//     request with kin-openapi's router, validates it against the contract
//     (method, path, query, headers, body, security) and answers with a
//     response generated from the operation's response schema, which is
//     itself validated before it is sent; the SDK method under test then
//     decodes it into its types;
//   - a table of closures calls every SDK method;
//   - the operations of the contract that no closure reached fail the test.
//
// Left out on purpose, and asserted to stay unreached (so that adding a
// method for one of them forces this list to be updated): /sync/*, the chain
// indexer's HMAC-signed routes, not a merchant's or a buyer's (README
// section 4.9; see the package documentation).

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/internal/evmtest"
)

const contractPath = "../rail0test/openapi.json"

// Fixture values from the contract guide's examples (README section 13).
const (
	muxBasePath               = "/api/v1"
	fixturePaymentID          = "0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a4b"
	fixtureHash               = "0x8d1f3a5c7e9b0d2f4a6c8e0b1d3f5a7c9e1b3d5f7a9c0e2b4d6f8a1c3e5b7d9f"
	fixtureReason             = "0x1111111111111111111111111111111111111111111111111111111111111111"
	fixturePayer              = "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4"
	fixturePayee              = "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2"
	fixtureToken              = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
	fixtureSignedTx           = "0x02f8b1"
	fixturePendingTxJSON      = `{"id": "0191f5b0-0a1b-7c2d-8e3f-4a5b6c7d8e9f", "payment_id": "0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a4b", "operation": "capture", "status": "pending", "error_code": null, "error_title": null, "error_detail": null, "error_message": null, "unsigned_transaction": "{\"chain_id\":84532,\"nonce\":7,\"to\":\"0x7c1E3b52fA9d4C26e0a1F83b5D9e6A4c2B0f8E31\",\"value\":\"0\",\"data\":\"0xa0e7c9f4\",\"gas_limit\":120000,\"max_priority_fee_per_gas\":\"1000000\",\"max_fee_per_gas\":\"1500000000\"}", "transaction_hash": null, "amount": "15000000", "block_number": null, "gas_used": null, "gas_limit": null, "effective_gas_price": null, "base_fee_per_gas": null, "gas_cost": null, "pending_at": "2026-09-15T08:00:00Z", "submitted_at": null, "confirmed_at": null, "created_at": "2026-09-15T08:00:00Z", "updated_at": "2026-09-15T08:00:00Z"}`
	fixtureSigningPayloadJSON = `{"domain": {"name": "USDC", "version": "2", "chainId": 84532, "verifyingContract": "0x036CbD53842c5426634e7929541eC2318f3dCF7e"}, "types": {"EIP712Domain": [{"name": "name", "type": "string"}, {"name": "version", "type": "string"}, {"name": "chainId", "type": "uint256"}, {"name": "verifyingContract", "type": "address"}], "TransferWithAuthorization": [{"name": "from", "type": "address"}, {"name": "to", "type": "address"}, {"name": "value", "type": "uint256"}, {"name": "validAfter", "type": "uint256"}, {"name": "validBefore", "type": "uint256"}, {"name": "nonce", "type": "bytes32"}]}, "primaryType": "TransferWithAuthorization", "message": {"from": "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4", "to": "0x7c1E3b52fA9d4C26e0a1F83b5D9e6A4c2B0f8E31", "value": "25000000", "validAfter": 0, "validBefore": 1789985700, "nonce": "0x9f2c4e1a7b3d5c8e0f6a2b4d6c8e0a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e2f"}}`
)

// contractExcluded lists the operations the SDK deliberately has no method
// for (see the file comment). /sync/* is excluded by prefix.
var contractExcluded []string

func loadContract(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(contractPath)
	if err != nil {
		t.Fatalf("loading %s: %v", contractPath, err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("%s is not a valid OpenAPI document: %v", contractPath, err)
	}
	return doc
}

// contractCopies are the repository's copies of the gateway's contract:
// rail0test's, which the fake gateway and these tests validate against, and
// the root module's, which its own tests read (a root test reads no file
// outside the root module, since a released module zip holds no other).
var contractCopies = []string{contractPath, filepath.Join("..", "testdata", "openapi.json")}

// TestContractCopyMatchesShared keeps the repository's copies of the
// contract identical to each other, and to the gateway's published contract
// when a shared checkout of it is in a parent directory (the copies are
// authoritative elsewhere).
func TestContractCopyMatchesShared(t *testing.T) {
	t.Parallel()
	first, err := os.ReadFile(contractCopies[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range contractCopies[1:] {
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, first) {
			t.Errorf("%s differs from %s: the copies of the contract must be equal", path, contractCopies[0])
		}
	}
	for i, dir := 0, ".."; i < 4; i, dir = i+1, filepath.Join(dir, "..") {
		shared := filepath.Join(dir, "shared", "gateway", "openapi.json")
		want, err := os.ReadFile(shared)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, want) {
			t.Fatalf("%s differs from %s: copy the shared contract into %s", contractCopies[0], shared, strings.Join(contractCopies, " and "))
		}
		return
	}
	t.Skip("no shared checkout of the contract; the repository's copies are authoritative")
}

// contractServer answers every request from the contract and records which
// operations were reached.
type contractServer struct {
	t      *testing.T
	doc    *openapi3.T
	router routers.Router

	mu      sync.Mutex
	reached map[string]bool // "METHOD /template"
	current string          // name of the table row being run
}

func newContractServer(t *testing.T, doc *openapi3.T) (*contractServer, *rail0.Client) {
	t.Helper()
	// Route on paths alone: the contract's server is the hosted gateway,
	// while the SDK talks to this server under muxBasePath.
	routed := *doc
	routed.Servers = nil
	router, err := gorillamux.NewRouter(&routed)
	if err != nil {
		t.Fatal(err)
	}
	cs := &contractServer{t: t, doc: &routed, router: router, reached: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc(muxBasePath+"/", cs.serve)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("%s: request outside the base path: %s %s", cs.row(), r.Method, r.URL.Path)
		http.NotFound(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c, err := rail0.NewClient(srv.URL+muxBasePath, rail0.WithToken("t"))
	if err != nil {
		t.Fatal(err)
	}
	return cs, c
}

func (cs *contractServer) row() string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.current
}

func (cs *contractServer) setRow(name string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.current = name
}

// contractAuth accepts the bearer scheme only with the client's token; the
// SDK never uses the indexer's schemes.
func contractAuth(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	if in.SecuritySchemeName != "bearerAuth" {
		return fmt.Errorf("security scheme %q is not for SDK callers", in.SecuritySchemeName)
	}
	if got := in.RequestValidationInput.Request.Header.Get("Authorization"); got != "Bearer t" {
		return fmt.Errorf("header Authorization = %q, want the bearer token", got)
	}
	return nil
}

func (cs *contractServer) serve(w http.ResponseWriter, r *http.Request) {
	t, row := cs.t, cs.row()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		t.Errorf("%s: reading the request: %v", row, err)
		return
	}
	req := r.Clone(r.Context())
	req.URL.Path = strings.TrimPrefix(r.URL.Path, muxBasePath)
	req.URL.RawPath = strings.TrimPrefix(r.URL.RawPath, muxBasePath)
	req.RequestURI = ""
	req.Body = io.NopCloser(bytes.NewReader(body))
	route, params, err := cs.router.FindRoute(req)
	if err != nil {
		t.Errorf("%s: %s %s is not an operation of the contract: %v", row, r.Method, req.URL.Path, err)
		http.Error(w, "no such operation", http.StatusNotFound)
		return
	}
	op := route.Method + " " + route.Path
	cs.mu.Lock()
	cs.reached[op] = true
	cs.mu.Unlock()

	in := &openapi3filter.RequestValidationInput{
		Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{
			AuthenticationFunc:                contractAuth,
			RejectWhenRequestBodyNotSpecified: true,
			MultiError:                        true,
		},
	}
	if err := openapi3filter.ValidateRequest(r.Context(), in); err != nil {
		t.Errorf("%s: request %s %s violates the contract (%s): %v", row, r.Method, req.URL, op, err)
	}

	status, header, respBody := cs.fixture(route, params, body)
	rin := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: status, Header: header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	rin.SetBodyBytes(respBody)
	if err := openapi3filter.ValidateResponse(r.Context(), rin); err != nil {
		t.Errorf("%s: fixture %d for %s violates the contract: %v", row, status, op, err)
	}
	for k, v := range header {
		w.Header()[k] = v
	}
	w.WriteHeader(status)
	w.Write(respBody)
}

// fixture builds the response for a routed request: the operation's success
// status (201 before 200 before 202 before 204) with a body generated from
// its schema. The first refund phase is the one request whose answer depends
// on the body: 200 with a signing_payload.
func (cs *contractServer) fixture(route *routers.Route, params map[string]string, reqBody []byte) (int, http.Header, []byte) {
	header := http.Header{}
	if route.Operation.OperationID == "preparePaymentOperation" && params["operation"] == "refund" {
		var b struct {
			Signature string `json:"signature"`
		}
		_ = json.Unmarshal(reqBody, &b) // validated against the contract before
		if b.Signature == "" {
			header.Set("Content-Type", "application/json")
			return http.StatusOK, header, []byte(`{"signing_payload": ` + fixtureSigningPayloadJSON + `}`)
		}
	}
	for _, status := range []int{201, 200, 202, 204} {
		ref := route.Operation.Responses.Status(status)
		if ref == nil || ref.Value == nil {
			continue
		}
		resp := ref.Value
		for name, h := range resp.Headers {
			if h.Value != nil && h.Value.Schema != nil {
				header.Set(name, fmt.Sprint(exampleValue(h.Value.Schema, name, 0)))
			}
		}
		mt := resp.Content.Get("application/json")
		if mt == nil || mt.Schema == nil {
			return status, header, nil
		}
		b, err := json.Marshal(answerOf(route, params, reqBody, exampleValue(mt.Schema, "", 0)))
		if err != nil {
			cs.t.Fatal(err)
		}
		header.Set("Content-Type", "application/json")
		return status, header, b
	}
	cs.t.Fatalf("%s %s has no success response", route.Method, route.Path)
	return 0, nil, nil
}

// answerOf makes the generated answer v to a submit the transaction of
// that submit, as the gateway's is: the step's operation and the hash of
// the transaction sent or reported (the SDK refuses any other as not the
// resource the operation promises).
func answerOf(route *routers.Route, params map[string]string, reqBody []byte, v any) any {
	tx, ok := v.(map[string]any)
	if !ok {
		return v
	}
	var op string
	switch route.Operation.OperationID {
	case "submitPaymentOperation", "submitPaymentOperationByHash":
		op = params["operation"]
	case "submitDispute", "submitDisputeByHash":
		op = "dispute"
	case "submitCloseDispute", "submitCloseDisputeByHash":
		op = "close_dispute"
	default:
		return v
	}
	var b struct {
		SignedTransaction string `json:"signed_transaction"`
		TransactionHash   string `json:"transaction_hash"`
	}
	_ = json.Unmarshal(reqBody, &b) // validated against the contract before
	tx["operation"] = op
	tx["transaction_hash"] = b.TransactionHash
	if raw, err := hex.DecodeString(strings.TrimPrefix(b.SignedTransaction, "0x")); err == nil && b.SignedTransaction != "" {
		tx["transaction_hash"] = "0x" + hex.EncodeToString(crypto.Keccak256(raw))
	}
	return tx
}

const exampleTime = "2026-09-14T10:15:00Z"

// exampleValue generates a value valid for schema: every property present,
// nullable fields filled (so that decoding of the non-null form is tested),
// arrays with one item, enums at their first value. name is the property
// name, used to give date-like strings without a format a timestamp.
func exampleValue(ref *openapi3.SchemaRef, name string, depth int) any {
	if ref == nil || ref.Value == nil || depth > 12 {
		return nil
	}
	s := ref.Value
	switch {
	case s.Const != nil:
		return s.Const
	case len(s.Examples) > 0:
		return s.Examples[0]
	case len(s.Enum) > 0:
		for _, e := range s.Enum {
			if e != nil {
				return e
			}
		}
		return nil
	case len(s.AllOf) > 0:
		merged := map[string]any{}
		for _, sub := range s.AllOf {
			if m, ok := exampleValue(sub, name, depth+1).(map[string]any); ok {
				for k, v := range m {
					merged[k] = v
				}
			}
		}
		return merged
	case len(s.AnyOf) > 0:
		return exampleValue(s.AnyOf[0], name, depth+1)
	case len(s.OneOf) > 0:
		return exampleValue(s.OneOf[0], name, depth+1)
	}
	switch {
	case s.Type == nil || s.Type.IsEmpty():
		if len(s.Properties) == 0 {
			// An unconstrained value, such as signing_payload.
			return map[string]any{"primaryType": "TransferWithAuthorization"}
		}
		fallthrough
	case s.Type.Includes("object"):
		obj := map[string]any{}
		for prop, sub := range s.Properties {
			obj[prop] = exampleValue(sub, prop, depth+1)
		}
		if ap := s.AdditionalProperties.Schema; ap != nil && len(s.Properties) == 0 {
			key := "key"
			if s.PropertyNames != nil && s.PropertyNames.Value != nil && len(s.PropertyNames.Value.Enum) > 0 {
				key = fmt.Sprint(s.PropertyNames.Value.Enum[0])
			}
			obj[key] = exampleValue(ap, key, depth+1)
		}
		return obj
	case s.Type.Includes("array"):
		return []any{exampleValue(s.Items, name, depth+1)}
	case s.Type.Includes("integer"):
		if s.Min != nil && *s.Min > 1 {
			return int64(*s.Min)
		}
		return int64(1)
	case s.Type.Includes("number"):
		return 0.5
	case s.Type.Includes("boolean"):
		return true
	case s.Type.Includes("string"):
		return exampleString(s, name)
	}
	return nil
}

func exampleString(s *openapi3.Schema, name string) string {
	switch {
	case s.Format == "uuid":
		return fixturePaymentID
	case s.Format == "date-time", strings.HasSuffix(name, "_at"), slices.Contains([]string{"timestamp", "bucket", "since", "until"}, name):
		return exampleTime
	case s.Pattern == "^[0-9]+$":
		return "1767225600"
	case s.Pattern == "^[0-9a-f]{64}$":
		return strings.Repeat("ab", 32)
	case name == "rail0_id":
		return "0x" + strings.Repeat("9f", 32)
	case name == "unsigned_transaction":
		var tx rail0.Transaction
		if err := json.Unmarshal([]byte(fixturePendingTxJSON), &tx); err != nil {
			panic(err) // a fixture of this file
		}
		return *tx.UnsignedTransaction
	case name == "token" || name == "address" || name == "payer" || name == "payee" || strings.HasSuffix(name, "_contract"):
		return fixturePayer
	}
	return "1"
}

// contractCall is one SDK method call.
type contractCall struct {
	name string
	call func(ctx context.Context, c *rail0.Client) error
}

// drainOne drains one item of an iterator and returns its error.
func drainOne[T any](seq func(yield func(T, error) bool)) error {
	for _, err := range seq {
		return err
	}
	return errors.New("iterator yielded nothing")
}

// errOnly keeps the error of a call that returns a value and an error.
func errOnly[T any](_ T, err error) error { return err }

// contractCalls lists a call of every SDK method that sends a request.
func contractCalls() []contractCall {
	const id = fixturePaymentID
	signer := evmtest.NewKey("contract")
	all := []rail0.PaymentStatus{rail0.StatusUnsigned, rail0.StatusSigned, rail0.StatusAuthorized, rail0.StatusPartiallyCaptured, rail0.StatusCaptured,
		rail0.StatusCharged, rail0.StatusVoided, rail0.StatusReleased, rail0.StatusRefunded, rail0.StatusPartiallyRefunded}
	yes := true
	const (
		acct       = "0190c7d1-aa01-7b02-8c03-d4e5f6a7b8c9"
		tokenID    = "0190c7d2-bb02-7c03-8d04-e5f6a7b8c9d0"
		hookID     = "0190c7d3-cc03-7d04-8e05-f6a7b8c9d0e1"
		callbackID = "0190c7d4-dd04-7e05-8f06-a7b8c9d0e1f2"
	)
	filter := rail0.AnalyticsFilter{Mode: rail0.ModeAuthorize, Status: rail0.StatusCaptured, Token: fixtureToken, ChainID: 84532,
		From: time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)}
	calls := []contractCall{
		// Health, catalog, discovery.
		{"Health.Get", func(ctx context.Context, c *rail0.Client) error { return errOnly(c.Health.Get(ctx)) }},
		{"Discovery.Describe", func(ctx context.Context, c *rail0.Client) error { return errOnly(c.Discovery.Describe(ctx)) }},
		{"Discovery.OpenAPI", func(ctx context.Context, c *rail0.Client) error { return errOnly(c.Discovery.OpenAPI(ctx)) }},
		{"Chains.List", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Chains.List(ctx, rail0.ChainListParams{NetworkType: "testnet", Symbol: "USDC"}))
		}},
		{"Tokens.List", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Tokens.List(ctx, rail0.TokenListParams{ChainID: 84532, Symbol: "USDC", Active: &yes}))
		}},
		{"PaymentMethods.List", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.PaymentMethods.List(ctx, rail0.PaymentMethodListParams{Address: fixturePayee}))
		}},
		// Auth.
		{"Auth.CreateNonce", func(ctx context.Context, c *rail0.Client) error { return errOnly(c.Auth.CreateNonce(ctx)) }},
		{"Auth.Verify", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Auth.Verify(ctx, rail0.AuthVerifyParams{Message: "message", Signature: "0xsig"}))
		}},
		{"Auth.Logout", func(ctx context.Context, c *rail0.Client) error { return errOnly(c.Auth.Logout(ctx)) }},
		{"Auth.WalletProof", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Auth.WalletProof(ctx, rail0.AuthWalletProofParams{Wallet: signer}))
		}},
		// Payments.
		{"Payments.Create", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Payments.Create(ctx, rail0.PaymentCreateParams{ChainID: 84532, Mode: rail0.ModeAuthorize, Amount: "25.00",
				Token: fixtureToken, Payer: fixturePayer, Payee: fixturePayee, Description: "Order 1042",
				Metadata: map[string]any{"order_id": "1042"}, IdempotencyKey: "order-1042"}))
		}},
		{"Payments.Get", func(ctx context.Context, c *rail0.Client) error { return errOnly(c.Payments.Get(ctx, id)) }},
		{"Payments.List", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Payments.List(ctx, rail0.PaymentListParams{ListOptions: rail0.ListOptions{Page: 2, PerPage: 25,
				Sort: []rail0.SortKey{rail0.SortCreatedAt.Desc(), rail0.SortStatus}}, Status: rail0.StatusAuthorized, Mode: rail0.ModeAuthorize,
				Payer: fixturePayer, Payee: fixturePayee, Token: fixtureToken, Rail0ID: fixtureHash, ChainID: 84532,
				Disputed: &yes, MinAmount: "1", MaxAmount: "25000000"}))
		}},
		{"Payments.All", func(ctx context.Context, c *rail0.Client) error {
			return drainOne(c.Payments.All(ctx, rail0.PaymentListParams{}))
		}},
		{"Payments.SubmitSignature", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Payments.SubmitSignature(ctx, id, rail0.PaymentSubmitSignatureParams{Signature: "0xsig"}))
		}},
		{"Payments.ListTransactions", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Payments.ListTransactions(ctx, id, rail0.PaymentListTransactionsParams{Operation: rail0.OpCloseDispute, Status: rail0.TxFailed}))
		}},
		{"Payments.AllTransactions", func(ctx context.Context, c *rail0.Client) error {
			return drainOne(c.Payments.AllTransactions(ctx, id, rail0.PaymentListTransactionsParams{}))
		}},
		{"Payments.ListDisputes", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Payments.ListDisputes(ctx, id, rail0.PaymentListDisputesParams{Status: rail0.DisputeOpen}))
		}},
		{"Payments.AllDisputes", func(ctx context.Context, c *rail0.Client) error {
			return drainOne(c.Payments.AllDisputes(ctx, id, rail0.PaymentListDisputesParams{}))
		}},
		{"Payments.PrepareRefund", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Payments.PrepareRefund(ctx, id, rail0.PaymentPrepareRefundParams{Amount: "1"}))
		}},
		{"Payments.WaitForStatus", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Payments.WaitForStatus(ctx, id, rail0.PaymentWaitForStatusParams{Statuses: all}))
		}},
		// Wallets.
		{"Wallets.List", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Wallets.List(ctx, acct, rail0.WalletListParams{ListOptions: rail0.ListOptions{PerPage: 10}, Active: &yes,
				ChainID: 84532, TokenSymbol: "USDC", Default: &yes, TokenActive: &yes}))
		}},
		{"Wallets.All", func(ctx context.Context, c *rail0.Client) error {
			return drainOne(c.Wallets.All(ctx, acct, rail0.WalletListParams{}))
		}},
		{"Wallets.Create", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Wallets.Create(ctx, acct, rail0.WalletCreateParams{WalletProof: rail0.WalletProof{Address: fixturePayee,
				Message: "message", Signature: "0xsig"}, Label: "Shop"}))
		}},
		{"Wallets.Get", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Wallets.Get(ctx, acct, fixturePayee))
		}},
		{"Wallets.Update", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Wallets.Update(ctx, acct, fixturePayee, rail0.WalletUpdateParams{Label: contractPtr("Shop 2"), Active: &yes}))
		}},
		{"Wallets.Deactivate", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Wallets.Deactivate(ctx, acct, fixturePayee))
		}},
		{"Wallets.Balances", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Wallets.Balances(ctx, acct, fixturePayee, rail0.WalletBalancesParams{ChainID: 84532, TokenSymbol: "USDC"}))
		}},
		{"Wallets.AcceptToken", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Wallets.AcceptToken(ctx, acct, fixturePayee, rail0.WalletAcceptTokenParams{ChainID: 84532, Token: fixtureToken, Default: &yes}))
		}},
		{"Wallets.StopAcceptingToken", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Wallets.StopAcceptingToken(ctx, acct, fixturePayee, tokenID))
		}},
		{"Wallets.EnableToken", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Wallets.EnableToken(ctx, acct, fixturePayee, tokenID))
		}},
		{"Wallets.DisableToken", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Wallets.DisableToken(ctx, acct, fixturePayee, tokenID))
		}},
		// Analytics.
		{"Analytics.Summary", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Analytics.Summary(ctx, rail0.AnalyticsSummaryParams{AnalyticsFilter: filter}))
		}},
		{"Analytics.Timeseries", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Analytics.Timeseries(ctx, rail0.AnalyticsTimeseriesParams{AnalyticsFilter: filter, Interval: rail0.IntervalWeek}))
		}},
		{"Analytics.Breakdown", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Analytics.Breakdown(ctx, rail0.AnalyticsBreakdownParams{AnalyticsFilter: filter, By: rail0.BreakdownByToken}))
		}},
		// Webhooks.
		{"Webhooks.Create", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Webhooks.Create(ctx, rail0.WebhookCreateParams{Name: "orders", CallbackURL: "https://shop.example/hooks",
				Topic: rail0.TopicPaymentsCaptured}))
		}},
		{"Webhooks.List", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Webhooks.List(ctx, rail0.WebhookListParams{Topic: rail0.TopicPaymentsCaptured, Active: &yes,
				CircuitState: rail0.CircuitOpen}))
		}},
		{"Webhooks.All", func(ctx context.Context, c *rail0.Client) error {
			return drainOne(c.Webhooks.All(ctx, rail0.WebhookListParams{}))
		}},
		{"Webhooks.Get", func(ctx context.Context, c *rail0.Client) error { return errOnly(c.Webhooks.Get(ctx, hookID)) }},
		{"Webhooks.Update", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Webhooks.Update(ctx, hookID, rail0.WebhookUpdateParams{Name: "orders-2"}))
		}},
		{"Webhooks.Delete", func(ctx context.Context, c *rail0.Client) error { return errOnly(c.Webhooks.Delete(ctx, hookID)) }},
		{"Webhooks.Enable", func(ctx context.Context, c *rail0.Client) error { return errOnly(c.Webhooks.Enable(ctx, hookID)) }},
		{"Webhooks.Disable", func(ctx context.Context, c *rail0.Client) error { return errOnly(c.Webhooks.Disable(ctx, hookID)) }},
		{"Webhooks.RotateSecret", func(ctx context.Context, c *rail0.Client) error { return errOnly(c.Webhooks.RotateSecret(ctx, hookID)) }},
		{"Webhooks.ResetCircuit", func(ctx context.Context, c *rail0.Client) error { return errOnly(c.Webhooks.ResetCircuit(ctx, hookID)) }},
		{"Webhooks.ListEventCallbacks", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Webhooks.ListEventCallbacks(ctx, hookID, rail0.WebhookListEventCallbacksParams{Status: rail0.CallbackFailed,
				Topic: rail0.TopicPaymentsCaptured, PaymentID: fixturePaymentID,
				Since: time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC), Until: time.Date(2026, 9, 30, 0, 0, 0, 0, time.UTC)}))
		}},
		{"Webhooks.AllEventCallbacks", func(ctx context.Context, c *rail0.Client) error {
			return drainOne(c.Webhooks.AllEventCallbacks(ctx, hookID, rail0.WebhookListEventCallbacksParams{}))
		}},
		{"Webhooks.Redeliver", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Webhooks.Redeliver(ctx, hookID, callbackID))
		}},
		// Disputes.
		{"Disputes.List", func(ctx context.Context, c *rail0.Client) error {
			return errOnly(c.Disputes.List(ctx, rail0.DisputeListParams{ListOptions: rail0.ListOptions{Page: 1, PerPage: 100,
				Sort: []rail0.SortKey{rail0.SortOpenedAt.Desc()}}, Status: rail0.DisputeClosed}))
		}},
		{"Disputes.All", func(ctx context.Context, c *rail0.Client) error {
			return drainOne(c.Disputes.All(ctx, rail0.DisputeListParams{}))
		}},
	}
	// Every operation through the generic and the named methods.
	for _, op := range []rail0.Operation{rail0.OpAuthorize, rail0.OpCharge, rail0.OpCapture, rail0.OpVoid, rail0.OpRelease, rail0.OpRefund, rail0.OpDispute, rail0.OpCloseDispute} {
		params := rail0.PaymentPrepareParams{}
		switch op {
		case rail0.OpCapture:
			params.Amount = "2"
		case rail0.OpRefund:
			params.Amount, params.Signature = "2", "0xsig"
		case rail0.OpRelease:
			params.From = fixturePayer
		case rail0.OpDispute, rail0.OpCloseDispute:
			params.Reason = fixtureReason
		}
		calls = append(calls,
			contractCall{"Payments.Prepare/" + string(op), func(ctx context.Context, c *rail0.Client) error {
				return errOnly(c.Payments.Prepare(ctx, id, op, params))
			}},
			contractCall{"Payments.Submit/" + string(op), func(ctx context.Context, c *rail0.Client) error {
				return errOnly(c.Payments.Submit(ctx, id, op, rail0.PaymentSubmitParams{SignedTransaction: fixtureSignedTx}))
			}},
			contractCall{"Payments.SubmitByHash/" + string(op), func(ctx context.Context, c *rail0.Client) error {
				return errOnly(c.Payments.SubmitByHash(ctx, id, op, rail0.PaymentSubmitByHashParams{TransactionHash: fixtureHash}))
			}},
		)
	}
	sort.Slice(calls, func(i, j int) bool { return calls[i].name < calls[j].name })
	return calls
}

func TestContractEveryOperationIsCovered(t *testing.T) {
	t.Parallel()
	doc := loadContract(t)
	cs, c := newContractServer(t, doc)
	for _, call := range contractCalls() {
		cs.setRow(call.name)
		if err := call.call(context.Background(), c); err != nil {
			t.Errorf("%s: %v", call.name, err)
		}
	}
	cs.setRow("")

	var missing, unexpected []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			op := method + " " + path
			excluded := strings.HasPrefix(path, "/sync/") || slices.Contains(contractExcluded, op)
			switch reached := cs.reached[op]; {
			case excluded && reached:
				unexpected = append(unexpected, op)
			case !excluded && !reached:
				missing = append(missing, op)
			}
		}
	}
	sort.Strings(missing)
	sort.Strings(unexpected)
	if len(missing) > 0 {
		t.Errorf("%d operations of the contract have no SDK method (none of the calls reached them):\n  %s",
			len(missing), strings.Join(missing, "\n  "))
	}
	if len(unexpected) > 0 {
		t.Errorf("operations listed as left out were reached; update contractExcluded and the file comment:\n  %s",
			strings.Join(unexpected, "\n  "))
	}
	if n := len(cs.reached); n < 40 {
		t.Errorf("only %d operations reached", n)
	}
}

// TestContractServerRejectsViolations shows the recording server is not a
// rubber stamp: requests that break the contract are reported.
func TestContractServerRejectsViolations(t *testing.T) {
	t.Parallel()
	doc := loadContract(t)
	routed := *doc
	routed.Servers = nil
	router, err := gorillamux.NewRouter(&routed)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, method, target, body string
		header                     map[string]string
	}{
		{"missing required body field", "POST", "/payments/p/capture", `{}`, map[string]string{"Authorization": "Bearer t"}},
		{"enum violated in query", "GET", "/payments?status=lost", "", map[string]string{"Authorization": "Bearer t"}},
		{"integer query not an integer", "GET", "/payments?chain_id=base", "", map[string]string{"Authorization": "Bearer t"}},
		{"no token", "GET", "/payments/p", "", nil},
		{"operation outside the enum", "POST", "/payments/p/teleport/prepare", `{}`, map[string]string{"Authorization": "Bearer t"}},
	}
	for _, tt := range tests {
		req := httptest.NewRequest(tt.method, tt.target, strings.NewReader(tt.body))
		if tt.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for k, v := range tt.header {
			req.Header.Set(k, v)
		}
		route, params, err := router.FindRoute(req)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		err = openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: contractAuth, RejectWhenRequestBodyNotSpecified: true},
		})
		if err == nil {
			t.Errorf("%s: accepted", tt.name)
		}
	}
	// And a response the SDK's types could not represent is refused too.
	req := httptest.NewRequest("GET", "/payments/p", nil)
	req.Header.Set("Authorization", "Bearer t")
	route, params, _ := router.FindRoute(req)
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: contractAuth}}
	rin := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: 200,
		Header: http.Header{"Content-Type": {"application/json"}}, Options: &openapi3filter.Options{IncludeResponseStatus: true}}
	rin.SetBodyBytes([]byte(`{"id": "p", "chain_id": "84532"}`))
	if err := openapi3filter.ValidateResponse(context.Background(), rin); err == nil {
		t.Error("a string chain_id was accepted in a PaymentDetail")
	}
}

// TestContractFixtureGenerator pins what the fixture generator produces, so
// that a failure of the coverage test points at the SDK, not at the
// generator.
func TestContractFixtureGenerator(t *testing.T) {
	t.Parallel()
	doc := loadContract(t)
	s := doc.Components.Schemas["PaymentDetail"]
	b, err := json.Marshal(exampleValue(s, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	var p rail0.PaymentDetail
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("generated PaymentDetail does not decode: %v\n%s", err, b)
	}
	if p.Status != rail0.StatusUnsigned || len(p.Transactions) != 1 || p.Transactions[0].UnsignedTransaction == nil ||
		len(p.SigningPayload) == 0 || string(p.SigningPayload) == "null" || p.CreatedAt.IsZero() || p.ChainID != 1 {
		t.Errorf("generated payment = %+v", p)
	}
	if v := exampleValue(doc.Components.Schemas["Dispute"], "", 0).(map[string]any); v["closed_by"] != "payer" {
		t.Errorf("nullable enum generated as %v, want its first non-null value", v["closed_by"])
	}
	if got := fmt.Sprint(exampleValue(&openapi3.SchemaRef{Value: &openapi3.Schema{Type: &openapi3.Types{"integer"}, Min: contractPtr(5.0)}}, "", 0)); got != strconv.Itoa(5) {
		t.Errorf("minimum not honoured: %s", got)
	}
}

func contractPtr[T any](v T) *T { return &v }
