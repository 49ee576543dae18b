package integration_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0test"
	"github.com/rail0/rail0-go/signing"
	"github.com/rail0/rail0-go/webhook"
)

// End to end against the in-process gateway: a merchant subscribes two
// webhooks, one per topic and each with its own secret, to one callback
// URL. One webhook.Handler verifies each delivery with the secret of the
// subscription it came for and reports which one; after one secret is
// rotated, deliveries signed with the new secret are accepted while the
// previous one is still configured; and a receiver whose secrets are
// mixed up refuses every delivery rather than trusting a topic the secret
// does not vouch for.
func TestWebhookReceiverWithSeveralSubscriptions(t *testing.T) {
	ctx := context.Background()
	gw := rail0test.NewServer(rail0test.WithoutRateLimits())
	defer gw.Close()
	payer, err := signing.NewPrivateKeySigner(gw.Buyer.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	merchant, buyer := signedIn(ctx, gw, gw.Merchant), signedIn(ctx, gw, gw.Buyer, rail0.WithSigner(payer))

	events := make(chan webhook.Event, 16)
	var mu sync.Mutex
	var refused []error
	receiver := &lockedHandler{}
	hookSrv := httptest.NewServer(receiver)
	defer hookSrv.Close()
	receive := func(v webhook.Verifier) {
		receiver.set(&webhook.Handler{Verifier: v,
			Handle: func(_ context.Context, e webhook.Event) error { events <- e; return nil },
			OnError: func(_ *http.Request, err error) {
				mu.Lock()
				refused = append(refused, err)
				mu.Unlock()
			}})
	}

	created, err := merchant.Webhooks.Create(ctx, rail0.WebhookCreateParams{Name: "orders", CallbackURL: hookSrv.URL + "/hooks", Topic: rail0.TopicPaymentsCreated})
	if err != nil {
		t.Fatal(err)
	}
	signed, err := merchant.Webhooks.Create(ctx, rail0.WebhookCreateParams{Name: "signatures", CallbackURL: hookSrv.URL + "/hooks", Topic: rail0.TopicPaymentsSigned})
	if err != nil {
		t.Fatal(err)
	}
	if created.SharedSecret() == signed.SharedSecret() {
		t.Fatal("the two subscriptions share a secret")
	}
	subCreated := webhook.Subscription{ID: created.ID, Topic: created.Topic}
	subSigned := webhook.Subscription{ID: signed.ID, Topic: signed.Topic}

	// pay creates a payment and has the payer sign it: one delivery for
	// each subscription.
	pay := func() string {
		t.Helper()
		p, err := buyer.Payments.Create(ctx, rail0.PaymentCreateParams{ChainID: gw.ChainID, Mode: rail0.ModeAuthorize,
			Amount: "2.00", Token: gw.Token, Payer: gw.Buyer.Address, Payee: gw.Merchant.Address})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := buyer.Payments.PayerSign(ctx, p.ID, rail0.PaymentPayerSignParams{}); err != nil {
			t.Fatal(err)
		}
		return p.ID
	}
	// expect waits for one event of each subscription for payment id.
	expect := func(id string) {
		t.Helper()
		want := map[rail0.WebhookTopic]webhook.Subscription{rail0.TopicPaymentsCreated: subCreated, rail0.TopicPaymentsSigned: subSigned}
		for len(want) > 0 {
			select {
			case e := <-events:
				if e.Payment == nil || e.Payment.ID != id {
					continue // a redelivery of an earlier payment's event
				}
				sub, ok := want[e.Topic]
				if !ok || e.Subscription != sub {
					t.Fatalf("event %s %s came for %+v", e.ID, e.Topic, e.Subscription)
				}
				delete(want, e.Topic)
			case <-time.After(5 * time.Second):
				t.Fatalf("no verified delivery for %v within 5 s; refused: %v", want, refused)
			}
		}
	}

	receive(webhook.Verifier{}.
		WithSubscription(subCreated, created.SharedSecret()).
		WithSubscription(subSigned, signed.SharedSecret()))
	expect(pay())

	// Rotation: the gateway signs with the new secret at once; the receiver
	// accepts both while it rolls out.
	rotated, err := merchant.Webhooks.RotateSecret(ctx, signed.ID)
	if err != nil {
		t.Fatal(err)
	}
	receive(webhook.Verifier{}.
		WithSubscription(subCreated, created.SharedSecret()).
		WithSubscription(subSigned, rotated.SharedSecret(), signed.SharedSecret()))
	expect(pay())

	// Secrets mixed up: each secret verifies, but for the other topic.
	receive(webhook.Verifier{}.
		WithSubscription(subCreated, rotated.SharedSecret()).
		WithSubscription(subSigned, created.SharedSecret()))
	pay()
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n, mismatched := len(refused), len(refused) > 0
		for _, err := range refused {
			mismatched = mismatched && errors.Is(err, webhook.ErrTopicMismatch)
		}
		mu.Unlock()
		if n >= 2 {
			if !mismatched {
				t.Fatalf("refusals %v, want ErrTopicMismatch", refused)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d refusals within 5 s, want 2", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case e := <-events:
		t.Fatalf("a mixed-up receiver accepted %s %s", e.ID, e.Topic)
	default:
	}
}
