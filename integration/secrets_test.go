package integration_test

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rail0/rail0-go"
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
	for name, v := range values {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
			out := fmt.Sprintf(verb, v)
			for _, s := range secrets {
				if strings.Contains(out, s) || strings.Contains(out, fmt.Sprintf("%x", s)) {
					t.Errorf("%s formatted with %s shows a secret: %s", name, verb, out)
				}
			}
		}
		var buf bytes.Buffer
		slog.New(slog.NewJSONHandler(&buf, nil)).Info("value", "v", v)
		slog.New(slog.NewTextHandler(&buf, nil)).Info("value", "v", v)
		for _, s := range secrets {
			if strings.Contains(buf.String(), s) {
				t.Errorf("%s logged with slog shows a secret: %s", name, buf.String())
			}
		}
	}
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of loggers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLifecycleLogsHoldNoSecret runs a payment with retries, faults and a
// webhook, logging everything the SDK and the gateway log at debug level,
// and looks for tokens, keys and the webhook secret in every line.
func TestLifecycleLogsHoldNoSecret(t *testing.T) {
	var logs syncBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	gw := rail0test.NewServer(rail0test.WithLogger(logger),
		rail0test.WithRateLimits(rail0test.Limit{Requests: 100}, rail0test.Limit{Requests: 8}),
		rail0test.WithRateLimitPeriod(time.Second))
	defer gw.Close()
	gw.Faults.Add(rail0test.Fault{Method: http.MethodGet, Path: "/payments/*", Times: 2, Kind: rail0test.FaultStatus, Status: http.StatusBadGateway})
	ctx := context.Background()

	buyerKey, _ := signing.NewPrivateKeySigner(gw.Buyer.PrivateKey)
	merchantKey, _ := signing.NewPrivateKeySigner(gw.Merchant.PrivateKey)
	opts := []rail0.Option{rail0.WithLogger(logger), rail0.WithRetryOn429(true), rail0.WithHTTPClient(gw.HTTPClient())}
	var tokens []string
	clientFor := func(acct *signing.PrivateKeySigner) *rail0.Client {
		c, err := rail0.NewClient(gw.URL, append(opts, rail0.WithSigner(acct))...)
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.Session(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, s.Token)
		return c
	}
	buyer, merchant := clientFor(buyerKey), clientFor(merchantKey)
	hook, err := merchant.Webhooks.Create(ctx, rail0.CreateWebhookParams{Name: "n", CallbackURL: "https://example.invalid/hook", Topic: rail0.TopicPaymentsCaptured})
	if err != nil {
		t.Fatal(err)
	}
	p, err := buyer.Payments.Create(ctx, rail0.CreatePaymentParams{ChainID: gw.ChainID, Mode: rail0.ModeAuthorize,
		Amount: "3.00", Token: gw.Token, Payer: gw.Buyer.Address, Payee: gw.Merchant.Address})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := buyer.Payments.PayerSign(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	poll := rail0.WithPollInterval(200*time.Millisecond, 200*time.Millisecond)
	for _, step := range []func() (*rail0.Transaction, error){
		func() (*rail0.Transaction, error) { return merchant.Payments.Authorize(ctx, p.ID) },
		func() (*rail0.Transaction, error) {
			return merchant.Payments.Capture(ctx, p.ID, rail0.CaptureParams{Amount: "1.00"})
		},
		func() (*rail0.Transaction, error) {
			return merchant.Payments.Refund(ctx, p.ID, rail0.RefundParams{Amount: "0.50"})
		},
	} {
		tx, err := step()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := merchant.Payments.WaitForTransaction(ctx, p.ID, tx.ID, poll); err != nil {
			t.Fatal(err)
		}
	}
	out := logs.String()
	if !strings.Contains(out, `"will_retry"`) {
		t.Fatalf("the run logged no retry, so it proves little:\n%s", out)
	}
	for _, s := range append(tokens, gw.Buyer.PrivateKey, gw.Merchant.PrivateKey, hook.SharedSecret) {
		if s != "" && strings.Contains(out, s) {
			t.Errorf("a secret appears in the logs")
		}
	}
}
