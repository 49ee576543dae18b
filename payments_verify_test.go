package rail0

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/big"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rail0/rail0-go/internal/evm"
	"github.com/rail0/rail0-go/internal/evmtest"
	"github.com/rail0/rail0-go/internal/verify"
	"github.com/rail0/rail0-go/internal/verifytest"
)

// flowCase runs one flow on a client.
type flowCase struct {
	name   string
	mode   PaymentMode
	status PaymentStatus
	// payer runs the flow on the payer's client, else the payee's.
	payer  bool
	run    func(ctx context.Context, c *Client) error
	submit string // the route the flow submits to
}

func errOf[T any](_ T, err error) error { return err }

var flowCases = []flowCase{
	{"PayerSign", ModeAuthorize, StatusUnsigned, true, func(ctx context.Context, c *Client) error {
		return errOf(c.Payments.PayerSign(ctx, artPayment, PaymentPayerSignParams{Expect: artOrder(ModeAuthorize)}))
	}, "PUT sign"},
	{"PayerSign charge", ModeCharge, StatusUnsigned, true, func(ctx context.Context, c *Client) error {
		return errOf(c.Payments.PayerSign(ctx, artPayment, PaymentPayerSignParams{Expect: artOrder(ModeCharge)}))
	}, "PUT sign"},
	{"Authorize", ModeAuthorize, StatusSigned, false, func(ctx context.Context, c *Client) error {
		return errOf(c.Payments.Authorize(ctx, artPayment, PaymentAuthorizeParams{}))
	}, "POST authorize"},
	{"Charge", ModeCharge, StatusSigned, false, func(ctx context.Context, c *Client) error {
		return errOf(c.Payments.Charge(ctx, artPayment, PaymentChargeParams{}))
	}, "POST charge"},
	{"Capture", ModeAuthorize, StatusPartiallyCaptured, false, func(ctx context.Context, c *Client) error {
		return errOf(c.Payments.Capture(ctx, artPayment, PaymentCaptureParams{Amount: "1.00"}))
	}, "POST capture"},
	{"Void", ModeAuthorize, StatusAuthorized, false, func(ctx context.Context, c *Client) error {
		return errOf(c.Payments.Void(ctx, artPayment, PaymentVoidParams{}))
	}, "POST void"},
	{"Release", ModeAuthorize, StatusAuthorized, false, func(ctx context.Context, c *Client) error {
		return errOf(c.Payments.Release(ctx, artPayment, PaymentReleaseParams{}))
	}, "POST release"},
	{"Refund", ModeAuthorize, StatusPartiallyCaptured, false, func(ctx context.Context, c *Client) error {
		return errOf(c.Payments.Refund(ctx, artPayment, PaymentRefundParams{Amount: "4.00", Expect: Expectation{Payer: artPayer}}))
	}, "POST refund"},
	{"Dispute", ModeAuthorize, StatusPartiallyCaptured, true, func(ctx context.Context, c *Client) error {
		return errOf(c.Payments.Dispute(ctx, artPayment, PaymentDisputeParams{Reason: fixtureReason}))
	}, "POST dispute"},
	{"CloseDispute", ModeAuthorize, StatusPartiallyCaptured, true, func(ctx context.Context, c *Client) error {
		return errOf(c.Payments.CloseDispute(ctx, artPayment, PaymentCloseDisputeParams{}))
	}, "POST dispute/close"},
}

func flowByName(t *testing.T, name string) flowCase {
	for _, fc := range flowCases {
		if fc.name == name {
			return fc
		}
	}
	t.Fatalf("no flow %s", name)
	return flowCase{}
}

// runFlow runs fc against a fresh gateway prepared by setup and returns the
// error, the gateway and the signing key.
func runFlow(t *testing.T, fc flowCase, setup func(g *artGateway), opts ...Option) (*artGateway, *evmtest.Key, error) {
	t.Helper()
	g := newArtGateway(t, fc.mode, fc.status)
	if setup != nil {
		setup(g)
	}
	key := g.payee
	if fc.payer {
		key = g.payer
	}
	return g, key, fc.run(context.Background(), g.client(key, opts...))
}

func TestFlowsSignWhatAnHonestGatewayPrepares(t *testing.T) {
	t.Parallel()
	for _, fc := range flowCases {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			g, key, err := runFlow(t, fc, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := g.submitted(); len(got) != 1 || got[0] != fc.submit {
				t.Errorf("submitted %v, want [%s]", got, fc.submit)
			}
			if key.Signed.Load() == 0 {
				t.Error("nothing was signed")
			}
		})
	}
}

// setWord replaces ABI argument i (0 = paymentId) of an unsigned
// transaction's calldata.
func setWord(tx map[string]any, i int, w verify.Word) {
	data, _ := hex.DecodeString(strings.TrimPrefix(tx["data"].(string), "0x"))
	copy(data[4+32*i:], w[:])
	tx["data"] = "0x" + hex.EncodeToString(data)
}

func bigWord(s string) verify.Word {
	n, _ := new(big.Int).SetString(s, 10)
	return verify.UintWord(n)
}

func msg(doc map[string]any) map[string]any    { return doc["message"].(map[string]any) }
func domain(doc map[string]any) map[string]any { return doc["domain"].(map[string]any) }

