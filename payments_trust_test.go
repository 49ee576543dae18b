package rail0

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rail0/rail0-go/internal/verify"
	"github.com/rail0/rail0-go/internal/verifytest"
)

// Addresses of the pin tests: the published RAIL0 deployment and
// stablecoins (package registry), a contract and a token nobody publishes.
const (
	pinPublished   = "0x13a46eDDBE6105f5c055A2C8729b773C9C7BBa1F"
	pinSepoliaUSDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e" // Base Sepolia, 84532
	pinArcEURC     = "0x89B50855Aa3bE2F677cD6303Cec089B5F319D72a" // Arc Testnet, 5042002
	pinBaseUSDC    = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" // Base, 8453
	pinBaseEURC    = "0x60a3E35Cc302bFA44Cb288Bc5a4F316Fdb1adb42" // Base, 8453
	pinArbUSDC     = "0xaf88d065e77c8cC2239327C5EDb3A432268e5831" // Arbitrum One, 42161
	pinMine        = "0x00000000000000000000000000000000000000c0" // a caller's own contract
	pinOdd         = "0x00000000000000000000000000000000000000bb" // a token nobody publishes
)

// TestAnchor is the pure decision, for each level of trust: what the
// registry alone trusts, what a caller's pin adds or replaces, and what
// neither covers (refused, naming the option that would trust it).
func TestAnchor(t *testing.T) {
	tests := []struct {
		name      string
		contracts map[int64]string // the caller's WithTrustedContracts
		tokens    []Token          // the caller's WithTrustedTokens
		chainID   int64
		contract  string
		token     string
		decimals  int64  // the trusted decimals, when trusted
		field     string // the untrusted field, when refused
	}{
		{"registry: the published contract and token", nil, nil, 84532, pinPublished, pinSepoliaUSDC, 6, ""},
		{"registry: a second token the deployment accepts", nil, nil, 5042002, pinPublished, pinArcEURC, 6, ""},
		{"registry: another contract on a published chain", nil, nil, 84532, pinMine, pinSepoliaUSDC, 0, "rail0_contract"},
		{"registry: a token nobody publishes", nil, nil, 84532, pinPublished, pinOdd, 0, "token"},
		{"registry: a published token of another chain", nil, nil, 84532, pinPublished, pinBaseUSDC, 0, "token"},
		{"registry: a mainnet, where no deployment is published", nil, nil, 8453, pinPublished, pinBaseUSDC, 0, "chain_id"},
		{"registry: a chain it does not know", nil, nil, 31337, pinPublished, pinSepoliaUSDC, 0, "chain_id"},
		{"registry: Celo Sepolia's tokens are not published", nil, nil, 11142220, pinPublished, pinOdd, 0, "token"},
		{"pinned token: Celo Sepolia's", nil, []Token{{ChainID: 11142220, Address: pinOdd, Decimals: 6}}, 11142220, pinPublished, pinOdd, 6, ""},
		{"pinned contract: a mainnet one, with the registry's decimals", map[int64]string{8453: pinMine}, nil, 8453, pinMine, pinBaseUSDC, 6, ""},
		{"pinned contract: every published token of its chain", map[int64]string{8453: pinMine}, nil, 8453, pinMine, pinBaseEURC, 6, ""},
		{"pinned contract: not a token nobody publishes", map[int64]string{8453: pinMine}, nil, 8453, pinMine, pinOdd, 0, "token"},
		{"pinned contract: protects every chain, not only its own", map[int64]string{8453: pinMine}, nil, 42161, pinMine, pinArbUSDC, 0, "chain_id"},
		{"pinned contract: replaces the published one", map[int64]string{84532: pinMine}, nil, 84532, pinPublished, pinSepoliaUSDC, 0, "rail0_contract"},
		{"pinned contract: with the published token of its chain", map[int64]string{84532: pinMine}, nil, 84532, pinMine, pinSepoliaUSDC, 6, ""},
		{"pinned token: replaces the registry's decimals", nil, []Token{{ChainID: 84532, Address: pinSepoliaUSDC, Decimals: 18}}, 84532, pinPublished, pinSepoliaUSDC, 18, ""},
		{"pinned token: trusts no chain", nil, []Token{{ChainID: 31337, Address: pinOdd, Decimals: 6}}, 31337, pinMine, pinOdd, 0, "chain_id"},
		{"pinned both: a chain the registry does not know", map[int64]string{31337: pinMine}, []Token{{ChainID: 31337, Address: pinOdd, Decimals: 9}}, 31337, pinMine, pinOdd, 9, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := []Option{WithFeeCap(1_000_000, big.NewInt(1))} // for chain 31337
			if tt.contracts != nil {
				opts = append(opts, WithTrustedContracts(tt.contracts))
			}
			if tt.tokens != nil {
				opts = append(opts, WithTrustedTokens(tt.tokens...))
			}
			c, err := NewClient("http://127.0.0.1:1", opts...)
			if err != nil {
				t.Fatal(err)
			}
			decimals, err := c.trustBase.Pins.Anchor(verifytest.TermsAt(tt.chainID, tt.contract, tt.token))
			err = fromVerify(err)
			if tt.field == "" {
				if err != nil || decimals != tt.decimals {
					t.Fatalf("anchor = %d, %v; want %d decimals", decimals, err, tt.decimals)
				}
				return
			}
			var ue *UntrustedError
			if !errors.As(err, &ue) || ue.Field != tt.field || ue.ChainID != tt.chainID || ue.PaymentID != "p1" {
				t.Fatalf("anchor = %d, %v; want an *UntrustedError on %s", decimals, err, tt.field)
			}
			if !errors.Is(err, ErrUntrusted) || !errors.Is(err, ErrArtifactMismatch) {
				t.Errorf("%v does not match ErrUntrusted and ErrArtifactMismatch", err)
			}
			option := map[string]string{"chain_id": "WithTrustedContracts", "rail0_contract": "WithTrustedContracts", "token": "WithTrustedTokens"}[tt.field]
			if ue.Option != option || !strings.Contains(err.Error(), option) || !strings.Contains(err.Error(), "nothing was signed") {
				t.Errorf("%q (Option %q) does not name %s or does not say nothing was signed", err, ue.Option, option)
			}
			switch tt.field {
			case "rail0_contract":
				want := tt.contracts[tt.chainID]
				if want == "" {
					want = pinPublished
				}
				if !verify.SameAddress(ue.Trusted, want) || !verify.SameAddress(ue.Got, tt.contract) {
					t.Errorf("Trusted %s, Got %s; want %s and %s", ue.Trusted, ue.Got, want, tt.contract)
				}
			case "token":
				if !verify.SameAddress(ue.Got, tt.token) {
					t.Errorf("Got %s, want the token %s", ue.Got, tt.token)
				}
			}
		})
	}
}

