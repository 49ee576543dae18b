package rail0test

import (
	"bytes"
	"crypto/ecdsa"
	"encoding/json"
	"math/big"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"
)

// The tests below check rail0test's artifacts against the RAIL0 1.3.0 interface of
// README section 12.1 with go-ethereum's own ABI and EIP-712 code, written from
// the README's text rather than from rail0test's encoder.

// rail0ABI is the contract's eight functions as a JSON ABI.
func rail0ABI(t *testing.T) abi.ABI {
	t.Helper()
	const payment = `{"name":"p","type":"tuple","components":[{"name":"payer","type":"address"},` +
		`{"name":"payee","type":"address"},{"name":"token","type":"address"},{"name":"amount","type":"uint120"},` +
		`{"name":"authorizationExpiry","type":"uint48"},{"name":"refundExpiry","type":"uint48"}]}`
	const vrs = `,{"name":"v","type":"uint8"},{"name":"r","type":"bytes32"},{"name":"s","type":"bytes32"}`
	fn := func(name, extra string) string {
		return `{"type":"function","name":"` + name + `","stateMutability":"nonpayable","outputs":[],` +
			`"inputs":[{"name":"paymentId","type":"bytes32"},` + payment + extra + `]}`
	}
	amount := `,{"name":"amount","type":"uint256"}`
	reason := `,{"name":"reason","type":"bytes32"}`
	doc := "[" + strings.Join([]string{
		fn("authorize", vrs), fn("charge", vrs), fn("capture", amount), fn("void", ""), fn("release", ""),
		fn("refund", amount+vrs), fn("dispute", reason), fn("closeDispute", reason),
	}, ",") + "]"
	parsed, err := abi.JSON(strings.NewReader(doc))
	if err != nil {
		t.Fatalf("ABI: %v", err)
	}
	return parsed
}

func TestContractSelectorsKnownAnswer(t *testing.T) {
	const tuple = "(address,address,address,uint120,uint48,uint48)"
	parsed := rail0ABI(t)
	for _, c := range []struct {
		op, name, signature, selector string
	}{
		{opAuthorize, "authorize", "authorize(bytes32," + tuple + ",uint8,bytes32,bytes32)", "0xc36c951c"},
		{opCharge, "charge", "charge(bytes32," + tuple + ",uint8,bytes32,bytes32)", "0x1eddc5e5"},
		{opCapture, "capture", "capture(bytes32," + tuple + ",uint256)", "0x11bf1806"},
		{opVoid, "void", "void(bytes32," + tuple + ")", "0x69438554"},
		{opRelease, "release", "release(bytes32," + tuple + ")", "0x955b0ee2"},
		{opRefund, "refund", "refund(bytes32," + tuple + ",uint256,uint8,bytes32,bytes32)", "0xe8ed339d"},
		{opDispute, "dispute", "dispute(bytes32," + tuple + ",bytes32)", "0xeebaa720"},
		{opCloseDispute, "closeDispute", "closeDispute(bytes32," + tuple + ",bytes32)", "0x6e6923ab"},
	} {
		want := crypto.Keccak256([]byte(c.signature))[:4]
		got := functions[c.op].selector
		if !bytes.Equal(got[:], want) {
			t.Errorf("%s: selector %x, want %x (keccak256 of %s)", c.op, got, want, c.signature)
		}
		if hexutil.Encode(want) != c.selector {
			t.Errorf("%s: keccak256(%s)[:4] = %x, the table says %s", c.op, c.signature, want, c.selector)
		}
		m, ok := parsed.Methods[c.name]
		if !ok || m.Sig != c.signature || !bytes.Equal(m.ID, want) {
			t.Errorf("%s: go-ethereum's ABI has %q %x, want %q %x", c.op, m.Sig, m.ID, c.signature, want)
		}
	}
	if len(functions) != len(allOperations) {
		t.Errorf("%d contract functions for %d operations", len(functions), len(allOperations))
	}
}

// detailOf reads a payment detail.
func (h *harness) detailOf(token, id string) map[string]any {
	h.t.Helper()
	res := h.call("GET", "/payments/"+id, token, nil)
	expect(h.t, res, http.StatusOK, "")
	return res.json(h.t)
}

