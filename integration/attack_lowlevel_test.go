package integration_test

import (
	"context"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/signing"
)

// The review's browser-wallet attack on the low-level path (Create,
// VerifyPayload, the wallet signs TypedData, SubmitSignature): a proxy that
// rewrote Create's amount from 25.00 to 250.00 got the buyer's wallet to
// sign 250 USDC, and an Intent.Amount stating 25.00 was silently ignored.
// Now the client that created the payment checks it against what Create
// was asked for; another client (a restart, another process) needs the
// order in Intent.Expect or is refused with ErrUnbound; an Intent.Amount for
// the payer's signature is refused, not ignored.
func TestLowLevelPayerSignatureIsBoundToTheOrder(t *testing.T) {
	w := newPinsWorld(t)
	order := rail0.PaymentCreateParams{ChainID: w.gw.ChainID, Mode: rail0.ModeAuthorize,
		Amount: "25.00", Token: w.gw.Token, Payer: w.gw.Buyer.Address, Payee: w.gw.Merchant.Address}
	stated := rail0.Expectation{ChainID: order.ChainID, Mode: order.Mode, Token: order.Token, Payee: order.Payee, Amount: order.Amount}
	session, err := w.direct.buyer.Session(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The buyer's backend: a session, no signer (the key is in the browser).
	backend := func() *rail0.Client {
		c, err := rail0.NewClient(w.liar.URL, rail0.WithToken(session.Token()), w.gw.Pins())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	w.liar.lie(func(route string, body map[string]any) bool {
		if route == "POST /payments" && body["amount"] == "25.00" {
			body["amount"] = "250.00"
			return true
		}
		return false
	}, nil, nil)
	buyer := backend()
	p, err := buyer.Payments.Create(w.ctx, order)
	w.liar.lie(nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Amount != "250000000" {
		t.Fatalf("the liar did not rewrite Create: amount %s", p.Amount)
	}
	refusedOn := func(what string, err error, field string) {
		t.Helper()
		var ae *rail0.ArtifactError
		if !errors.As(err, &ae) || ae.Artifact != "payment" || ae.Field != field {
			t.Errorf("%s: %v, want an *ArtifactError on the payment's %s", what, err, field)
		}
	}
	_, err = buyer.Payments.VerifyPayload(w.ctx, p, rail0.Intent{}, p.SigningPayload)
	refusedOn("the client that created it", err, "amount")
	_, err = buyer.Payments.VerifyPayload(w.ctx, p, rail0.Intent{Expect: stated}, p.SigningPayload)
	refusedOn("the order stated too", err, "amount")

	var ve *rail0.ValidationError
	if _, err := buyer.Payments.VerifyPayload(w.ctx, p, rail0.Intent{Amount: "25.00"}, p.SigningPayload); !errors.As(err, &ve) || ve.Field != "amount" {
		t.Errorf("an Intent.Amount for the payer's signature: %v, want a *ValidationError on amount", err)
	}

	other := backend() // another process: no record of the Create
	if _, err := other.Payments.VerifyPayload(w.ctx, p, rail0.Intent{}, p.SigningPayload); !errors.Is(err, rail0.ErrUnbound) {
		t.Errorf("another client, nothing stated: %v, want ErrUnbound", err)
	}
	_, err = other.Payments.VerifyPayload(w.ctx, p, rail0.Intent{Expect: stated}, p.SigningPayload)
	refusedOn("another client, the order stated", err, "amount")

	// Honest: the same order without the liar is signed and stored.
	honest, err := other.Payments.Create(w.ctx, order)
	if err != nil {
		t.Fatal(err)
	}
	verified, err := backend().Payments.VerifyPayload(w.ctx, honest, rail0.Intent{Expect: stated}, honest.SigningPayload)
	if err != nil {
		t.Fatalf("the honest order, stated: %v", err)
	}
	signed, err := other.Payments.SubmitSignature(w.ctx, honest.ID, rail0.PaymentSubmitSignatureParams{Signature: browserWallet(w.gw, verified.TypedData)})
	if err != nil || signed.Status != rail0.StatusSigned {
		t.Fatalf("the honest signature: %v", err)
	}
}

// The review's merchant-side attack: a merchant that signs refunds in its
// own signing service (PrepareRefund, VerifyPayload, its signature,
// Prepare, VerifyTransaction, Submit) could not bind the refund to the
// order, and through the swap proxy (A answered with the attacker's B)
// refunded B to the attacker. Now the low-level refund needs
// Intent.Expect.Payer (or the rail0_id of the merchant's own order record),
// is refused with ErrUnbound without it, and refuses B with it.
func TestLowLevelRefundIsBound(t *testing.T) {
	ctx := context.Background()
	w := newBindingWorld(t)
	a, b := w.payment(w.buyer, w.gw.Buyer.Address, "10.00"), w.payment(w.attacker, w.attackerAddress, "10.00")
	merchant, _ := w.client(w.gw.Merchant.PrivateKey)
	key, err := signing.NewPrivateKeySigner(w.gw.Merchant.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	buyer := rail0.Expectation{Payer: w.gw.Buyer.Address}
	sign := func(d [32]byte) string {
		sig, err := key.SignDigest(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		sig[64] += 27
		return "0x" + hex.EncodeToString(sig)
	}

	w.proxy.swap(a, b, true)
	p, err := merchant.Payments.Get(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := merchant.Payments.PrepareRefund(ctx, a.ID, rail0.PaymentPrepareRefundParams{Amount: "4.00"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := merchant.Payments.VerifyPayload(ctx, p, rail0.Intent{Operation: rail0.OpRefund, Amount: "4.00"}, auth.SigningPayload); !errors.Is(err, rail0.ErrUnbound) {
		t.Fatalf("a low-level refund without a binding: %v, want ErrUnbound", err)
	}
	var ae *rail0.ArtifactError
	_, err = merchant.Payments.VerifyPayload(ctx, p, rail0.Intent{Operation: rail0.OpRefund, Amount: "4.00", Expect: buyer}, auth.SigningPayload)
	if !errors.As(err, &ae) || ae.Field != "payer" {
		t.Fatalf("the swapped refund payload, the buyer expected: %v, want an *ArtifactError on the payer", err)
	}
	// The transaction too, whatever signature the caller brings.
	anySig := sign([32]byte{1})
	if _, err := merchant.Payments.VerifyTransaction(ctx, p, rail0.Intent{Operation: rail0.OpRefund, Amount: "4.00", Signature: anySig}, "{}"); !errors.Is(err, rail0.ErrUnbound) {
		t.Fatalf("a low-level refund transaction without a binding: %v, want ErrUnbound", err)
	}
	_, err = merchant.Payments.VerifyTransaction(ctx, p, rail0.Intent{Operation: rail0.OpRefund, Amount: "4.00", Signature: anySig, Expect: buyer}, "{}")
	if !errors.As(err, &ae) || ae.Field != "payer" {
		t.Fatalf("the swapped refund transaction, the buyer expected: %v, want an *ArtifactError on the payer", err)
	}
	w.proxy.swap(nil, nil, false)

	// Honest, the buyer expected: the refund of A goes to A's payer.
	p, err = merchant.Payments.Get(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	auth, err = merchant.Payments.PrepareRefund(ctx, a.ID, rail0.PaymentPrepareRefundParams{Amount: "4.00"})
	if err != nil {
		t.Fatal(err)
	}
	vp, err := merchant.Payments.VerifyPayload(ctx, p, rail0.Intent{Operation: rail0.OpRefund, Amount: "4.00", Expect: buyer}, auth.SigningPayload)
	if err != nil {
		t.Fatal(err)
	}
	sig := sign(vp.Digest)
	prep, err := merchant.Payments.Prepare(ctx, a.ID, rail0.OpRefund, rail0.PaymentPrepareParams{Amount: "4.00", Signature: sig})
	if err != nil {
		t.Fatal(err)
	}
	vt, err := merchant.Payments.VerifyTransaction(ctx, p, rail0.Intent{Operation: rail0.OpRefund, Amount: "4.00", Signature: sig, Expect: buyer}, *prep.UnsignedTransaction)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := signRaw(w.gw.Merchant.PrivateKey, string(vt.Transaction))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := merchant.Payments.Submit(ctx, a.ID, rail0.OpRefund, rail0.PaymentSubmitParams{SignedTransaction: raw}); err != nil {
		t.Fatal(err)
	}
	if w.executed("refund", a) != 1 || w.executed("refund", b) != 0 {
		t.Fatalf("refunds: A %d, B %d, want A's only", w.executed("refund", a), w.executed("refund", b))
	}
}
