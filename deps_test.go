package rail0_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

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
// internal/secret, registry and the rate-limit engine (package ratelimit,
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
		".":                   allow("github.com/hashicorp/go-retryablehttp", evm, verify, secret, root+"/registry", ratelimit, jitter),
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