func num64(v any) int64 { return int64(v.(float64)) }

// sigParts splits a 0x signature r || s || v.
func sigParts(t *testing.T, sig string) (v uint8, r, s [32]byte) {
	t.Helper()
	b := common.FromHex(sig)
	if len(b) != 65 {
		t.Fatalf("signature %s is not 65 bytes", sig)
	}
	copy(r[:], b[:32])
	copy(s[:], b[32:64])
	return b[64], r, s
}

// checkPrepared decodes unsigned_transaction with go-ethereum's ABI and checks the
// envelope and the paymentId and Payment arguments against the payment detail p.
// It returns the decoded arguments.
func checkPrepared(t *testing.T, parsed abi.ABI, unsigned string, p map[string]any, name string, gas uint64) map[string]any {
	t.Helper()
	var u struct {
		ChainID  int64  `json:"chain_id"`
		To       string `json:"to"`
		Value    string `json:"value"`
		Data     string `json:"data"`
		GasLimit uint64 `json:"gas_limit"`
	}
	if err := json.Unmarshal([]byte(unsigned), &u); err != nil {
		t.Fatalf("unsigned_transaction: %v", err)
	}
	if u.ChainID != num64(p["chain_id"]) || !strings.EqualFold(u.To, p["rail0_contract"].(string)) || u.Value != "0" || u.GasLimit != gas {
		t.Errorf("%s: envelope %+v; want chain %v, to %v, value 0, gas %d", name, u, p["chain_id"], p["rail0_contract"], gas)
	}
	data := common.FromHex(u.Data)
	m, err := parsed.MethodById(data)
	if err != nil || m.Name != name {
		t.Fatalf("%s: calldata %x is not a call of %s: %v", name, data, name, err)
	}
	if want := 4 + 32*(1+6+len(m.Inputs)-2); len(data) != want {
		t.Errorf("%s: calldata of %d bytes, want %d (the static tuple inline)", name, len(data), want)
	}
	args := map[string]any{}
	if err := m.Inputs.UnpackIntoMap(args, data[4:]); err != nil {
		t.Fatalf("%s: unpack: %v", name, err)
	}
	if id := args["paymentId"].([32]byte); common.Hash(id) != common.HexToHash(p["rail0_id"].(string)) {
		t.Errorf("%s: paymentId %x, want rail0_id %v", name, id, p["rail0_id"])
	}
	tuple := reflect.ValueOf(args["p"])
	for field, want := range map[string]string{"Payer": "payer", "Payee": "payee", "Token": "token"} {
		if got := tuple.FieldByName(field).Interface().(common.Address); got != common.HexToAddress(p[want].(string)) {
			t.Errorf("%s: p.%s = %v, want %v", name, field, got, p[want])
		}
	}
	for field, want := range map[string]string{
		"Amount":              p["amount"].(string),
		"AuthorizationExpiry": strconv.FormatInt(num64(p["authorization_expiry"]), 10),
		"RefundExpiry":        strconv.FormatInt(num64(p["refund_expiry"]), 10),
	} {
		if got := tuple.FieldByName(field).Interface().(*big.Int); got.String() != want {
			t.Errorf("%s: p.%s = %v, want %s", name, field, got, want)
		}
	}
	return args
}

// checkVRS checks the v, r, s arguments of a call against a signature.
func checkVRS(t *testing.T, name string, args map[string]any, sig string) {
	t.Helper()
	v, r, s := sigParts(t, sig)
	if args["v"].(uint8) != v || args["r"].([32]byte) != r || args["s"].([32]byte) != s {
		t.Errorf("%s: v, r, s = %v %x %x, want %v %x %x", name, args["v"], args["r"], args["s"], v, r, s)
	}
}

