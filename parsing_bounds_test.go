package rail0

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestAccountNonceBounds: EIP-2681 caps an account nonce at 2⁶⁴−2
// (internal/verify's TestAccountNonceBounds reads every form of it): a
// capture prepared with the last nonce is never signed.
func TestAccountNonceBounds(t *testing.T) {
	t.Parallel()
	_, key, err := runFlow(t, flowByName(t, "Capture"), tamperTx(func(tx map[string]any) { tx["nonce"] = "18446744073709551615" }))
	var ae *ArtifactError
	if !errors.As(err, &ae) || ae.Field != "nonce" || key.Signed.Load() != 0 {
		t.Fatalf("Capture with nonce 2^64-1: %v, %d signatures", err, key.Signed.Load())
	}
}

// TestNothingSentBeforeAValidationError: VerifyPayload and
// VerifyTransaction refuse a nil payment or an intent they cannot serve
// with a *ValidationError (a malformed payment with an *ArtifactError)
// before sending anything, not after GET /blockchains and GET /tokens.
func TestNothingSentBeforeAValidationError(t *testing.T) {
	t.Parallel()
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, `{"code": "internal"}`, http.StatusInternalServerError)
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL, WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	g := newArtGateway(t, ModeAuthorize, StatusPartiallyCaptured)
	p := g.payment
	malformed := *p
	malformed.Rail0ID = "0x12"
	payload, tx := string(g.payloadJSON(Intent{})), mustJSON(t, g.txFields(OpCapture, PaymentPrepareParams{Amount: "1.00"}))
	verifyTx := func(p *PaymentDetail, in Intent) error {
		_, err := c.Payments.VerifyTransaction(ctx, p, in, tx)
		return err
	}
	verifyPayload := func(p *PaymentDetail, in Intent) error {
		_, err := c.Payments.VerifyPayload(ctx, p, in, []byte(payload))
		return err
	}
	for _, tt := range []struct {
		name  string
		call  func() error
		field string // of the *ValidationError; "" for an *ArtifactError
	}{
		{"VerifyPayload, nil payment", func() error { return verifyPayload(nil, Intent{}) }, "payment"},
		{"VerifyTransaction, nil payment", func() error { return verifyTx(nil, Intent{Operation: OpCapture, Amount: "1.00"}) }, "payment"},
		{"VerifyPayload, an on-chain step", func() error { return verifyPayload(p, Intent{Operation: OpCapture}) }, "operation"},
		{"VerifyTransaction, no step", func() error { return verifyTx(p, Intent{}) }, "operation"},
		{"VerifyTransaction, an unknown step", func() error { return verifyTx(p, Intent{Operation: "steal"}) }, "operation"},
		{"VerifyTransaction, a signer that is not an address", func() error {
			return verifyTx(p, Intent{Operation: OpCapture, Amount: "1.00", Signer: "me"})
		}, "signer"},
		{"VerifyTransaction, the payer capturing", func() error {
			return verifyTx(p, Intent{Operation: OpCapture, Amount: "1.00", Signer: g.payer.Address()})
		}, "signer"},
		{"VerifyTransaction, a release without its signer", func() error { return verifyTx(p, Intent{Operation: OpRelease}) }, "signer"},
		{"VerifyTransaction, a capture without an amount", func() error { return verifyTx(p, Intent{Operation: OpCapture}) }, "amount"},
		{"VerifyPayload, a refund of nonsense", func() error { return verifyPayload(p, Intent{Operation: OpRefund, Amount: "ten"}) }, "amount"},
		{"VerifyTransaction, a short reason", func() error { return verifyTx(p, Intent{Operation: OpDispute, Reason: "0x12"}) }, "reason"},
		{"VerifyTransaction, a refund without its signature", func() error {
			return verifyTx(p, Intent{Operation: OpRefund, Amount: "1.00"})
		}, "signature"},
		{"VerifyTransaction, a malformed payment", func() error { return verifyTx(&malformed, Intent{Operation: OpCapture, Amount: "1.00"}) }, ""},
	} {
		before := requests.Load()
		err := tt.call()
		var ve *ValidationError
		var ae *ArtifactError
		switch {
		case tt.field != "" && (!errors.As(err, &ve) || ve.Field != tt.field):
			t.Errorf("%s: %v, want a *ValidationError on %s", tt.name, err, tt.field)
		case tt.field == "" && !errors.As(err, &ae):
			t.Errorf("%s: %v, want an *ArtifactError", tt.name, err)
		}
		if n := requests.Load() - before; n != 0 {
			t.Errorf("%s: %d requests before the refusal", tt.name, n)
		}
	}
}
