package integration_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0test"
	"github.com/rail0/rail0-go/signing"
	"github.com/rail0/rail0-go/webhook"
)

// lockedHandler lets the test install the webhook secret after the
// receiving server has started, without a data race.
type lockedHandler struct {
	mu sync.Mutex
	h  *webhook.Handler
}

func (l *lockedHandler) set(h *webhook.Handler) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.h = h
}

func (l *lockedHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	h := l.h
	l.mu.Unlock()
	if h == nil {
		http.Error(w, "not ready", http.StatusServiceUnavailable)
		return
	}
	h.ServeHTTP(w, r)
}

// End to end against the in-process gateway, with real signatures: the
// merchant's client signs in by itself (WithSigner), registers a second
// wallet with an ownership proof, subscribes a webhook, and receives the
// delivery for a buyer's payment, verified by webhook.Handler with the
// secret Webhooks.Create returned.
func TestEndToEndSignInWalletsAndWebhookDelivery(t *testing.T) {
	ctx := context.Background()
	gw := rail0test.NewServer()
	defer gw.Close()

	merchant, err := signing.NewPrivateKeySigner(gw.Merchant.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	anon, err := gw.Client()
	if err != nil {
		t.Fatal(err)
	}
	client, err := gw.Client(rail0.WithSigner(merchant))
	if err != nil {
		t.Fatal(err)
	}
	sess, err := client.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !sess.HasAccount() || *sess.AccountID != gw.Merchant.AccountID {
		t.Fatalf("merchant session = %v, want account %s", sess, gw.Merchant.AccountID)
	}
	acct := *sess.AccountID

	// Public catalog and discovery.
	chains, err := anon.Chains.List(ctx, rail0.ChainListParams{NetworkType: rail0.NetworkTestnet})
	if err != nil || len(chains.Items) == 0 || chains.Items[0].ChainID != gw.ChainID {
		t.Fatalf("testnet chains = %+v, %v", chains, err)
	}
	methods, err := anon.PaymentMethods.List(ctx, rail0.PaymentMethodListParams{AccountID: acct})
	if err != nil || len(methods.Items) != 1 || len(methods.Items[0].Tokens) == 0 {
		t.Fatalf("payment methods = %+v, %v", methods, err)
	}

	// A second wallet, proven by its own key.
	key, err := signing.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	second := key
	proof, err := client.Auth.WalletProof(ctx, rail0.AuthWalletProofParams{Wallet: second})
	if err != nil {
		t.Fatal(err)
	}
	w, err := client.Wallets.Create(ctx, acct, rail0.WalletCreateParams{WalletProof: *proof, Label: "Second"})
	if err != nil {
		t.Fatalf("Wallets.Create: %v", err)
	}
	if !strings.EqualFold(w.Address, second.Address()) || w.Label != "Second" || !w.Active {
		t.Errorf("registered %+v, want %s", w, second.Address())
	}
	// A proof built by hand with the login statement is refused.
	third, err := signing.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	thirdAccount := third
	nonce, err := anon.Auth.CreateNonce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	msg := rail0.SIWEMessage{Domain: "127.0.0.1", Address: thirdAccount.Address(), Statement: rail0.StatementLogin,
		URI: gw.URL, ChainID: 1, Nonce: nonce.Nonce, IssuedAt: time.Now()}
	if err := msg.Validate(); err != nil {
		t.Fatal(err)
	}
	sig, err := personalSign(ctx, thirdAccount, msg.String())
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.Wallets.Create(ctx, acct, rail0.WalletCreateParams{WalletProof: rail0.WalletProof{
		Address: thirdAccount.Address(), Message: msg.String(), Signature: sig}})
	var apiErr *rail0.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("registration with a login proof: %v, want a 422", err)
	}

	// Webhook delivery.
	events := make(chan webhook.Event, 8)
	receiver := &lockedHandler{}
	hookSrv := httptest.NewServer(receiver)
	defer hookSrv.Close()
	hook, err := client.Webhooks.Create(ctx, rail0.WebhookCreateParams{Name: "orders", CallbackURL: hookSrv.URL + "/hooks", Topic: rail0.TopicPaymentsCreated})
	if err != nil {
		t.Fatalf("Webhooks.Create: %v", err)
	}
	if hook.SharedSecret() == "" {
		t.Fatal("no shared secret on creation")
	}
	receiver.set(&webhook.Handler{Verifier: webhook.NewVerifier(hook.SharedSecret()), Handle: func(_ context.Context, e webhook.Event) error {
		events <- e
		return nil
	}})

	buyer, err := signing.NewPrivateKeySigner(gw.Buyer.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	buyerSigner, err := gw.Client(rail0.WithSigner(buyer))
	if err != nil {
		t.Fatal(err)
	}
	buyerSession, err := buyerSigner.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if buyerSession.HasAccount() {
		t.Errorf("the buyer's session has an account: %v", buyerSession)
	}
	buyerClient, err := gw.Client(rail0.WithToken(buyerSession.Token()))
	if err != nil {
		t.Fatal(err)
	}
	payment, err := buyerClient.Payments.Create(ctx, rail0.PaymentCreateParams{ChainID: gw.ChainID, Mode: rail0.ModeAuthorize,
		Amount: "1.50", Token: gw.Token, Payer: gw.Buyer.Address, Payee: gw.Merchant.Address})
	if err != nil {
		t.Fatalf("Payments.Create: %v", err)
	}
	select {
	case e := <-events:
		if e.Topic != rail0.TopicPaymentsCreated || e.Payment == nil || e.Payment.ID != payment.ID || e.ID == "" {
			t.Errorf("event = %+v", e)
		}
	case <-time.After(time.Second):
		t.Fatal("no verified delivery within 1 s")
	}

	// Analytics see the merchant's payment.
	summary, err := client.Analytics.Summary(ctx, rail0.AnalyticsSummaryParams{})
	if err != nil || summary.Orders < 1 {
		t.Errorf("summary = %+v, %v", summary, err)
	}
	if out, err := client.Auth.Logout(ctx); err != nil || !out.Revoked {
		t.Errorf("Logout = %+v, %v", out, err)
	}
}