// TestPreparedCallsDecodeWithTheContractABI walks every function of the contract
// through the gateway and decodes each prepared transaction with go-ethereum's
// ABI: the selector, paymentId, every field of the Payment tuple, the amount, the
// signatures and the dispute reasons. Every honest call then confirms on the
// simulated chain, which decodes it the same way.
func TestPreparedCallsDecodeWithTheContractABI(t *testing.T) {
	h := newHarness(t, WithSessionTTL(1000*time.Hour))
	parsed := rail0ABI(t)
	buyer, merchant := h.login(h.srv.Buyer), h.login(h.srv.Merchant)
	mk, bk := h.srv.Merchant.Key(), h.srv.Buyer.Key()

	prepare := func(token, id, route string, body any) string {
		t.Helper()
		res := h.call("POST", "/payments/"+id+"/"+route+"/prepare", token, body)
		if res.status != http.StatusCreated && res.status != http.StatusOK {
			t.Fatalf("prepare %s: %d %s", route, res.status, res.body)
		}
		return res.json(t)["unsigned_transaction"].(string)
	}
	submit := func(token, id, route, unsigned string, key *ecdsa.PrivateKey) {
		t.Helper()
		raw := signTx(t, key, unsigned)
		expect(t, h.call("POST", "/payments/"+id+"/"+route, token, map[string]string{"signed_transaction": raw}), http.StatusAccepted, "")
		h.clock.Advance(time.Second)
	}
	payerSign := func(mode, amount string) (string, string) {
		t.Helper()
		id := h.createPayment(buyer, mode, amount, false)
		sig := signTypedData(t, bk, h.detailOf(buyer, id)["signing_payload"])
		expect(t, h.call("PUT", "/payments/"+id+"/sign", buyer, map[string]string{"signature": sig}), http.StatusOK, "")
		return id, sig
	}

	// Escrow: authorize, capture, refund, dispute, close, release.
	a, aSig := payerSign("authorize", "25")
	p := h.detailOf(merchant, a)
	u := prepare(merchant, a, "authorize", nil)
	checkVRS(t, "authorize", checkPrepared(t, parsed, u, p, "authorize", 814_400), aSig)
	submit(merchant, a, "authorize", u, mk)

	u = prepare(merchant, a, "capture", map[string]any{"amount": "10"})
	if args := checkPrepared(t, parsed, u, p, "capture", 280_000); args["amount"].(*big.Int).String() != "10000000" {
		t.Errorf("capture amount = %v", args["amount"])
	}
	submit(merchant, a, "capture", u, mk)

	phase1 := h.call("POST", "/payments/"+a+"/refund/prepare", merchant, map[string]any{"amount": "4"})
	expect(t, phase1, http.StatusOK, "")
	refundSig := signTypedData(t, mk, phase1.json(t)["signing_payload"])
	u = prepare(merchant, a, "refund", map[string]any{"amount": "4", "signature": refundSig})
	args := checkPrepared(t, parsed, u, p, "refund", 331_200)
	if args["amount"].(*big.Int).String() != "4000000" {
		t.Errorf("refund amount = %v", args["amount"])
	}
	checkVRS(t, "refund", args, refundSig)
	submit(merchant, a, "refund", u, mk)

	for _, c := range []struct{ route, name, reason string }{
		{"dispute", "dispute", "0x" + strings.Repeat("ab", 32)},
		{"dispute/close", "closeDispute", "0x" + strings.Repeat("cd", 32)},
	} {
		u = prepare(buyer, a, c.route, map[string]any{"reason": c.reason})
		if got := checkPrepared(t, parsed, u, p, c.name, 68_800)["reason"].([32]byte); common.Hash(got) != common.HexToHash(c.reason) {
			t.Errorf("%s reason = %x, want %s", c.name, got, c.reason)
		}
		submit(buyer, a, c.route, u, bk)
	}

	h.clock.Set(time.Unix(num64(p["authorization_expiry"]), 0))
	u = prepare(buyer, a, "release", nil)
	checkPrepared(t, parsed, u, p, "release", 123_200)
	submit(buyer, a, "release", u, bk)
	after := h.detailOf(buyer, a)
	if after["capturable_amount"] != "0" || after["refundable_amount"] != "6000000" || after["disputed"] != false || after["last_error_code"] != nil {
		t.Fatalf("escrow after the walk = %v", after)
	}

	// Void, and a one-step charge.
	b, _ := payerSign("authorize", "2")
	u = prepare(merchant, b, "authorize", nil)
	submit(merchant, b, "authorize", u, mk)
	u = prepare(merchant, b, "void", nil)
	checkPrepared(t, parsed, u, h.detailOf(merchant, b), "void", 123_200)
	submit(merchant, b, "void", u, mk)

	c, cSig := payerSign("charge", "3.5")
	u = prepare(merchant, c, "charge", nil)
	checkVRS(t, "charge", checkPrepared(t, parsed, u, h.detailOf(merchant, c), "charge", 667_200), cSig)
	submit(merchant, c, "charge", u, mk)
	if s1, s2 := h.detailOf(buyer, b)["status"], h.detailOf(buyer, c)["status"]; s1 != "voided" || s2 != "charged" {
		t.Fatalf("statuses = %v, %v", s1, s2)
	}
}