// TestTrustOptions: pins add up across calls, a chain pinned to two
// contracts or a token to two decimals is an error, and a chain the
// registry does not know needs a fee bound the caller gives.
func TestTrustOptions(t *testing.T) {
	c, err := NewClient("https://x",
		WithTrustedContracts(map[int64]string{8453: pinMine}),
		WithTrustedContracts(map[int64]string{1: pinMine, 8453: strings.ToUpper(pinMine[:2]) + pinMine[2:]}))
	if err != nil {
		t.Fatal(err)
	}
	for _, chainID := range []int64{1, 8453, 84532} {
		var ue *verify.Untrusted
		if _, err := c.trustBase.Pins.Anchor(verifytest.TermsAt(chainID, pinMine, pinOdd)); errors.As(err, &ue) && ue.Field == "chain_id" {
			t.Errorf("chain %d is not pinned after two WithTrustedContracts and the registry", chainID)
		}
	}
	for name, opts := range map[string][]Option{
		"a chain pinned to two contracts": {WithTrustedContracts(map[int64]string{8453: pinMine}), WithTrustedContracts(map[int64]string{8453: pinOdd})},
		"a malformed contract":            {WithTrustedContracts(map[int64]string{8453: "0x12"})},
		"chain id 0":                      {WithTrustedContracts(map[int64]string{0: pinMine})},
		"a token with two decimals":       {WithTrustedTokens(Token{ChainID: 8453, Address: pinOdd, Decimals: 6}, Token{ChainID: 8453, Address: strings.ToUpper(pinOdd), Decimals: 18})},
		"a malformed token":               {WithTrustedTokens(Token{ChainID: 8453, Address: "0x12", Decimals: 6})},
		"negative decimals":               {WithTrustedTokens(Token{ChainID: 8453, Address: pinOdd, Decimals: -1})},
		"too many decimals":               {WithTrustedTokens(Token{ChainID: 8453, Address: pinOdd, Decimals: MaxDecimals + 1})},
		"token chain id 0":                {WithTrustedTokens(Token{ChainID: 0, Address: pinOdd, Decimals: 6})},
	} {
		if _, err := NewClient("https://x", opts...); err == nil {
			t.Errorf("%s was accepted", name)
		}
	}
	same := Token{ChainID: 8453, Address: pinOdd, Decimals: 6}
	if _, err := NewClient("https://x", WithTrustedTokens(same), WithTrustedTokens(same)); err != nil {
		t.Errorf("the same token pinned twice: %v", err)
	}

	// A chain the registry does not know has no fee bound to offer.
	_, err = NewClient("https://x", WithTrustedContracts(map[int64]string{31337: pinMine}))
	if err == nil || !strings.Contains(err.Error(), "WithFeeCap") || !strings.Contains(err.Error(), "31337") {
		t.Errorf("a pin of chain 31337 without a fee bound: %v, want an error naming WithFeeCap", err)
	}
	if _, err := NewClient("https://x", WithTrustedContracts(map[int64]string{31337: pinMine}), WithFeeCap(1_000_000, big.NewInt(1e15))); err != nil {
		t.Errorf("with WithFeeCap: %v", err)
	}
}

