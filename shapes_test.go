package rail0

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

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
