package integration_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestContributingNamesRealCode keeps CONTRIBUTING.md's recipes true. Every
// file, directory, test and Go name it quotes in backticks must exist in the
// repository: a renamed rule table or test makes a recipe lead nowhere, and
// this test fails first. Quoted code with spaces or punctuation (a command,
// a signature) is left to the reader.
func TestContributingNamesRealCode(t *testing.T) {
	root := ".."
	doc, err := os.ReadFile(filepath.Join(root, "CONTRIBUTING.md"))
	if err != nil {
		t.Fatal(err)
	}
	var sources []string // every .go file's text, tests included
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sources = append(sources, string(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Names that are Go's, not the repository's.
	outside := map[string]bool{"true": true, "httptest": true, "testing/synctest": true}
	quoted := regexp.MustCompile("`([^`\n]+)`")
	ident := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	checked := 0
	for _, m := range quoted.FindAllStringSubmatch(string(doc), -1) {
		name := m[1]
		switch {
		case strings.ContainsAny(name, "<> ()[]=,") || outside[name]:
			continue // code, a command, a pattern or Go's own name
		case strings.Contains(name, "/") || strings.Contains(name, "."):
			matches, _ := filepath.Glob(filepath.Join(root, name))
			if len(matches) == 0 {
				t.Errorf("CONTRIBUTING.md names %s, which is not in the repository", name)
			}
		case ident.MatchString(name):
			if info, err := os.Stat(filepath.Join(root, name)); err == nil && info.IsDir() {
				break // a package directory
			}
			if !declared(sources, name) {
				t.Errorf("CONTRIBUTING.md names %s, which no Go file declares", name)
			}
		default:
			continue
		}
		checked++
	}
	if checked < 30 {
		t.Errorf("only %d names checked: the guide's quoting changed", checked)
	}
}

// declared reports whether one of the sources declares name: a package, a
// func, type, var or const, or a struct field or block member at the start
// of a line.
func declared(sources []string, name string) bool {
	q := regexp.QuoteMeta(name)
	decl := regexp.MustCompile(`(?m)(\b(package|func|type|var|const)\s+(\([^)]*\)\s*)?` + q + `\b)|(^\s*` + q + `(\s*,\s*\w+)*\s+[\w\[\*=])`)
	for _, s := range sources {
		if decl.MatchString(s) {
			return true
		}
	}
	return false
}
