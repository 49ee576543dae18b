package verify_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rail0/rail0-go/internal/verify"
	"github.com/rail0/rail0-go/internal/verifytest"
)

// The registry's tests: every check refuses what it is for (one test row
// per check), every field an artifact carries has a row, checked or with
// the reason it is not, and a refusal is made only by a row. Adding a
// check is one function and one row in Checks, and one row below.

// refusal is one test row: refuse runs an artifact's check on an honest
// artifact with the row's field tampered with; the refusal must name
// field (the row's, unless set).
type refusal struct {
	field  string
	refuse func(t *testing.T) error
}

// rowKey names a row of the registry.
func rowKey(a verify.Artifact, field string) string { return string(a) + " / " + field }

// checkWorld is one honest instance of every artifact: the test payment
// (authorize mode, payer to payee), its checked terms, the client's pins
// and trust, and what each check compares an artifact with.
type checkWorld struct {
	payment *verify.Payment
	terms   *verify.Terms
	trust   *verify.Trust
	sig     []byte // the payer's signature of the payment's authorization, domain USDC 2
	digest  verify.Word
	hash    verify.Word // a submitted transaction's hash
}

func newCheckWorld(t *testing.T) *checkWorld {
	w := &checkWorld{payment: verifytest.Payment(verify.ModeAuthorize, payer.Address(), payee.Address())}
	w.terms = verifytest.Terms(w.payment)
	contract, _ := verify.ParseAddress(verifytest.Contract)
	tokenAddr, _ := verify.ParseAddress(verifytest.Token)
	w.trust = &verify.Trust{
		Pins: verify.NewPins(nil, nil, map[int64]verify.Address{verifytest.ChainID: contract},
			map[verify.TokenKey]int64{{ChainID: verifytest.ChainID, Token: tokenAddr}: verifytest.Decimals}),
		MaxFee:       big.NewInt(50_000_000_000_000_000),
		TokenDomains: map[verify.TokenKey][2]string{{ChainID: verifytest.ChainID, Token: tokenAddr}: {"USDC", "2"}},
	}
	w.digest = verifytest.PayerDigest(w.terms, "USDC", "2")
	var err error
	if w.sig, err = payer.SignDigest(context.Background(), w.digest); err != nil {
		t.Fatal(err)
	}
	if w.sig[64] < 27 {
		w.sig[64] += 27
	}
	w.hash = verify.KeccakString("the transaction sent")
	return w
}

// paymentWith is the test payment, changed.
func (w *checkWorld) paymentWith(change func(p *verify.Payment)) *verify.Payment {
	p := *w.payment
	change(&p)
	return &p
}

// termsWith are the test payment's terms, changed.
func (w *checkWorld) termsWith(change func(t *verify.Terms)) *verify.Terms {
	tm := *w.terms
	change(&tm)
	return &tm
}

// order checks the test payment against one expectation, named p1.
func (w *checkWorld) order(named string, e verify.Expectation) error {
	toBase := func(amount string) (string, error) {
		r, ok := new(big.Rat).SetString(amount)
		if !ok {
			return "", errors.New("not a decimal")
		}
		return new(big.Rat).Mul(r, big.NewRat(1_000_000, 1)).FloatString(0), nil
	}
	return verify.CheckOrder(w.payment, named, "", true, toBase, e)
}

// payload checks the payer's payload of the test payment, changed.
func (w *checkWorld) payload(t *testing.T, tm *verify.Terms, change func(doc map[string]any)) error {
	doc := verifytest.PayloadDoc(tm, nil)
	if change != nil {
		change(doc)
	}
	_, err := verify.CheckPayload(tm, verify.Intent{}, json.RawMessage(mustJSON(t, doc)))
	return err
}

func section(doc map[string]any, name string) map[string]any { return doc[name].(map[string]any) }

// tx checks the unsigned transaction of op on the test payment, changed:
// a capture of 1.00, the authorize carrying the payer's signature, or a
// dispute without a reason.
func (w *checkWorld) tx(t *testing.T, op string, change func(fields map[string]any)) error {
	in := verify.Intent{Operation: op, Signer: payee.Address()}
	var args []verify.Word
	switch op {
	case verify.OpCapture:
		in.Amount, args = "1000000", []verify.Word{verify.UintWord(big.NewInt(1_000_000))}
	case verify.OpAuthorize:
		args = verifytest.VRS(w.sig)
	case verify.OpDispute:
		in.Signer, args = payer.Address(), []verify.Word{{}}
	}
	fields := verifytest.TxFields(w.terms, op, args, in.Signer)
	if change != nil {
		change(fields)
	}
	_, err := verify.CheckTransaction(w.terms, in, mustJSON(t, fields), w.trust)
	return err
}

