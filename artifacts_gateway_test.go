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

	"github.com/rail0/rail0-go/internal/evmtest"
)

// This file is a small honest gateway for the flows: it builds every
// artifact the way the RAIL0 contract guide (section 12.1) says, from one
// payment, and lets a test rewrite one field of an answer on its way out,
// like a hostile proxy. It records what the SDK submitted.

const (
	artChain    = 84532
	artToken    = "0x036cbd53842c5426634e7929541ec2318f3dcf7e"
	artContract = "0x7c1e3b52fa9d4c26e0a1f83b5d9e6a4c2b0f8e31"
	artOther    = "0x00000000000000000000000000000000000000aa"
	artPayment  = "p1"
	artAmount   = 25_000_000 // 25.00 of a 6-decimal token
	artAuthExp  = 1789985700
	artRefExp   = 1791972900
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
	rid := keccakString("payment p1")
	g.payment = &PaymentDetail{
		Payment: Payment{
			ID: artPayment, Rail0ID: rid.String(), Status: status, Mode: mode,
			Amount: fmt.Sprint(artAmount), CapturableAmount: "15000000", RefundableAmount: "10000000",
			Payer: g.payer.Address(), Payee: g.payee.Address(), Token: artToken,
			AuthorizationExpiry: artAuthExp, RefundExpiry: artRefExp,
		},
		ChainID: artChain, Rail0Contract: artContract,
	}
	tm := g.terms()
	g.payment.ConfigHash = tm.computeConfigHash().String()
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

func (g *artGateway) terms() *terms {
	g.mu.Lock()
	p := *g.payment
	g.mu.Unlock()
	p.ConfigHash = (word{}).String()
	t, err := decodeTerms(&p)
	if err != nil {
		g.t.Fatal(err)
	}
	return t
}

// authDigest is the payer's TransferWithAuthorization digest under the
// token domain "USDC"/"2".
func (g *artGateway) authDigest(mode PaymentMode) word {
	return g.authDigestFor(mode, "USDC", "2")
}

// authDigestUnder is authDigest of the payment's own mode under the token
// domain name and version.
func (g *artGateway) authDigestUnder(name, version string) word {
	return g.authDigestFor(g.payment.Mode, name, version)
}

func (g *artGateway) authDigestFor(mode PaymentMode, name, version string) word {
	t := g.terms()
	t.configHash = t.computeConfigHash()
	op := OpAuthorize
	if mode == ModeCharge {
		op = OpCharge
	}
	return authorizationDigest(t, "TransferWithAuthorization", name, version, t.payer, t.amount, t.authExpiry, t.nonce(op))
}

// payloadJSON builds the payer's payload (in.Operation empty) or a refund
// payload for in.Amount base units.
func (g *artGateway) payloadJSON(in Intent) json.RawMessage {
	t := g.terms()
	t.configHash = t.computeConfigHash()
	primary, from, value, before, nonce := "TransferWithAuthorization", t.payer, t.amount, t.authExpiry, t.nonce(OpAuthorize)
	if t.mode == ModeCharge {
		nonce = t.nonce(OpCharge)
	}
	if in.Operation == OpRefund {
		v, _ := new(big.Int).SetString(in.Amount, 10)
		primary, from, value, before, nonce = "ReceiveWithAuthorization", t.payee, v, t.refundExpiry, t.nonce(OpRefund)
	}
	doc := map[string]any{
		"types": map[string]any{
			"EIP712Domain": []map[string]string{{"name": "name", "type": "string"}, {"name": "version", "type": "string"},
				{"name": "chainId", "type": "uint256"}, {"name": "verifyingContract", "type": "address"}},
			primary: []map[string]string{{"name": "from", "type": "address"}, {"name": "to", "type": "address"},
				{"name": "value", "type": "uint256"}, {"name": "validAfter", "type": "uint256"},
				{"name": "validBefore", "type": "uint256"}, {"name": "nonce", "type": "bytes32"}},
		},
		"primaryType": primary,
		"domain":      map[string]any{"name": "USDC", "version": "2", "chainId": t.chainID.Int64(), "verifyingContract": t.token.String()},
		"message": map[string]any{"from": from.String(), "to": t.contract.String(), "value": value.String(),
			"validAfter": "0", "validBefore": fmt.Sprint(before), "nonce": nonce.String()},
	}
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
func (g *artGateway) txFields(op Operation, params PrepareParams) map[string]any {
	t := g.terms()
	sel := selector(op)
	data := append([]byte(nil), sel[:]...)
	words := []word{t.rail0ID}
	tw := t.words()
	words = append(words, tw[:]...)
	dec := func(h string) *big.Int {
		n, _ := new(big.Int).SetString(h, 10)
		return n
	}
	vrs := func(sig []byte) []word {
		return []word{u64Word(uint64(sig[64])), word(sig[:32]), word(sig[32:64])}
	}
	switch op {
	case OpAuthorize, OpCharge:
		words = append(words, vrs(g.payerSig)...)
	case OpCapture:
		base, _ := ToBaseUnits(params.Amount, g.tokenDecimals())
		words = append(words, uintWord(dec(base)))
	case OpRefund:
		base, _ := ToBaseUnits(params.Amount, g.tokenDecimals())
		sig, _ := hex.DecodeString(strings.TrimPrefix(params.Signature, "0x"))
		words = append(words, uintWord(dec(base)))
		words = append(words, vrs(sig)...)
	case OpDispute, OpCloseDispute:
		var r word
		if params.Reason != "" {
			r, _ = parseWord(params.Reason)
		}
		words = append(words, r)
	}
	for _, w := range words {
		data = append(data, w[:]...)
	}
	from := g.payee.Address()
	if op == OpDispute || op == OpCloseDispute {
		from = g.payer.Address()
	}
	if params.From != "" {
		from = params.From
	}
	return map[string]any{
		"chain_id": t.chainID.Int64(), "nonce": 7, "to": t.contract.String(), "value": "0", "data": "0x" + hex.EncodeToString(data),
		"gas_limit":                contractGas[op] * 5 / 4, // an honest estimate with a 25% margin
		"max_priority_fee_per_gas": "1000000", "max_fee_per_gas": "1500000000", "from": from,
	}
}

func (g *artGateway) serve(w http.ResponseWriter, r *http.Request) {
	reply := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	path := strings.TrimPrefix(r.URL.Path, "/")
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
	var body PrepareParams
	_ = json.NewDecoder(r.Body).Decode(&body)
	rest, ok := strings.CutPrefix(path, "payments/"+artPayment+"/")
	if !ok || r.Method != http.MethodPost && r.Method != http.MethodPut {
		reply(404, map[string]string{"code": "not_found"})
		return
	}
	if route, isPrepare := strings.CutSuffix(rest, "/prepare"); isPrepare {
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
		g.mu.Unlock()
		fields, status := g.txFields(op, body), http.StatusCreated
		if pending != nil {
			fields, status = pending, http.StatusOK
		}
		if tamper != nil {
			tamper(op, fields)
		}
		unsigned, _ := json.Marshal(fields)
		tx := map[string]any{"id": "tx-" + route, "payment_id": artPayment, "operation": op, "status": "pending",
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
	reply(202, map[string]any{"id": "tx-" + rest, "payment_id": artPayment, "operation": rest, "status": "submitted"})
}

// rewrite changes the payment the gateway serves from now on, keeping it
// consistent: its config_hash and signing payload follow the new terms.
func (g *artGateway) rewrite(change func(p *PaymentDetail)) {
	g.mu.Lock()
	change(g.payment)
	g.mu.Unlock()
	h := g.terms().computeConfigHash().String()
	g.mu.Lock()
	g.payment.ConfigHash = h
	g.mu.Unlock()
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
	c, err := NewClient(srv.URL, append([]Option{WithToken("t"), WithSigner(key)}, opts...)...)
	if err != nil {
		g.t.Fatal(err)
	}
	return c
}
