package integration_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeSnippetsAreCompiledExamples keeps the README honest: every Go
// block marked <!-- snippet: ExampleName --> must be an excerpt (the same
// lines, in order) of that Example function, which go test compiles, runs
// and checks against its // Output. It lives in this module because the
// examples do: most are here, the others in the root module and in rail0test
// and redislimit, and a root test reads no file outside the root module.
func TestReadmeSnippetsAreCompiledExamples(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	bodies := exampleBodies(t)
	re := regexp.MustCompile("(?s)<!-- snippet: (\\w+) -->\\s*```go\\n(.*?)```")
	matches := re.FindAllStringSubmatch(string(readme), -1)
	if len(matches) < 10 {
		t.Fatalf("found %d snippets in README.md; the markers or this test are broken", len(matches))
	}
	for _, m := range matches {
		name, snippet := m[1], normalizeLines(m[2])
		body, ok := bodies[name]
		if !ok {
			t.Errorf("README quotes %s, which no example file defines", name)
			continue
		}
		if !strings.Contains("\n"+strings.Join(normalizeLines(body), "\n")+"\n", "\n"+strings.Join(snippet, "\n")+"\n") {
			t.Errorf("README snippet for %s is not an excerpt of it:\n%s", name, strings.Join(snippet, "\n"))
		}
	}
}

// exampleBodies maps each Example function of the repository's test files
// to the source of its body.
func exampleBodies(t *testing.T) map[string]string {
	t.Helper()
	var files []string
	for _, dir := range []string{".", "..", "../webhook", "../signing", "../rail0test", "../redislimit"} {
		more, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, more...)
	}
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasPrefix(fn.Name.Name, "Example") || fn.Body == nil {
				continue
			}
			start, end := fset.Position(fn.Body.Lbrace).Offset, fset.Position(fn.Body.Rbrace).Offset
			out[fn.Name.Name] = string(src[start+1 : end])
		}
	}
	return out
}

// normalizeLines drops indentation and blank lines, so that a snippet may be
// re-indented in the README.
func normalizeLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}
