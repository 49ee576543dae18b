package rail0

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rail0/rail0-go/internal/evmtest"
	"github.com/stretchr/testify/assert"
)

func TestUnboundRule(t *testing.T) {
	order := Expectation{ChainID: 84532, Mode: ModeAuthorize, Token: artToken, Payee: "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2", Amount: "25.00"}
	partial := order
	partial.Amount = ""
	rail0ID := "0x" + strings.Repeat("9f", 32)
	for _, tt := range []struct {
		name      string
		op        Operation
		asked     bool
		byRail0ID bool
		e         Expectation
		unbound   bool
	}{
		{"payer signature, nothing", "", false, false, Expectation{}, true},
		{"payer signature, the Create's record", "", true, false, Expectation{}, false},
		{"payer signature, the whole order", "", false, false, order, false},
		{"payer signature, the order but its amount", "", false, false, partial, true},
		{"payer signature, a payer alone", "", false, false, Expectation{Payer: order.Payee}, true},
		{"payer signature, named by rail0_id: the chain does not bind a signature", "", false, true, Expectation{}, true},
		{"refund, nothing", OpRefund, false, false, Expectation{}, true},
		{"refund, the payer", OpRefund, false, false, Expectation{Payer: order.Payee}, false},
		{"refund, the rail0_id", OpRefund, false, false, Expectation{Rail0ID: rail0ID}, false},
		{"refund, named by rail0_id", OpRefund, false, true, Expectation{}, false},
		{"refund, the Create's record", OpRefund, true, false, Expectation{}, false},
		{"refund, an amount alone", OpRefund, false, false, Expectation{Amount: "25.00"}, true},
		{"capture, nothing: a capture pays the caller", OpCapture, false, false, Expectation{}, false},
		{"void, nothing", OpVoid, false, false, Expectation{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.unbound, unbound(tt.op, tt.asked, tt.byRail0ID, tt.e))
		})
	}
}

// The low-level path binds as the flows do: the caller's Intent.Expect and
// this client's record of the Create are checked against the payment, the
// payer's signature and a refund need one of them (ErrUnbound), and an
// Intent field the operation does not use is refused rather than ignored.
// Nothing is sent either way.
func TestVerifyBindsLikeTheFlows(t *testing.T) {
	ctx := context.Background()
	g := newArtGateway(t, ModeAuthorize, StatusPartiallyCaptured)
	p := g.payment
	c := g.client(g.payee)
	stranger := evmtest.NewKey("stranger").Address()
	payerPayload := g.payloadJSON(Intent{})
	refundPayload := g.payloadJSON(Intent{Operation: OpRefund, Amount: "4000000"})
	capture := mustJSON(t, g.txFields(OpCapture, PaymentPrepareParams{Amount: "1.00"}))
	sig := "0x" + strings.Repeat("11", 64) + "1b"
	payload := func(in Intent, doc []byte) func() error {
		return func() error { _, err := c.Payments.VerifyPayload(ctx, p, in, doc); return err }
	}
	tx := func(in Intent, unsigned string) func() error {
		return func() error { _, err := c.Payments.VerifyTransaction(ctx, p, in, unsigned); return err }
	}
	wrongAmount := artOrder(p.Mode)
	wrongAmount.Amount = "250.00"
	for _, tt := range []struct {
		name string
		call func() error
		// want is ErrUnbound, ErrArtifactMismatch (field names the
		// payment's field), a *ValidationError on field, or nil.
		want  error
		field string
	}{
		{"payer signature, nothing binds it", payload(Intent{}, payerPayload), ErrUnbound, ""},
		{"payer signature, the order stated", payload(Intent{Expect: artOrder(p.Mode)}, payerPayload), nil, ""},
		{"payer signature, another amount ordered", payload(Intent{Expect: wrongAmount}, payerPayload), ErrArtifactMismatch, "amount"},
		{"payer signature, an Amount in the Intent", payload(Intent{Amount: "25.00", Expect: artOrder(p.Mode)}, payerPayload), &ValidationError{}, "amount"},
		{"refund, nothing binds it", payload(Intent{Operation: OpRefund, Amount: "4.00"}, refundPayload), ErrUnbound, ""},
		{"refund, the payer", payload(Intent{Operation: OpRefund, Amount: "4.00", Expect: Expectation{Payer: g.payer.Address()}}, refundPayload), nil, ""},
		{"refund, another payer", payload(Intent{Operation: OpRefund, Amount: "4.00", Expect: Expectation{Payer: stranger}}, refundPayload), ErrArtifactMismatch, "payer"},
		{"refund, another rail0_id", payload(Intent{Operation: OpRefund, Amount: "4.00", Expect: Expectation{Rail0ID: "0x" + strings.Repeat("ab", 32)}}, refundPayload), ErrArtifactMismatch, "rail0_id"},
		{"refund, a Signature in the Intent of the payload", payload(Intent{Operation: OpRefund, Amount: "4.00", Signature: sig, Expect: Expectation{Payer: g.payer.Address()}}, refundPayload), &ValidationError{}, "signature"},
		{"refund transaction, nothing binds it", tx(Intent{Operation: OpRefund, Amount: "4.00", Signature: sig}, "{}"), ErrUnbound, ""},
		{"refund transaction, another payer", tx(Intent{Operation: OpRefund, Amount: "4.00", Signature: sig, Expect: Expectation{Payer: stranger}}, "{}"), ErrArtifactMismatch, "payer"},
		{"capture, no expectation", tx(Intent{Operation: OpCapture, Amount: "1.00"}, capture), nil, ""},
		{"capture, the order stated", tx(Intent{Operation: OpCapture, Amount: "1.00", Expect: artOrder(p.Mode)}, capture), nil, ""},
		{"capture, another payee", tx(Intent{Operation: OpCapture, Amount: "1.00", Expect: Expectation{Payee: stranger}}, capture), ErrArtifactMismatch, "payee"},
		{"capture, a Reason", tx(Intent{Operation: OpCapture, Amount: "1.00", Reason: "0x" + strings.Repeat("00", 32)}, capture), &ValidationError{}, "reason"},
		{"capture, a Signature", tx(Intent{Operation: OpCapture, Amount: "1.00", Signature: sig}, capture), &ValidationError{}, "signature"},
		{"void, an Amount", tx(Intent{Operation: OpVoid, Amount: "1.00"}, capture), &ValidationError{}, "amount"},
		{"dispute, an Amount", tx(Intent{Operation: OpDispute, Amount: "1.00"}, capture), &ValidationError{}, "amount"},
		{"a malformed expectation", tx(Intent{Operation: OpCapture, Amount: "1.00", Expect: Expectation{Payer: "me"}}, capture), &ValidationError{}, "expect.payer"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := g.payee.Signed.Load()
			err := tt.call()
			var ve *ValidationError
			var ae *ArtifactError
			switch want := tt.want.(type) {
			case nil:
				assert.NoError(t, err)
			case *ValidationError:
				if assert.ErrorAs(t, err, &ve) {
					assert.Equal(t, tt.field, ve.Field, err.Error())
				}
			default:
				assert.ErrorIs(t, err, want)
				if errors.Is(want, ErrArtifactMismatch) && assert.ErrorAs(t, err, &ae) {
					assert.Equal(t, "payment", ae.Artifact)
					assert.Equal(t, tt.field, ae.Field, err.Error())
				}
			}
			assert.Equal(t, before, g.payee.Signed.Load(), "nothing is signed")
		})
	}
	assert.Zero(t, g.paymentReads+g.prepares, "the checks send nothing")
}
