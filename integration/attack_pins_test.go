package integration_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0test"
	"github.com/rail0/rail0-go/signing"
)

// These are attacks 1 and 4 of issue 19, run end to end against rail0test
// through a proxy that lies consistently, the way a compromised gateway
// would: it rewrites requests on their way in, answers on their way out,
// and its own catalog (GET /blockchains, GET /tokens). With the SDK's
// defaults, with or without rail0test's pins, no attack gets a signature
// and no submit reaches the gateway.

// liar is a rewriting proxy in front of rail0test. Each hook reports
// whether it changed something; hits counts the changes.
type liar struct {
	*httptest.Server
	mu sync.Mutex
	// request rewrites the JSON body of a request ("METHOD path").
	request func(route string, body map[string]any) bool
	// response rewrites the JSON object of a 2xx answer.
	response func(route string, body map[string]any) bool
	// catalog answers a path itself (the proxy's own GET /tokens, ...).
	catalog map[string]any
	hits    int
}

func newLiar(t *testing.T, gw *rail0test.Server) *liar {
	l := &liar{}
	hook := func() (func(string, map[string]any) bool, func(string, map[string]any) bool) {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.request, l.response
	}
	rewrite := func(change func(string, map[string]any) bool, route string, body io.ReadCloser) ([]byte, error) {
		raw, err := drain(body)
		if err != nil || change == nil {
			return raw, err
		}
		var m map[string]any
		if json.Unmarshal(raw, &m) == nil && change(route, m) {
			raw, _ = json.Marshal(m)
			l.mu.Lock()
			l.hits++
			l.mu.Unlock()
		}
		return raw, nil
	}
	l.Server = newProxy(t, gw, proxyHooks{
		front: func(w http.ResponseWriter, r *http.Request) bool {
			l.mu.Lock()
			own, ok := l.catalog[r.URL.Path]
			l.mu.Unlock()
			if ok {
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(own)
			}
			return ok
		},
		in: func(r *http.Request) {
			req, _ := hook()
			if r.Body == nil || r.Body == http.NoBody {
				return
			}
			raw, err := rewrite(req, r.Method+" "+r.URL.Path, r.Body)
			if err != nil {
				t.Error(err)
			}
			r.Body, r.ContentLength = withBody(r.Header, raw)
		},
		out: func(resp *http.Response) error {
			_, res := hook()
			if resp.StatusCode >= 300 {
				return nil
			}
			raw, err := rewrite(res, resp.Request.Method+" "+resp.Request.URL.Path, resp.Body)
			if err != nil {
				return err
			}
			resp.Body, resp.ContentLength = withBody(resp.Header, raw)
			return nil
		},
	})
	return l
}

func (l *liar) lie(request, response func(string, map[string]any) bool, catalog map[string]any) {
	l.mu.Lock()
	l.request, l.response, l.catalog, l.hits = request, response, catalog, 0
	l.mu.Unlock()
}

func (l *liar) rewrites() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hits
}

// pinsWorld is rail0test, a liar in front of it, and the SDK clients of
// each configuration under attack: the defaults alone, and the defaults
// with rail0test's pins (srv.Pins), as tests and examples run.
type pinsWorld struct {
	t        *testing.T
	gw       *rail0test.Server
	liar     *liar
	direct   struct{ buyer, merchant *rail0.Client }
	ctx      context.Context
	buyerKey *signing.PrivateKeySigner
	merchKey *signing.PrivateKeySigner
}

func newPinsWorld(t *testing.T) *pinsWorld {
	w := &pinsWorld{t: t, ctx: context.Background()}
	w.gw = rail0test.NewServer(rail0test.WithoutRateLimits()) // confirmations at once
	t.Cleanup(w.gw.Close)
	w.liar = newLiar(t, w.gw)
	w.buyerKey, _ = signing.NewPrivateKeySigner(w.gw.Buyer.PrivateKey)
	w.merchKey, _ = signing.NewPrivateKeySigner(w.gw.Merchant.PrivateKey)
	w.direct.buyer, _ = w.gw.Client(rail0.WithSigner(w.buyerKey))
	w.direct.merchant, _ = w.gw.Client(rail0.WithSigner(w.merchKey))
	return w
}

