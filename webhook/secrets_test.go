package webhook

import (
	"testing"

	"github.com/rail0/rail0-go/internal/leaktest"
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
	leaktest.NoSecret(t, values, leaktest.Forms(secret, old))
}
