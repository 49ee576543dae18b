package integration_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/rail0/rail0-go"
)

// The review's expiry attack: a gateway that answered the read of a
// payment with authorization_expiry and refund_expiry at 2^48-1 (the escrow
// releasable by the payer only then), or with refund_expiry at the
// creation (no refund ever), config_hash and signing_payload made
// consistent, got PayerSign to sign on the client that created the payment,
// with its record of Create and the caller's full Expect. Both are refused
// now with the defaults, before anything is signed; the honest payment
// (rail0test's 7 and 30 days) is signed.
func TestPayerSignsNoUnboundedExpiry(t *testing.T) {
	for _, tt := range []struct {
		name         string
		auth, refund func(created time.Time) int64
		field        string
	}{
		{"an authorization that never expires", func(time.Time) int64 { return 1<<48 - 1 }, func(time.Time) int64 { return 1<<48 - 1 }, "authorization_expiry"},
		{"a refund window closed at creation", func(c time.Time) int64 { return c.Unix() }, func(c time.Time) int64 { return c.Unix() }, "refund_expiry"},
		{"honest", nil, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newPinsWorld(t)
			buyer, signer := w.viaLiar(w.buyerKey, []rail0.Option{w.gw.Pins()})
			p, err := buyer.Payments.Create(w.ctx, rail0.PaymentCreateParams{ChainID: w.gw.ChainID, Mode: rail0.ModeAuthorize,
				Amount: "25.00", Token: w.gw.Token, Payer: w.gw.Buyer.Address, Payee: w.gw.Merchant.Address})
			if err != nil {
				t.Fatal(err)
			}
			if tt.auth != nil {
				created := p.CreatedAt
				w.liar.lie(nil, func(route string, body map[string]any) bool {
					if route != "GET /payments/"+p.ID {
						return false
					}
					auth, refund := tt.auth(created), tt.refund(created)
					body["authorization_expiry"], body["refund_expiry"] = float64(auth), float64(refund)
					cfg := forgeConfigHash(t, w.gw.ChainID, w.gw.Contract, body)
					body["config_hash"] = cfg.Hex()
					nonce := crypto.Keccak256Hash(crypto.Keccak256([]byte("RAIL0.AUTHORIZE")), common.HexToHash(p.Rail0ID).Bytes(), cfg.Bytes())
					m := body["signing_payload"].(map[string]any)["message"].(map[string]any)
					m["validBefore"], m["nonce"] = strconv.FormatInt(auth, 10), nonce.Hex()
					return true
				}, nil)
				defer w.liar.lie(nil, nil, nil)
			}
			_, err = buyer.Payments.PayerSign(w.ctx, p.ID, rail0.PaymentPayerSignParams{Expect: rail0.Expectation{ChainID: w.gw.ChainID,
				Mode: rail0.ModeAuthorize, Token: w.gw.Token, Payee: w.gw.Merchant.Address, Payer: w.gw.Buyer.Address, Amount: "25.00"}})
			if tt.field == "" {
				if err != nil || signer.messages.Load() != 1 {
					t.Fatalf("the honest payment: %v, %d signatures", err, signer.messages.Load())
				}
				return
			}
			if w.liar.rewrites() == 0 {
				t.Fatal("no lie told")
			}
			var ae *rail0.ArtifactError
			if !errors.As(err, &ae) || ae.Artifact != "payment" || ae.Field != tt.field {
				t.Fatalf("PayerSign: %v, want an *ArtifactError on the payment's %s", err, tt.field)
			}
			if n := signer.messages.Load(); n != 0 {
				t.Fatalf("the payer signed %d authorization(s)", n)
			}
		})
	}
}
