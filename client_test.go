package rail0_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	rail0 "github.com/rail0/rail0-go"
)

// The examples run against an in-process stand-in for the gateway that
// answers with the contract guide's example records (README section 13).

const examplePayment = `{"id": "0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a4b", "rail0_id": "0x9f2c4e1a7b3d5c8e0f6a2b4d6c8e0a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e2f", "status": "%s", "mode": "authorize", "amount": "25000000", "capturable_amount": "%s", "refundable_amount": "0", "payer": "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4", "payee": "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2", "token": "0x036CbD53842c5426634e7929541eC2318f3dCF7e", "authorization_expiry": 1789985700, "refund_expiry": 1791972900, "disputed": false, "description": "Order %s", "created_at": "2026-09-14T10:15:00Z", "updated_at": "2026-09-14T10:15:00Z"`

func examplePaymentJSON(status, capturable, order string) string {
	return fmt.Sprintf(examplePayment, status, capturable, order) + "}"
}

func examplePaymentDetailJSON(status, capturable string, transactions string) string {
	payload := "null"
	if status == "unsigned" {
		payload = `{"primaryType": "TransferWithAuthorization"}`
	}
	return fmt.Sprintf(examplePayment, status, capturable, "1042") +
		`, "chain_id": 84532, "rail0_contract": "0x7c1E3b52fA9d4C26e0a1F83b5D9e6A4c2B0f8E31", "transactions": [` +
		transactions + `], "signing_payload": ` + payload + `}`
}

// exampleCaptureTx is the capture transaction of the guide's example.
func exampleCaptureTx(status, unsigned string) string {
	return `{"id": "0191f0a9-5e6f-7a80-9b1c-2d3e4f5a6b7c", "payment_id": "0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a4b", "operation": "capture", "status": "` +
		status + `", "unsigned_transaction": ` + unsigned + `, "amount": "10000000", "created_at": "2026-09-14T10:21:02Z", "updated_at": "2026-09-14T10:21:02Z"}`
}

