package rail0

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rail0/rail0-go/internal/evmtest"
	"github.com/rail0/rail0-go/internal/verify"
	"github.com/rail0/rail0-go/internal/verifytest"
)

// This file is a small honest gateway for the flows: it builds every
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
