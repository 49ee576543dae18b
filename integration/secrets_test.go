package integration_test

import (
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/internal/leaktest"
	"github.com/rail0/rail0-go/rail0test"
	"github.com/rail0/rail0-go/signing"
	"github.com/rail0/rail0-go/webhook"
)

// Exported fields whose names suggest a credential but hold none. A
// credential is never an exported field: it is held in an unexported
// *secret.Value behind an accessor method (Session.Token,
// WebhookWithSecret.SharedSecret, webhook.NewVerifier), where no
// reflection-based printer or encoder reaches it. A new exported field with
// such a name fails TestSecretFieldsAreClassified until it is either moved
// behind an accessor or listed here.
var (
	// Fields named Token that hold a token's contract address or record, and
	// keys that identify rather than authenticate.
	notSecretFields = map[string]bool{
		"rail0.AnalyticsFilter.Token": true, "rail0.AnalyticsVolume.Token": true, "rail0.AnalyticsRow.Token": true,
		"rail0.Payment.Token": true, "rail0.PaymentCreateParams.Token": true, "rail0.PaymentListParams.Token": true,
		"rail0.WalletTokenHolding.Token": true, "rail0.WalletToken.Token": true, "rail0.WalletAcceptTokenParams.Token": true,
		"rail0.WalletAcceptTokenResult.Token": true,
		"webhook.Payment.Token":               true,
		"rail0.AnalyticsRow.Key":              true, "rail0.OutcomeUnknownError.IdempotencyKey": true,
		"rail0.PaymentCreateParams.IdempotencyKey": true,
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
						if name.IsExported() && re.MatchString(name.Name) && !notSecretFields[full] {
							t.Errorf("%s looks like a credential in an exported field: hold it in an unexported *secret.Value "+
								"behind an accessor, or list it in notSecretFields", full)
						}
					}
				}
				return true
			})
		}
	}
}

// application is an application's own struct keeping the SDK's secret
// holders: in unexported fields, which fmt and slog's text handler walk by
// reflection without calling the holders' String, Format or LogValue, and
// in exported ones, which encoding/json, encoding/xml and gob encode.
type application struct {
	session  rail0.Session
	hook     rail0.WebhookWithSecret
	verifier webhook.Verifier
	handler  *webhook.Handler
	client   *rail0.Client
	signedIn *rail0.Client
	Session  rail0.Session
	Hook     rail0.WebhookWithSecret
	Verifier webhook.Verifier
}

// TestSecretsNeverFormatted prints every value that holds a secret, on its
// own, inside structs and slices and inside the application's own struct,
// through every fmt verb and slog handler, encodes it with encoding/json,
// encoding/xml and gob, and looks for the secret.
func TestSecretsNeverFormatted(t *testing.T) {
	const (
		tokenSecret   = "eyJhbGciOiJIUzI1NiJ9.TOKEN-SECRET.sig"
		webhookSecret = "WEBHOOK-SECRET-c0ffee"
		oldSecret     = "OLD-WEBHOOK-SECRET-beef"
		refundSecret  = "REFUND-WEBHOOK-SECRET-f00d"
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
	// A session and a webhook as an application restores them from its own
	// store: decoded from the gateway's JSON.
	var session rail0.Session
	if err := json.Unmarshal([]byte(`{"token": "`+tokenSecret+`", "address": "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4", "expires_at": "2026-09-14T10:22:50Z"}`), &session); err != nil {
		t.Fatal(err)
	}
	var hook rail0.WebhookWithSecret
	if err := json.Unmarshal([]byte(`{"id": "wh-1", "topic": "payments.created", "shared_secret": "`+webhookSecret+`"}`), &hook); err != nil {
		t.Fatal(err)
	}
	if session.Token() != tokenSecret || hook.SharedSecret() != webhookSecret {
		t.Fatalf("decoded %q, %q", session.Token(), hook.SharedSecret())
	}
	verifier := webhook.NewVerifier(webhookSecret, oldSecret).
		WithSubscription(webhook.Subscription{ID: "wh-2", Topic: rail0.TopicPaymentsRefunded}, refundSecret)
	handler := webhook.NewHandler(webhookSecret, nil)
	// Clients holding a live session of the in-process gateway.
	gw := rail0test.NewServer()
	defer gw.Close()
	buyer, _ := signing.NewPrivateKeySigner(gw.Buyer.PrivateKey)
	buyerClient, err := gw.Client(rail0.WithSigner(buyer))
	if err != nil {
		t.Fatal(err)
	}
	buyerSession, err := buyerClient.Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	liveToken := buyerSession.Token()
	merchant, _ := signing.NewPrivateKeySigner(gw.Merchant.PrivateKey)
	merchantClient, err := gw.Client(rail0.WithSigner(merchant))
	if err != nil {
		t.Fatal(err)
	}
	live, err := merchantClient.Session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{
		"Session": session, "*Session": &session,
		"WebhookWithSecret": hook, "*WebhookWithSecret": &hook,
		"Verifier": verifier, "*Verifier": &verifier, "*Handler": handler,
		"*Client": client, "*PrivateKeySigner": key, "*Client signed in": buyerClient,
		"struct": struct {
			S rail0.Session
			H rail0.WebhookWithSecret
			V webhook.Verifier
			K *signing.PrivateKeySigner
		}{session, hook, verifier, key},
		"slice": []any{session, hook, verifier, key},
		"application's struct": application{session: *live, hook: hook, verifier: verifier, handler: handler,
			client: client, signedIn: buyerClient, Session: *live, Hook: hook, Verifier: verifier},
		"*application's struct": &application{session: session, hook: hook, verifier: verifier, Session: session},
	}
	secrets := []string{tokenSecret, "TOKEN-SECRET", webhookSecret, oldSecret, refundSecret, keyHex, liveToken, live.Token(),
		gw.Buyer.PrivateKey}
	leaktest.NoSecret(t, values, leaktest.Forms(secrets...))
}