// configs are the client configurations every attack runs against.
var configs = []struct {
	name string
	opts func(gw *rail0test.Server) []rail0.Option
}{
	{"defaults", func(*rail0test.Server) []rail0.Option { return nil }},
	{"defaults and rail0test's pins", func(gw *rail0test.Server) []rail0.Option { return []rail0.Option{gw.Pins()} }},
}

// viaLiar returns a client of key through the liar, signed in already, and
// its signer, whose count of signed digests starts at the attack
// (countingSigner, edges_gateway_test.go).
func (w *pinsWorld) viaLiar(key *signing.PrivateKeySigner, opts []rail0.Option) (*rail0.Client, *countingSigner) {
	w.t.Helper()
	cs := &countingSigner{PrivateKeySigner: key}
	c, err := rail0.NewClient(w.liar.URL, append([]rail0.Option{rail0.WithSigner(cs)}, opts...)...)
	if err != nil {
		w.t.Fatal(err)
	}
	if _, err := c.Session(w.ctx); err != nil {
		w.t.Fatal(err)
	}
	cs.messages.Store(0)
	return c, cs
}

// captured returns a payment of 100.00 USDC, authorized and captured for
// 50.00 through honest clients: 50.00 is refundable.
func (w *pinsWorld) captured() *rail0.PaymentDetail {
	w.t.Helper()
	e := escrow{gw: w.gw, payer: w.direct.buyer, payerAddress: w.gw.Buyer.Address, merchant: w.direct.merchant}
	p := e.authorized(w.t, "100.00")
	tx, err := w.direct.merchant.Payments.Capture(w.ctx, p.ID, rail0.PaymentCaptureParams{Amount: "50.00"})
	if err != nil {
		w.t.Fatal(err)
	}
	e.confirmed(w.t, p.ID, tx)
	got, err := w.direct.merchant.Payments.Get(w.ctx, p.ID)
	if err != nil {
		w.t.Fatal(err)
	}
	return got
}

// submits counts the submits (and payer signatures) of a payment that
// reached rail0test.
func (w *pinsWorld) submits(paymentID string) int {
	return w.gw.Ledger.CountFunc(func(e rail0test.Execution) bool {
		return e.PaymentID == paymentID && (e.Route == "PUT /payments/{id}/sign" ||
			e.Operation != "" && !strings.HasSuffix(e.Route, "/prepare"))
	})
}

// prepares counts the prepare requests of a payment that reached rail0test.
func (w *pinsWorld) prepares(paymentID string) int {
	return w.gw.Ledger.CountFunc(func(e rail0test.Execution) bool {
		return e.PaymentID == paymentID && strings.HasSuffix(e.Route, "/prepare")
	})
}

// forgeConfigHash is the config_hash a liar computes for the terms it made
// up, with go-ethereum, so that the lie is consistent.
func forgeConfigHash(t *testing.T, chainID int64, contract string, p map[string]any) common.Hash {
	t.Helper()
	num := func(k string) string { return strconv.FormatFloat(p[k].(float64), 'f', 0, 64) }
	paymentTypes := apitypes.Types{"Payment": {
		{Name: "payer", Type: "address"}, {Name: "payee", Type: "address"}, {Name: "token", Type: "address"},
		{Name: "amount", Type: "uint120"}, {Name: "authorizationExpiry", Type: "uint48"}, {Name: "refundExpiry", Type: "uint48"}}}
	td := typedData("Payment", paymentTypes,
		apitypes.TypedDataDomain{Name: "RAIL0", Version: "1.3.0", ChainId: math.NewHexOrDecimal256(chainID), VerifyingContract: contract},
		apitypes.TypedDataMessage{"payer": p["payer"], "payee": p["payee"], "token": p["token"], "amount": p["amount"],
			"authorizationExpiry": num("authorization_expiry"), "refundExpiry": num("refund_expiry")})
	digest, _, err := apitypes.TypedDataAndHash(td)
	if err != nil {
		t.Fatal(err)
	}
	return common.BytesToHash(digest)
}

// times multiplies a base-unit string.
func times(s any, by int64) string {
	n, _ := new(big.Int).SetString(s.(string), 10)
	return n.Mul(n, big.NewInt(by)).String()
}

