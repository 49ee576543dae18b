package webhook

import (
	"testing"

	"github.com/rail0/rail0-go/internal/leaktest"
)

// receiver is an application's own struct holding the package's secret
// holders in unexported fields (walked by fmt and slog's text handler
// without calling their methods) and exported ones (encoded by
// encoding/json, encoding/xml and gob).
type receiver struct {
	verifier Verifier
	handler  Handler
	byTopic  map[string]Verifier
	Verifier Verifier
	Handler  Handler
}

// TestSecretHoldersSafeUnderEveryVerb formats a Verifier and a Handler, on
// their own, as pointers, in structs and slices and in the application's
// own struct, with every fmt verb and through slog, encodes them with
// encoding/json, encoding/xml and gob, and looks for the secrets in every
// form.
func TestSecretHoldersSafeUnderEveryVerb(t *testing.T) {
	const secret, old = "WEBHOOK-SECRET-c0ffee", "OLD-WEBHOOK-SECRET-beef"
	verifier := NewVerifier(secret, old)
	handler := NewHandler(secret, nil)
	handler.Verifier = NewVerifier(secret, old)
	several := verifier.WithSubscription(Subscription{ID: "wh-2", Topic: "payments.refunded"}, "REFUND-SECRET-f00d")
	values := map[string]any{
		"Verifier": verifier, "*Verifier": &verifier, "*Handler": handler, "Handler": *handler,
		"struct": struct {
			V Verifier
			H *Handler
		}{verifier, handler},
		"slice": []any{verifier, handler},
		"caller's struct": receiver{verifier: verifier, handler: *handler, byTopic: map[string]Verifier{"created": several},
			Verifier: several, Handler: *handler},
		"several subscriptions": several,
	}
	leaktest.NoSecret(t, values, leaktest.Forms(secret, old, "REFUND-SECRET-f00d"))
}