// word replaces the call's word i (after the selector) with v.
func word(i int, v verify.Word) func(map[string]any) {
	return func(fields map[string]any) {
		data, _ := hex.DecodeString(strings.TrimPrefix(fields["data"].(string), "0x"))
		copy(data[4+32*i:], v[:])
		fields["data"] = "0x" + hex.EncodeToString(data)
	}
}

func set(key string, v any) func(map[string]any) { return func(m map[string]any) { m[key] = v } }

// prepared checks the row a prepare of a capture of 1.00 answered with.
func prepared(change func(r *verify.Row)) error {
	amount := "1000000"
	row := verify.Row{ID: "t1", PaymentID: "p1", Operation: verify.OpCapture, Amount: &amount}
	if change != nil {
		change(&row)
	}
	sent := func(id string) string {
		if id == "t0" {
			return "confirmed on the payment already"
		}
		return ""
	}
	return verify.CheckPrepared(row, "p1", verify.OpCapture, "p1", "1000000", sent)
}

// answer checks the answer to a submit of the row prepared, t1.
func (w *checkWorld) answer(change func(r *verify.Row)) error {
	hash := w.hash.String()
	row := verify.Row{ID: "t1", PaymentID: "p1", Operation: verify.OpCapture, Hash: &hash}
	if change != nil {
		change(&row)
	}
	return verify.CheckSubmitAnswer(row, verify.OpCapture, w.hash, verify.Prepared{ID: "t1", PaymentID: "p1"})
}

// onFile checks the test payment read back signed, named p1, for the
// payer's signature sig.
func (w *checkWorld) onFile(named string, read verify.OnFile, sig []byte) error {
	if read.Terms == nil {
		read.Terms = w.terms
	}
	return verify.CheckSignatureOnFile(named, w.terms, read, "0x"+hex.EncodeToString(sig), &w.digest, "")
}

// submitted finds the row sent among the rows of the payment named.
func (w *checkWorld) submitted(named string, hash verify.Word) error {
	h := hash.String()
	rows := []verify.Row{{ID: "t0", Operation: verify.OpCapture}, {ID: "t1", Operation: verify.OpCapture, Hash: &h}}
	_, err := verify.FindSubmitted(named, "p1", w.payment.Rail0ID, rows, verify.OpCapture, w.hash)
	return err
}