func tamperTx(f func(tx map[string]any)) func(g *artGateway) {
	return func(g *artGateway) { g.tamperTx = func(_ Operation, tx map[string]any) { f(tx) } }
}

func tamperPayload(f func(doc map[string]any)) func(g *artGateway) {
	return func(g *artGateway) { g.tamperPayload = f }
}

func tamperPayment(f func(p map[string]any)) func(g *artGateway) {
	return func(g *artGateway) { g.tamperPayment = f }
}

// TestFlowsRefuseTamperedArtifacts rewrites one field of one answer, as a
// hostile proxy would, and checks that the flow names that field in an
// *ArtifactError and that nothing was signed (beyond the refund's own
// authorization, when only its transaction is tampered) or submitted.
func TestFlowsRefuseTamperedArtifacts(t *testing.T) {
	t.Parallel()
	high := new(big.Int).Sub(evmN(), big.NewInt(1)) // an s above n/2
	tests := []struct {
		flow, name string
		setup      func(g *artGateway)
		field      string
		signed     int64 // digests the signer signed before the refusal
	}{
		// The payer's payload.
		{"PayerSign", "chain", tamperPayload(func(d map[string]any) { domain(d)["chainId"] = 1 }), "domain.chainId", 0},
		{"PayerSign", "token", tamperPayload(func(d map[string]any) { domain(d)["verifyingContract"] = artOther }), "domain.verifyingContract", 0},
		{"PayerSign", "value", tamperPayload(func(d map[string]any) { msg(d)["value"] = "1000000000000" }), "message.value", 0},
		{"PayerSign", "recipient", tamperPayload(func(d map[string]any) { msg(d)["to"] = artOther }), "message.to", 0},
		{"PayerSign", "from", tamperPayload(func(d map[string]any) { msg(d)["from"] = artOther }), "message.from", 0},
		{"PayerSign", "validAfter", tamperPayload(func(d map[string]any) { msg(d)["validAfter"] = "1" }), "message.validAfter", 0},
		{"PayerSign", "validBefore", tamperPayload(func(d map[string]any) { msg(d)["validBefore"] = "99999999999" }), "message.validBefore", 0},
		{"PayerSign", "nonce", tamperPayload(func(d map[string]any) { msg(d)["nonce"] = fixtureReason }), "message.nonce", 0},
		{"PayerSign", "primaryType", tamperPayload(func(d map[string]any) { d["primaryType"] = "ReceiveWithAuthorization" }), "primaryType", 0},
		{"PayerSign", "types", tamperPayload(func(d map[string]any) {
			d["types"].(map[string]any)["TransferWithAuthorization"] = []map[string]string{{"name": "to", "type": "address"}}
		}), "types.TransferWithAuthorization", 0},
		{"PayerSign charge", "authorize nonce on a charge", tamperPayload(func(d map[string]any) {
			tm := newArtGateway(t, ModeAuthorize, StatusUnsigned).terms()
			msg(d)["nonce"] = tm.Nonce(string(OpAuthorize)).String()
		}), "message.nonce", 0},
		// The payment itself.
		{"PayerSign", "config_hash", tamperPayment(func(p map[string]any) { p["config_hash"] = fixtureHash }), "config_hash", 0},
		{"Capture", "amount of the payment", tamperPayment(func(p map[string]any) { p["amount"] = "25000001" }), "config_hash", 0},
		// Transactions.
		{"Capture", "tx chain", tamperTx(func(tx map[string]any) { tx["chain_id"] = 1 }), "chain_id", 0},
		{"Capture", "tx to the token", tamperTx(func(tx map[string]any) { tx["to"] = artToken }), "to", 0},
		{"Capture", "tx value", tamperTx(func(tx map[string]any) { tx["value"] = "5000000000000000000" }), "value", 0},
		{"Capture", "tx from", tamperTx(func(tx map[string]any) { tx["from"] = artOther }), "from", 0},
		{"Capture", "token transfer", tamperTx(func(tx map[string]any) {
			tx["data"] = "0xa9059cbb" + strings.Repeat("0", 24) + artOther[2:] + "8" + strings.Repeat("0", 63)
		}), "data.selector", 0},
		{"Capture", "payment id", tamperTx(func(tx map[string]any) { setWord(tx, 0, verify.Word{1}) }), "data.paymentId", 0},
		{"Capture", "terms payer", tamperTx(func(tx map[string]any) { setWord(tx, 1, verify.Word{31: 1}) }), "data.p.payer", 0},
		{"Capture", "terms amount", tamperTx(func(tx map[string]any) { setWord(tx, 4, bigWord("1000000000000")) }), "data.p.amount", 0},
		{"Capture", "terms refund expiry", tamperTx(func(tx map[string]any) { setWord(tx, 6, bigWord("1")) }), "data.p.refundExpiry", 0},
		{"Capture", "capture amount", tamperTx(func(tx map[string]any) { setWord(tx, 7, bigWord("20000000")) }), "data.amount", 0},
		{"Capture", "extra calldata", tamperTx(func(tx map[string]any) { tx["data"] = tx["data"].(string) + "00" }), "data", 0},
		{"Capture", "gas limit", tamperTx(func(tx map[string]any) { tx["gas_limit"] = 30_000_000 }), "gas_limit", 0},
		{"Capture", "fee cap", tamperTx(func(tx map[string]any) { tx["max_fee_per_gas"] = "1000000000000" }), "max_fee_per_gas", 0},
		{"Capture", "tip above cap", tamperTx(func(tx map[string]any) { tx["max_priority_fee_per_gas"] = "2000000000" }), "max_priority_fee_per_gas", 0},
		{"Capture", "unknown field", tamperTx(func(tx map[string]any) { tx["access_list"] = []any{} }), "access_list", 0},
		{"Authorize", "payer signature high s", tamperTx(func(tx map[string]any) { setWord(tx, 9, verify.UintWord(high)) }), "data.s", 0},
		{"Authorize", "payer signature v", tamperTx(func(tx map[string]any) { setWord(tx, 7, bigWord("29")) }), "data.v", 0},
		{"Charge", "charge selector", tamperTx(func(tx map[string]any) {
			data, _ := hex.DecodeString(strings.TrimPrefix(tx["data"].(string), "0x"))
			sel := verify.Selector(string(OpAuthorize))
			copy(data, sel[:])
			tx["data"] = "0x" + hex.EncodeToString(data)
		}), "data.selector", 0},
		{"Void", "release instead of void", tamperTx(func(tx map[string]any) {
			data, _ := hex.DecodeString(strings.TrimPrefix(tx["data"].(string), "0x"))
			sel := verify.Selector(string(OpRelease))
			copy(data, sel[:])
			tx["data"] = "0x" + hex.EncodeToString(data)
		}), "data.selector", 0},
		{"Dispute", "reason", tamperTx(func(tx map[string]any) { setWord(tx, 7, verify.Word{}) }), "data.reason", 0},
		// Refunds: the authorization, then the transaction.
		{"Refund", "refund value", tamperPayload(func(d map[string]any) { msg(d)["value"] = "1000000000000" }), "message.value", 0},
		{"Refund", "refund recipient", tamperPayload(func(d map[string]any) { msg(d)["to"] = artOther }), "message.to", 0},
		{"Refund", "refund chain", tamperPayload(func(d map[string]any) { domain(d)["chainId"] = 1 }), "domain.chainId", 0},
		{"Refund", "refund expiry", tamperPayload(func(d map[string]any) { msg(d)["validBefore"] = "1789985700" }), "message.validBefore", 0},
		{"Refund", "refund nonce", tamperPayload(func(d map[string]any) { msg(d)["nonce"] = fixtureReason }), "message.nonce", 0},
		{"Refund", "refund tx amount", tamperTx(func(tx map[string]any) { setWord(tx, 7, bigWord("1000000000000")) }), "data.amount", 1},
		{"Refund", "refund tx signature", tamperTx(func(tx map[string]any) { setWord(tx, 9, verify.Word{1}) }), "data.r", 1},
	}
	for _, tt := range tests {
		t.Run(tt.flow+"/"+tt.name, func(t *testing.T) {
			t.Parallel()
			g, key, err := runFlow(t, flowByName(t, tt.flow), tt.setup)
			var ae *ArtifactError
			if !errors.As(err, &ae) || ae.Field != tt.field || !errors.Is(err, ErrArtifactMismatch) {
				t.Fatalf("err = %v, want an *ArtifactError on %s", err, tt.field)
			}
			var fe *FlowError
			if !errors.As(err, &fe) || fe.Step != StepVerify {
				t.Errorf("err = %v, want a *FlowError at step verify", err)
			}
			if got := g.submitted(); len(got) != 0 {
				t.Errorf("submitted %v after a refusal", got)
			}
			if n := key.Signed.Load(); n != tt.signed {
				t.Errorf("signed %d digests, want %d", n, tt.signed)
			}
			if !strings.Contains(err.Error(), "nothing was signed") {
				t.Errorf("error %q does not say that nothing was signed", err)
			}
		})
	}
}

