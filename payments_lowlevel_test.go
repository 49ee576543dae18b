package rail0

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rail0/rail0-go/internal/evmtest"
	"github.com/rail0/rail0-go/internal/verify"
)

// Issue 29, item 1: the low-level browser-wallet path (VerifyPayload, the
// wallet signs, SubmitSignature) reconciles a signature on file as PayerSign
// does. A PUT .../sign refused already_signed, or answered by a 2xx that is
// not the payment, reads the payment back: the payment signed, and the
// signature sent its payer's authorization of the payment VerifyPayload
// checked, is a success that says it was reconciled; anything else is a
// *ReconcileError over the refusal, or the failure as it was.
func TestSubmitSignatureReconcilesASignatureOnFile(t *testing.T) {
	t.Parallel()
	alreadySigned := map[string]string{"code": "already_signed", "title": "Already signed", "status": "invalid_state"}
	// storeThen marks the payment signed, as the gateway does when it
	// stores a signature, then answers with status and body.
	storeThen := func(status int, body any, change func(p *PaymentDetail)) func(b *bindGateway) (int, any) {
		return func(b *bindGateway) (int, any) {
			now := time.Now()
			b.rewrite(func(p *PaymentDetail) { p.Status, p.SignedAt, p.SigningPayload = StatusSigned, &now, nil })
			if change != nil {
				b.rewrite(change)
			}
			return status, body
		}
	}
	tests := []struct {
		name string
		sign func(b *bindGateway) (int, any)
		// signer signs what VerifyPayload returned; verify is false when
		// this client never checked the payload, learn when it knows the
		// token's domain from a signature the gateway accepted.
		signer        *evmtest.Key
		verify, learn bool
		want          string // "ok", "reconcile" (*ReconcileError) or "cause"
		cause         int    // the status the failure carries
	}{
		{"stored, its answer lost", storeThen(http.StatusUnprocessableEntity, alreadySigned, nil), nil, true, false, "ok", 422},
		{"stored, answered with null", storeThen(http.StatusOK, nil, nil), nil, true, false, "ok", 200},
		{"stored, reconciled by a learned domain", storeThen(http.StatusUnprocessableEntity, alreadySigned, nil), nil, false, true, "ok", 422},
		{"refused, still unsigned", func(*bindGateway) (int, any) { return http.StatusUnprocessableEntity, alreadySigned }, nil, true, false, "reconcile", 422},
		{"another signature on file", storeThen(http.StatusUnprocessableEntity, alreadySigned, nil), evmtest.NewKey("payee"), true, false, "reconcile", 422},
		{"another payment's terms on file", storeThen(http.StatusUnprocessableEntity, alreadySigned, func(p *PaymentDetail) { p.RefundExpiry++ }), nil, true, false, "reconcile", 422},
		{"signed, as a charge", storeThen(http.StatusUnprocessableEntity, alreadySigned, func(p *PaymentDetail) { p.Mode = ModeCharge }), nil, true, false, "reconcile", 422},
		{"nothing to compare with", storeThen(http.StatusUnprocessableEntity, alreadySigned, nil), nil, false, false, "reconcile", 422},
		{"null, and still unsigned", func(*bindGateway) (int, any) { return http.StatusOK, nil }, nil, true, false, "cause", 200},
		{"another refusal", storeThen(http.StatusUnprocessableEntity, map[string]string{"code": "signer_mismatch"}, nil), nil, true, false, "cause", 422},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := newBindGateway(t, ModeAuthorize, StatusUnsigned)
			c := b.client(b.payer)
			p, err := c.Payments.Get(ctx, artPayment)
			if err != nil {
				t.Fatal(err)
			}
			digest := b.authDigest(ModeAuthorize)
			if tt.verify {
				v, err := c.Payments.VerifyPayload(ctx, p, Intent{Expect: artOrder(ModeAuthorize)}, p.SigningPayload)
				if err != nil {
					t.Fatal(err)
				}
				digest = v.Digest
			}
			if tt.learn {
				terms, err := checkPayment(p, c.trust())
				if err != nil {
					t.Fatal(err)
				}
				c.learnTokenDomain(terms, &verify.Payload{Name: "USDC", Version: "2"})
			}
			signer := b.payer
			if tt.signer != nil {
				signer = tt.signer
			}
			sig, err := signer.SignDigest(ctx, digest)
			if err != nil {
				t.Fatal(err)
			}
			sig[64] += 27
			b.sign = tt.sign
			got, err := c.Payments.SubmitSignature(ctx, artPayment, PaymentSubmitSignatureParams{Signature: "0x" + hex.EncodeToString(sig)})

			var re *ReconcileError
			var apiErr *APIError
			var decodeErr *DecodeError
			switch tt.want {
			case "ok":
				if err != nil || got.Status != StatusSigned || got.Response == nil || got.Response.Reconciled == nil {
					t.Fatalf("SubmitSignature = %v, %v; want the signed payment, reconciled", got != nil, err)
				}
				cause := got.Response.Reconciled.Err
				if !(errors.As(cause, &apiErr) && apiErr.StatusCode == tt.cause) && !(errors.As(cause, &decodeErr) && decodeErr.StatusCode == tt.cause) {
					t.Errorf("Reconciled.Err = %v, want the write's %d", cause, tt.cause)
				}
			case "reconcile":
				if !errors.As(err, &re) || !errors.As(err, &apiErr) || apiErr.Code != CodeAlreadySigned || got != nil {
					t.Fatalf("SubmitSignature = %v, %v; want a *ReconcileError over already_signed", got != nil, err)
				}
				if re.PaymentID != artPayment || re.Operation != "" || re.Reason == "" {
					t.Errorf("ReconcileError = %+v", re)
				}
			case "cause":
				if errors.As(err, &re) || got != nil || err == nil {
					t.Fatalf("SubmitSignature = %v, %v; want the failure as it was", got != nil, err)
				}
				if !(errors.As(err, &apiErr) && apiErr.StatusCode == tt.cause) && !(errors.As(err, &decodeErr) && decodeErr.StatusCode == tt.cause) {
					t.Errorf("err = %v, want the write's %d", err, tt.cause)
				}
			}
			reads := 0
			for _, r := range b.sent()[1:] { // after the Get above
				if strings.HasPrefix(r, "GET ") {
					reads++
				}
			}
			wantReads := 1 // the read back
			if tt.name == "another refusal" {
				wantReads = 0 // a refusal that cannot mean done reads nothing
			}
			if reads != wantReads {
				t.Errorf("%d reads of the payment, want %d: %v", reads, wantReads, b.sent())
			}
		})
	}
}
