package integration_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0test"
	"github.com/rail0/rail0-go/signing"
)

// Issue 22 item 1, end to end: a flow of several requests honours the view
// it runs on for each of them. The merchant's client does not retry 429s;
// its job's view does. A 429 on the authorize's prepare, the flow's second
// request, fails the flow on the client and is waited out on the view.
func TestFlowHonoursTheView(t *testing.T) {
	gw := rail0test.NewServer(rail0test.WithoutRateLimits())
	defer gw.Close()
	ctx := context.Background()
	buyerKey, _ := signing.NewPrivateKeySigner(gw.Buyer.PrivateKey)
	merchantKey, _ := signing.NewPrivateKeySigner(gw.Merchant.PrivateKey)
	buyer, err := gw.Client(rail0.WithSigner(buyerKey))
	if err != nil {
		t.Fatal(err)
	}
	// The cap keeps the wait of the gateway's Retry-After: 1 to 20 ms.
	merchant, err := gw.Client(rail0.WithSigner(merchantKey), rail0.WithRetryAfterCap(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	p, err := buyer.Payments.Create(ctx, rail0.PaymentCreateParams{ChainID: gw.ChainID, Mode: rail0.ModeAuthorize,
		Amount: "5.00", Token: gw.Token, Payer: gw.Buyer.Address, Payee: gw.Merchant.Address})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := buyer.Payments.PayerSign(ctx, p.ID, rail0.PaymentPayerSignParams{}); err != nil {
		t.Fatal(err)
	}
	throttle := rail0test.Fault{Route: "POST /payments/{id}/{operation}/prepare", Times: 1, Kind: rail0test.FaultStatus,
		Status: http.StatusTooManyRequests, RetryAfter: "1"}

	gw.Faults.Add(throttle)
	_, err = merchant.Payments.Authorize(ctx, p.ID, rail0.PaymentAuthorizeParams{})
	var apiErr *rail0.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the client's flow: %v, want the 429 at once", err)
	}

	gw.Faults.Add(throttle)
	job := merchant.With(rail0.WithRetryOn429(true))
	tx, err := job.Payments.Authorize(ctx, p.ID, rail0.PaymentAuthorizeParams{})
	if err != nil {
		t.Fatalf("the job's flow: %v", err)
	}
	if tx.Response == nil || tx.Response.Call == nil {
		t.Fatal("no transcript")
	}
}
