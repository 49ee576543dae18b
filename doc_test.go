package rail0_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

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