// refusals is one test row per check of the registry.
func refusals(w *checkWorld) map[string][]refusal {
	other := verifytest.Other
	otherWord := verify.KeccakString("another")
	high := new(big.Int).Sub(secp256k1N, big.NewInt(1))
	terms := func(change func(p *verify.Payment)) refusal {
		return refusal{refuse: func(*testing.T) error { _, err := verify.DecodeTerms(w.paymentWith(change)); return err }}
	}
	pins := func(chainID int64, contract, tokenAddr string) refusal {
		return refusal{refuse: func(*testing.T) error {
			_, err := w.trust.Pins.Anchor(verifytest.TermsAt(chainID, contract, tokenAddr))
			return err
		}}
	}
	order := func(named string, e verify.Expectation) refusal {
		return refusal{refuse: func(*testing.T) error { return w.order(named, e) }}
	}
	now := time.Unix(verifytest.AuthExpiry-7*24*3600, 0)
	expiries := func(b verify.ExpiryBounds) refusal {
		return refusal{refuse: func(*testing.T) error { return verify.CheckExpiries(w.terms, now, b) }}
	}
	payload := func(change func(doc map[string]any)) refusal {
		return refusal{refuse: func(t *testing.T) error { return w.payload(t, w.terms, change) }}
	}
	message := func(field string, v any) refusal {
		return payload(func(doc map[string]any) { section(doc, "message")[field] = v })
	}
	domain := func(field string, v any) refusal {
		return payload(func(doc map[string]any) { section(doc, "domain")[field] = v })
	}
	tx := func(op string, change func(map[string]any)) refusal {
		return refusal{refuse: func(t *testing.T) error { return w.tx(t, op, change) }}
	}
	row := func(change func(r *verify.Row)) refusal {
		return refusal{refuse: func(*testing.T) error { return prepared(change) }}
	}
	answer := func(change func(r *verify.Row)) refusal {
		return refusal{refuse: func(*testing.T) error { return w.answer(change) }}
	}
	onFile := func(named string, read verify.OnFile, sig []byte) refusal {
		return refusal{refuse: func(*testing.T) error { return w.onFile(named, read, sig) }}
	}
	signer := func(sig []byte, want string) refusal {
		return refusal{refuse: func(*testing.T) error {
			a, _ := verify.ParseAddress(want)
			_, err := verify.CheckSignerAnswer(sig, w.digest, a)
			return err
		}}
	}
	highS := append([]byte(nil), w.sig...)
	twin := verify.UintWord(new(big.Int).Sub(secp256k1N, new(big.Int).SetBytes(w.sig[32:64])))
	copy(highS[32:64], twin[:])
	payeeSig, _ := payee.SignDigest(context.Background(), w.digest)
	signed := verify.OnFile{Status: "signed", SignedAt: true}
	withField := func(field string, r refusal) refusal { r.field = field; return r }

	return map[string][]refusal{
		rowKey(verify.ArtTerms, "payee"):                {terms(func(p *verify.Payment) { p.Payee = p.Payer })},
		rowKey(verify.ArtTerms, "amount"):               {terms(func(p *verify.Payment) { p.Amount, p.CapturableAmount, p.RefundableAmount = "0", "0", "0" })},
		rowKey(verify.ArtTerms, "authorization_expiry"): {terms(func(p *verify.Payment) { p.AuthorizationExpiry = p.RefundExpiry + 1 })},
		rowKey(verify.ArtTerms, "capturable_amount"):    {terms(func(p *verify.Payment) { p.CapturableAmount = "25000001" })},
		rowKey(verify.ArtTerms, "refundable_amount"):    {terms(func(p *verify.Payment) { p.RefundableAmount = "25000001" })},

		rowKey(verify.ArtPins, "chain_id"):       {pins(7, verifytest.Contract, verifytest.Token)},
		rowKey(verify.ArtPins, "rail0_contract"): {pins(verifytest.ChainID, other, verifytest.Token)},
		rowKey(verify.ArtPins, "token"):          {pins(verifytest.ChainID, verifytest.Contract, other)},

		rowKey(verify.ArtPayment, "config_hash"): {{refuse: func(*testing.T) error {
			return verify.CheckTerms(w.termsWith(func(t *verify.Terms) { t.ConfigHash = otherWord }), w.trust)
		}}},

		rowKey(verify.ArtOrder, "id"):                   {order("p2", verify.Expectation{}), withField("rail0_id", order(otherWord.String(), verify.Expectation{}))},
		rowKey(verify.ArtOrder, "rail0_id"):             {order("p1", verify.Expectation{Rail0ID: otherWord.String()})},
		rowKey(verify.ArtOrder, "chain_id"):             {order("p1", verify.Expectation{ChainID: 1})},
		rowKey(verify.ArtOrder, "mode"):                 {order("p1", verify.Expectation{Mode: verify.ModeCharge})},
		rowKey(verify.ArtOrder, "token"):                {order("p1", verify.Expectation{Token: other})},
		rowKey(verify.ArtOrder, "payer"):                {order("p1", verify.Expectation{Payer: other})},
		rowKey(verify.ArtOrder, "payee"):                {order("p1", verify.Expectation{Payee: other})},
		rowKey(verify.ArtOrder, "authorization_expiry"): {order("p1", verify.Expectation{LatestAuthorizationExpiry: time.Unix(verifytest.AuthExpiry-1, 0)})},
		rowKey(verify.ArtOrder, "refund_expiry"):        {order("p1", verify.Expectation{EarliestRefund: time.Unix(verifytest.RefundExpiry+1, 0)})},
		rowKey(verify.ArtOrder, "amount"):               {order("p1", verify.Expectation{Amount: "26.00"})},

		rowKey(verify.ArtExpiries, "authorization_expiry"): {expiries(verify.ExpiryBounds{MaxAuthorization: 24 * time.Hour, MinRefund: time.Hour, MaxRefund: 1000 * 24 * time.Hour})},
		rowKey(verify.ArtExpiries, "refund_expiry"): {
			expiries(verify.ExpiryBounds{MaxAuthorization: 1000 * 24 * time.Hour, MinRefund: 100 * 24 * time.Hour, MaxRefund: 1000 * 24 * time.Hour}),
			expiries(verify.ExpiryBounds{MaxAuthorization: 1000 * 24 * time.Hour, MinRefund: time.Hour, MaxRefund: 24 * time.Hour}),
		},

		rowKey(verify.ArtPayload, "mode"): {{refuse: func(t *testing.T) error {
			return w.payload(t, w.termsWith(func(t *verify.Terms) { t.Mode = "installments" }), nil)
		}}},
		rowKey(verify.ArtPayload, "primaryType"):        {payload(set("primaryType", "Permit"))},
		rowKey(verify.ArtPayload, "types.EIP712Domain"): {payload(func(doc map[string]any) { section(doc, "types")["EIP712Domain"] = []any{} })},
		rowKey(verify.ArtPayload, "types.<primaryType>"): {withField("types.TransferWithAuthorization",
			payload(func(doc map[string]any) { delete(section(doc, "types"), "TransferWithAuthorization") }))},
		rowKey(verify.ArtPayload, "domain"):                   {payload(func(doc map[string]any) { delete(section(doc, "domain"), "version") })},
		rowKey(verify.ArtPayload, "domain.name"):              {domain("name", 1)},
		rowKey(verify.ArtPayload, "domain.version"):           {domain("version", 2)},
		rowKey(verify.ArtPayload, "domain.chainId"):           {domain("chainId", 1)},
		rowKey(verify.ArtPayload, "domain.verifyingContract"): {domain("verifyingContract", other)},
		rowKey(verify.ArtPayload, "message"):                  {payload(func(doc map[string]any) { delete(section(doc, "message"), "nonce") })},
		rowKey(verify.ArtPayload, "message.from"):             {message("from", other)},
		rowKey(verify.ArtPayload, "message.to"):               {message("to", other)},
		rowKey(verify.ArtPayload, "message.value"):            {message("value", "1000000000000")},
		rowKey(verify.ArtPayload, "message.validAfter"):       {message("validAfter", "1")},
		rowKey(verify.ArtPayload, "message.validBefore"):      {message("validBefore", "99999999999")},
		rowKey(verify.ArtPayload, "message.nonce"):            {message("nonce", otherWord.String())},

		rowKey(verify.ArtPreparedRow, "id"): {
			row(func(r *verify.Row) { r.ID = "t0" }),
			row(func(r *verify.Row) { r.ID = strings.Repeat("7", 65) }),
		},
		rowKey(verify.ArtPreparedRow, "operation"):  {row(func(r *verify.Row) { r.Operation = verify.OpVoid })},
		rowKey(verify.ArtPreparedRow, "payment_id"): {row(func(r *verify.Row) { r.PaymentID = "p2" })},
		rowKey(verify.ArtPreparedRow, "amount"):     {row(func(r *verify.Row) { a := "20000000"; r.Amount = &a })},

		rowKey(verify.ArtUnsignedTx, "nonce"):                    {tx(verify.OpCapture, set("nonce", "18446744073709551615"))},
		rowKey(verify.ArtUnsignedTx, "chain_id"):                 {tx(verify.OpCapture, set("chain_id", 1))},
		rowKey(verify.ArtUnsignedTx, "to"):                       {tx(verify.OpCapture, set("to", verifytest.Token))},
		rowKey(verify.ArtUnsignedTx, "value"):                    {tx(verify.OpCapture, set("value", "1"))},
		rowKey(verify.ArtUnsignedTx, "from"):                     {tx(verify.OpCapture, set("from", other))},
		rowKey(verify.ArtUnsignedTx, "gas_limit"):                {tx(verify.OpCapture, set("gas_limit", 0)), tx(verify.OpCapture, set("gas_limit", 350_001))},
		rowKey(verify.ArtUnsignedTx, "max_priority_fee_per_gas"): {tx(verify.OpCapture, set("max_priority_fee_per_gas", "1500000001"))},
		rowKey(verify.ArtUnsignedTx, "max_fee_per_gas"):          {tx(verify.OpCapture, set("max_fee_per_gas", "1000000000000"))},
		rowKey(verify.ArtUnsignedTx, "data.selector"):            {tx(verify.OpCapture, set("data", "0xa9059cbb"))},
		rowKey(verify.ArtUnsignedTx, "data"): {tx(verify.OpCapture, func(f map[string]any) {
			f["data"] = f["data"].(string) + strings.Repeat("00", 32)
		})},
		rowKey(verify.ArtUnsignedTx, "data.paymentId"):             {tx(verify.OpCapture, word(0, otherWord))},
		rowKey(verify.ArtUnsignedTx, "data.p.payer"):               {tx(verify.OpCapture, word(1, otherWord))},
		rowKey(verify.ArtUnsignedTx, "data.p.payee"):               {tx(verify.OpCapture, word(2, otherWord))},
		rowKey(verify.ArtUnsignedTx, "data.p.token"):               {tx(verify.OpCapture, word(3, otherWord))},
		rowKey(verify.ArtUnsignedTx, "data.p.amount"):              {tx(verify.OpCapture, word(4, verify.U64Word(26_000_000)))},
		rowKey(verify.ArtUnsignedTx, "data.p.authorizationExpiry"): {tx(verify.OpCapture, word(5, verify.U64Word(verifytest.AuthExpiry+1)))},
		rowKey(verify.ArtUnsignedTx, "data.p.refundExpiry"):        {tx(verify.OpCapture, word(6, verify.U64Word(verifytest.RefundExpiry+1)))},
		rowKey(verify.ArtUnsignedTx, "data.amount"):                {tx(verify.OpCapture, word(7, verify.U64Word(10_000_000)))},
		rowKey(verify.ArtUnsignedTx, "data.reason"):                {tx(verify.OpDispute, word(7, otherWord))},
		rowKey(verify.ArtUnsignedTx, "data.v"):                     {tx(verify.OpAuthorize, word(7, verify.U64Word(29)))},
		rowKey(verify.ArtUnsignedTx, "data.s"):                     {tx(verify.OpAuthorize, word(9, verify.UintWord(high)))},
		rowKey(verify.ArtUnsignedTx, "data.r"):                     {tx(verify.OpAuthorize, word(8, otherWord))},

		rowKey(verify.ArtSignerAnswer, "length"): {signer(w.sig[:64], payer.Address())},
		rowKey(verify.ArtSignerAnswer, "s"):      {signer(highS, payer.Address())},
		rowKey(verify.ArtSignerAnswer, "signer"): {signer(w.sig, payee.Address())},

		rowKey(verify.ArtSubmitAnswer, "id"): {
			answer(func(r *verify.Row) { r.ID = "" }),
			answer(func(r *verify.Row) { r.ID = "t0" }),
		},
		rowKey(verify.ArtSubmitAnswer, "operation"):        {answer(func(r *verify.Row) { r.Operation = verify.OpVoid })},
		rowKey(verify.ArtSubmitAnswer, "payment_id"):       {answer(func(r *verify.Row) { r.PaymentID = "p2" })},
		rowKey(verify.ArtSubmitAnswer, "transaction_hash"): {answer(func(r *verify.Row) { h := otherWord.String(); r.Hash = &h })},

		rowKey(verify.ArtPaymentAnswer, "id"): {
			{refuse: func(*testing.T) error {
				return verify.CheckPaymentAnswer(verify.PaymentAnswer{Rail0ID: w.payment.Rail0ID}, "")
			}},
			{refuse: func(*testing.T) error {
				return verify.CheckPaymentAnswer(verify.PaymentAnswer{ID: "p2", Rail0ID: otherWord.String()}, "p1")
			}},
		},
		rowKey(verify.ArtPaymentAnswer, "rail0_id"): {{refuse: func(*testing.T) error {
			return verify.CheckPaymentAnswer(verify.PaymentAnswer{ID: "p1", Rail0ID: "0x1234"}, "")
		}}},

		rowKey(verify.ArtSignatureOnFile, "id"): {onFile("p2", signed, w.sig)},
		rowKey(verify.ArtSignatureOnFile, "rail0_id"): {onFile(otherWord.String(), verify.OnFile{Status: "signed", SignedAt: true,
			Terms: w.termsWith(func(t *verify.Terms) { t.Rail0ID = otherWord })}, w.sig)},
		rowKey(verify.ArtSignatureOnFile, "config_hash"): {onFile("p1", verify.OnFile{Status: "signed", SignedAt: true,
			Terms: w.termsWith(func(t *verify.Terms) { t.ConfigHash = otherWord })}, w.sig)},
		rowKey(verify.ArtSignatureOnFile, "mode"): {onFile("p1", verify.OnFile{Status: "signed", SignedAt: true,
			Terms: w.termsWith(func(t *verify.Terms) { t.Mode = verify.ModeCharge })}, w.sig)},
		rowKey(verify.ArtSignatureOnFile, "status"): {
			onFile("p1", verify.OnFile{Status: "unsigned", SignedAt: true}, w.sig),
			onFile("p1", verify.OnFile{Status: "signed"}, w.sig),
		},
		rowKey(verify.ArtSignatureOnFile, "signature"): {
			onFile("p1", signed, payeeSig),
			onFile("p1", signed, highS),
			onFile("p1", signed, w.sig[:64]),
			{refuse: func(*testing.T) error {
				return verify.CheckSignatureOnFile("p1", w.terms, verify.OnFile{Terms: w.terms, Status: "signed", SignedAt: true},
					"0x"+hex.EncodeToString(w.sig), nil, "no digest")
			}},
		},

		rowKey(verify.ArtSubmittedRow, "id"):           {{refuse: func(*testing.T) error { return w.submitted("p2", w.hash) }}},
		rowKey(verify.ArtSubmittedRow, "transactions"): {{refuse: func(*testing.T) error { return w.submitted("p1", otherWord) }}},

		rowKey(verify.ArtAwaitedRow, "transaction_hash"): {
			{refuse: func(*testing.T) error {
				h := otherWord.String()
				return verify.CheckAwaitedRow(verify.Row{ID: "t1", Status: "submitted", Hash: &h}, w.hash)
			}},
			{refuse: func(*testing.T) error {
				return verify.CheckAwaitedRow(verify.Row{ID: "t1", Status: "confirmed"}, w.hash)
			}},
		},
	}
}

