package integration_test

import (
	"strings"
	"testing"

	"github.com/rail0/rail0-go"
)

// The review's domain lie: a proxy changed the domain name of one refund
// payload (the merchant signs a refund authorization that can never verify
// on chain: only the domain's chain and contract can be checked), and the
// merchant's client kept that name for the token, so every later Authorize
// of the token refused the payer's honest signature. A domain is learned
// now only from a payload whose signature the gateway accepted (PUT
// .../sign), and the honest Authorize goes through.
func TestOneDomainLieDoesNotBlockAuthorize(t *testing.T) {
	w := newPinsWorld(t)
	merchant, _ := w.viaLiar(w.merchKey, []rail0.Option{w.gw.Pins()})
	p := w.captured()
	w.liar.lie(nil, func(route string, body map[string]any) bool {
		doc, ok := body["signing_payload"].(map[string]any)
		if !ok || !strings.HasSuffix(route, "/refund/prepare") {
			return false
		}
		doc["domain"].(map[string]any)["name"] = "Not USD Coin"
		return true
	}, nil)
	_, _ = merchant.Payments.Refund(w.ctx, p.ID, rail0.PaymentRefundParams{Amount: "1.00", Expect: rail0.Expectation{Payer: w.gw.Buyer.Address}})
	lies := w.liar.rewrites()
	w.liar.lie(nil, nil, nil)
	if lies == 0 {
		t.Fatal("no lie told")
	}

	q, err := w.direct.buyer.Payments.Create(w.ctx, rail0.PaymentCreateParams{ChainID: w.gw.ChainID, Mode: rail0.ModeAuthorize,
		Amount: "25.00", Token: w.gw.Token, Payer: w.gw.Buyer.Address, Payee: w.gw.Merchant.Address})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.direct.buyer.Payments.PayerSign(w.ctx, q.ID, rail0.PaymentPayerSignParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := merchant.Payments.Authorize(w.ctx, q.ID, rail0.PaymentAuthorizeParams{}); err != nil {
		t.Fatalf("honest gateway, honest payment, after one domain lie: Authorize refused: %v", err)
	}
}
