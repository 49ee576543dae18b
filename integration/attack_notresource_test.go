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

// A 2xx whose JSON is not the promised resource (null, {}, a proxy's
// {"message":...}, another step's transaction) decoded into a zero value
// without an error: a Capture the gateway ran and whose answer a proxy
// replaced came back as a success with no transaction id (the caller's
// WaitForTransaction failed, and a caller who captured again captured
// twice), and a Create came back with no payment id and lost its generated
// Idempotency-Key. Now the Capture finds its transaction on the payment by
// the hash it sent, and the Create is an *OutcomeUnknownError carrying the
// key, which replays the payment made.
func TestTwoHundredThatIsNotTheResourceIsNotASuccess(t *testing.T) {
	bodies := []string{`null`, `{}`, `{"message":"Accepted"}`,
		`{"id":"0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a4b","operation":"void","status":"submitted"}`}
	for _, body := range bodies {
		t.Run(body, func(t *testing.T) {
			clock := rail0test.NewManualClock(time.Now())
			gw := rail0test.NewServer(rail0test.WithoutRateLimits(), rail0test.WithClock(clock))
			defer gw.Close()
			proxy := newAfterwardsProxy(t, gw)
			ctx := context.Background()
			buyerKey, _ := signing.NewPrivateKeySigner(gw.Buyer.PrivateKey)
			merchantKey, _ := signing.NewPrivateKeySigner(gw.Merchant.PrivateKey)
			buyer, _ := rail0.NewClient(proxy.URL, gw.Pins(), rail0.WithSigner(buyerKey))
			merchant, _ := rail0.NewClient(proxy.URL, gw.Pins(), rail0.WithSigner(merchantKey))
			params := rail0.PaymentCreateParams{ChainID: gw.ChainID, Mode: rail0.ModeAuthorize,
				Amount: "25.00", Token: gw.Token, Payer: gw.Buyer.Address, Payee: gw.Merchant.Address}
			p, err := buyer.Payments.Create(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := buyer.Payments.PayerSign(ctx, p.ID, rail0.PaymentPayerSignParams{}); err != nil {
				t.Fatal(err)
			}
			tx, err := merchant.Payments.Authorize(ctx, p.ID, rail0.PaymentAuthorizeParams{})
			if err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Minute)
			if _, err := merchant.Payments.WaitForTransaction(ctx, p.ID, tx.ID, rail0.PaymentWaitForTransactionParams{}); err != nil {
				t.Fatal(err)
			}

			proxy.set("POST /payments/"+p.ID+"/capture", proxyAnswer{http.StatusAccepted, "application/json", body})
			tx, err = merchant.Payments.Capture(ctx, p.ID, rail0.PaymentCaptureParams{Amount: "10.00"})
			proxy.set("", proxyAnswer{})
			if err != nil {
				t.Fatalf("Capture answered 202 %s after it ran: %v, want the capture found on the payment", body, err)
			}
			if tx.ID == "" || tx.Operation != rail0.OpCapture || tx.TransactionHash == nil {
				t.Fatalf("Capture answered 202 %s: transaction %+v, want the capture that ran", body, tx)
			}
			clock.Advance(time.Minute)
			if _, err := merchant.Payments.WaitForTransaction(ctx, p.ID, tx.ID, rail0.PaymentWaitForTransactionParams{}); err != nil {
				t.Fatalf("waiting for the capture returned: %v", err)
			}
			if n := gw.Ledger.CountOperation(p.ID, "capture"); n != 1 {
				t.Fatalf("%d capture submits ran, want 1", n)
			}

			proxy.set("POST /payments", proxyAnswer{http.StatusCreated, "application/json", body})
			_, err = buyer.Payments.Create(ctx, params)
			proxy.set("", proxyAnswer{})
			var unknown *rail0.OutcomeUnknownError
			var decodeErr *rail0.DecodeError
			if !errors.As(err, &unknown) || !errors.As(err, &decodeErr) || unknown.IdempotencyKey == "" {
				t.Fatalf("Create answered 201 %s: %v, want an *OutcomeUnknownError with the key, over a *DecodeError", body, err)
			}
			params.IdempotencyKey = unknown.IdempotencyKey
			again, err := buyer.Payments.Create(ctx, params)
			if err != nil || again.ID == "" || again.Response.StatusCode != http.StatusOK {
				t.Fatalf("Create again with the key: %v, want the replay of the payment made", err)
			}
		})
	}
}