func evmN() *big.Int { return evm.N() }

// TestCaptureNeverReusesAPendingCaptureForAnotherAmount is the reuse bug: a
// capture of 20.00 prepared and left pending is handed back (200) when a
// capture of 1.00 is asked for; signing it would capture 20.00.
func TestCaptureNeverReusesAPendingCaptureForAnotherAmount(t *testing.T) {
	t.Parallel()
	for _, withRowAmount := range []bool{true, false} {
		g, key, err := runFlow(t, flowByName(t, "Capture"), func(g *artGateway) {
			g.pending = g.txFields(OpCapture, PaymentPrepareParams{Amount: "20.00"})
			if withRowAmount {
				g.pending["amount"] = "20000000"
			}
		})
		var ae *ArtifactError
		if !errors.As(err, &ae) || !strings.Contains(ae.Field, "amount") || ae.Expected != "1000000" || ae.Got != "20000000" {
			t.Fatalf("row amount %v: err = %v, want an *ArtifactError on the amount, 1000000 against 20000000", withRowAmount, err)
		}
		var fe *FlowError
		if !errors.As(err, &fe) || fe.TransactionID == "" {
			t.Errorf("err = %v, want the pending transaction's id", err)
		}
		if len(g.submitted()) != 0 || key.Signed.Load() != 0 {
			t.Errorf("signed %d, submitted %v", key.Signed.Load(), g.submitted())
		}
	}
	// The same pending capture for the amount asked for is signed.
	g, _, err := runFlow(t, flowByName(t, "Capture"), func(g *artGateway) {
		g.pending = g.txFields(OpCapture, PaymentPrepareParams{Amount: "1.00"})
	})
	if err != nil || len(g.submitted()) != 1 {
		t.Fatalf("reusing a matching pending capture: %v, submitted %v", err, g.submitted())
	}
}

