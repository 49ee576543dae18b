// Command webhooks receives the gateway's signed deliveries.
// The merchant registers a webhook. A small HTTP server verifies each
// delivery with webhook.Handler. The check is HMAC-SHA256 over timestamp
// and raw body, compared in constant time, with a 5-minute tolerance. The
// server deduplicates on the event id, so a redelivery of the same event is
// recognised as such.
//
// It runs against the embedded rail0test gateway by default. That gateway
// accepts plain-HTTP loopback callback URLs. A real gateway needs an HTTPS
// URL it can reach. Set RAIL0_CALLBACK_URL to it, and run this program
// behind it.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/examples/internal/demo"
	"github.com/rail0/rail0-go/webhook"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "webhooks:", err)
		os.Exit(1)
	}
}

// receiver records verified events, deduplicated on their id.
type receiver struct {
	mu      sync.Mutex
	handler http.Handler // set once the webhook's secret is known
	seen    map[string]int
	events  chan webhook.Event
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rc.mu.Lock()
	h := rc.handler
	rc.mu.Unlock()
	if h == nil {
		http.Error(w, "not ready", http.StatusServiceUnavailable)
		return
	}
	h.ServeHTTP(w, r)
}

func (rc *receiver) handle(_ context.Context, e webhook.Event) error {
	rc.mu.Lock()
	rc.seen[e.ID]++
	rc.mu.Unlock()
	rc.events <- e
	return nil
}

func run(ctx context.Context, w io.Writer) error {
	env, err := demo.Setup()
	if err != nil {
		return err
	}
	defer env.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	fmt.Fprintln(w, "gateway:", env.Where())

	// The callback server.
	rc := &receiver{seen: map[string]int{}, events: make(chan webhook.Event, 16)}
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: rc, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	callback := "http://" + ln.Addr().String() + "/rail0/events"
	if u := os.Getenv("RAIL0_CALLBACK_URL"); u != "" {
		callback = u
	}

	buyer, merchant, err := env.SignIn(ctx)
	if err != nil {
		return err
	}
	hook, err := merchant.Webhooks.Create(ctx, rail0.WebhookCreateParams{
		Name: "charges", CallbackURL: callback, Topic: rail0.TopicPaymentsCharged,
	})
	if err != nil {
		return fmt.Errorf("creating the webhook: %w", err)
	}
	// The shared secret is shown only now (and on rotation): store it.
	rc.mu.Lock()
	rc.handler = &webhook.Handler{Verifier: webhook.NewVerifier(hook.SharedSecret()), Handle: rc.handle}
	rc.mu.Unlock()
	fmt.Fprintf(w, "webhook %q registered for %s (secret printed as %v)\n", hook.Name, hook.Topic, hook)

	// A charge produces a payments.charged delivery.
	p, err := buyer.Payments.Create(ctx, rail0.PaymentCreateParams{
		ChainID: env.ChainID, Mode: rail0.ModeCharge, Amount: "9.99", Token: env.Token,
		Payer: env.Buyer.Address(), Payee: env.Merchant.Address(),
	})
	if err != nil {
		return err
	}
	if _, err := buyer.Payments.PayerSign(ctx, p.ID, rail0.PaymentPayerSignParams{}); err != nil {
		return err
	}
	if _, err := merchant.Payments.Charge(ctx, p.ID, rail0.PaymentChargeParams{}); err != nil {
		return err
	}
	// Deliveries follow confirmations. Reading the payment lets the
	// embedded gateway's simulated chain move on.
	if _, err := merchant.Payments.WaitForStatus(ctx, p.ID, rail0.PaymentWaitForStatusParams{
		Statuses: []rail0.PaymentStatus{rail0.StatusCharged}, PollInterval: demo.PollInterval, MaxPollInterval: demo.MaxPollInterval}); err != nil {
		return err
	}
	first, err := next(ctx, rc.events)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "verified delivery: %s for our payment: %v, status %s\n", first.Topic, first.Payment.ID == p.ID, first.Payment.Status)

	// Redeliver it from the delivery log: same event id, new signature.
	// The gateway logs a delivery once the receiver's answer is in. That can
	// be a moment after the receiver saw it.
	var logged []rail0.EventCallback
	for len(logged) == 0 {
		page, err := merchant.Webhooks.ListEventCallbacks(ctx, hook.ID, rail0.WebhookListEventCallbacksParams{})
		if err != nil {
			return err
		}
		logged = page.Items
		if len(logged) == 0 {
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				return errors.New("the delivery never appeared in the log")
			}
		}
	}
	if _, err := merchant.Webhooks.Redeliver(ctx, hook.ID, logged[0].ID); err != nil {
		return err
	}
	again, err := next(ctx, rc.events)
	if err != nil {
		return err
	}
	rc.mu.Lock()
	n := rc.seen[again.ID]
	rc.mu.Unlock()
	fmt.Fprintf(w, "redelivery has the same event id: %v (seen %d times; process it once)\n", again.ID == first.ID, n)
	return nil
}

func next(ctx context.Context, events <-chan webhook.Event) (webhook.Event, error) {
	select {
	case e := <-events:
		return e, nil
	case <-time.After(10 * time.Second):
		return webhook.Event{}, errors.New("no delivery within 10 s")
	case <-ctx.Done():
		return webhook.Event{}, ctx.Err()
	}
}
