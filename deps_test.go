package rail0_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRootPackageImports pins the root package's dependencies: the standard
// library, go-retryablehttp, internal/evm and the rate-limit engine
// (package ratelimit), both on the standard library only.
// In particular it must never import go-ethereum, so that programs that only
// read data do not compile it; signing is the package for keys. Nor does
// it, or any of its tests, import OpenTelemetry (package rail0otel does).
func TestRootPackageImports(t *testing.T) {
	allowed := map[string]bool{
		"github.com/hashicorp/go-retryablehttp": true,
		// Keccak-256, RLP and secp256k1 recovery on the standard library,
		// so that checking artifacts needs no go-ethereum.
		"github.com/rail0/rail0-go/internal/evm": true,
		// The rate-limit engine, on the standard library too.
		"github.com/rail0/rail0-go/ratelimit": true,
	}
	// Package webhook derives its types from the root package's.
	for dir, extra := range map[string]map[string]bool{".": allowed, "webhook": {"github.com/rail0/rail0-go": true}, "internal/evm": {},
		"ratelimit": {"github.com/rail0/rail0-go/internal/limitclock": true}, "internal/limitclock": {}} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			test := strings.HasSuffix(f, "_test.go")
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range file.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				// OpenTelemetry is package rail0otel's alone: the root
				// reaches it through the Observer interface, and neither
				// its code nor its tests import it.
				if strings.HasPrefix(path, "go.opentelemetry.io/") {
					t.Errorf("%s imports %s; only package rail0otel may", f, path)
				}
				if test {
					continue
				}
				first := strings.Split(path, "/")[0]
				if !strings.Contains(first, ".") || extra[path] {
					continue // standard library, or allowed
				}
				t.Errorf("%s imports %s", f, path)
			}
		}
	}
}
