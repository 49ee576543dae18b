package webhook

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// TestSecretHoldersSafeUnderEveryVerb formats a Verifier and a Handler, on
// their own, as pointers, in structs and slices, with every fmt verb and
// through slog, and looks for the secrets in every encoding.
func TestSecretHoldersSafeUnderEveryVerb(t *testing.T) {
	const secret, old = "WEBHOOK-SECRET-c0ffee", "OLD-WEBHOOK-SECRET-beef"
	verifier := Verifier{Secret: secret, PreviousSecrets: []string{old}}
	handler := NewHandler(secret, nil)
	handler.Verifier.PreviousSecrets = []string{old}
	values := map[string]any{
		"Verifier": verifier, "*Verifier": &verifier, "*Handler": handler, "Handler": *handler,
		"struct": struct {
			V Verifier
			H *Handler
		}{verifier, handler},
		"slice": []any{verifier, handler},
	}
	var forms []string
	for _, s := range []string{secret, old} {
		forms = append(forms, s, hex.EncodeToString([]byte(s)), strings.ToUpper(hex.EncodeToString([]byte(s))), fmt.Sprintf("%o", []byte(s)), fmt.Sprintf("%d", []byte(s)))
	}
	verbs := []string{"%v", "%+v", "%#v", "%s", "%q", "%d", "%x", "%X", "%o", "%O", "%b", "%c", "%U", "%e", "%t",
		"% x", "%#x", "%-40s", "%.80s", "%+q", "%#q", "%08d"}
	for name, v := range values {
		for _, verb := range verbs {
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
			}
		}
	}
}
