package rail0

import (
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// declaration is one operation value as its source declares it.
type declaration struct {
	name      string // the variable's name
	pos       string // file:line
	constName string // the ops constant it declares, as written
}

// declaredOperations reads every operation that the package's own source
// files (not its tests) declare: package-level values declare(ops.X). A
// package-level operation literal is an error: its row would not be the
// table's, which the fake gateway serves.
func declaredOperations(t *testing.T) []declaration {
	t.Helper()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var out []declaration
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		require.NoError(t, err)
		for _, d := range file.Decls {
			gen, ok := d.(*ast.GenDecl)
			if !ok || gen.Tok != token.VAR {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, v := range vs.Values {
					if lit, ok := v.(*ast.CompositeLit); ok {
						if id, ok := lit.Type.(*ast.Ident); ok && id.Name == "operation" {
							t.Errorf("%s: declare the table's operation: declare(ops.X)", fset.Position(lit.Pos()))
						}
						continue
					}
					call, ok := v.(*ast.CallExpr)
					if !ok || len(call.Args) != 1 {
						continue
					}
					if fun, ok := call.Fun.(*ast.Ident); !ok || fun.Name != "declare" {
						continue
					}
					pos := fset.Position(call.Pos()).String()
					sel, ok := call.Args[0].(*ast.SelectorExpr)
					if pkg, isIdent := sel.X.(*ast.Ident); !ok || !isIdent || pkg.Name != "ops" {
						t.Fatalf("%s: declare an operation of the table: declare(ops.X)", pos)
					}
					out = append(out, declaration{name: vs.Names[i].Name, pos: pos, constName: sel.Sel.Name})
				}
			}
		}
	}
	return out
}

// contractOperation is an operation of the contract.
type contractOperation struct{ method, template, id string }

