package integration_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0test"
	"github.com/rail0/rail0-go/signing"
)

// impostor claims one address and signs with another key.
type impostor struct {
	rail0.Signer
	claimed string
}

func (i impostor) Address() string { return i.claimed }

// The negative cases of the signed lifecycle, against a gateway that checks
// every signature: a wrong key is refused by the server with the contract's
// code, and what can be caught before sending is caught by the SDK.
func TestSignedLifecycleRefusals(t *testing.T) {
	gw := rail0test.NewServer()
	defer gw.Close()
	ctx := context.Background()
	buyerKey, _ := signing.AccountFromPrivateKey(gw.Buyer.PrivateKey)
	merchantKey, _ := signing.AccountFromPrivateKey(gw.Merchant.PrivateKey)
	anon, err := gw.Client()
	if err != nil {
		t.Fatal(err)
	}
	code := func(err error) rail0.ErrorCode {
		var apiErr *rail0.APIError
		if errors.As(err, &apiErr) {
			return apiErr.Code
		}
		return ""
	}

	t.Run("sign-in with another key: signer_mismatch", func(t *testing.T) {
		_, err := anon.Auth.Login(ctx, impostor{Signer: merchantKey, claimed: gw.Buyer.Address}, rail0.LoginParams{})
		if code(err) != rail0.CodeSignerMismatch {
			t.Fatalf("Login with the wrong key = %v, want %s", err, rail0.CodeSignerMismatch)
		}
	})

	login := func(acct *signing.Account) *rail0.Client {
		s, err := anon.Auth.Login(ctx, acct, rail0.LoginParams{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := gw.Client(rail0.WithToken(s.Token))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	buyer, merchant := login(buyerKey), login(merchantKey)
	p, err := buyer.Payments.Create(ctx, rail0.CreatePaymentParams{ChainID: gw.ChainID, Mode: rail0.ModeAuthorize,
		Amount: "2.00", Token: gw.Token, Payer: gw.Buyer.Address, Payee: gw.Merchant.Address})
	if err != nil {
		t.Fatal(err)
	}
	signs := func() int { return gw.Ledger.Count("PUT /payments/{id}/sign", "") }

	t.Run("unknown primaryType refused before signing or sending", func(t *testing.T) {
		var payload map[string]any
		if err := json.Unmarshal(p.SigningPayload, &payload); err != nil {
			t.Fatal(err)
		}
		payload["primaryType"] = "Permit"
		forged, _ := json.Marshal(payload)
		before := signs()
		_, err := buyerKey.SignPayload(ctx, forged)
		if !errors.Is(err, signing.ErrUnknownPrimaryType) {
			t.Fatalf("SignPayload(Permit) = %v, want ErrUnknownPrimaryType", err)
		}
		if signs() != before {
			t.Fatal("a request reached the gateway")
		}
	})

	t.Run("payer signature by another key: signer_mismatch", func(t *testing.T) {
		// Sign the same typed data, claimed for the merchant's address, with
		// the merchant's key: a valid signature that does not recover to the payer.
		var payload map[string]any
		if err := json.Unmarshal(p.SigningPayload, &payload); err != nil {
			t.Fatal(err)
		}
		payload["message"].(map[string]any)["from"] = gw.Merchant.Address
		other, _ := json.Marshal(payload)
		sig, err := merchantKey.SignPayload(ctx, other)
		if err != nil {
			t.Fatal(err)
		}
		_, err = buyer.Payments.Sign(ctx, p.ID, sig)
		if code(err) != rail0.CodeSignerMismatch {
			t.Fatalf("Sign with the wrong key = %v, want %s", err, rail0.CodeSignerMismatch)
		}
	})

	t.Run("a transaction signed by the wrong party: 403", func(t *testing.T) {
		if _, err := buyer.Payments.PayerSign(ctx, p.ID, buyerKey); err != nil {
			t.Fatal(err)
		}
		prep, err := merchant.Payments.Prepare(ctx, p.ID, rail0.OpAuthorize, rail0.PrepareParams{})
		if err != nil {
			t.Fatal(err)
		}
		// The SDK refuses to sign for another sender...
		if _, err := buyerKey.SignTransaction(ctx, *prep.UnsignedTransaction); !errors.Is(err, signing.ErrSignerMismatch) {
			t.Fatalf("SignTransaction as the buyer = %v, want ErrSignerMismatch", err)
		}
		// ...and without the from hint, the gateway refuses the sender.
		var fields map[string]any
		if err := json.Unmarshal([]byte(*prep.UnsignedTransaction), &fields); err != nil {
			t.Fatal(err)
		}
		delete(fields, "from")
		stripped, _ := json.Marshal(fields)
		raw, err := buyerKey.SignTransaction(ctx, string(stripped))
		if err != nil {
			t.Fatal(err)
		}
		_, err = merchant.Payments.Submit(ctx, p.ID, rail0.OpAuthorize, raw)
		var apiErr *rail0.APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusForbidden {
			t.Fatalf("submit signed by the buyer = %v, want 403", err)
		}
		// The right key goes through.
		tx, err := merchant.Payments.Authorize(ctx, p.ID, merchantKey)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := merchant.Payments.WaitForTransaction(ctx, p.ID, tx.ID, rail0.WithPollInterval(200*time.Millisecond, 200*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	})
}