// TestConfigHashIsTheEIP712DigestOfTheTerms checks config_hash against
// go-ethereum's EIP-712 implementation over the Payment struct, in the contract's
// domain, for both modes.
func TestConfigHashIsTheEIP712DigestOfTheTerms(t *testing.T) {
	h := newHarness(t)
	buyer := h.login(h.srv.Buyer)
	for _, mode := range []string{"authorize", "charge"} {
		p := h.detailOf(buyer, h.createPayment(buyer, mode, "25.5", false))
		td := apitypes.TypedData{
			Types: apitypes.Types{
				"EIP712Domain": {{Name: "name", Type: "string"}, {Name: "version", Type: "string"},
					{Name: "chainId", Type: "uint256"}, {Name: "verifyingContract", Type: "address"}},
				"Payment": {{Name: "payer", Type: "address"}, {Name: "payee", Type: "address"}, {Name: "token", Type: "address"},
					{Name: "amount", Type: "uint120"}, {Name: "authorizationExpiry", Type: "uint48"}, {Name: "refundExpiry", Type: "uint48"}},
			},
			PrimaryType: "Payment",
			Domain: apitypes.TypedDataDomain{Name: "RAIL0", Version: "1.3.0",
				ChainId: math.NewHexOrDecimal256(num64(p["chain_id"])), VerifyingContract: p["rail0_contract"].(string)},
			Message: apitypes.TypedDataMessage{
				"payer": p["payer"], "payee": p["payee"], "token": p["token"], "amount": p["amount"],
				"authorizationExpiry": strconv.FormatInt(num64(p["authorization_expiry"]), 10),
				"refundExpiry":        strconv.FormatInt(num64(p["refund_expiry"]), 10),
			},
		}
		want, _, err := apitypes.TypedDataAndHash(td)
		if err != nil {
			t.Fatal(err)
		}
		if got := p["config_hash"]; got != hexutil.Encode(want) {
			t.Errorf("%s: config_hash = %v, want %x", mode, got, want)
		}
	}
}

