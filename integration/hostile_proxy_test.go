package integration_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0test"
	"github.com/rail0/rail0-go/signing"
)

// rewritingProxy sits in front of rail0test and rewrites one field of one
// kind of answer, as a compromised gateway or a man in the middle would. It
// counts the answers it rewrote (a rawProxy that decodes them).
type rewritingProxy struct {
	*rawProxy
}

func newRewritingProxy(t *testing.T, gw *rail0test.Server) *rewritingProxy {
	return &rewritingProxy{newRawProxy(t, gw)}
}

// set installs rewrite, which reports whether it changed body; nil stops
// rewriting.
func (hp *rewritingProxy) set(rewrite func(path string, body map[string]any) bool) {
	if rewrite == nil {
		hp.rawProxy.set(nil)
		return
	}
	hp.rawProxy.set(func(path string, raw []byte) []byte {
		var body map[string]any
		if json.Unmarshal(raw, &body) != nil || !rewrite(path, body) {
			return nil
		}
		out, _ := json.Marshal(body)
		return out
	})
}

// onPayload rewrites signing_payload.<section>.<field> in answers whose
// "METHOD path" contains route.
func onPayload(route, section, field string, value any) func(string, map[string]any) bool {
	return func(path string, body map[string]any) bool {
		doc, ok := body["signing_payload"].(map[string]any)
		if !strings.Contains(path, route) || !ok {
			return false
		}
		doc[section].(map[string]any)[field] = value
		return true
	}
}

// onTx rewrites a field of the unsigned_transaction of prepare answers.
func onTx(op, field string, value any) func(string, map[string]any) bool {
	return func(path string, body map[string]any) bool {
		s, ok := body["unsigned_transaction"].(string)
		if !strings.HasSuffix(path, "/"+op+"/prepare") || !ok {
			return false
		}
		var tx map[string]any
		_ = json.Unmarshal([]byte(s), &tx)
		tx[field] = value
		b, _ := json.Marshal(tx)
		body["unsigned_transaction"] = string(b)
		return true
	}
}