// newExampleGateway starts the stand-in gateway under /api, like a
// self-hosted gateway behind a path prefix.
func newExampleGateway() *httptest.Server {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, status int, body string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
	mux.HandleFunc("POST /api/payments", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusCreated, examplePaymentDetailJSON("unsigned", "0", ""))
	})
	mux.HandleFunc("GET /api/payments/{id}", func(w http.ResponseWriter, _ *http.Request) {
		tx := `{"id": "0191f0a9-5e6f-7a80-9b1c-2d3e4f5a6b7c", "operation": "capture", "status": "confirmed", "transaction_hash": "0x8d1f3a5c7e9b0d2f4a6c8e0b1d3f5a7c9e1b3d5f7a9c0e2b4d6f8a1c3e5b7d9f", "amount": "10000000", "block_number": 31044931, "created_at": "2026-09-14T10:21:02Z", "updated_at": "2026-09-14T10:22:41Z"}`
		reply(w, http.StatusOK, examplePaymentDetailJSON("partially_captured", "15000000", tx))
	})
	mux.HandleFunc("POST /api/payments/{id}/capture/prepare", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusCreated, exampleCaptureTx("pending", `"{\"chain_id\":84532,\"nonce\":7,\"to\":\"0x7c1E3b52fA9d4C26e0a1F83b5D9e6A4c2B0f8E31\",\"value\":\"0\",\"data\":\"0xa0e7c9f49f2c4e1a7b3d5c8e0f6a2b4d6c8e0a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e2f0000000000000000000000000000000000000000000000000000000000e4e1c0\",\"gas_limit\":120000,\"max_priority_fee_per_gas\":\"1000000\",\"max_fee_per_gas\":\"1500000000\"}"`))
	})
	mux.HandleFunc("POST /api/payments/{id}/capture", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			SignedTransaction string `json:"signed_transaction"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || !strings.HasPrefix(body.SignedTransaction, "0x02") {
			reply(w, http.StatusBadRequest, `{"code": "invalid_transaction", "title": "Bad transaction", "detail": "Not a signed EIP-1559 transaction.", "status": "invalid_transaction"}`)
			return
		}
		reply(w, http.StatusAccepted, exampleCaptureTx("submitted", "null"))
	})
	mux.HandleFunc("GET /api/payments", func(w http.ResponseWriter, r *http.Request) {
		// Five payments, two per page.
		page := r.URL.Query().Get("page")
		var items []string
		switch page {
		case "", "1":
			items = []string{examplePaymentJSON("captured", "0", "1001"), examplePaymentJSON("captured", "0", "1002")}
		case "2":
			items = []string{examplePaymentJSON("captured", "0", "1003"), examplePaymentJSON("captured", "0", "1004")}
		case "3":
			items = []string{examplePaymentJSON("captured", "0", "1005")}
		}
		w.Header().Set("X-Total-Count", "5")
		w.Header().Set("X-Page", page)
		w.Header().Set("X-Per-Page", "2")
		reply(w, http.StatusOK, "["+strings.Join(items, ",")+"]")
	})
	return httptest.NewServer(mux)
}

// Open a payment as the buyer, then read it back.
func ExamplePaymentsService_Create() {
	gw := newExampleGateway()
	defer gw.Close()
	client, err := rail0.NewClient(gw.URL+"/api", rail0.WithToken("session-jwt"))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	payment, err := client.Payments.Create(ctx, rail0.PaymentCreateParams{
		ChainID: 84532, // Base Sepolia
		Mode:    rail0.ModeAuthorize,
		Amount:  "25.00", // human decimal; the gateway scales it by the token's decimals
		Token:   "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
		Payer:   "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
		Payee:   "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2",
		// Store the key with the order so that a retry after a crash
		// returns the same payment instead of opening a second one.
		IdempotencyKey: "order-1042",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(payment.Status, "payment, payer must sign:", len(payment.SigningPayload) > 0)

	payment, err = client.Payments.Get(ctx, payment.ID)
	if err != nil {
		log.Fatal(err)
	}
	captured := payment.Transactions[0]
	amount, _ := rail0.FormatAmount(*captured.Amount, 6)
	left, _ := rail0.FormatAmount(payment.CapturableAmount, 6)
	fmt.Printf("%s: %s %s USDC, %s USDC still in escrow\n", payment.Status, captured.Operation, amount, left)
	// Output:
	// unsigned payment, payer must sign: true
	// partially_captured: capture 10 USDC, 15 USDC still in escrow
}

// Walk every payment, page after page, with the iterator.
func ExamplePaymentsService_All() {
	gw := newExampleGateway()
	defer gw.Close()
	client, err := rail0.NewClient(gw.URL+"/api", rail0.WithToken("session-jwt"))
	if err != nil {
		log.Fatal(err)
	}

	params := rail0.PaymentListParams{
		ListOptions: rail0.ListOptions{PerPage: 2, Sort: []rail0.SortKey{rail0.SortCreatedAt.Desc()}},
		Status:      rail0.StatusCaptured,
	}
	for payment, err := range client.Payments.All(context.Background(), params) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(*payment.Description)
	}
	// Output:
	// Order 1001
	// Order 1002
	// Order 1003
	// Order 1004
	// Order 1005
}

// Fetch a single page when you need the totals.
func ExamplePaymentsService_List() {
	gw := newExampleGateway()
	defer gw.Close()
	client, err := rail0.NewClient(gw.URL+"/api", rail0.WithToken("session-jwt"))
	if err != nil {
		log.Fatal(err)
	}

	page, err := client.Payments.List(context.Background(), rail0.PaymentListParams{ListOptions: rail0.ListOptions{Page: 2, PerPage: 2}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("page %d: %d of %d payments, more: %v\n", page.Page, len(page.Items), page.TotalCount, page.HasNext())
	// Output:
	// page 2: 2 of 5 payments, more: true
}

// Wait until a submitted step is confirmed on chain.
func ExamplePaymentsService_WaitForTransaction() {
	gw := newExampleGateway()
	defer gw.Close()
	client, err := rail0.NewClient(gw.URL+"/api", rail0.WithToken("session-jwt"))
	if err != nil {
		log.Fatal(err)
	}

	// The id and the hash come from the Transaction that a flow such as
	// Capture (or Submit) returned: only the row carrying the hash sent
	// counts.
	tx, err := client.Payments.WaitForTransaction(context.Background(),
		"0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a4b", "0191f0a9-5e6f-7a80-9b1c-2d3e4f5a6b7c", rail0.PaymentWaitForTransactionParams{
			TransactionHash: "0x8d1f3a5c7e9b0d2f4a6c8e0b1d3f5a7c9e1b3d5f7a9c0e2b4d6f8a1c3e5b7d9f",
		})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tx.Operation, tx.Status, "in block", *tx.BlockNumber)
	// Output:
	// capture confirmed in block 31044931
}

// Convert between the human amounts the gateway takes and the base units it
// returns, exactly.
func ExampleToBaseUnits() {
	base, err := rail0.ToBaseUnits("1.50", 6) // USDC has 6 decimals
	fmt.Println(base, err)

	// Filters such as PaymentListParams.MinAmount take base units.
	params := rail0.PaymentListParams{}
	params.MinAmount, _ = rail0.ToBaseUnits("10", 6)
	fmt.Println(params.MinAmount)

	// Money is never rounded: extra precision is an error.
	_, err = rail0.ToBaseUnits("1.0000005", 6)
	fmt.Println(err)
	// Output:
	// 1500000 <nil>
	// 10000000
	// rail0: ToBaseUnits("1.0000005", 6): amount has more precision than the token's decimals
}

func ExampleFormatAmount() {
	for _, base := range []string{"1500000", "25000000", "1"} {
		human, err := rail0.FormatAmount(base, 6)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(human)
	}
	// Output:
	// 1.5
	// 25
	// 0.000001
}

// Every result carries its call's metadata (Response) and transcript
// (Response.Call); every error carries the transcript too (CallOf). The
// request id is the one to log and to quote to support.
func ExampleResponse() {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", fmt.Sprintf("req-%d", n))
		if strings.HasSuffix(r.URL.Path, "/missing") {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"code": "not_found", "detail": "Payment not found."}`)
			return
		}
		io.WriteString(w, examplePaymentDetailJSON("authorized", "25000000", ""))
	}))
	defer srv.Close()
	client, err := rail0.NewClient(srv.URL, rail0.WithToken("token"))
	if err != nil {
		log.Fatal(err)
	}

	p, err := client.Payments.Get(context.Background(), "0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a4b")
	if err != nil {
		log.Fatal(err)
	}
	call := p.Response.Call
	fmt.Println(p.Response.StatusCode, p.Response.RequestID, call.Operation, call.Route, len(call.Attempts), call.Outcome)

	_, err = client.Payments.Get(context.Background(), "missing")
	call = rail0.CallOf(err)
	fmt.Println(call.StatusCode(), call.RequestID(), call.Operation, call.PaymentID, call.Outcome)
	// Output:
	// 200 req-1 getPayment /payments/{id} 1 ok
	// 404 req-2 getPayment missing api_error
}