func TestFeeCapOption(t *testing.T) {
	t.Parallel()
	fc := flowByName(t, "Capture")
	big := tamperTx(func(tx map[string]any) { tx["gas_limit"] = 2_000_000 })
	if _, _, err := runFlow(t, fc, big); !errors.Is(err, ErrArtifactMismatch) {
		t.Fatalf("2,000,000 gas under the default cap: %v", err)
	}
	if _, _, err := runFlow(t, fc, big, WithFeeCap(3_000_000, big10(18))); err != nil {
		t.Fatalf("2,000,000 gas under a 3,000,000 cap: %v", err)
	}
	if _, _, err := runFlow(t, fc, nil, WithFeeCap(100_000, big10(18))); !errors.Is(err, ErrArtifactMismatch) {
		t.Fatalf("200,000 gas over a 100,000 cap: %v", err)
	}
}

func big10(exp int64) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(exp), nil) }

func TestFlowsNeedASignerOfTheRightRole(t *testing.T) {
	t.Parallel()
	// The payer's client cannot capture; nothing is prepared.
	g := newArtGateway(t, ModeAuthorize, StatusAuthorized)
	_, err := g.client(g.payer).Payments.Capture(context.Background(), artPayment, PaymentCaptureParams{Amount: "1.00"})
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Field != "signer" {
		t.Fatalf("payer capturing: %v, want a signer ValidationError", err)
	}
	// A client without a signer.
	c, _ := NewClient("http://127.0.0.1:1", WithToken("t"))
	if _, err := c.Payments.Void(context.Background(), artPayment, PaymentVoidParams{}); !errors.Is(err, ErrNoSigner) {
		t.Fatalf("no signer: %v", err)
	}
	if _, err := c.Payments.Capture(context.Background(), "..", PaymentCaptureParams{Amount: "1"}); err == nil {
		t.Fatal("no error")
	}
}

