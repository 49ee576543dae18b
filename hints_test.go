package rail0

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// contractErrorsPath is the module's copy of section 9 ("Errors") of the
// gateway's contract guide, the only place the contract names its error
// codes (openapi.json carries a few as examples only). It is kept verbatim:
// TestContractErrorsCopyMatchesGuide compares it with the guide when a
// shared checkout of the guide is near.
const contractErrorsPath = "testdata/gateway_errors.md"

// contractCodes returns the codes of the "Known codes" table in order.
func contractCodes(t *testing.T) []ErrorCode {
	t.Helper()
	data, err := os.ReadFile(contractErrorsPath)
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(data), "Known codes")
	if !ok {
		t.Fatalf("%s has no \"Known codes\" table", contractErrorsPath)
	}
	tick := regexp.MustCompile("`([a-z_]+)`")
	var codes []ErrorCode
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.HasPrefix(line, "| `") {
			continue
		}
		for _, m := range tick.FindAllStringSubmatch(cells[1], -1) {
			codes = append(codes, ErrorCode(m[1]))
		}
	}
	if len(codes) < 60 {
		t.Fatalf("read %d codes from %s: the table's layout changed", len(codes), contractErrorsPath)
	}
	return codes
}

// TestEveryContractCodeHasAHint walks the codes the contract names: each
// has a constant and a hint, reached through APIError.Hint as a caller
// would. A code added to the contract without a hint fails here.
func TestEveryContractCodeHasAHint(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("errors.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range contractCodes(t) {
		if !bytes.Contains(src, []byte(`ErrorCode = "`+code+`"`)) {
			t.Errorf("%s has no ErrorCode constant", code)
		}
		e := &APIError{StatusCode: http.StatusUnprocessableEntity, Code: code}
		hint := e.Hint()
		switch {
		case hint == "":
			t.Errorf("%s has no hint", code)
		case hint != strings.TrimSpace(hint) || strings.HasSuffix(hint, ".") || oneLine(hint) != hint:
			t.Errorf("%s: hint %q is not one clause in the house form (no final period, one line)", code, hint)
		}
	}
	// Every hint belongs to a code of the contract: a typo in a constant
	// would otherwise keep a hint nobody can reach.
	known := map[ErrorCode]bool{}
	for _, code := range contractCodes(t) {
		known[code] = true
	}
	for code := range hints {
		if !known[code] {
			t.Errorf("hint for %s, which the contract does not name", code)
		}
	}
}

// TestContractErrorsCopyMatchesGuide keeps testdata/gateway_errors.md equal
// to section 9 of the shared contract guide when a checkout of it is in a
// parent directory; the module's copy is authoritative elsewhere.
func TestContractErrorsCopyMatchesGuide(t *testing.T) {
	t.Parallel()
	var guide []byte
	for i, dir := 0, ".."; i < 4 && guide == nil; i, dir = i+1, filepath.Join(dir, "..") {
		data, err := os.ReadFile(filepath.Join(dir, "shared", "gateway", "README.md"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		guide = data
	}
	if guide == nil {
		t.Skip("no shared checkout of the contract guide; the module's copy is authoritative")
	}
	_, section, ok := strings.Cut(string(guide), "\n## 9. Errors\n")
	if !ok {
		t.Fatal("the guide has no section 9. Errors")
	}
	section, _, _ = strings.Cut(section, "\n## 10. ")
	copied, err := os.ReadFile(contractErrorsPath)
	if err != nil {
		t.Fatal(err)
	}
	if want := "## 9. Errors\n" + section + "\n"; string(copied) != want {
		t.Fatalf("%s differs from section 9 of the contract guide: copy the section again and give every new code a hint", contractErrorsPath)
	}
}