// An endpoint the SDK has no method for yet: Raw sends it with the client's
// token, retries, limiter and transcript, under the retry class the caller
// gives (here a read, safe to repeat), and decodes the answer.
func ExampleClient_Raw() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"url": "https://receipts.example/1042.pdf"}`)
	}))
	defer srv.Close()
	client, err := rail0.NewClient(srv.URL, rail0.WithToken("token"))
	if err != nil {
		log.Fatal(err)
	}

	var receipt struct {
		URL string `json:"url"`
	}
	resp, err := client.Raw(context.Background(), rail0.RawRequest{
		Method: http.MethodGet,
		Path:   []string{"payments", "0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a4b", "receipt"}, // one segment each, escaped
		Class:  rail0.Idempotent,
	}, &receipt)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.StatusCode, resp.Call.Route, receipt.URL)
	// Output:
	// 200 /payments/0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a4b/receipt https://receipts.example/1042.pdf
}

// localChecks are the service methods that send nothing: they take what
// they check (the payment, the caller's intent and the artifact) and return
// what they checked, which no call's metadata goes with.
var localChecks = map[string]bool{
	"PaymentsService.VerifyPayload":     true,
	"PaymentsService.VerifyTransaction": true,
}

// sourceDecls parses the package's own source files (not its tests).
func sourceDecls(t *testing.T) (funcs []*ast.FuncDecl, types map[string]*ast.TypeSpec) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	types = map[string]*ast.TypeSpec{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				funcs = append(funcs, d)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok {
						types[ts.Name.Name] = ts
					}
				}
			}
		}
	}
	return funcs, types
}

// resourceOf names the resource of a service type, the prefix of its
// params types: PaymentsService is Payment, AnalyticsService Analytics.
func resourceOf(service string) string {
	r := strings.TrimSuffix(service, "Service")
	switch r {
	case "Analytics", "Auth", "Health", "Discovery":
		return r
	}
	return strings.TrimSuffix(r, "s")
}

// paramsName is the name the rule gives the params of method on service: an
// iterator (All…) takes the params of its page-level call (List…).
func paramsName(service, method string) string {
	if rest, ok := strings.CutPrefix(method, "All"); ok {
		method = "List" + rest
	}
	return resourceOf(service) + method + "Params"
}

// exprString prints a type expression as written.
func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return "*" + exprString(e.X)
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	case *ast.IndexExpr:
		return exprString(e.X) + "[" + exprString(e.Index) + "]"
	case *ast.IndexListExpr:
		var args []string
		for _, a := range e.Indices {
			args = append(args, exprString(a))
		}
		return exprString(e.X) + "[" + strings.Join(args, ", ") + "]"
	case *ast.ArrayType:
		return "[]" + exprString(e.Elt)
	case *ast.Ellipsis:
		return "..." + exprString(e.Elt)
	case *ast.InterfaceType:
		return "any"
	}
	return "?"
}

// carriesResponse reports whether the struct type name has its own
// Response *Response field: the call's metadata, on the value it returns.
func carriesResponse(types map[string]*ast.TypeSpec, name string) bool {
	ts, ok := types[name]
	if !ok {
		return false
	}
	st, ok := ts.Type.(*ast.StructType)
	if !ok {
		return false
	}
	for _, f := range st.Fields.List {
		for _, n := range f.Names {
			if n.Name == "Response" && exprString(f.Type) == "*Response" {
				return true
			}
		}
	}
	return false
}

// The package doc's rule for call shapes, held against every method of
// every service: ctx first; then the path's arguments (ids as strings, and
// the step of the generic routes, an Operation op; WaitForTransaction's
// transaction id counts as one); then, when the operation
// takes anything else, one params value (never a pointer, never a variadic
// tail of options) named <Resource><Method>Params (an All… iterator takes
// its List…'s). A call returns a pointer to a struct that carries the call's
// metadata in its Response field, a *Page[T] or *List[T], its bare
// *Response when the answer has no body, or an iter.Seq2[T, error] for an
// All… iterator, and an error. Every exported …Params type is some method's.
func TestCallShapes(t *testing.T) {
	funcs, types := sourceDecls(t)
	used := map[string]bool{}
	methods := 0
	for _, fn := range funcs {
		if fn.Recv == nil || !fn.Name.IsExported() {
			continue
		}
		recv := strings.TrimPrefix(exprString(fn.Recv.List[0].Type), "*")
		if !strings.HasSuffix(recv, "Service") {
			continue
		}
		methods++
		name := recv + "." + fn.Name.Name
		var params, names []string
		for _, f := range fn.Type.Params.List {
			for i := range max(len(f.Names), 1) {
				params = append(params, exprString(f.Type))
				if i < len(f.Names) {
					names = append(names, f.Names[i].Name)
				} else {
					names = append(names, "_")
				}
			}
		}
		var results []string
		if fn.Type.Results != nil {
			for _, f := range fn.Type.Results.List {
				for range max(len(f.Names), 1) {
					results = append(results, exprString(f.Type))
				}
			}
		}
		if localChecks[name] {
			continue
		}
		if len(params) == 0 || params[0] != "context.Context" {
			t.Errorf("%s: the first parameter must be ctx context.Context, got %v", name, params)
			continue
		}
		// The path's arguments: ids (id, accountID, …) as strings, and
		// the step of the generic routes (op). A string that is not an id
		// is a value the body carries, which belongs in the params.
		rest, restNames := params[1:], names[1:]
		for len(rest) > 0 && (rest[0] == "string" && (restNames[0] == "id" || strings.HasSuffix(restNames[0], "ID")) ||
			rest[0] == "Operation" && restNames[0] == "op") {
			rest, restNames = rest[1:], restNames[1:]
		}
		switch {
		case len(rest) == 0:
		case len(rest) == 1 && rest[0] == paramsName(recv, fn.Name.Name):
			used[rest[0]] = true
		default:
			t.Errorf("%s(%s): after ctx and the path's arguments, one params value %s", name, strings.Join(params, ", "), paramsName(recv, fn.Name.Name))
		}
		if strings.HasPrefix(fn.Name.Name, "All") {
			if len(results) != 1 || !strings.HasPrefix(results[0], "iter.Seq2[") || !strings.HasSuffix(results[0], ", error]") {
				t.Errorf("%s returns %v: an iterator is an iter.Seq2[T, error]", name, results)
			}
			continue
		}
		if len(results) != 2 || results[1] != "error" {
			t.Errorf("%s returns %v: one result and an error", name, results)
			continue
		}
		switch res := results[0]; {
		case strings.HasPrefix(res, "*Page[") || strings.HasPrefix(res, "*List["), res == "*Response":
		case strings.HasPrefix(res, "*") && carriesResponse(types, res[1:]):
		default:
			t.Errorf("%s returns %s: a pointer to a struct with a Response field, a *Page[T], a *List[T] or a *Response", name, results[0])
		}
	}
	if methods < 60 {
		t.Fatalf("found %d service methods: the source was not read", methods)
	}
	var orphans []string
	for name := range types {
		if ast.IsExported(name) && strings.HasSuffix(name, "Params") && !used[name] {
			orphans = append(orphans, name)
		}
	}
	sort.Strings(orphans)
	if len(orphans) > 0 {
		t.Errorf("params types no method takes (or named against the rule): %v", orphans)
	}
}

// Module paths that only the integrations (modules of their own: rail0test,
// rail0otel, redislimit, cmd/..., integration, examples) may need. None of
// them may reach a program that imports only the SDK's own packages.
var heavyModules = []string{
	"github.com/ethereum/go-ethereum",
	"go.opentelemetry.io/",
	"github.com/redis/go-redis/",
	"github.com/getkin/kin-openapi",
	"gonum.org/",
	"github.com/golang-jwt/",
}

func isHeavy(path string) bool {
	for _, h := range heavyModules {
		if strings.HasPrefix(path, h) {
			return true
		}
	}
	return false
}

// TestRootPackageImports pins the dependencies of the SDK's own packages:
// the root package imports the standard library, go-retryablehttp,
// internal/evm, internal/verify (the checks, on internal/evm, registry and
// internal/strictjson, the key check webhook deliveries share),
// internal/secret, registry, internal/ops (the operation table, which
// rail0test serves from too, on the standard library only) and the
// rate-limit engine (package ratelimit,
// with internal/limitclock, which lends its clock to redislimit's tests,
// and internal/jitter, the draw rule it shares with the root and
// redislimit), those last four on the standard library only; internal/evm and signing do
// their Ethereum cryptography with decred's secp256k1 and x/crypto's Keccak.
// None of these packages, nor any of their tests, imports go-ethereum or
// another integration's dependency (OpenTelemetry is package rail0otel's,
// go-ethereum the integration tests'), so that programs that only use the
// SDK do not download them.
func TestRootPackageImports(t *testing.T) {
	const (
		root      = "github.com/rail0/rail0-go"
		evm       = root + "/internal/evm"
		verify    = root + "/internal/verify"
		strict    = root + "/internal/strictjson"
		secret    = root + "/internal/secret"
		ratelimit = root + "/ratelimit"
		limclock  = root + "/internal/limitclock"
		limrules  = root + "/internal/limitrules"
		jitter    = root + "/internal/jitter"
		ops       = root + "/internal/ops"
		secp256k1 = "github.com/decred/dcrd/dcrec/secp256k1/v4"
		ecdsa     = secp256k1 + "/ecdsa"
		sha3      = "golang.org/x/crypto/sha3"
	)
	allow := func(paths ...string) map[string]bool {
		m := map[string]bool{}
		for _, p := range paths {
			m[p] = true
		}
		return m
	}
	for dir, allowed := range map[string]map[string]bool{
		".":                   allow("github.com/hashicorp/go-retryablehttp", evm, verify, secret, root+"/registry", ratelimit, jitter, ops),
		"internal/verify":     allow(evm, strict, root+"/registry"),
		"internal/strictjson": allow(),
		"internal/verifytest": allow(verify),
		"webhook":             allow(root, secret, strict), // its types are the root package's
		"internal/secret":     allow(),
		"registry":            allow(),
		"signing":             allow(root, evm, secp256k1, ecdsa),
		"internal/evm":        allow(secp256k1, ecdsa, sha3),
		"internal/evmtest":    allow(evm, secp256k1, ecdsa),
		"ratelimit":           allow(limclock, limrules, jitter),
		"internal/limitclock": allow(),
		"internal/limitrules": allow(),
		"internal/jitter":     allow(),
		"internal/ops":        allow(),
	} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Fatalf("no Go files in %s", dir)
		}
		for _, f := range files {
			test := strings.HasSuffix(f, "_test.go")
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range file.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if isHeavy(path) {
					t.Errorf("%s imports %s, which only an integration's module may need", f, path)
				}
				if test {
					continue
				}
				first := strings.Split(path, "/")[0]
				if !strings.Contains(first, ".") || allowed[path] {
					continue // standard library, or allowed
				}
				t.Errorf("%s imports %s", f, path)
			}
		}
	}
}

// TestRootModuleRequiresNoIntegrationDependency reads go.mod: with module
// graph pruning, what the root module requires is what a user's
// `go list -m all` names besides the SDK, so the integrations' dependencies
// must be required by their own modules' go.mod files instead. .ci/rootcost
// checks the same on a real user module.
func TestRootModuleRequiresNoIntegrationDependency(t *testing.T) {
	gomod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	inBlock := false
	for _, line := range strings.Split(string(gomod), "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
			continue
		case fields[0] == "require" && len(fields) > 1 && fields[1] == "(":
			inBlock = true
			continue
		case inBlock && fields[0] == ")":
			inBlock = false
			continue
		case fields[0] == "require" && len(fields) > 1:
			fields = fields[1:]
		case !inBlock:
			continue
		}
		if isHeavy(fields[0]) {
			t.Errorf("go.mod requires %s; only an integration's own module may", fields[0])
		}
	}
}

// Files are named for what they hold, go-github's way: a service's
// methods are in files named <service>.go or <service>_<topic>.go
// (PaymentsService's in payments_flows.go, payments_wait.go...), and every
// test file is named after the source file it tests.
func TestFilesNamedForWhatTheyHold(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	snake := regexp.MustCompile(`([a-z])([A-Z])`)
	methods := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			if _, err := os.Stat(strings.TrimSuffix(name, "_test.go") + ".go"); err != nil {
				t.Errorf("%s tests no source file of its name", name)
			}
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil {
				continue
			}
			star, ok := fn.Recv.List[0].Type.(*ast.StarExpr)
			if !ok {
				continue
			}
			recv, ok := star.X.(*ast.Ident)
			if !ok || !strings.HasSuffix(recv.Name, "Service") {
				continue
			}
			methods++
			service := strings.ToLower(snake.ReplaceAllString(strings.TrimSuffix(recv.Name, "Service"), "${1}_${2}"))
			if base := strings.TrimSuffix(name, ".go"); base != service && !strings.HasPrefix(base, service+"_") {
				t.Errorf("%s.%s is in %s, not in %s.go or %s_<topic>.go", recv.Name, fn.Name.Name, name, service, service)
			}
		}
	}
	if methods < 60 {
		t.Fatalf("checked only %d service methods", methods)
	}
}

// A plain http:// base URL on a host other than loopback is refused: the
// bearer token would cross the network in clear text. Loopback, where
// rail0test serves, stays allowed, and WithInsecureHTTP opts in by name.
func TestRemoteHTTPBaseURLIsRefused(t *testing.T) {
	for _, base := range []string{"http://api.rail0.xyz", "http://10.0.0.7:8080", "http://localhost.evil.example", "http://127.0.0.1.nip.io"} {
		c, err := rail0.NewClient(base, rail0.WithToken("tok"))
		var ve *rail0.ValidationError
		if !errors.As(err, &ve) || ve.Field != "base_url" || !strings.Contains(ve.Reason, "WithInsecureHTTP") || c != nil {
			t.Errorf("NewClient(%q) = %v, %v; want a *ValidationError on base_url naming WithInsecureHTTP", base, c, err)
		}
		if _, err := rail0.NewClient(base, rail0.WithToken("tok"), rail0.WithInsecureHTTP()); err != nil {
			t.Errorf("NewClient(%q, WithInsecureHTTP()): %v", base, err)
		}
	}
	for _, base := range []string{"http://localhost:8080", "http://LOCALHOST", "http://127.0.0.1:1", "http://127.8.9.10", "https://api.rail0.xyz"} {
		if _, err := rail0.NewClient(base, rail0.WithToken("tok")); err != nil {
			t.Errorf("NewClient(%q): %v", base, err)
		}
	}

	// A view cannot turn it on: it is the client's.
	c, err := rail0.NewClient("https://api.rail0.xyz")
	if err != nil {
		t.Fatal(err)
	}
	var ve *rail0.ValidationError
	if _, err := c.With(rail0.WithInsecureHTTP()).Health.Get(context.Background()); !errors.As(err, &ve) || ve.Field != "option" {
		t.Errorf("a view WithInsecureHTTP: %v; want a *ValidationError on option", err)
	}

	// End to end: a loopback httptest server still serves plain HTTP.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"ok"}`)
	}))
	defer srv.Close()
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("httptest serves on %s", srv.URL)
	}
	c, err = rail0.NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Health.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Loopback's IPv6 address is a base URL like 127.0.0.1: plain HTTP is