// TestVerifyForCallersWhoSignElsewhere drives the low-level path: prepare,
// verify, sign with one's own tools, submit.
func TestVerifyForCallersWhoSignElsewhere(t *testing.T) {
	t.Parallel()
	g := newArtGateway(t, ModeAuthorize, StatusPartiallyCaptured)
	c := g.client(g.payee)
	ctx := context.Background()
	p, err := c.Payments.Get(ctx, artPayment)
	if err != nil {
		t.Fatal(err)
	}
	prep, err := c.Payments.Prepare(ctx, artPayment, OpCapture, PaymentPrepareParams{Amount: "1.00"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Payments.VerifyTransaction(ctx, p, Intent{Operation: OpCapture, Amount: "1.00"}, *prep.UnsignedTransaction); err != nil {
		t.Fatalf("honest capture: %v", err)
	}
	if _, err := c.Payments.VerifyTransaction(ctx, p, Intent{Operation: OpCapture, Amount: "2.00"}, *prep.UnsignedTransaction); !errors.Is(err, ErrArtifactMismatch) {
		t.Fatalf("capture of 1.00 checked against 2.00: %v", err)
	}
	if _, err := c.Payments.VerifyTransaction(ctx, p, Intent{Operation: OpVoid}, *prep.UnsignedTransaction); !errors.Is(err, ErrArtifactMismatch) {
		t.Fatalf("capture checked as a void: %v", err)
	}
	auth, err := c.Payments.PrepareRefund(ctx, artPayment, PaymentPrepareRefundParams{Amount: "4.00"})
	if err != nil {
		t.Fatal(err)
	}
	// A refund is bound to the order's payer (or its rail0_id), from the
	// merchant's own records.
	buyer := Expectation{Payer: g.payer.Address()}
	verified, err := c.Payments.VerifyPayload(ctx, p, Intent{Operation: OpRefund, Amount: "4.00", Expect: buyer}, auth.SigningPayload)
	if err != nil || verified.Digest == ([32]byte{}) {
		t.Fatalf("honest refund payload: %+v, %v", verified, err)
	}
	if _, err := c.Payments.VerifyPayload(ctx, p, Intent{Operation: OpRefund, Amount: "3.00", Expect: buyer}, auth.SigningPayload); !errors.Is(err, ErrArtifactMismatch) {
		t.Fatalf("refund payload for 4.00 checked against 3.00: %v", err)
	}
	// Nonsense in, a typed error out.
	for _, junk := range []string{"", "{", "null", "[]", `{"chain_id": "x"}`, strings.Repeat("9", 1<<16)} {
		_, err := c.Payments.VerifyTransaction(ctx, p, Intent{Operation: OpCapture, Amount: "1.00"}, junk)
		var ae *ArtifactError
		if !errors.As(err, &ae) {
			t.Errorf("VerifyTransaction(%.20q) = %v, want an *ArtifactError", junk, err)
		}
		if _, err := c.Payments.VerifyPayload(ctx, p, Intent{Expect: artOrder(p.Mode)}, []byte(junk)); !errors.Is(err, ErrArtifactMismatch) {
			t.Errorf("VerifyPayload(%.20q) accepted", junk)
		}
	}
	if _, err := c.Payments.VerifyTransaction(ctx, nil, Intent{Operation: OpCapture}, "{}"); err == nil {
		t.Error("nil payment accepted")
	}
}

// TestPayerSignatureRecoveredWhenTheTokenDomainIsKnown: once the gateway
// has accepted the payer's signature over a payload of the token (and so
// the client knows its EIP-712 name and version), the payer signature
// inside authorize calldata must recover to the payer. One that does not
// is refused, and the domain forgotten: the learned domain may be the lie,
// and keeping it would refuse every later honest authorize.
func TestPayerSignatureRecoveredWhenTheTokenDomainIsKnown(t *testing.T) {
	t.Parallel()
	g := newArtGateway(t, ModeAuthorize, StatusUnsigned)
	c := g.client(g.payer)
	ctx := context.Background()
	token, _ := verify.ParseAddress(artToken)
	known := func() bool {
		_, ok := c.trust().TokenDomains[verify.TokenKey{ChainID: artChain, Token: token}]
		return ok
	}
	if _, err := c.Payments.PayerSign(ctx, artPayment, PaymentPayerSignParams{Expect: artOrder(ModeAuthorize)}); err != nil {
		t.Fatal(err)
	}
	if !known() {
		t.Fatal("the domain of a payload whose signature the gateway accepted is not known")
	}
	g.mu.Lock()
	g.payment.Status = StatusSigned
	g.mu.Unlock()
	p, err := c.Payments.Get(ctx, artPayment)
	if err != nil {
		t.Fatal(err)
	}
	authorize := Intent{Operation: OpAuthorize, Signer: g.payee.Address()}
	honest := g.txFields(OpAuthorize, PaymentPrepareParams{})
	if _, err := c.Payments.VerifyTransaction(ctx, p, authorize, mustJSON(t, honest)); err != nil {
		t.Fatalf("authorize with the payer's signature: %v", err)
	}
	other, err := evmtest.NewKey("mallory").SignDigest(ctx, g.authDigest(ModeAuthorize))
	if err != nil {
		t.Fatal(err)
	}
	forged := g.txFields(OpAuthorize, PaymentPrepareParams{})
	setWord(forged, 7, verify.U64Word(uint64(other[64])+27))
	setWord(forged, 8, verify.Word(other[:32]))
	setWord(forged, 9, verify.Word(other[32:64]))
	_, err = c.Payments.VerifyTransaction(ctx, p, authorize, mustJSON(t, forged))
	var ae *ArtifactError
	if !errors.As(err, &ae) || ae.Field != "data.r" {
		t.Fatalf("authorize with another key's signature: %v", err)
	}
	if known() {
		t.Fatal("the domain under which the signature did not recover is still known")
	}
}

// The review's domain lie: a refund payload whose domain name a proxy
// changed (the payee signs an authorization that can never verify on
// chain, since only the domain's chain and contract can be checked) taught
// the client that name, and every later authorize of the token refused
// the payer's honest signature. Nothing is learned from a payload the
// gateway has not accepted a signature of.
func TestOneDomainLieBlocksNothing(t *testing.T) {
	t.Parallel()
	g := newArtGateway(t, ModeAuthorize, StatusPartiallyCaptured)
	c := g.client(g.payee)
	ctx := context.Background()
	g.mu.Lock()
	g.tamperPayload = func(d map[string]any) { d["domain"].(map[string]any)["name"] = "Not USD Coin" }
	g.mu.Unlock()
	if _, err := c.Payments.Refund(ctx, artPayment, PaymentRefundParams{Amount: "1.00", Expect: Expectation{Payer: artPayer}}); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	g.tamperPayload = nil
	g.payment.Status = StatusSigned
	g.mu.Unlock()
	if _, err := c.Payments.Authorize(ctx, artPayment, PaymentAuthorizeParams{}); err != nil {
		t.Fatalf("an honest authorize after one domain lie: %v", err)
	}
}

// artGateway is a small honest gateway for the flows: it builds every
// artifact the way the RAIL0 contract guide (section 12.1) says, from one
// payment, and lets a test rewrite one field of an answer on its way out,
// like a hostile proxy. It records what the SDK submitted.

// The test payment (package internal/verifytest).
const (
	artChain    = verifytest.ChainID
	artToken    = verifytest.Token
	artContract = verifytest.Contract
	artOther    = verifytest.Other
	artPayment  = verifytest.PaymentID
	artAmount   = verifytest.Amount // 25.00 of a 6-decimal token
	artAuthExp  = verifytest.AuthExpiry
	artRefExp   = verifytest.RefundExpiry
)

// artGateway is the fake gateway. Tamper hooks see the decoded JSON of an
// answer (payload or unsigned transaction fields) and may change it.
type artGateway struct {
	t            *testing.T
	payer, payee *evmtest.Key
	payment      *PaymentDetail
	payerSig     []byte // the payer's signature, for authorize/charge calldata

	mu sync.Mutex
	// tamperPayment, tamperPayload and tamperTx rewrite an answer.
	tamperPayment func(p map[string]any)
	tamperPayload func(doc map[string]any)
	tamperTx      func(op Operation, tx map[string]any)
	// pending, when set, is answered (200) to every prepare instead of a
	// new transaction: a transaction prepared earlier.
	pending map[string]any
	// submits records submitted bodies by route.
	submits []string
	// blockchains and tokens are the gateway's catalog, GET /blockchains
	// and GET /tokens (nil tokens: the token with decimals), which the
	// SDK must never rely on; catalogReads counts the requests for them.
	blockchains  string
	tokens       []Token
	catalogReads int
	// paymentReads counts GET /payments/p1; prepares, the prepare calls.
	paymentReads, prepares int
	// prepared is the id of each route's last prepared row, which its
	// submit answers with: each prepare records a new row, as the
	// gateway's do (a pending one handed back keeps its id).
	prepared map[string]string
	// otherNames, when set, serves the payment by its rail0_id and its
	// UUID in capitals too, as the gateway does; by its UUID only when not.
	otherNames bool
	// decimals is what GET /tokens lists for the token and what the
	// gateway scales human amounts with; zero means the token's real 6.
	decimals int64
}

// tokenDecimals is the decimals the gateway lists and uses.
func (g *artGateway) tokenDecimals() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.decimals == 0 {
		return 6
	}
	return g.decimals
}

func newArtGateway(t *testing.T, mode PaymentMode, status PaymentStatus) *artGateway {
	g := &artGateway{t: t, payer: evmtest.NewKey("payer"), payee: evmtest.NewKey("payee")}
	g.payment = &PaymentDetail{
		Payment: Payment{
			ID: artPayment, Rail0ID: verifytest.Rail0ID.String(), Status: status, Mode: mode,
			Amount: fmt.Sprint(artAmount), CapturableAmount: "15000000", RefundableAmount: "10000000",
			Payer: g.payer.Address(), Payee: g.payee.Address(), Token: artToken,
			AuthorizationExpiry: artAuthExp, RefundExpiry: artRefExp,
		},
		ChainID: artChain, Rail0Contract: artContract,
	}
	g.payment.ConfigHash = g.terms().ConfigHash.String()
	if status == StatusUnsigned {
		g.payment.SigningPayload = g.payloadJSON(Intent{})
	}
	sig, err := g.payer.SignDigest(context.Background(), g.authDigest(mode))
	if err != nil {
		t.Fatal(err)
	}
	sig[64] += 27
	g.payerSig = sig
	g.payer.Signed.Store(0)
	g.blockchains = fmt.Sprintf(`[{"chain_id": %d, "name": "Base Sepolia", "native_symbol": "ETH", "network_type": "testnet", "explorer_url": "https://x"}]`, artChain)
	return g
}

// terms are the terms of the payment the gateway serves, its config_hash
// computed from them, with the token's real decimals.
func (g *artGateway) terms() *verify.Terms {
	g.mu.Lock()
	p := *g.payment
	g.mu.Unlock()
	p.ConfigHash = (verify.Word{}).String()
	t, err := verify.DecodeTerms(paymentOf(&p))
	if err != nil {
		g.t.Fatal(err)
	}
	t.ConfigHash, t.Decimals = t.ComputeConfigHash(), verifytest.Decimals
	return t
}

// authDigest is the payer's TransferWithAuthorization digest under the
// token domain "USDC"/"2".
func (g *artGateway) authDigest(mode PaymentMode) verify.Word {
	return g.authDigestFor(mode, "USDC", "2")
}

func (g *artGateway) authDigestFor(mode PaymentMode, name, version string) verify.Word {
	t := g.terms()
	t.Mode = string(mode)
	return verifytest.PayerDigest(t, name, version)
}

// payloadJSON builds the payer's payload (in.Operation empty) or a refund
// payload for in.Amount base units.
func (g *artGateway) payloadJSON(in Intent) json.RawMessage {
	var refund *big.Int
	if in.Operation == OpRefund {
		refund, _ = new(big.Int).SetString(in.Amount, 10)
	}
	doc := verifytest.PayloadDoc(g.terms(), refund)
	g.mu.Lock()
	tamper := g.tamperPayload
	g.mu.Unlock()
	if tamper != nil {
		tamper(doc)
	}
	b, _ := json.Marshal(doc)
	return b
}

// txFields builds the unsigned transaction of op.
func (g *artGateway) txFields(op Operation, params PaymentPrepareParams) map[string]any {
	amount := func() verify.Word {
		base, _ := ToBaseUnits(params.Amount, g.tokenDecimals())
		n, _ := new(big.Int).SetString(base, 10)
		return verify.UintWord(n)
	}
	var args []verify.Word
	switch op {
	case OpAuthorize, OpCharge:
		args = verifytest.VRS(g.payerSig)
	case OpCapture:
		args = []verify.Word{amount()}
	case OpRefund:
		sig, _ := hex.DecodeString(strings.TrimPrefix(params.Signature, "0x"))
		args = append([]verify.Word{amount()}, verifytest.VRS(sig)...)
	case OpDispute, OpCloseDispute:
		var r verify.Word
		if params.Reason != "" {
			r, _ = verify.ParseWord(params.Reason)
		}
		args = []verify.Word{r}
	}
	from := g.payee.Address()
	if op == OpDispute || op == OpCloseDispute {
		from = g.payer.Address()
	}
	if params.From != "" {
		from = params.From
	}
	return verifytest.TxFields(g.terms(), string(op), args, from)
}

func (g *artGateway) serve(w http.ResponseWriter, r *http.Request) {
	reply := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	path := strings.TrimPrefix(r.URL.Path, "/")
	g.mu.Lock()
	otherNames := g.otherNames
	g.mu.Unlock()
	for _, name := range []string{verifytest.Rail0ID.String(), strings.ToUpper(artPayment)} {
		if rest, ok := strings.CutPrefix(path, "payments/"+name); ok && otherNames {
			path = "payments/" + artPayment + rest
		}
	}
	if path == "blockchains" || path == "tokens" {
		g.mu.Lock()
		g.catalogReads++
		chains, tokens := g.blockchains, g.tokens
		g.mu.Unlock()
		if tokens == nil {
			tokens = []Token{{ChainID: artChain, Symbol: "USDC", Address: artToken, Decimals: g.tokenDecimals(), Active: true}}
		}
		if path == "tokens" {
			reply(200, tokens)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(chains))
		return
	}
	switch {
	case r.Method == http.MethodPost && path == "payments":
		g.mu.Lock()
		p := *g.payment
		g.mu.Unlock()
		reply(http.StatusCreated, &p)
		return
	case r.Method == http.MethodGet && path == "payments/"+artPayment:
		g.mu.Lock()
		g.paymentReads++
		p := *g.payment
		g.mu.Unlock()
		if p.Status == StatusUnsigned {
			p.SigningPayload = g.payloadJSON(Intent{})
		}
		b, _ := json.Marshal(&p)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		g.mu.Lock()
		tamper := g.tamperPayment
		g.mu.Unlock()
		if tamper != nil {
			tamper(m)
		}
		reply(200, m)
		return
	}
	var body PaymentPrepareParams
	_ = json.NewDecoder(r.Body).Decode(&body)
	rest, ok := strings.CutPrefix(path, "payments/"+artPayment+"/")
	if !ok || r.Method != http.MethodPost && r.Method != http.MethodPut {
		reply(404, map[string]string{"code": "not_found"})
		return
	}
	if route, isPrepare := strings.CutSuffix(rest, "/prepare"); isPrepare {
		g.mu.Lock()
		g.prepares++
		g.mu.Unlock()
		op := Operation(route)
		switch route {
		case "dispute/close":
			op = OpCloseDispute
		case "refund":
			if body.Signature == "" {
				base, _ := ToBaseUnits(body.Amount, g.tokenDecimals())
				reply(200, map[string]any{"signing_payload": g.payloadJSON(Intent{Operation: OpRefund, Amount: base})})
				return
			}
		}
		g.mu.Lock()
		pending, tamper := g.pending, g.tamperTx
		if g.prepared == nil {
			g.prepared = map[string]string{}
		}
		id, reused := g.prepared[route]
		if pending == nil || !reused {
			id = fmt.Sprintf("tx-%s-%d", route, g.prepares)
			g.prepared[route] = id
		}
		g.mu.Unlock()
		fields, status := g.txFields(op, body), http.StatusCreated
		if pending != nil {
			fields, status = pending, http.StatusOK
		}
		if tamper != nil {
			tamper(op, fields)
		}
		unsigned, _ := json.Marshal(fields)
		tx := map[string]any{"id": id, "payment_id": artPayment, "operation": op, "status": "pending",
			"unsigned_transaction": string(unsigned)}
		if body.Amount != "" {
			base, _ := ToBaseUnits(body.Amount, g.tokenDecimals())
			tx["amount"] = base
		}
		if a, ok := fields["amount"]; ok { // a pending transaction's own amount
			tx["amount"] = a
			delete(fields, "amount")
			unsigned, _ = json.Marshal(fields)
			tx["unsigned_transaction"] = string(unsigned)
		}
		reply(status, tx)
		return
	}
	g.mu.Lock()
	g.submits = append(g.submits, r.Method+" "+rest)
	g.mu.Unlock()
	if rest == "sign" {
		g.mu.Lock()
		p := *g.payment
		g.mu.Unlock()
		reply(200, &p)
		return
	}
	op := Operation(rest)
	if rest == "dispute/close" {
		op = OpCloseDispute
	}
	g.mu.Lock()
	id := g.prepared[rest]
	g.mu.Unlock()
	reply(202, map[string]any{"id": id, "payment_id": artPayment, "operation": op, "status": "submitted"})
}

// rewrite changes the payment the gateway serves from now on, keeping it
// consistent: its config_hash and signing payload follow the new terms.
func (g *artGateway) rewrite(change func(p *PaymentDetail)) {
	g.mu.Lock()
	change(g.payment)
	g.mu.Unlock()
	h := g.terms().ConfigHash.String()
	g.mu.Lock()
	g.payment.ConfigHash = h
	g.mu.Unlock()
}

// counts returns the payment reads and the prepare calls so far.
func (g *artGateway) counts() (reads, prepares int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.paymentReads, g.prepares
}

func (g *artGateway) submitted() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.submits...)
}

