// Package leaktest checks that values holding secrets never show them when
// formatted or logged. The root package's, webhook's and the integration
// tests use it; it imports only the standard library.
package leaktest

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// Verbs are the fmt verbs and flags a secret holder must survive.
var Verbs = []string{"%v", "%+v", "%#v", "%s", "%q", "%d", "%x", "%X", "%o", "%O", "%b", "%c", "%U", "%e", "%t",
	"% x", "%#x", "%-40s", "%.80s", "%+q", "%#q", "%08d"}

// Forms returns the ways each secret may appear in output: as text, and its
// bytes in hex (both cases), octal and decimal.
func Forms(secrets ...string) []string {
	var forms []string
	for _, s := range secrets {
		b := []byte(s)
		forms = append(forms, s, hex.EncodeToString(b), strings.ToUpper(hex.EncodeToString(b)),
			fmt.Sprintf("%o", b), fmt.Sprintf("%d", b))
	}
	return forms
}

// NoSecret formats every value with every verb and logs it through slog's
// JSON and text handlers, and fails t when any output contains one of forms.
func NoSecret(t testing.TB, values map[string]any, forms []string) {
	t.Helper()
	for name, v := range values {
		for _, verb := range Verbs {
			out := fmt.Sprintf(verb, v)
			for _, s := range forms {
				if strings.Contains(out, s) {
					t.Errorf("%s formatted with %s shows a secret: %s", name, verb, out)
					break
				}
			}
		}
		var buf bytes.Buffer
		slog.New(slog.NewJSONHandler(&buf, nil)).Info("value", "v", v)
		slog.New(slog.NewTextHandler(&buf, nil)).Info("value", "v", v)
		for _, s := range forms {
			if strings.Contains(buf.String(), s) {
				t.Errorf("%s logged with slog shows a secret: %s", name, buf.String())
				break
			}
		}
	}
}