// secp256k1N is the order of secp256k1's group.
var secp256k1N, _ = new(big.Int).SetString("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141", 16)

// honest runs every artifact's check on the honest instance, which each
// must accept: a refusal below is then the tampered field's.
func honest(t *testing.T, w *checkWorld) map[verify.Artifact]error {
	first := func(_ any, err error) error { return err }
	return map[verify.Artifact]error{
		verify.ArtTerms:       first(verify.DecodeTerms(w.payment)),
		verify.ArtPins:        first(w.trust.Pins.Anchor(w.terms)),
		verify.ArtPayment:     verify.CheckTerms(w.termsWith(func(*verify.Terms) {}), w.trust),
		verify.ArtOrder:       w.order("p1", verify.Expectation{Rail0ID: w.payment.Rail0ID, ChainID: verifytest.ChainID, Mode: verify.ModeAuthorize, Token: verifytest.Token, Payer: payer.Address(), Payee: payee.Address(), Amount: "25.00", LatestAuthorizationExpiry: time.Unix(verifytest.AuthExpiry, 0), EarliestRefund: time.Unix(verifytest.RefundExpiry, 0)}),
		verify.ArtExpiries:    verify.CheckExpiries(w.terms, time.Unix(verifytest.AuthExpiry-7*24*3600, 0), verify.DefaultExpiryBounds),
		verify.ArtPayload:     w.payload(t, w.terms, nil),
		verify.ArtPreparedRow: prepared(nil),
		verify.ArtUnsignedTx: errors.Join(w.tx(t, verify.OpCapture, nil), w.tx(t, verify.OpAuthorize, nil),
			w.tx(t, verify.OpDispute, nil), w.tx(t, verify.OpVoid, nil)),
		verify.ArtSignerAnswer: first(verify.CheckSignerAnswer(w.sig, w.digest, mustAddress(payer.Address()))),
		verify.ArtSubmitAnswer: w.answer(nil),
		verify.ArtPaymentAnswer: errors.Join(verify.CheckPaymentAnswer(verify.PaymentAnswer{ID: "p1", Rail0ID: w.payment.Rail0ID}, ""),
			verify.CheckPaymentAnswer(verify.PaymentAnswer{ID: "P1"}, "p1"), verify.CheckPaymentAnswer(verify.PaymentAnswer{ID: "p1", Rail0ID: w.payment.Rail0ID}, w.payment.Rail0ID)),
		verify.ArtSignatureOnFile: w.onFile("p1", verify.OnFile{Status: "authorized", SignedAt: true}, w.sig),
		verify.ArtSubmittedRow:    w.submitted("p1", w.hash),
		verify.ArtAwaitedRow: errors.Join(verify.CheckAwaitedRow(verify.Row{ID: "t1", Status: "submitted"}, w.hash),
			verify.CheckAwaitedRow(verify.Row{ID: "t1", Status: "confirmed", Hash: ptr(w.hash.String())}, w.hash)),
	}
}

