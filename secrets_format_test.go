package rail0

import (
	"context"
	"testing"
	"time"

	"github.com/rail0/rail0-go/internal/leaktest"
	"github.com/rail0/rail0-go/internal/secret"
)

// shop is an application's own struct holding the SDK's secret holders, in
// unexported fields (which fmt and slog's text handler walk without calling
// the holders' String, Format or LogValue) and in exported ones (which
// encoding/json, encoding/xml and gob encode).
type shop struct {
	name    string
	session Session
	hook    WebhookWithSecret
	tokens  *tokenSource
	client  *Client
	Session Session
	Hook    WebhookWithSecret
}

// Every value of the root package that holds a secret prints, logs and
// encodes without it, under every verb and flag, on its own and inside the
// application's own struct: String and GoString alone leave %d, %x, %X and
// %o to walk the fields and print the secret or its bytes, and no method
// is called on a value in an unexported field.
func TestSecretHoldersSafeUnderEveryVerb(t *testing.T) {
	const (
		tokenSecret   = "eyJhbGciOiJIUzI1NiJ9.TOKEN-SECRET.sig"
		webhookSecret = "WEBHOOK-SECRET-c0ffee"
		oldSecret     = "OLD-WEBHOOK-SECRET-beef"
	)
	_, srv, clock, ts := newTokenSourceSetup(t)
	liveToken, err := ts.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fixed := newTestClient(t, "https://api.rail0.xyz", WithToken(tokenSecret))
	sourced := newAuthClient(t, srv, clock, WithTokenSource(ts.Token))
	account, name := "0190c7d1-aa01-7b02-8c03-d4e5f6a7b8c9", "Acme"
	session := Session{token: secret.New(tokenSecret), Address: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4", AccountID: &account, Name: &name, ExpiresAt: time.Unix(1789381370, 0)}
	hook := WebhookWithSecret{Webhook: Webhook{ID: "wh-1", Name: "orders"}, sharedSecret: secret.New(webhookSecret)}

	values := map[string]any{
		"Session": session, "*Session": &session,
		"WebhookWithSecret": hook, "*WebhookWithSecret": &hook,
		"*tokenSource": ts, "*Client with a token": fixed, "*Client with a token source": sourced,
		"struct of them": struct {
			S Session
			H WebhookWithSecret
			T *tokenSource
		}{session, hook, ts},
		"slice of them": []any{session, &hook, ts},
		"caller's struct": shop{name: "acme", session: session, hook: hook, tokens: ts, client: sourced,
			Session: session, Hook: hook},
		"*caller's struct": &shop{session: session, hook: hook, Session: session, Hook: hook},
	}
	secrets := []string{tokenSecret, "TOKEN-SECRET", webhookSecret, oldSecret, liveToken}
	leaktest.NoSecret(t, values, leaktest.Forms(secrets...))
}
