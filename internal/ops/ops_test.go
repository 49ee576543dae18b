package ops

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// Each row sits under the constant that names it, and the constant is its
// operationId with a capital: ops.GetPayment is getPayment. The root's
// TestOperationsMatchTheContract holds the rows against the contract and
// reads the declarations by the constants' names.
func TestConstantsNameTheirRow(t *testing.T) {
	file, err := parser.ParseFile(token.NewFileSet(), "ops.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var rows *ast.CompositeLit
	ast.Inspect(file, func(n ast.Node) bool {
		if vs, ok := n.(*ast.ValueSpec); ok && len(vs.Names) == 1 && vs.Names[0].Name == "table" {
			rows = vs.Values[0].(*ast.CompositeLit)
		}
		return rows == nil
	})
	if rows == nil {
		t.Fatal("no table in ops.go")
	}
	seen := map[string]bool{}
	for _, e := range rows.Elts {
		kv := e.(*ast.KeyValueExpr)
		name := kv.Key.(*ast.Ident).Name
		id, err := strconv.Unquote(kv.Value.(*ast.CompositeLit).Elts[0].(*ast.BasicLit).Value)
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.ToUpper(id[:1]) + id[1:]; name != want {
			t.Errorf("the row of %s sits under %s, not %s", id, name, want)
		}
		seen[name] = true
	}
	if len(seen) != int(count) || len(All()) != int(count) {
		t.Errorf("%d constants, %d rows, %d named", count, len(All()), len(seen))
	}
	for id := range count {
		if Get(id).ID == "" {
			t.Errorf("constant %d has no row", id)
		}
	}
}

// A class says when an attempt that may have run can be sent again, and
// whether the caller must learn that it may have.
func TestClass(t *testing.T) {
	for _, tt := range []struct {
		c                     Class
		withKey, without, mat bool
	}{
		{Once, false, false, true},
		{Read, true, true, false},
		{Repeatable, true, true, false},
		{Keyed, true, false, true},
	} {
		if got := tt.c.Repeatable(true); got != tt.withKey {
			t.Errorf("class %d with a key: Repeatable %v", tt.c, got)
		}
		if got := tt.c.Repeatable(false); got != tt.without {
			t.Errorf("class %d without a key: Repeatable %v", tt.c, got)
		}
		if got := tt.c.Matters(); got != tt.mat {
			t.Errorf("class %d: Matters %v", tt.c, got)
		}
	}
}