// allowed there (rail0test, a local rail0-gateway), and a client without a
// sign-in to place is made and reaches it. On main NewClient refused every
// IPv6 base URL with "WithSignIn: invalid siwe.domain: must be a bare host,
// without a port", the SIWE domain it derived for a sign-in it would
// never make, while the CHANGELOG promised ::1.
func TestIPv6LoopbackBaseURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"ok","host":%q}`, r.Host)
	}))
	defer srv.Close()
	// [::1] is dialled at the server's own address: the sandbox may have no IPv6.
	tr := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
	}}
	defer tr.CloseIdleConnections()
	for _, base := range []string{"http://[::1]:8080", "http://[::1]", "https://[2001:db8::1]/v1"} {
		c, err := rail0.NewClient(base, rail0.WithToken("tok"), rail0.WithHTTPClient(&http.Client{Transport: tr}))
		if err != nil {
			t.Errorf("NewClient(%q): %v", base, err)
			continue
		}
		if strings.HasPrefix(base, "http:") {
			if _, err := c.Health.Get(context.Background()); err != nil {
				t.Errorf("%s: %v", base, err)
			}
		}
	}
	// A client that signs in still needs a SIWE domain it can name.
	if _, err := rail0.NewClient("http://[::1]:8080", rail0.WithSignIn(rail0.SignIn{Domain: "::1"})); err == nil {
		t.Error("a SIWE domain with a colon was taken")
	}
}