// TestAttackChainSwapGetsNoSignature is attack 1: the liar says the payment
// lives on Base mainnet (8453), with its own contract and Base's USDC,
// which it lists with 9 decimals; the amounts, config_hash and refund
// payload are all consistent with that. Refund("4.00") would sign a
// ReceiveWithAuthorization of 4,000 USDC to the liar's contract. With the
// test chain's contract pinned (rail0test's pins) or nothing pinned at all,
// the chain has no trusted contract: refused before anything is prepared.
func TestAttackChainSwapGetsNoSignature(t *testing.T) {
	w := newPinsWorld(t)
	const (
		attacker = "0x00000000000000000000000000000000000A77AC"
		baseUSDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" // 6 decimals, listed with 9
	)
	// Honest first: through the liar telling no lie, a pinned refund works,
	// so the refusals below are the lie's doing.
	honest := w.captured()
	merchant, signer := w.viaLiar(w.merchKey, []rail0.Option{w.gw.Pins()})
	if _, err := merchant.Payments.Refund(w.ctx, honest.ID, rail0.PaymentRefundParams{Amount: "4.00", Expect: rail0.Expectation{Payer: w.gw.Buyer.Address}}); err != nil || int(signer.messages.Load()) != 2 || w.submits(honest.ID) != 4 {
		t.Fatalf("honest refund through the proxy: %v, %d signatures, %d submits", err, int(signer.messages.Load()), w.submits(honest.ID))
	}

	for _, cfg := range configs {
		t.Run(cfg.name, func(t *testing.T) {
			p := w.captured()
			prepared, submitted := w.prepares(p.ID), w.submits(p.ID)
			refundable := map[string]string{}
			w.liar.lie(nil, func(route string, body map[string]any) bool {
				switch {
				case route == "GET /payments/"+p.ID:
					body["chain_id"], body["rail0_contract"], body["token"] = 8453, attacker, baseUSDC
					for _, k := range []string{"amount", "capturable_amount", "refundable_amount"} {
						body[k] = times(body[k], 1000)
					}
					refundable["amount"] = body["refundable_amount"].(string)
					body["config_hash"] = forgeConfigHash(t, 8453, attacker, body).Hex()
					refundable["config_hash"] = body["config_hash"].(string)
					return true
				case route == "POST /payments/"+p.ID+"/refund/prepare" && body["signing_payload"] != nil:
					rid := common.HexToHash(p.Rail0ID)
					left, _ := new(big.Int).SetString(refundable["amount"], 10)
					nonce := crypto.Keccak256Hash(crypto.Keccak256([]byte("RAIL0.REFUND")), rid.Bytes(),
						common.HexToHash(refundable["config_hash"]).Bytes(), common.LeftPadBytes(left.Bytes(), 32))
					doc := body["signing_payload"].(map[string]any)
					doc["domain"] = map[string]any{"name": "USD Coin", "version": "2", "chainId": 8453, "verifyingContract": baseUSDC}
					m := doc["message"].(map[string]any)
					m["to"], m["value"], m["nonce"] = attacker, "4000000000", nonce.Hex() // 4,000 USDC
					return true
				}
				return false
			}, map[string]any{
				"/blockchains": []map[string]any{{"chain_id": w.gw.ChainID}, {"chain_id": 8453}},
				"/tokens": []map[string]any{{"chain_id": w.gw.ChainID, "address": w.gw.Token, "decimals": 6, "active": true},
					{"chain_id": 8453, "address": baseUSDC, "decimals": 9, "active": true}},
			})
			defer w.liar.lie(nil, nil, nil)
			merchant, signer := w.viaLiar(w.merchKey, cfg.opts(w.gw))
			_, err := merchant.Payments.Refund(w.ctx, p.ID, rail0.PaymentRefundParams{Amount: "4.00", Expect: rail0.Expectation{Payer: w.gw.Buyer.Address}})
			var ue *rail0.UntrustedError
			if !errors.As(err, &ue) || ue.Field != "chain_id" || ue.ChainID != 8453 || !strings.Contains(err.Error(), "WithTrustedContracts") {
				t.Fatalf("err = %v, want an *UntrustedError on chain 8453 naming WithTrustedContracts", err)
			}
			if w.liar.rewrites() == 0 {
				t.Fatal("the liar told no lie: the test proves nothing")
			}
			if n := int(signer.messages.Load()); n != 0 {
				t.Errorf("%d digests signed", n)
			}
			if n, m := w.prepares(p.ID)-prepared, w.submits(p.ID)-submitted; n != 0 || m != 0 {
				t.Errorf("%d prepares and %d submits reached the gateway; want none", n, m)
			}
		})
	}
}

