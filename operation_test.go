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
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// declaration is one operation value as its source declares it.
type declaration struct {
	name  string // the variable's name
	pos   string // file:line
	op    operation
	class string // the class's identifier, as written
}

// opClasses maps the class identifiers a declaration may use to their values.
var opClasses = map[string]opClass{"opOnce": opOnce, "opRead": opRead, "opRepeatable": opRepeatable, "opKeyed": opKeyed}

// declaredOperations reads every operation that the package's own source
// files (not its tests) declare: package-level values declare(operation{...})
// spelling the five fields in order, as literals and a class identifier. A
// package-level operation literal that is not declared is an error: lookup
// would not know it.
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
							t.Errorf("%s: declare the operation: declare(operation{...})", fset.Position(lit.Pos()))
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
					lit, ok := call.Args[0].(*ast.CompositeLit)
					if !ok {
						t.Fatalf("%s: declare an operation literal", fset.Position(call.Pos()))
					}
					pos := fset.Position(lit.Pos()).String()
					require.Len(t, lit.Elts, 5, "%s: declare id, method, template, class and why, in order", pos)
					var s [5]string
					for j, e := range lit.Elts {
						switch e := e.(type) {
						case *ast.BasicLit:
							if e.Kind == token.STRING {
								s[j], err = strconv.Unquote(e.Value)
								require.NoError(t, err)
								continue
							}
						case *ast.Ident:
							if j == 3 {
								s[j] = e.Name
								continue
							}
						}
						t.Fatalf("%s: field %d of an operation must be a string literal (a class identifier for the class)", pos, j+1)
					}
					class, ok := opClasses[s[3]]
					require.True(t, ok, "%s: %s is not an opClass", pos, s[3])
					out = append(out, declaration{name: vs.Names[i].Name, pos: pos, class: s[3],
						op: operation{id: s[0], method: s[1], template: s[2], class: class, why: s[4]}})
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

// The map of the API sits beside each method (operation): every operation
// of the contract but the indexer's is declared exactly once, named by its
// operationId, with the contract's method and template; nothing else is
// declared; reads are opRead, and every write has a class that is not and
// says why.
func TestOperationsMatchTheContract(t *testing.T) {
	inSource := map[string][]declaration{}
	for _, d := range declaredOperations(t) {
		inSource[d.op.id] = append(inSource[d.op.id], d)
	}
	contract := contractOperations(t)
	require.Greater(t, len(contract), 45)
	inContract := map[string]bool{}
	writes := 0
	for _, want := range contract {
		inContract[want.id] = true
		ds := inSource[want.id]
		if !assert.Len(t, ds, 1, "%s (%s %s) must be declared exactly once", want.id, want.method, want.template) || len(ds) != 1 {
			continue
		}
		d := ds[0]
		assert.Equal(t, want.id, d.name, "%s: the variable is named by the operationId", d.pos)
		assert.Equal(t, want.method, d.op.method, "%s: %s's method", d.pos, want.id)
		assert.Equal(t, want.template, d.op.template, "%s: %s's template", d.pos, want.id)
		assert.LessOrEqual(t, strings.Count(want.template, "{"), len(pathArgs{}), "%s: %s has more segments than pathArgs holds", d.pos, want.id)
		if want.method == "GET" {
			assert.Equal(t, "opRead", d.class, "%s: %s is a read", d.pos, want.id)
			continue
		}
		writes++
		assert.NotEqual(t, "opRead", d.class, "%s: %s is a write: say what repeating it does", d.pos, want.id)
		assert.NotEmpty(t, d.op.why, "%s: %s: say why it is %s", d.pos, want.id, d.class)
	}
	assert.Greater(t, writes, 25)
	for id, ds := range inSource {
		if !inContract[id] {
			t.Errorf("%s declares %s, which the contract does not name", ds[0].pos, id)
		}
	}
	// What the source says is what the program holds.
	require.Len(t, declared, len(contract), "declare registers every declaration once")
	for _, op := range declared {
		if ds := inSource[op.id]; assert.Len(t, ds, 1, op.id) {
			assert.Equal(t, ds[0].op, *op, "%s as the program holds it", op.id)
		}
	}
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
	assert.True(t, opKeyed.repeatable(true))
	assert.False(t, opKeyed.repeatable(false))
	assert.False(t, opOnce.repeatable(true), "the gateway ignores a key outside POST /payments")
	assert.True(t, opOnce.matters())
	assert.True(t, opKeyed.matters())
	assert.False(t, opRepeatable.matters())
	assert.False(t, opRead.matters())
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