// artPins trusts the fake gateway's RAIL0 contract, which is not the one
// published for its chain (Base Sepolia), as rail0test's is not: the one
// place root tests pin what the registry does not. Its token is the
// published Base Sepolia USDC, which the registry pins.
func artPins() Option { return WithTrustedContracts(map[int64]string{artChain: artContract}) }

// client returns a client of the gateway signing with key, trusting the
// gateway's contract (artPins).
func (g *artGateway) client(key Signer, opts ...Option) *Client {
	return g.clientWithout(key, append([]Option{artPins()}, opts...)...)
}

// clientWithout is client without artPins: the registry's pins and opts
// alone.
func (g *artGateway) clientWithout(key Signer, opts ...Option) *Client {
	srv := httptest.NewServer(http.HandlerFunc(g.serve))
	g.t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL, append([]Option{WithToken("t"), WithSigner(key), atArtCreation()}, opts...)...)
	if err != nil {
		g.t.Fatal(err)
	}
	return c
}

// atArtCreation sets the client's local clock to the fixture payment's
// creation, moving from there as time does: its expiries (7 and 30 days
// later) are then within the bounds the payer's signature is held to.
func atArtCreation() Option {
	shift := time.Until(time.Date(2026, 9, 14, 10, 15, 0, 0, time.UTC))
	return func(c *config) error {
		c.now = func() time.Time { return time.Now().Add(shift) }
		return nil
	}
}