func ptr(s string) *string { return &s }

func mustAddress(s string) verify.Address {
	a, err := verify.ParseAddress(s)
	if err != nil {
		panic(err)
	}
	return a
}

// refusedField is the field a refusal names.
func refusedField(err error) (string, bool) {
	var m *verify.Mismatch
	var u *verify.Untrusted
	switch {
	case errors.As(err, &m):
		return m.Field, true
	case errors.As(err, &u):
		return u.Field, true
	}
	return "", false
}

// TestEveryCheckRefuses: each check of the registry has a test row here,
// and each test row a check; the honest artifacts pass every check, and
// each test row's artifact, tampered at the row's field, is refused naming
// that field. A row dropped from Checks, or a check that stops refusing,
// fails here.
func TestEveryCheckRefuses(t *testing.T) {
	t.Parallel()
	w := newCheckWorld(t)
	for a, err := range honest(t, w) {
		if err != nil {
			t.Errorf("the honest %s is refused: %v", a, err)
		}
	}
	cases := refusals(w)
	rows := map[string]bool{}
	for _, c := range verify.Checks {
		if c.Run == nil {
			continue
		}
		key := rowKey(c.Artifact, c.Field)
		rows[key] = true
		if _, ok := cases[key]; !ok {
			t.Errorf("the check %s has no test row in refusals", key)
		}
	}
	for key, rs := range cases {
		if !rows[key] {
			t.Errorf("the test row %s has no check in verify.Checks", key)
			continue
		}
		want := key[strings.LastIndex(key, " / ")+3:]
		for i, r := range rs {
			err := r.refuse(t)
			field := want
			if r.field != "" {
				field = r.field
			}
			if got, ok := refusedField(err); !ok || got != field {
				t.Errorf("%s (case %d): %v, want a refusal of %s", key, i, err, field)
			}
		}
	}
}

