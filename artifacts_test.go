package rail0

import (
	"context"
	"encoding/hex"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/rail0/rail0-go/internal/evm"
	"github.com/rail0/rail0-go/internal/evmtest"
	"github.com/rail0/rail0-go/internal/verify"
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

// TestUntrustedErrorText: the refusal of rail0test's contract names
// srv.Pins(), whatever the address's case; any other contract names the
// option to trust it with, never rail0test.
func TestUntrustedErrorText(t *testing.T) {
	for _, tt := range []struct {
		got, want, not string
	}{
		{rail0testContract, "srv.Pins()", "trust it with"},
		{strings.ToLower(rail0testContract), "srv.Pins()", "trust it with"},
		{"0x1111111111111111111111111111111111111111", "trust it with WithTrustedContracts", "Pins"},
	} {
		e := &UntrustedError{ChainID: 84532, Field: "rail0_contract", Got: tt.got,
			Trusted: "0x2222222222222222222222222222222222222222", Option: "WithTrustedContracts"}
		msg := e.Error()
		if !strings.Contains(msg, tt.want) || strings.Contains(msg, tt.not) {
			t.Errorf("%s: %q, want %q and no %q", tt.got, msg, tt.want, tt.not)
		}
		if !errors.Is(e, ErrUntrusted) {
			t.Errorf("%s: not ErrUntrusted", tt.got)
		}
	}
}
