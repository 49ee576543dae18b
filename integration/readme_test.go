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

// quickstart is the program the README shows first, run by .ci/run and by
// its own test as the other examples are.
const quickstart = "examples/quickstart/main.go"

// docPages are the Markdown pages that quote code: the README and docs/.
func docPages(t *testing.T) map[string]string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string]string{}
	for _, n := range append(names, filepath.Join("..", "README.md")) {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		pages[strings.TrimPrefix(filepath.ToSlash(n), "../")] = string(b)
	}
	return pages
}

// TestReadmeSnippetsAreCompiledExamples keeps the README and docs/ honest:
// every Go block marked <!-- snippet: ExampleName --> must be an excerpt
// (the same lines, in order) of that Example function, which go test
// compiles, runs and checks against its // Output. A block marked
// <!-- snippet: path/to/file.go --> must be an excerpt of that file of the
// repository (an example's main.go, which .ci/run runs). It lives in this
// module because the examples do: most are here, the others in the root
// module and in rail0test and redislimit, and a root test reads no file
// outside the root module.
func TestReadmeSnippetsAreCompiledExamples(t *testing.T) {
	bodies := exampleBodies(t)
	re := regexp.MustCompile("(?s)<!-- snippet: ([\\w./-]+) -->\\s*```go\\n(.*?)```")
	found := 0
	for page, text := range docPages(t) {
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			found++
			name, snippet := m[1], normalizeLines(m[2])
			body, ok := bodies[name]
			if strings.Contains(name, "/") {
				src, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(name)))
				body, ok = string(src), err == nil
			}
			if !ok {
				t.Errorf("%s quotes %s, which no example or file defines", page, name)
				continue
			}
			if !isExcerpt(body, snippet) {
				t.Errorf("%s: the snippet for %s is not an excerpt of it:\n%s", page, name, strings.Join(snippet, "\n"))
			}
		}
	}
	if found < 10 {
		t.Fatalf("found %d snippets in README.md and docs/; the markers or this test are broken", found)
	}
}

// TestReadmeQuickstartIsTheExample holds the README's first program to
// examples/quickstart/main.go byte for byte: a block marked
// <!-- file: path --> is that whole file, so the program a reader copies is
// the one CI runs.
func TestReadmeQuickstartIsTheExample(t *testing.T) {
	re := regexp.MustCompile("(?s)<!-- file: ([\\w./-]+) -->\\s*```go\\n(.*?)```")
	quoted := false
	for page, text := range docPages(t) {
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			src, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(m[1])))
			if err != nil {
				t.Errorf("%s quotes %s: %v", page, m[1], err)
				continue
			}
			if m[2] != string(src) {
				t.Errorf("%s: the block marked %s differs from the file; copy the file into it", page, m[1])
			}
			quoted = quoted || (page == "README.md" && m[1] == quickstart)
		}
	}
	if !quoted {
		t.Errorf("README.md does not quote %s under <!-- file: %s -->", quickstart, quickstart)
	}
}

// TestPackageDocQuickstartIsTheExample holds the package documentation's
// "Getting started" (doc.go) to the same program: its code block must be
// an excerpt of examples/quickstart/main.go.
func TestPackageDocQuickstartIsTheExample(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "doc.go"), nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		t.Fatal("doc.go has no package comment")
	}
	_, after, ok := strings.Cut(f.Doc.Text(), "# Getting started\n")
	if !ok {
		t.Fatal(`the package comment has no "# Getting started" section`)
	}
	var code []string
	for _, l := range strings.Split(after, "\n") {
		if strings.HasPrefix(l, "# ") {
			break
		}
		if strings.HasPrefix(l, "\t") {
			code = append(code, l)
		}
	}
	snippet := normalizeLines(strings.Join(code, "\n"))
	if len(snippet) < 10 {
		t.Fatalf("Getting started shows %d lines of code", len(snippet))
	}
	src, err := os.ReadFile(filepath.Join("..", filepath.FromSlash(quickstart)))
	if err != nil {
		t.Fatal(err)
	}
	if !isExcerpt(string(src), snippet) {
		t.Errorf("Getting started is not an excerpt of %s:\n%s", quickstart, strings.Join(snippet, "\n"))
	}
}

// isExcerpt reports whether snippet's lines appear in body's, consecutive
// and in order, ignoring indentation and blank lines.
func isExcerpt(body string, snippet []string) bool {
	return strings.Contains("\n"+strings.Join(normalizeLines(body), "\n")+"\n", "\n"+strings.Join(snippet, "\n")+"\n")
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