// TestEveryFieldHasARow: every field the contract's artifacts carry has a
// row of the registry, checked or with the reason it is not: the payment's
// and a transaction row's fields as the contract's schemas list them
// (testdata/openapi.json), the signing payload's and the unsigned
// transaction's as section 12 of the contract guide lists them, the call's
// arguments as 12.1's function table names them. Every row either checks
// or says why not, and no row is listed twice.
func TestEveryFieldHasARow(t *testing.T) {
	t.Parallel()
	fields := map[verify.Artifact]map[string]bool{}
	seen := map[string]bool{}
	for _, c := range verify.Checks {
		key := rowKey(c.Artifact, c.Field)
		if seen[key] {
			t.Errorf("%s is listed twice", key)
		}
		seen[key] = true
		if (c.Run == nil) == (c.Why == "") {
			t.Errorf("%s must either check the field or say why not", key)
		}
		if fields[c.Artifact] == nil {
			fields[c.Artifact] = map[string]bool{}
		}
		fields[c.Artifact][c.Field] = true
	}
	has := func(field string, artifacts ...verify.Artifact) bool {
		for _, a := range artifacts {
			if fields[a][field] {
				return true
			}
		}
		return false
	}

	schemas := openAPISchemas(t)
	payment := []verify.Artifact{verify.ArtTerms, verify.ArtPins, verify.ArtPayment, verify.ArtOrder, verify.ArtExpiries, verify.ArtSignatureOnFile}
	for _, field := range append(schemas["Payment"], schemas["PaymentDetail"]...) {
		if !has(field, payment...) {
			t.Errorf("the payment's field %s has no row", field)
		}
	}
	for _, field := range schemas["Transaction"] {
		if !has(field, verify.ArtPreparedRow) {
			t.Errorf("the prepared transaction's field %s has no row", field)
		}
	}

	// Section 12: signing_payload is {domain, types, primaryType, message},
	// the domain and the message with the fields EIP-712 and EIP-3009 give.
	payload := []string{"primaryType", "types.EIP712Domain", "types.<primaryType>", "domain", "message"}
	for _, f := range verify.DomainFields {
		payload = append(payload, "domain."+f.Name)
	}
	for _, f := range verify.EIP3009Typed {
		payload = append(payload, "message."+f.Name)
	}
	for _, field := range payload {
		if !has(field, verify.ArtPayload) {
			t.Errorf("the signing payload's field %s has no row", field)
		}
	}
	// Section 12: the unsigned transaction's keys; 12.1: its call.
	tx := []string{"chain_id", "nonce", "to", "value", "data", "gas_limit", "max_priority_fee_per_gas", "max_fee_per_gas", "from", "data.selector"}
	for op, signature := range contractFunctions {
		if got, want := selectorOf(signature), verify.Selector(op); got != want {
			t.Errorf("%s: the guide's %s has selector %x, the checks use %x", op, signature, got, want)
		}
		for _, arg := range argumentNames(signature) {
			if !slices.Contains(tx, "data."+arg) {
				tx = append(tx, "data."+arg)
			}
		}
	}
	for _, field := range tx {
		if !has(field, verify.ArtUnsignedTx) {
			t.Errorf("the unsigned transaction's field %s has no row", field)
		}
	}
}