// TestDefaultsRefuseAnUnpublishedContract: with no option at all, the
// fake gateway's contract (the README's example address, not the one
// published for Base Sepolia) is refused by every flow before anything is
// prepared or signed, with an error that names the option that trusts it.
func TestDefaultsRefuseAnUnpublishedContract(t *testing.T) {
	t.Parallel()
	for _, fc := range flowCases {
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			g := newArtGateway(t, fc.mode, fc.status)
			key := g.payee
			if fc.payer {
				key = g.payer
			}
			err := fc.run(context.Background(), g.clientWithout(key))
			var ue *UntrustedError
			if !errors.As(err, &ue) || ue.Field != "rail0_contract" || !verify.SameAddress(ue.Trusted, pinPublished) || ue.Option != "WithTrustedContracts" {
				t.Fatalf("err = %v, want an *UntrustedError on rail0_contract naming WithTrustedContracts", err)
			}
			var fe *FlowError
			if !errors.As(err, &fe) || fe.Step != StepVerify || !strings.Contains(err.Error(), "WithTrustedContracts") {
				t.Errorf("err = %v, want a *FlowError at step verify naming the option", err)
			}
			if key.Signed.Load() != 0 || len(g.submitted()) != 0 {
				t.Errorf("signed %d, submitted %v", key.Signed.Load(), g.submitted())
			}
		})
	}
}

// moveToBase rewrites the fake gateway's payment, consistently (config_hash
// and artifacts follow it), onto Base mainnet (8453) with the attacker's
// contract and token, amounts scaled for a token of decimals, and lists
// that chain and token in its catalog: attack 1 of issue 19.
func moveToBase(g *artGateway, contract, token string, decimals int64) {
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(decimals-6), nil)
	times := func(s string) string {
		n, _ := new(big.Int).SetString(s, 10)
		return n.Mul(n, scale).String()
	}
	g.rewrite(func(p *PaymentDetail) {
		p.ChainID, p.Rail0Contract, p.Token = 8453, contract, token
		p.Amount, p.CapturableAmount, p.RefundableAmount = times(p.Amount), times(p.CapturableAmount), times(p.RefundableAmount)
	})
	g.mu.Lock()
	g.decimals = decimals
	g.blockchains = `[{"chain_id": 84532}, {"chain_id": 8453}]`
	g.tokens = []Token{{ChainID: 84532, Address: artToken, Decimals: 6}, {ChainID: 8453, Address: token, Decimals: decimals}}
	g.mu.Unlock()
}