// TestHostileGatewayGetsNoSignature drives every flow through a proxy that
// rewrites one field of what rail0test prepared; each flow must refuse
// before signing, and no submit may reach the gateway.
func TestHostileGatewayGetsNoSignature(t *testing.T) {
	clock := rail0test.NewManualClock(time.Now())
	gw := rail0test.NewServer(rail0test.WithoutRateLimits(), rail0test.WithClock(clock),
		rail0test.WithPaymentWindows(time.Hour, 48*time.Hour))
	defer gw.Close()
	hp := newRewritingProxy(t, gw)
	ctx := context.Background()
	buyerKey, _ := signing.NewPrivateKeySigner(gw.Buyer.PrivateKey)
	merchantKey, _ := signing.NewPrivateKeySigner(gw.Merchant.PrivateKey)
	buyer, err := rail0.NewClient(hp.URL, rail0.WithSigner(buyerKey), gw.Pins())
	if err != nil {
		t.Fatal(err)
	}
	merchant, err := rail0.NewClient(hp.URL, rail0.WithSigner(merchantKey), gw.Pins())
	if err != nil {
		t.Fatal(err)
	}
	// transfer(attacker, 2^255) to the token: a token transfer in disguise.
	transfer := "0xa9059cbb" + strings.Repeat("0", 24) + strings.ToLower(gw.Buyer.Address[2:]) + "8" + strings.Repeat("0", 63)

	newPayment := func(mode rail0.PaymentMode) string {
		t.Helper()
		hp.set(nil)
		p, err := buyer.Payments.Create(ctx, rail0.PaymentCreateParams{ChainID: gw.ChainID, Mode: mode, Amount: "25.00",
			Token: gw.Token, Payer: gw.Buyer.Address, Payee: gw.Merchant.Address})
		if err != nil {
			t.Fatal(err)
		}
		return p.ID
	}
	confirm := func(id string, tx *rail0.Transaction, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Minute)
		if _, err := merchant.Payments.WaitForTransaction(ctx, id, tx.ID, rail0.PaymentWaitForTransactionParams{PollInterval: 200 * time.Millisecond, MaxPollInterval: 200 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
	}
	signed := func(mode rail0.PaymentMode) string {
		id := newPayment(mode)
		if _, err := buyer.Payments.PayerSign(ctx, id, rail0.PaymentPayerSignParams{}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	authorized := func() string {
		id := signed(rail0.ModeAuthorize)
		tx, err := merchant.Payments.Authorize(ctx, id, rail0.PaymentAuthorizeParams{})
		confirm(id, tx, err)
		return id
	}
	captured := func() string {
		id := authorized()
		tx, err := merchant.Payments.Capture(ctx, id, rail0.PaymentCaptureParams{Amount: "10.00"})
		confirm(id, tx, err)
		return id
	}

	tests := []struct {
		name    string
		setup   func() string
		rewrite func(string, map[string]any) bool
		run     func(id string) error
		field   string
	}{
		{"payer payload on chain 1", func() string { return newPayment(rail0.ModeAuthorize) },
			onPayload("GET /payments/", "domain", "chainId", 1), func(id string) error {
				return errOnly(buyer.Payments.PayerSign(ctx, id, rail0.PaymentPayerSignParams{}))
			}, "domain.chainId"},
		{"payer payload for 10^12", func() string { return newPayment(rail0.ModeAuthorize) },
			onPayload("GET /payments/", "message", "value", "1000000000000"), func(id string) error {
				return errOnly(buyer.Payments.PayerSign(ctx, id, rail0.PaymentPayerSignParams{}))
			}, "message.value"},
		{"payer payload to another address", func() string { return newPayment(rail0.ModeCharge) },
			onPayload("GET /payments/", "message", "to", gw.Buyer.Address), func(id string) error {
				return errOnly(buyer.Payments.PayerSign(ctx, id, rail0.PaymentPayerSignParams{}))
			}, "message.to"},
		{"payer payload for another token", func() string { return newPayment(rail0.ModeAuthorize) },
			onPayload("GET /payments/", "domain", "verifyingContract", gw.Merchant.Address), func(id string) error {
				return errOnly(buyer.Payments.PayerSign(ctx, id, rail0.PaymentPayerSignParams{}))
			}, "domain.verifyingContract"},
		{"authorize carrying 5 ETH", func() string { return signed(rail0.ModeAuthorize) },
			onTx("authorize", "value", "5000000000000000000"), func(id string) error {
				return errOnly(merchant.Payments.Authorize(ctx, id, rail0.PaymentAuthorizeParams{}))
			}, "value"},
		{"charge on chain 1", func() string { return signed(rail0.ModeCharge) },
			onTx("charge", "chain_id", 1), func(id string) error { return errOnly(merchant.Payments.Charge(ctx, id, rail0.PaymentChargeParams{})) }, "chain_id"},
		{"capture as a token transfer", authorized,
			func(p string, b map[string]any) bool {
				return onTx("capture", "to", gw.Token)(p, b) && onTx("capture", "data", transfer)(p, b)
			}, func(id string) error {
				return errOnly(merchant.Payments.Capture(ctx, id, rail0.PaymentCaptureParams{Amount: "1.00"}))
			}, "to"},
		{"void calling transfer", authorized,
			onTx("void", "data", transfer), func(id string) error { return errOnly(merchant.Payments.Void(ctx, id, rail0.PaymentVoidParams{})) }, "data.selector"},
		{"release on chain 1", func() string {
			id := authorized()
			clock.Advance(2 * time.Hour) // past authorization_expiry
			return id
		},
			onTx("release", "chain_id", 1), func(id string) error {
				return errOnly(merchant.Payments.Release(ctx, id, rail0.PaymentReleaseParams{}))
			}, "chain_id"},
		{"dispute with value", captured,
			onTx("dispute", "value", "1"), func(id string) error { return errOnly(buyer.Payments.Dispute(ctx, id, rail0.PaymentDisputeParams{})) }, "value"},
		{"refund authorization for 10^12", captured,
			onPayload("/refund/prepare", "message", "value", "1000000000000"), func(id string) error {
				return errOnly(merchant.Payments.Refund(ctx, id, rail0.PaymentRefundParams{Amount: "4.00", Expect: rail0.Expectation{Payer: gw.Buyer.Address}}))
			}, "message.value"},
		{"refund authorization to another address", captured,
			onPayload("/refund/prepare", "message", "to", gw.Buyer.Address), func(id string) error {
				return errOnly(merchant.Payments.Refund(ctx, id, rail0.PaymentRefundParams{Amount: "4.00", Expect: rail0.Expectation{Payer: gw.Buyer.Address}}))
			}, "message.to"},
		{"refund authorization on chain 1", captured,
			onPayload("/refund/prepare", "domain", "chainId", 1), func(id string) error {
				return errOnly(merchant.Payments.Refund(ctx, id, rail0.PaymentRefundParams{Amount: "4.00", Expect: rail0.Expectation{Payer: gw.Buyer.Address}}))
			}, "domain.chainId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := tt.setup()
			submitsBefore := len(gw.Ledger.Executions())
			hp.set(tt.rewrite)
			err := tt.run(id)
			hp.mu.Lock()
			hits := hp.hits
			hp.mu.Unlock()
			hp.set(nil)
			var ae *rail0.ArtifactError
			if !errors.As(err, &ae) || ae.Field != tt.field {
				t.Fatalf("err = %v, want an *ArtifactError on %s", err, tt.field)
			}
			if hits == 0 {
				t.Fatal("the proxy rewrote nothing: the test proves nothing")
			}
			for _, e := range gw.Ledger.Executions()[submitsBefore:] {
				if strings.HasPrefix(e.Route, "PUT /payments/{id}/sign") || (e.Operation != "" && !strings.HasSuffix(e.Route, "/prepare")) {
					t.Errorf("%s reached the gateway after a refusal", e.Route)
				}
			}
		})
	}
}

// TestCaptureAfterAPendingLargerCapture is the reuse bug against an honest
// gateway: a capture of 20.00 is prepared and left pending; Capture(1.00)
// gets that pending transaction back and must refuse it, not capture 20.00.
func TestCaptureAfterAPendingLargerCapture(t *testing.T) {
	clock := rail0test.NewManualClock(time.Now())
	gw := rail0test.NewServer(rail0test.WithoutRateLimits(), rail0test.WithClock(clock))
	defer gw.Close()
	ctx := context.Background()
	buyer, merchant := signingClients(t, gw, gw.URL)
	p := escrow{gw, clock, buyer, gw.Buyer.Address, merchant}.authorized(t, "25.00")
	pending, err := merchant.Payments.Prepare(ctx, p.ID, rail0.OpCapture, rail0.PaymentPrepareParams{Amount: "20.00"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = merchant.Payments.Capture(ctx, p.ID, rail0.PaymentCaptureParams{Amount: "1.00"})
	var ae *rail0.ArtifactError
	var fe *rail0.FlowError
	if !errors.As(err, &ae) || !errors.As(err, &fe) || fe.TransactionID != pending.ID {
		t.Fatalf("Capture(1.00) with a pending capture of 20.00: %v", err)
	}
	if n := gw.Ledger.CountOperation(p.ID, "capture"); n != 0 {
		t.Fatalf("%d capture submits reached the gateway", n)
	}
	clock.Advance(time.Minute)
	got, _ := merchant.Payments.Get(ctx, p.ID)
	if got.CapturableAmount != "25000000" {
		t.Fatalf("capturable %s after the refusal, want 25000000", got.CapturableAmount)
	}
}