// TestGasLimitBoundPerOperation: without WithFeeCap, each step's gas_limit
// is bounded at twice what the RAIL0 contract was measured to use for it
// (contract guide section 12.2; the bounds themselves, and Arbitrum's, are
// internal/verify's TestGasLimitBoundPerOperation): through every flow, a
// limit at the bound is signed, one gas more is refused before anything is
// signed, and WithFeeCap's bound replaces them all.
func TestGasLimitBoundPerOperation(t *testing.T) {
	t.Parallel()
	want := map[Operation]uint64{
		OpAuthorize: 1_018_000, OpCharge: 1_030_000, OpRefund: 656_000, OpCapture: 350_000,
		OpVoid: 154_000, OpRelease: 154_000, OpDispute: 86_000, OpCloseDispute: 86_000,
	}
	for _, fc := range flowCases {
		if fc.submit == "PUT sign" {
			continue // the payer's signature carries no gas
		}
		op := Operation(strings.TrimPrefix(fc.submit, "POST "))
		if op == "dispute/close" {
			op = OpCloseDispute
		}
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			withGas := func(gas uint64) func(*artGateway) {
				return func(g *artGateway) {
					g.tamperTx = func(o Operation, tx map[string]any) {
						if o == op {
							tx["gas_limit"] = gas
						}
					}
				}
			}
			if _, _, err := runFlow(t, fc, withGas(want[op])); err != nil {
				t.Fatalf("gas_limit %d, the bound: %v", want[op], err)
			}
			g, key, err := runFlow(t, fc, withGas(want[op]+1))
			var ae *ArtifactError
			if !errors.As(err, &ae) || ae.Field != "gas_limit" || len(g.submitted()) != 0 {
				t.Fatalf("gas_limit %d: %v, submitted %v", want[op]+1, err, g.submitted())
			}
			if op != OpRefund && key.Signed.Load() != 0 { // a refund signs its authorization first
				t.Fatalf("%d signatures before the refusal", key.Signed.Load())
			}
			if _, _, err := runFlow(t, fc, withGas(1_500_000), WithFeeCap(2_000_000, big.NewInt(50_000_000_000_000_000))); err != nil {
				t.Fatalf("1,500,000 gas under WithFeeCap(2,000,000): %v", err)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

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
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
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

// TestArtifactErrorsComeFromTheTable: the root makes no refusal of an
// artifact of its own. Every check that guards a signature is a row of
// package internal/verify's registry (verify.Checks), which the flows and
// the low-level path run; the root only turns a row's refusal into its
// error (fromVerify). An *ArtifactError or *UntrustedError written anywhere
// else, or a verify refusal made here, fails this test.
func TestArtifactErrorsComeFromTheTable(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				lit, ok := n.(*ast.CompositeLit)
				if !ok {
					return true
				}
				switch typ := lit.Type.(type) {
				case *ast.Ident:
					if typ.Name == "ArtifactError" || typ.Name == "UntrustedError" {
						found++
						if fn.Name.Name != "fromVerify" {
							t.Errorf("%s: %s makes an %s: add a row to verify.Checks instead", name, fn.Name.Name, typ.Name)
						}
					}
				case *ast.SelectorExpr:
					if typ.Sel.Name == "Mismatch" || typ.Sel.Name == "Untrusted" {
						t.Errorf("%s: %s makes a verify.%s: add a row to verify.Checks instead", name, fn.Name.Name, typ.Sel.Name)
					}
				}
				return true
			})
		}
	}
	if found == 0 {
		t.Fatal("no artifact error found: the scan proves nothing")
	}
}