// TestPinProtectsEveryChain is attack 1 of issue 19: with the test chain's
// contract pinned, a gateway that moves the payment to Base mainnet, with
// its own contract and a token it lists with 9 decimals, gets nothing
// signed: no deployment is published there and the caller pinned none.
// Once the caller pins a mainnet contract, a gateway naming another is
// refused, and one naming the pinned contract with a lie about USDC's
// decimals gets the amount checked with the registry's 6.
func TestPinProtectsEveryChain(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"PayerSign", "Capture", "Refund"} {
		fc := flowByName(t, name)
		for _, tt := range []struct {
			name     string
			mainnet  Option // the caller's mainnet pin, if any
			contract string
			token    string
			field    string
		}{
			{"no mainnet pin", nil, artOther, pinOdd, "chain_id"},
			{"another contract than the pinned one", WithTrustedContracts(map[int64]string{8453: pinMine}), artOther, pinBaseUSDC, "rail0_contract"},
			{"the pinned contract, an unpublished token", WithTrustedContracts(map[int64]string{8453: pinMine}), pinMine, pinOdd, "token"},
		} {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				g := newArtGateway(t, fc.mode, fc.status)
				moveToBase(g, tt.contract, tt.token, 9)
				key := g.payee
				if fc.payer {
					key = g.payer
				}
				opts := []Option{}
				if tt.mainnet != nil {
					opts = append(opts, tt.mainnet)
				}
				err := fc.run(context.Background(), g.client(key, opts...))
				var ue *UntrustedError
				if !errors.As(err, &ue) || ue.Field != tt.field || ue.ChainID != 8453 {
					t.Fatalf("err = %v, want an *UntrustedError on %s of chain 8453", err, tt.field)
				}
				if key.Signed.Load() != 0 || len(g.submitted()) != 0 {
					t.Errorf("signed %d, submitted %v", key.Signed.Load(), g.submitted())
				}
			})
		}
	}
}

// TestPinnedDecimalsDecideTheAmount is attack 4 of issue 19 without a
// token pin: a gateway that lists the test USDC with 7 decimals and scales
// every amount with them gets nothing signed, because the SDK converts the
// caller's amounts with the registry's 6 and never reads the listing. The
// same holds for a pinned mainnet contract whose USDC the gateway lists
// with 9.
func TestPinnedDecimalsDecideTheAmount(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"Capture", "Refund"} {
		fc := flowByName(t, name)
		g, key, err := runFlow(t, fc, func(g *artGateway) { g.decimals = 7 })
		var ae *ArtifactError
		if !errors.As(err, &ae) || !strings.Contains(ae.Field, "amount") && ae.Field != "message.value" {
			t.Fatalf("%s, 7 decimals listed and used: err = %v, want an *ArtifactError on the amount", name, err)
		}
		if key.Signed.Load() != 0 || len(g.submitted()) != 0 {
			t.Errorf("%s: signed %d, submitted %v", name, key.Signed.Load(), g.submitted())
		}

		g = newArtGateway(t, fc.mode, fc.status)
		moveToBase(g, pinMine, pinBaseUSDC, 9)
		err = fc.run(context.Background(), g.client(g.payee, WithTrustedContracts(map[int64]string{8453: pinMine})))
		if !errors.As(err, &ae) || !strings.Contains(ae.Field, "amount") && ae.Field != "message.value" {
			t.Fatalf("%s on a pinned mainnet contract, USDC listed with 9 decimals: err = %v, want an *ArtifactError on the amount", name, err)
		}
		if g.payee.Signed.Load() != 0 || len(g.submitted()) != 0 {
			t.Errorf("%s on mainnet: signed %d, submitted %v", name, g.payee.Signed.Load(), g.submitted())
		}
	}

	// PayerSign of a payment Create asked 25.00 for, which the gateway
	// made 250.00 (a proxy rewrote the request) and whose token it lists
	// with 7 decimals: 25.00 is 25000000 with the registry's 6.
	g := newArtGateway(t, ModeAuthorize, StatusUnsigned)
	c := g.client(g.payer)
	ctx := context.Background()
	if _, err := c.Payments.Create(ctx, PaymentCreateParams{ChainID: artChain, Mode: ModeAuthorize, Amount: "25.00",
		Token: artToken, Payer: g.payer.Address(), Payee: g.payee.Address()}); err != nil {
		t.Fatal(err)
	}
	g.rewrite(func(p *PaymentDetail) { p.Amount = fmt.Sprint(10 * artAmount) })
	g.mu.Lock()
	g.decimals = 7
	g.mu.Unlock()
	_, err := c.Payments.PayerSign(ctx, artPayment, PaymentPayerSignParams{})
	var ae *ArtifactError
	if !errors.As(err, &ae) || ae.Field != "amount" || ae.Expected != "25000000" {
		t.Fatalf("PayerSign of 250.00 for 25.00: err = %v, want an *ArtifactError on the payment's amount, 25000000 expected", err)
	}
	if g.payer.Signed.Load() != 0 || len(g.submitted()) != 0 {
		t.Errorf("PayerSign: signed %d, submitted %v", g.payer.Signed.Load(), g.submitted())
	}
}

