package rail0test

import (
	"context"
	"errors"
	"testing"

	rail0 "github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/signing"
)

// TestPins: the server's RAIL0 contract is not the one published for its
// chain, so an SDK client on the defaults refuses its payments before
// signing anything; Pins trusts it, in one option, and Client includes it.
func TestPins(t *testing.T) {
	srv := NewServer(WithoutRateLimits())
	defer srv.Close()
	ctx := context.Background()
	buyerKey, err := signing.NewPrivateKeySigner(srv.Buyer.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	create := func(c *rail0.Client) string {
		t.Helper()
		p, err := c.Payments.Create(ctx, rail0.PaymentCreateParams{ChainID: srv.ChainID, Mode: rail0.ModeAuthorize,
			Amount: "5.00", Token: srv.Token, Payer: srv.Buyer.Address, Payee: srv.Merchant.Address})
		if err != nil {
			t.Fatal(err)
		}
		return p.ID
	}

	defaults, err := rail0.NewClient(srv.URL, rail0.WithHTTPClient(srv.HTTPClient()), rail0.WithSigner(buyerKey))
	if err != nil {
		t.Fatal(err)
	}
	id := create(defaults)
	_, err = defaults.Payments.PayerSign(ctx, id, rail0.PaymentPayerSignParams{})
	var ue *rail0.UntrustedError
	if !errors.As(err, &ue) || ue.Field != "rail0_contract" || ue.Option != "WithTrustedContracts" {
		t.Fatalf("PayerSign on the defaults: %v, want an *UntrustedError on the contract", err)
	}
	if n := srv.Ledger.Count("PUT /payments/{id}/sign", ""); n != 0 {
		t.Fatalf("%d signatures reached the server", n)
	}

	pinned, err := rail0.NewClient(srv.URL, rail0.WithHTTPClient(srv.HTTPClient()), rail0.WithSigner(buyerKey), srv.Pins())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pinned.Payments.PayerSign(ctx, create(pinned), rail0.PaymentPayerSignParams{}); err != nil {
		t.Fatalf("PayerSign with Pins: %v", err)
	}
	if n := srv.Ledger.Count("PUT /payments/{id}/sign", ""); n != 1 {
		t.Fatalf("%d signatures reached the server, want 1", n)
	}
	viaClient, err := srv.Client(rail0.WithSigner(buyerKey))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := viaClient.Payments.PayerSign(ctx, create(viaClient), rail0.PaymentPayerSignParams{}); err != nil {
		t.Fatalf("PayerSign through srv.Client: %v", err)
	}
}