// contractOperations reads the module's copy of the contract
// (testdata/openapi.json, kept equal to the gateway's by the integration
// module's TestContractCopyMatchesShared): every operation but the chain
// indexer's /sync routes, which have no method here.
func contractOperations(t *testing.T) []contractOperation {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "openapi.json"))
	require.NoError(t, err)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	var out []contractOperation
	for path, ops := range doc.Paths {
		if strings.HasPrefix(path, "/sync/") {
			continue
		}
		for method, raw := range ops {
			if method == "parameters" {
				continue
			}
			var op struct {
				OperationID string `json:"operationId"`
			}
			require.NoError(t, json.Unmarshal(raw, &op))
			require.NotEmpty(t, op.OperationID, "%s %s has no operationId", method, path)
			out = append(out, contractOperation{strings.ToUpper(method), path, op.OperationID})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out
}

// The map of the API is one table (internal/ops), named beside each
// method: every operation of the contract but the indexer's is a row
// exactly once, named by its operationId, with the contract's method and
// template; nothing else is a row; reads are ops.Read, and every write has
// a class that is not and says why. Each row is declared by exactly one
// method's value, named by the operationId.
func TestOperationsMatchTheContract(t *testing.T) {
	rows := map[string][]operation{}
	for _, op := range operations {
		rows[op.id] = append(rows[op.id], op)
	}
	contract := contractOperations(t)
	require.Greater(t, len(contract), 45)
	inContract := map[string]bool{}
	writes := 0
	for _, want := range contract {
		inContract[want.id] = true
		rs := rows[want.id]
		if !assert.Len(t, rs, 1, "%s (%s %s) must be a row of the table exactly once", want.id, want.method, want.template) || len(rs) != 1 {
			continue
		}
		op := rs[0]
		assert.Equal(t, want.method, op.method, "%s's method", want.id)
		assert.Equal(t, want.template, op.template, "%s's template", want.id)
		assert.LessOrEqual(t, strings.Count(want.template, "{"), len(pathArgs{}), "%s has more segments than pathArgs holds", want.id)
		if want.method == "GET" {
			assert.Equal(t, opRead, op.class, "%s is a read", want.id)
			continue
		}
		writes++
		assert.NotEqual(t, opRead, op.class, "%s is a write: say what repeating it does", want.id)
		assert.NotEmpty(t, op.why, "%s: say why it is of its class", want.id)
	}
	assert.Greater(t, writes, 25)
	for id := range rows {
		if !inContract[id] {
			t.Errorf("the table has %s, which the contract does not name", id)
		}
	}
	// Every row is declared once, beside its method, named by its
	// operationId; the constant is the operationId with a capital
	// (internal/ops's TestConstantsNameTheirRow).
	declaredAs := map[string][]declaration{}
	for _, d := range declaredOperations(t) {
		declaredAs[d.constName] = append(declaredAs[d.constName], d)
		assert.Equal(t, strings.ToLower(d.constName[:1])+d.constName[1:], d.name, "%s: the variable is named by the operationId", d.pos)
	}
	for _, op := range operations {
		c := strings.ToUpper(op.id[:1]) + op.id[1:]
		assert.Len(t, declaredAs[c], 1, "ops.%s must be declared exactly once", c)
	}
	assert.Len(t, declaredAs, len(operations), "every declaration is of a row")
}

// A request the SDK builds from a method and a path (not a method's, which
// carries its operation) is named by the most specific template it
// matches.
func TestLookup(t *testing.T) {
	for _, tt := range []struct {
		method, path string
		want         *operation
	}{
		{"GET", "payments/p1", getPayment},
		{"GET", "", getRoot},
		{"GET", "payments", listPayments},
		{"POST", "payments/p1/capture", submitPaymentOperation},
		{"POST", "payments/p1/dispute", submitDispute},
		{"POST", "payments/p1/dispute/close", submitCloseDispute},
		{"POST", "payments/p1/dispute/prepare", prepareDispute},
		{"POST", "payments/p1/capture/prepare", preparePaymentOperation},
		{"POST", "payments/p1/dispute/close/submitted", submitCloseDisputeByHash},
		{"PUT", "webhooks/a%2Fb/enable", enableWebhook},
		{"PATCH", "accounts/a1/wallets/w1/tokens/t1/disable", disableExistingWalletToken},
		{"POST", "/payments/", createPayment},
		{"PUT", "something/new", nil},
		{"DELETE", "payments/p1", nil},
		{"POST", "payments//capture", nil},
		{"GET", "payments/p1/extra/segments/here", nil},
	} {
		if got := lookup(tt.method, tt.path); got != tt.want {
			t.Errorf("lookup(%s %s) = %v, want %v", tt.method, tt.path, got, tt.want)
		}
	}
}

// The classes that the retry rules of item 13 rest on, per operation.
func TestClassify(t *testing.T) {
	tests := []struct {
		op   *operation
		want opClass
	}{
		{getPayment, opRead},
		{getRoot, opRead},
		{createPayment, opKeyed},
		{submitPaymentOperation, opOnce},
		{submitDispute, opOnce},
		{submitCloseDispute, opOnce},
		{preparePaymentOperation, opRepeatable},
		{prepareDispute, opRepeatable},
		{prepareCloseDispute, opRepeatable},
		{submitPaymentOperationByHash, opRepeatable},
		{submitDisputeByHash, opRepeatable},
		{submitCloseDisputeByHash, opRepeatable},
		{signPayment, opRepeatable},
		{rotateWebhookSecret, opOnce},
		{enableWebhook, opRepeatable},
		{disableWebhook, opRepeatable},
		{resetWebhookCircuit, opRepeatable},
		{updateWebhook, opRepeatable},
		{deleteWebhook, opRepeatable},
		{createWebhook, opOnce},
		{redeliverEventCallback, opOnce},
		{createNonce, opRepeatable},
		{verifySiwe, opOnce},
		{logout, opOnce},
		{createWallet, opOnce},
		{updateWallet, opRepeatable},
		{deactivateWallet, opRepeatable},
		{enableWalletToken, opRepeatable},
		{disableWalletToken, opRepeatable},
		{enableExistingWalletToken, opRepeatable},
		{disableExistingWalletToken, opRepeatable},
	}
	for _, tt := range tests {
		t.Run(tt.op.id, func(t *testing.T) {
			assert.Equal(t, tt.want, classOf(tt.op.method, tt.op))
		})
	}
	// A request the contract does not name: a read is a read, and a write
	// is repeated only with an Idempotency-Key.
	assert.Equal(t, opRead, classOf("GET", nil))
	assert.Equal(t, opRead, classOf("HEAD", nil))
	assert.Equal(t, opKeyed, classOf("PUT", nil))
	assert.Equal(t, opKeyed, classOf("DELETE", nil))
	assert.True(t, opKeyed.Repeatable(true))
	assert.False(t, opKeyed.Repeatable(false))
	assert.False(t, opOnce.Repeatable(true), "the gateway ignores a key outside POST /payments")
	assert.True(t, opOnce.Matters())
	assert.True(t, opKeyed.Matters())
	assert.False(t, opRepeatable.Matters())
	assert.False(t, opRead.Matters())
}

// A path is its template filled with the method's arguments, each escaped
// as one segment and checked as an id; the wrong number of arguments is
// the SDK's own bug, reported rather than sent.
func TestOperationPath(t *testing.T) {
	tests := []struct {
		op   *operation
		args pathArgs
		want string
		err  string
	}{
		{getRoot, pathArgs{}, "", ""},
		{listPayments, pathArgs{}, "payments", ""},
		{getPayment, pathArgs{"p1"}, "payments/p1", ""},
		{getPayment, pathArgs{"a/b"}, "payments/a%2Fb", ""},
		{getPayment, pathArgs{"a b?"}, "payments/a%20b%3F", ""},
		{preparePaymentOperation, pathArgs{"p1", "capture"}, "payments/p1/capture/prepare", ""},
		{submitCloseDispute, pathArgs{"p1"}, "payments/p1/dispute/close", ""},
		{disableExistingWalletToken, pathArgs{"a1", "w1", "t1"}, "accounts/a1/wallets/w1/tokens/t1/disable", ""},
		{redeliverEventCallback, pathArgs{"w1", "e1"}, "webhooks/w1/event_callbacks/e1/redeliver", ""},
		{getPayment, pathArgs{}, "", "invalid id: is required"},
		{getPayment, pathArgs{".."}, "", "dot segment"},
		{disableWalletToken, pathArgs{"a1", "w1", "."}, "", "token_id"},
		{redeliverEventCallback, pathArgs{"w1"}, "", "invalid callback_id: is required"},
		{getPayment, pathArgs{"p1", "p2"}, "", "do not fit the template /payments/{id}"},
		{listPayments, pathArgs{"p1"}, "", "do not fit the template /payments"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.op.id, tt.args), func(t *testing.T) {
			got, err := tt.op.path(tt.args)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// The transcript names a declared operation by its operationId and
// template, and a path the contract does not name by itself; the payment
// id is the caller's, unescaped.
func TestRouteOf(t *testing.T) {
	op, template, id := routeOf(getPayment, "payments/a%2Fb")
	assert.Equal(t, "getPayment", op)
	assert.Equal(t, "/payments/{id}", template)
	assert.Equal(t, "a/b", id)
	op, template, _ = routeOf(nil, "no/such/route")
	assert.Empty(t, op)
	assert.Equal(t, "/no/such/route", template)
	_, template, id = routeOf(preparePaymentOperation, "payments/p1/capture/prepare")
	assert.Equal(t, "/payments/{id}/{operation}/prepare", template)
	assert.Equal(t, "p1", id)
}

// Ids that are empty or a dot segment are refused with a *ValidationError
// naming the field, before anything is sent, on every method that takes an
// id; any other id is escaped into one segment.
func TestDotSegmentIdsRefused(t *testing.T) {
	var seen []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.RequestURI)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, WithToken("tok"))
	ctx := context.Background()
	calls := map[string]func(id string) error{
		"Payments.Get": func(id string) error { _, err := c.Payments.Get(ctx, id); return err },
		"Payments.SubmitSignature": func(id string) error {
			_, err := c.Payments.SubmitSignature(ctx, id, PaymentSubmitSignatureParams{Signature: "0xsig"})
			return err
		},
		"Payments.ListTransactions": func(id string) error {
			_, err := c.Payments.ListTransactions(ctx, id, PaymentListTransactionsParams{})
			return err
		},
		"Payments.PrepareVoid": func(id string) error {
			_, err := c.Payments.Prepare(ctx, id, OpVoid, PaymentPrepareParams{})
			return err
		},
		"Webhooks.Get":          func(id string) error { _, err := c.Webhooks.Get(ctx, id); return err },
		"Webhooks.Delete":       func(id string) error { _, err := c.Webhooks.Delete(ctx, id); return err },
		"Webhooks.RotateSecret": func(id string) error { _, err := c.Webhooks.RotateSecret(ctx, id); return err },
		"Webhooks.Redeliver callback_id": func(id string) error {
			_, err := c.Webhooks.Redeliver(ctx, "wh-1", id)
			return err
		},
		"Wallets.Get account_id":              func(id string) error { _, err := c.Wallets.Get(ctx, id, "w-1"); return err },
		"Wallets.Deactivate":                  func(id string) error { _, err := c.Wallets.Deactivate(ctx, "acct", id); return err },
		"Wallets.StopAcceptingToken token_id": func(id string) error { _, err := c.Wallets.StopAcceptingToken(ctx, "acct", "w-1", id); return err },
		"Wallets.Balances": func(id string) error {
			_, err := c.Wallets.Balances(ctx, "acct", id, WalletBalancesParams{})
			return err
		},
		"Webhooks.ListEventCallbacks": func(id string) error {
			_, err := c.Webhooks.ListEventCallbacks(ctx, id, WebhookListEventCallbacksParams{})
			return err
		},
	}
	for name, call := range calls {
		for _, id := range []string{"", ".", ".."} {
			err := call(id)
			var ve *ValidationError
			if assert.ErrorAs(t, err, &ve, "%s(%q)", name, id) {
				assert.Contains(t, []string{"id", "account_id", "token_id", "callback_id"}, ve.Field)
			}
		}
	}
	assert.Empty(t, seen, "a refused id was sent")

	_, err := c.Payments.Get(ctx, "a/../..")
	require.NoError(t, err)
	_, err = c.Payments.Get(ctx, "...")
	require.NoError(t, err)
	assert.Equal(t, []string{"GET /payments/a%2F..%2F..", "GET /payments/..."}, seen)
}

// TestServiceMethodsNameTheirEndpoint keeps the doc comments honest: every
// exported method of a service starts with its name, names the endpoint(s)
// it calls ("GET /payments/{id}") and says who may call it (after a dash,
// or after "Caller:"), or says "It sends no request".
func TestServiceMethodsNameTheirEndpoint(t *testing.T) {
	endpoint := regexp.MustCompile(`(?s)(GET|POST|PUT|PATCH|DELETE) /.*?(—\s+\S|Caller: \S)`)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || !fn.Name.IsExported() {
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
			checked++
			name := recv.Name + "." + fn.Name.Name
			doc := fn.Doc.Text()
			if !strings.HasPrefix(doc, fn.Name.Name+" ") {
				t.Errorf("%s: the doc comment must start with the method's name", name)
			}
			if !endpoint.MatchString(doc) && !strings.Contains(doc, "It sends no request") {
				t.Errorf("%s: the doc comment must name its endpoint and who may call it (\"GET /path — who\")", name)
			}
		}
	}
	if checked < 60 {
		t.Fatalf("checked only %d service methods", checked)
	}
}