// TestChecksReadNoCatalog: the checks take nothing from GET /blockchains
// or GET /tokens. A flow sends neither, and VerifyPayload and
// VerifyTransaction send no request at all.
func TestChecksReadNoCatalog(t *testing.T) {
	t.Parallel()
	for _, fc := range flowCases {
		g, _, err := runFlow(t, fc, nil)
		if err != nil {
			t.Fatalf("%s: %v", fc.name, err)
		}
		g.mu.Lock()
		reads := g.catalogReads
		g.mu.Unlock()
		if reads != 0 {
			t.Errorf("%s read the gateway's catalog %d times", fc.name, reads)
		}
	}

	g := newArtGateway(t, ModeAuthorize, StatusPartiallyCaptured)
	p := *g.payment
	unsigned := mustJSON(t, g.txFields(OpCapture, PaymentPrepareParams{Amount: "1.00"}))
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		t.Errorf("a check sent %s %s", r.Method, r.URL.Path)
	}))
	defer srv.Close()
	c, err := NewClient(srv.URL, artPins())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Payments.VerifyTransaction(ctx, &p, Intent{Operation: OpCapture, Amount: "1.00"}, unsigned); err != nil {
		t.Errorf("VerifyTransaction: %v", err)
	}
	refund := g.payloadJSON(Intent{Operation: OpRefund, Amount: "4000000"})
	if _, err := c.Payments.VerifyPayload(ctx, &p, Intent{Operation: OpRefund, Amount: "4.00", Expect: Expectation{Payer: g.payer.Address()}}, refund); err != nil {
		t.Errorf("VerifyPayload: %v", err)
	}
	var ve *ValidationError
	if _, err := c.Payments.VerifyTransaction(ctx, nil, Intent{Operation: OpCapture}, unsigned); !errors.As(err, &ve) {
		t.Errorf("VerifyTransaction of no payment: %v, want a *ValidationError", err)
	}
}

// TestFeeBoundEndToEnd: on Base Sepolia a capture whose fee may reach
// 0.00328125 ETH (218,750 gas at 15 gwei), within the old one-size bound
// of 0.05, is refused by the chain's own 0.002 ETH; WithFeeCap raises it.
func TestFeeBoundEndToEnd(t *testing.T) {
	t.Parallel()
	fc := flowByName(t, "Capture")
	dear := tamperTx(func(tx map[string]any) { tx["max_fee_per_gas"] = "15000000000" })
	g, key, err := runFlow(t, fc, dear)
	var ae *ArtifactError
	if !errors.As(err, &ae) || ae.Field != "max_fee_per_gas" || !strings.Contains(ae.Expected, "0.002 ETH") || ae.Got != "0.00328125 ETH" {
		t.Fatalf("err = %v, want an *ArtifactError on max_fee_per_gas, 0.00328125 ETH against 0.002 ETH", err)
	}
	if key.Signed.Load() != 0 || len(g.submitted()) != 0 {
		t.Errorf("signed %d, submitted %v", key.Signed.Load(), g.submitted())
	}
	if _, _, err := runFlow(t, fc, dear, WithFeeCap(1_000_000, big.NewInt(5e16))); err != nil {
		t.Fatalf("under WithFeeCap(0.05 ETH): %v", err)
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