// contractFunctions are the RAIL0 calls as section 12.1 of the contract
// guide writes them, names included.
var contractFunctions = map[string]string{
	verify.OpAuthorize:    "authorize(bytes32 paymentId, Payment p, uint8 v, bytes32 r, bytes32 s)",
	verify.OpCharge:       "charge(bytes32 paymentId, Payment p, uint8 v, bytes32 r, bytes32 s)",
	verify.OpCapture:      "capture(bytes32 paymentId, Payment p, uint256 amount)",
	verify.OpVoid:         "void(bytes32 paymentId, Payment p)",
	verify.OpRelease:      "release(bytes32 paymentId, Payment p)",
	verify.OpRefund:       "refund(bytes32 paymentId, Payment p, uint256 amount, uint8 v, bytes32 r, bytes32 s)",
	verify.OpDispute:      "dispute(bytes32 paymentId, Payment p, bytes32 reason)",
	verify.OpCloseDispute: "closeDispute(bytes32 paymentId, Payment p, bytes32 reason)",
}

// paymentStruct is the Payment struct as 12.1 writes it.
const paymentStruct = "address payer, address payee, address token, uint120 amount, uint48 authorizationExpiry, uint48 refundExpiry"

var argument = regexp.MustCompile(`(\w+) (\w+)`)