// abiEncode is abi.encode of 32-byte words and, last, an optional uint120.
func abiEncode(t *testing.T, words []common.Hash, last *big.Int) []byte {
	t.Helper()
	b32, _ := abi.NewType("bytes32", "", nil)
	u120, _ := abi.NewType("uint120", "", nil)
	var args abi.Arguments
	var vals []any
	for _, w := range words {
		args = append(args, abi.Argument{Type: b32})
		vals = append(vals, [32]byte(w))
	}
	if last != nil {
		args = append(args, abi.Argument{Type: u120})
		vals = append(vals, last)
	}
	out, err := args.Pack(vals...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkPayload checks an EIP-3009 signing_payload against what section 12.1 says
// it must be, the nonce included.
func checkPayload(t *testing.T, payload any, p map[string]any, primary, from, value string, validBefore any, nonce []byte) {
	t.Helper()
	raw, _ := json.Marshal(payload)
	var doc struct {
		PrimaryType string `json:"primaryType"`
		Domain      struct {
			ChainID           json.Number `json:"chainId"`
			VerifyingContract string      `json:"verifyingContract"`
		} `json:"domain"`
		Message map[string]any `json:"message"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	m := doc.Message
	if doc.PrimaryType != primary || doc.Domain.ChainID.String() != strconv.FormatInt(num64(p["chain_id"]), 10) ||
		!strings.EqualFold(doc.Domain.VerifyingContract, p["token"].(string)) ||
		!strings.EqualFold(m["from"].(string), from) || !strings.EqualFold(m["to"].(string), p["rail0_contract"].(string)) ||
		m["value"] != value || m["validAfter"] != "0" || m["validBefore"] != strconv.FormatInt(num64(validBefore), 10) {
		t.Errorf("%s payload = %s", primary, raw)
	}
	if m["nonce"] != hexutil.Encode(crypto.Keccak256(nonce)) {
		t.Errorf("%s nonce = %v, want keccak256(%x)", primary, m["nonce"], nonce)
	}
}

// TestAuthorizationNoncesKnownAnswer recomputes the payer's and the payee's
// EIP-3009 payloads, their nonces built with go-ethereum's ABI encoder.
func TestAuthorizationNoncesKnownAnswer(t *testing.T) {
	h := newHarness(t)
	buyer, merchant := h.login(h.srv.Buyer), h.login(h.srv.Merchant)
	tag := func(s string) common.Hash { return crypto.Keccak256Hash([]byte(s)) }
	for mode, label := range map[string]string{"authorize": "RAIL0.AUTHORIZE", "charge": "RAIL0.CHARGE"} {
		p := h.detailOf(buyer, h.createPayment(buyer, mode, "12", false))
		nonce := abiEncode(t, []common.Hash{tag(label), common.HexToHash(p["rail0_id"].(string)),
			common.HexToHash(p["config_hash"].(string))}, nil)
		checkPayload(t, p["signing_payload"], p, "TransferWithAuthorization", p["payer"].(string), "12000000",
			p["authorization_expiry"], nonce)
	}

	// Refund nonces bind the refundable balance before each refund.
	id := h.createPayment(buyer, "charge", "10", true)
	h.step(merchant, h.srv.Merchant.Key(), id, "charge", nil)
	for _, c := range []struct{ amount, base, before string }{{"4", "4000000", "10000000"}, {"3", "3000000", "6000000"}} {
		p := h.detailOf(merchant, id)
		if p["refundable_amount"] != c.before {
			t.Fatalf("refundable = %v, want %s", p["refundable_amount"], c.before)
		}
		res := h.call("POST", "/payments/"+id+"/refund/prepare", merchant, map[string]any{"amount": c.amount})
		expect(t, res, http.StatusOK, "")
		payload := res.json(t)["signing_payload"]
		before, _ := new(big.Int).SetString(c.before, 10)
		nonce := abiEncode(t, []common.Hash{tag("RAIL0.REFUND"), common.HexToHash(p["rail0_id"].(string)),
			common.HexToHash(p["config_hash"].(string))}, before)
		checkPayload(t, payload, p, "ReceiveWithAuthorization", p["payee"].(string), c.base, p["refund_expiry"], nonce)
		h.step(merchant, h.srv.Merchant.Key(), id, "refund",
			map[string]any{"amount": c.amount, "signature": signTypedData(t, h.srv.Merchant.Key(), payload)})
	}
}

// highS returns the malleable twin of a 27/28 signature: s' = n - s, v flipped.
// It recovers to the same address; only the low-s check tells them apart.
func highS(sig []byte) []byte {
	out := append([]byte(nil), sig...)
	s := new(big.Int).Sub(crypto.S256().Params().N, new(big.Int).SetBytes(sig[32:64]))
	copy(out[32:64], common.LeftPadBytes(s.Bytes(), 32))
	out[64] = 55 - sig[64]
	return out
}

func TestHighSSignaturesAreRefusedAtTheGateway(t *testing.T) {
	h := newHarness(t)
	buyer, merchant := h.login(h.srv.Buyer), h.login(h.srv.Merchant)
	id := h.createPayment(buyer, "charge", "5", false)
	payload := h.detailOf(buyer, id)["signing_payload"]
	sig := common.FromHex(signTypedData(t, h.srv.Buyer.Key(), payload))
	twin := highS(sig)
	raw, _ := json.Marshal(payload)
	var td apitypes.TypedData
	if err := json.Unmarshal(raw, &td); err != nil {
		t.Fatal(err)
	}
	digest, _, _ := apitypes.TypedDataAndHash(td)
	if got, err := recoverSigner(digest, hexutil.Encode(twin)); err != nil || got != common.HexToAddress(h.srv.Buyer.Address) {
		t.Fatalf("the twin recovers to %v (%v): the test would prove nothing", got, err)
	}
	expect(t, h.call("PUT", "/payments/"+id+"/sign", buyer, map[string]string{"signature": hexutil.Encode(twin)}),
		http.StatusUnprocessableEntity, "signer_mismatch")
	expect(t, h.call("PUT", "/payments/"+id+"/sign", buyer, map[string]string{"signature": hexutil.Encode(sig)}), http.StatusOK, "")

	h.step(merchant, h.srv.Merchant.Key(), id, "charge", nil)
	phase1 := h.call("POST", "/payments/"+id+"/refund/prepare", merchant, map[string]any{"amount": "1"})
	expect(t, phase1, http.StatusOK, "")
	refundSig := common.FromHex(signTypedData(t, h.srv.Merchant.Key(), phase1.json(t)["signing_payload"]))
	expect(t, h.call("POST", "/payments/"+id+"/refund/prepare", merchant,
		map[string]any{"amount": "1", "signature": hexutil.Encode(highS(refundSig))}), http.StatusUnprocessableEntity, "signer_mismatch")
	expect(t, h.call("POST", "/payments/"+id+"/refund/prepare", merchant,
		map[string]any{"amount": "1", "signature": hexutil.Encode(refundSig)}), http.StatusCreated, "")
}

// setArg overwrites argument word i of calldata (0 is paymentId, 1 to 6 the
// Payment tuple, then the function's own arguments).
func setArg(tx *types.DynamicFeeTx, i int, v []byte) {
	tx.Data = append([]byte(nil), tx.Data...)
	copy(tx.Data[4+32*i:4+32*i+32], common.LeftPadBytes(v, 32))
}

func bigBytes(s string) []byte {
	n, _ := new(big.Int).SetString(s, 10)
	return n.Bytes()
}

// withHighS replaces the v, r, s words starting at argument i with the high-s twin.
func withHighS(i int) func(*types.DynamicFeeTx) {
	return func(tx *types.DynamicFeeTx) {
		at := 4 + 32*i
		sig := append(append(append([]byte(nil), tx.Data[at+32:at+64]...), tx.Data[at+64:at+96]...), tx.Data[at+31])
		twin := highS(sig)
		setArg(tx, i, twin[64:])
		setArg(tx, i+1, twin[:32])
		setArg(tx, i+2, twin[32:64])
	}
}

// TestChainRefusesWhatTheContractWould signs and submits tampered versions of
// prepared transactions. What binds a raw transaction to the step (the contract,
// the function, the payment id) is refused at submit with 400; what the contract,
// the token or the EVM would refuse is mined as a failed row with the contract
// guide's code, and the payment does not move.
func TestChainRefusesWhatTheContractWould(t *testing.T) {
	h := newHarness(t, WithSessionTTL(24*365*time.Hour)) // the expiry cases move the clock by weeks
	buyer, merchant := h.login(h.srv.Buyer), h.login(h.srv.Merchant)
	mk := h.srv.Merchant.Key()
	other := common.HexToAddress("0x00000000000000000000000000000000000000e1")

	// prepared returns a payment ready for op and its prepared transaction: a
	// signed escrow for authorize, an authorized one for capture (of 4.00 of
	// 10.00), a charged one for refund (of 4.00 of 10.00, signed by the payee).
	prepared := func(h *harness, op string) (string, string) {
		t := h.t
		t.Helper()
		mode := "authorize"
		if op == opRefund {
			mode = "charge"
		}
		id := h.createPayment(buyer, mode, "10", true)
		var body map[string]any
		switch op {
		case opCapture:
			h.step(merchant, mk, id, "authorize", nil)
			body = map[string]any{"amount": "4"}
		case opRefund:
			h.step(merchant, mk, id, "charge", nil)
			res := h.call("POST", "/payments/"+id+"/refund/prepare", merchant, map[string]any{"amount": "4"})
			body = map[string]any{"amount": "4", "signature": signTypedData(t, mk, res.json(t)["signing_payload"])}
		}
		res := h.call("POST", "/payments/"+id+"/"+op+"/prepare", merchant, body)
		expect(t, res, http.StatusCreated, "")
		return id, res.json(t)["unsigned_transaction"].(string)
	}

	for _, c := range []struct {
		name   string
		op     string
		mutate func(*types.DynamicFeeTx)
		wait   time.Duration // between prepare and submit
		status int           // the submit's answer
		code   string        // the submit's code, or the failed row's
	}{
		{"tuple amount", opCapture, func(tx *types.DynamicFeeTx) { setArg(tx, 4, bigBytes("1000000000000")) }, 0, 202, "config_hash_mismatch"},
		{"tuple payee", opCapture, func(tx *types.DynamicFeeTx) { setArg(tx, 2, other.Bytes()) }, 0, 202, "config_hash_mismatch"},
		{"tuple refund expiry", opRefund, func(tx *types.DynamicFeeTx) { setArg(tx, 6, bigBytes("9999999999")) }, 0, 202, "config_hash_mismatch"},
		{"tuple authorization expiry", opAuthorize, func(tx *types.DynamicFeeTx) { setArg(tx, 5, bigBytes("9999999999")) }, 0, 202, "config_hash_mismatch"},
		{"capture amount 0", opCapture, func(tx *types.DynamicFeeTx) { setArg(tx, 7, nil) }, 0, 202, "invalid_amount"},
		{"capture above capturable", opCapture, func(tx *types.DynamicFeeTx) { setArg(tx, 7, bigBytes("10000001")) }, 0, 202, "amount_exceeds_capturable"},
		{"refund above refundable", opRefund, func(tx *types.DynamicFeeTx) { setArg(tx, 7, bigBytes("10000001")) }, 0, 202, "amount_exceeds_refundable"},
		{"refund amount not the one signed", opRefund, func(tx *types.DynamicFeeTx) { setArg(tx, 7, bigBytes("3000000")) }, 0, 202, "invalid_token_signature"},
		{"refund amount 0", opRefund, func(tx *types.DynamicFeeTx) { setArg(tx, 7, nil) }, 0, 202, "invalid_amount"},
		{"authorize high-s", opAuthorize, withHighS(7), 0, 202, "invalid_token_signature"},
		{"authorize v not 27 or 28", opAuthorize, func(tx *types.DynamicFeeTx) { setArg(tx, 7, []byte{tx.Data[4+32*7+31] - 27}) }, 0, 202, "invalid_token_signature"},
		{"refund high-s", opRefund, withHighS(8), 0, 202, "invalid_token_signature"},
		{"authorize after the authorization expiry", opAuthorize, nil, 8 * 24 * time.Hour, 202, "authorization_expired"},
		{"capture after the authorization expiry", opCapture, nil, 8 * 24 * time.Hour, 202, "authorization_expired"},
		{"refund after the refund expiry", opRefund, nil, 31 * 24 * time.Hour, 202, "refund_expired"},
		{"non-zero value", opCapture, func(tx *types.DynamicFeeTx) { tx.Value = big.NewInt(1) }, 0, 202, "revert"},
		{"authorize under the gas it spends", opAuthorize, func(tx *types.DynamicFeeTx) { tx.Gas = 120_000 }, 0, 202, "revert"},
		{"dirty address word", opCapture, func(tx *types.DynamicFeeTx) { tx.Data = append([]byte(nil), tx.Data...); tx.Data[4+32] = 1 }, 0, 202, "revert"},
		{"truncated calldata", opCapture, func(tx *types.DynamicFeeTx) { tx.Data = tx.Data[:len(tx.Data)-1] }, 0, 202, "revert"},
		{"another contract", opCapture, func(tx *types.DynamicFeeTx) { tx.To = &other }, 0, 400, "invalid_param"},
		{"unknown selector", opCapture, func(tx *types.DynamicFeeTx) { tx.Data = append([]byte{0xde, 0xad, 0xbe, 0xef}, tx.Data[4:]...) }, 0, 400, "invalid_param"},
		{"another step's function", opCapture, func(tx *types.DynamicFeeTx) {
			sel := functions[opVoid].selector
			tx.Data = append(sel[:], tx.Data[4:4+32*7]...)
		}, 0, 400, "invalid_param"},
		{"another payment's id", opCapture, func(tx *types.DynamicFeeTx) { setArg(tx, 0, other.Bytes()) }, 0, 400, "invalid_param"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &harness{t: t, srv: h.srv, clock: h.clock, doc: h.doc, router: h.router, errSch: h.errSch}
			id, unsigned := prepared(h, c.op)
			before := h.detailOf(merchant, id)
			h.clock.Advance(c.wait)
			raw := signTxWith(t, mk, unsigned, c.mutate)
			res := h.call("POST", "/payments/"+id+"/"+c.op, merchant, map[string]string{"signed_transaction": raw})
			if c.status != http.StatusAccepted {
				expect(t, res, c.status, c.code)
				return
			}
			expect(t, res, http.StatusAccepted, "")
			row := res.json(t)["id"]
			h.clock.Advance(time.Second)
			var got map[string]any
			for _, x := range h.call("GET", "/payments/"+id+"/transactions", merchant, nil).list(t) {
				if x["id"] == row {
					got = x
				}
			}
			if got["status"] != "failed" || got["error_code"] != c.code {
				t.Fatalf("row = %v %v, want failed %s", got["status"], got["error_code"], c.code)
			}
			after := h.detailOf(merchant, id)
			for _, k := range []string{"status", "capturable_amount", "refundable_amount"} {
				if after[k] != before[k] {
					t.Errorf("%s moved: %v -> %v", k, before[k], after[k])
				}
			}
			if after["last_error_code"] != c.code {
				t.Errorf("last_error_code = %v", after["last_error_code"])
			}
		})
	}
}

// TestAmountMustFitTheContractsUint120 checks creation refuses an amount the
// Payment struct cannot carry.
func TestAmountMustFitTheContractsUint120(t *testing.T) {
	h := newHarness(t)
	buyer := h.login(h.srv.Buyer)
	create := func(amount string) *result {
		return h.call("POST", "/payments", buyer, map[string]any{"chain_id": h.srv.ChainID, "mode": "authorize",
			"amount": amount, "token": h.srv.Token, "payer": h.srv.Buyer.Address, "payee": h.srv.Merchant.Address})
	}
	// 2^120 base units of a 6-decimal token, and one base unit less.
	expect(t, create("1329227995784915872903807060280.344576"), http.StatusUnprocessableEntity, "invalid_amount")
	res := create("1329227995784915872903807060280.344575")
	expect(t, res, http.StatusCreated, "")
	if got := res.json(t)["amount"]; got != new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 120), big.NewInt(1)).String() {
		t.Fatalf("amount = %v", got)
	}
}

// FuzzDecodeCall feeds the calldata decoder arbitrary bytes: it never panics, and
// what it accepts encodes back to the same words.
func FuzzDecodeCall(f *testing.F) {
	tm := terms{Payer: common.HexToAddress("0x01"), Payee: common.HexToAddress("0x02"), Token: common.HexToAddress("0x03"),
		Amount: big.NewInt(25_000_000), AuthExpiry: 1_789_985_700, RefundExpiry: 1_791_972_900}
	sig := append(bytes.Repeat([]byte{0x11}, 64), 27)
	for _, op := range allOperations {
		data := call{op: op, id: common.HexToHash("0xaa"), terms: tm, amount: big.NewInt(4), sig: sig,
			reason: common.HexToHash("0xbb")}.encode()
		f.Add(data)
		f.Add(data[:len(data)-1])
	}
	f.Add([]byte{0xde, 0xad, 0xbe, 0xef})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := decodeCall(data)
		if err != nil {
			return
		}
		if c.sig != nil && c.sig[64] < 27 {
			return // encode writes v as 27 or 28
		}
		if got := c.encode(); !bytes.Equal(got, data[:len(got)]) {
			t.Fatalf("decode then encode changed the calldata:\n%x\n%x", data, got)
		}
	})
}