// TestAttackDecimalsGetNoSignature is attack 4: the liar rewrites one
// request amount (25.00 to 250.00 on create, 4.00 to 40.00 on the refund's
// prepares) and lists the test USDC with 7 decimals, so that the amount
// asked for, converted with the listing, matches what the gateway built. The
// SDK converts with the registry's 6 decimals and never reads the listing:
// PayerSign signs nothing for a 25.00 order turned into 250.00, and
// Refund("4.00") signs no refund of 40.00.
func TestAttackDecimalsGetNoSignature(t *testing.T) {
	w := newPinsWorld(t)
	listing := map[string]any{
		"/tokens": []map[string]any{{"chain_id": w.gw.ChainID, "symbol": "USDC", "address": w.gw.Token, "decimals": 7, "active": true}},
	}
	tenfold := func(route string, body map[string]any) bool {
		switch {
		case route == "POST /payments" && body["amount"] == "25.00":
			body["amount"] = "250.00"
			return true
		case strings.HasSuffix(route, "/refund/prepare") && body["amount"] == "4.00":
			body["amount"] = "40.00"
			return true
		}
		return false
	}
	for _, cfg := range configs {
		t.Run(cfg.name+"/PayerSign", func(t *testing.T) {
			w.liar.lie(tenfold, nil, listing)
			defer w.liar.lie(nil, nil, nil)
			buyer, signer := w.viaLiar(w.buyerKey, cfg.opts(w.gw))
			p, err := buyer.Payments.Create(w.ctx, rail0.PaymentCreateParams{ChainID: w.gw.ChainID, Mode: rail0.ModeAuthorize,
				Amount: "25.00", Token: w.gw.Token, Payer: w.gw.Buyer.Address, Payee: w.gw.Merchant.Address})
			if err != nil {
				t.Fatal(err)
			}
			if p.Amount != "250000000" || w.liar.rewrites() == 0 {
				t.Fatalf("the liar's create made a payment of %s base units; want 250000000", p.Amount)
			}
			_, err = buyer.Payments.PayerSign(w.ctx, p.ID, rail0.PaymentPayerSignParams{})
			if !errors.Is(err, rail0.ErrArtifactMismatch) {
				t.Fatalf("PayerSign of 250.00 for a 25.00 order: %v, want a refusal", err)
			}
			var ae *rail0.ArtifactError
			var ue *rail0.UntrustedError
			switch {
			case errors.As(err, &ae):
				if ae.Field != "amount" || ae.Expected != "25000000" || ae.Got != "250000000" {
					t.Errorf("err = %v, want the amount refused, 25000000 against 250000000", err)
				}
			case !errors.As(err, &ue) || cfg.name != "defaults":
				t.Errorf("err = %v, want an *ArtifactError on the amount", err)
			}
			if n := int(signer.messages.Load()); n != 0 {
				t.Errorf("%d digests signed", n)
			}
			if n := w.submits(p.ID); n != 0 {
				t.Errorf("%d signatures or submits reached the gateway", n)
			}
		})
		t.Run(cfg.name+"/Refund", func(t *testing.T) {
			p := w.captured()
			w.liar.lie(tenfold, nil, listing)
			defer w.liar.lie(nil, nil, nil)
			merchant, signer := w.viaLiar(w.merchKey, cfg.opts(w.gw))
			_, err := merchant.Payments.Refund(w.ctx, p.ID, rail0.PaymentRefundParams{Amount: "4.00", Expect: rail0.Expectation{Payer: w.gw.Buyer.Address}})
			if !errors.Is(err, rail0.ErrArtifactMismatch) {
				t.Fatalf("Refund(4.00) prepared as 40.00: %v, want a refusal", err)
			}
			var ae *rail0.ArtifactError
			if cfg.name != "defaults" && (!errors.As(err, &ae) || ae.Field != "message.value" || ae.Expected != "4000000" || ae.Got != "40000000") {
				t.Errorf("err = %v, want the refund value refused, 4000000 against 40000000", err)
			}
			if cfg.name != "defaults" && w.liar.rewrites() == 0 {
				t.Fatal("the liar told no lie: the test proves nothing")
			}
			if n := int(signer.messages.Load()); n != 0 {
				t.Errorf("%d digests signed", n)
			}
			if n := w.submits(p.ID); n != 3 { // the payer's signature, authorize and capture
				t.Errorf("%d signatures and submits reached the gateway, want the 3 before the attack", n)
			}
		})
	}
}