// argumentNames names a call's arguments, the Payment struct's as p.<field>.
func argumentNames(signature string) []string {
	var names []string
	for _, m := range argument.FindAllStringSubmatch(signature, -1) {
		if m[1] != "Payment" {
			names = append(names, m[2])
			continue
		}
		for _, f := range argument.FindAllStringSubmatch(paymentStruct, -1) {
			names = append(names, m[2]+"."+f[2])
		}
	}
	return names
}

// selectorOf is the selector of a signature written with names.
func selectorOf(signature string) [4]byte {
	tuple := "(" + argument.ReplaceAllString(paymentStruct, "$1") + ")"
	canonical := argument.ReplaceAllStringFunc(signature, func(s string) string {
		typ := strings.Fields(s)[0]
		if typ == "Payment" {
			return tuple
		}
		return typ
	})
	canonical = strings.ReplaceAll(strings.ReplaceAll(canonical, ", ", ","), " ", "")
	h := verify.KeccakString(canonical)
	return [4]byte(h[:4])
}

// openAPISchemas lists the property names of the contract's schemas.
func openAPISchemas(t *testing.T) map[string][]string {
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	type schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
		AllOf      []struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"allOf"`
	}
	var doc struct {
		Components struct {
			Schemas map[string]schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, name := range []string{"Payment", "PaymentDetail", "Transaction"} {
		s, ok := doc.Components.Schemas[name]
		if !ok {
			t.Fatalf("the contract has no schema %s", name)
		}
		props := s.Properties
		for _, part := range s.AllOf {
			for k, v := range part.Properties {
				if props == nil {
					props = map[string]json.RawMessage{}
				}
				props[k] = v
			}
		}
		for k := range props {
			out[name] = append(out[name], k)
		}
		slices.Sort(out[name])
		if len(out[name]) == 0 {
			t.Fatalf("the schema %s lists no properties", name)
		}
	}
	return out
}

// TestRefusalsComeFromTheTable: a refusal (*Mismatch, *Untrusted) is made
// only in the files of the registry (checks*.go): a check written anywhere
// else in the package fails here, as one written in the root package
// fails the root's TestArtifactErrorsComeFromTheTable.
func TestRefusalsComeFromTheTable(t *testing.T) {
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
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			if id, ok := lit.Type.(*ast.Ident); ok && (id.Name == "Mismatch" || id.Name == "Untrusted") {
				found++
				if !strings.HasPrefix(name, "checks") {
					t.Errorf("%s makes a %s outside the registry: add a row to Checks instead", name, id.Name)
				}
			}
			return true
		})
	}
	if found == 0 {
		t.Fatal("no refusal found: the scan proves nothing")
	}
}
