package integration_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/internal/leaktest"
	"github.com/rail0/rail0-go/rail0test"
	"github.com/rail0/rail0-go/signing"
	"github.com/rail0/rail0-go/webhook"
)

// Fields whose names suggest a credential, classified. A new one fails
// TestSecretFieldsAreClassified until it is added to one list, and the
// secret ones are exercised by TestSecretsNeverFormatted.
var (
	secretFields = map[string]bool{
		"rail0.Session.Token":                  true,
		"rail0.WebhookWithSecret.SharedSecret": true,
		"webhook.Verifier.Secret":              true,
		"webhook.Verifier.PreviousSecrets":     true,
	}
	// Fields named Token that hold a token's contract address or record, and
	// keys that identify rather than authenticate.
	notSecretFields = map[string]bool{
		"rail0.AnalyticsFilter.Token": true, "rail0.AnalyticsVolume.Token": true, "rail0.AnalyticsRow.Token": true,
		"rail0.Payment.Token": true, "rail0.CreatePaymentParams.Token": true, "rail0.ListPaymentsParams.Token": true,
		"rail0.WalletTokenHolding.Token": true, "rail0.WalletToken.Token": true, "rail0.AddTokenParams.Token": true,
		"rail0.AddTokenResult.Token": true,
		"webhook.Payment.Token":      true,
		"rail0.AnalyticsRow.Key":     true, "rail0.OutcomeUnknownError.IdempotencyKey": true,
		"rail0.CreatePaymentParams.IdempotencyKey": true,
	}
)

func TestSecretFieldsAreClassified(t *testing.T) {
	re := regexp.MustCompile(`(?i)(secret|private|jwt|bearer|password|^token$|key$)`)
	for pkg, dir := range map[string]string{"rail0": ".", "webhook": "webhook", "signing": "signing"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		fset := token.NewFileSet()
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSpec)
				if !ok || !ts.Name.IsExported() {
					return true
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					return true
				}
				for _, field := range st.Fields.List {
					for _, name := range field.Names {
						full := pkg + "." + ts.Name.Name + "." + name.Name
						if name.IsExported() && re.MatchString(name.Name) && !secretFields[full] && !notSecretFields[full] {
							t.Errorf("%s looks like a credential: classify it in secrets_test.go", full)
						}
					}
				}
				return true
			})
		}
	}
}

// TestSecretsNeverFormatted prints every value that holds a secret, on its
// own, inside structs and slices, and through slog, and looks for the secret.
func TestSecretsNeverFormatted(t *testing.T) {
	const (
		tokenSecret   = "eyJhbGciOiJIUzI1NiJ9.TOKEN-SECRET.sig"
		webhookSecret = "WEBHOOK-SECRET-c0ffee"
		oldSecret     = "OLD-WEBHOOK-SECRET-beef"
		keyHex        = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
	)
	key, err := signing.NewPrivateKeySigner(keyHex)
	if err != nil {
		t.Fatal(err)
	}
	client, err := rail0.NewClient("https://api.rail0.xyz", rail0.WithToken(tokenSecret))
	if err != nil {
		t.Fatal(err)
	}
	session := rail0.Session{Token: tokenSecret, Address: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4", ExpiresAt: time.Unix(1789381370, 0)}
	hook := rail0.WebhookWithSecret{SharedSecret: webhookSecret}
	verifier := webhook.Verifier{Secret: webhookSecret, PreviousSecrets: []string{oldSecret}}
	handler := webhook.NewHandler(webhookSecret, nil)
	// A token source holding a live session of the in-process gateway.
	gw := rail0test.NewServer()
	defer gw.Close()
	anon, err := gw.Client()
	if err != nil {
		t.Fatal(err)
	}
	buyer, _ := signing.NewPrivateKeySigner(gw.Buyer.PrivateKey)
	ts, err := rail0.LoginTokenSource(anon.Auth, buyer, rail0.LoginParams{})
	if err != nil {
		t.Fatal(err)
	}
	liveToken, err := ts.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{
		"Session": session, "*Session": &session,
		"WebhookWithSecret": hook, "*WebhookWithSecret": &hook,
		"Verifier": verifier, "*Verifier": &verifier, "*Handler": handler,
		"*Client": client, "*PrivateKeySigner": key, "*TokenSource": ts,
		"struct": struct {
			S rail0.Session
			H rail0.WebhookWithSecret
			V webhook.Verifier
			K *signing.PrivateKeySigner
		}{session, hook, verifier, key},
		"slice": []any{session, hook, verifier, key},
	}
	secrets := []string{tokenSecret, "TOKEN-SECRET", webhookSecret, oldSecret, keyHex, liveToken, gw.Buyer.PrivateKey}
	leaktest.NoSecret(t, values, leaktest.Forms(secrets...))
}
