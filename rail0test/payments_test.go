package rail0test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestPaymentRoles(t *testing.T) {
	h := newHarness(t)
	buyer, merchant := h.login(h.srv.Buyer), h.login(h.srv.Merchant)
	other := stranger(t)
	outsider := h.login(other)
	id := h.createPayment(buyer, "authorize", "5.00", true)

	expect(t, h.call("POST", "/payments", buyer, map[string]any{
		"chain_id": h.srv.ChainID, "mode": "authorize", "amount": "1", "token": h.srv.Token,
		"payer": h.srv.Merchant.Address, "payee": h.srv.Merchant.Address,
	}), http.StatusForbidden, "payer_must_be_caller")
	expect(t, h.call("GET", "/payments/"+id, outsider, nil), http.StatusForbidden, "not_a_participant")
	expect(t, h.call("GET", "/payments/"+id+"/transactions", outsider, nil), http.StatusForbidden, "not_a_participant")
	expect(t, h.call("POST", "/payments/"+id+"/authorize/prepare", buyer, map[string]any{}), http.StatusForbidden, "not_the_payee")
	expect(t, h.call("GET", "/payments/does-not-exist", buyer, nil), http.StatusNotFound, "not_found")
	if l := h.call("GET", "/payments", outsider, nil).list(t); len(l) != 0 {
		t.Fatalf("outsider sees %d payments", len(l))
	}

	// The rail0_id works as a path id too.
	p := h.call("GET", "/payments/"+id, merchant, nil).json(t)
	expect(t, h.call("GET", "/payments/"+p["rail0_id"].(string), buyer, nil), http.StatusOK, "")

	// A raw transaction must come from the party the contract expects.
	prep := h.call("POST", "/payments/"+id+"/authorize/prepare", merchant, map[string]any{}).json(t)
	unsigned := prep["unsigned_transaction"].(string)
	expect(t, h.call("POST", "/payments/"+id+"/authorize", merchant,
		map[string]string{"signed_transaction": signTx(t, h.srv.Buyer.Key(), unsigned)}), http.StatusForbidden, "not_the_payee")
	bad := h.call("POST", "/payments/"+id+"/authorize", merchant, map[string]string{"signed_transaction": "0x02deadbeef"})
	if bad.status != http.StatusBadRequest || len(bad.body) != 0 {
		t.Fatalf("undecodable transaction: %d %q", bad.status, bad.body)
	}
	expect(t, h.call("POST", "/payments/"+id+"/authorize", merchant,
		map[string]string{"signed_transaction": signTx(t, h.srv.Merchant.Key(), unsigned)}), http.StatusAccepted, "")

	// Charge flow for the dispute rules: prepare by a participant, sent by the payer.
	h.step(merchant, h.srv.Merchant.Key(), id, "capture", map[string]any{"amount": "5"})
	expect(t, h.call("POST", "/payments/"+id+"/dispute/prepare", outsider, map[string]any{}), http.StatusForbidden, "not_a_participant")
	dp := h.call("POST", "/payments/"+id+"/dispute/prepare", merchant, map[string]any{})
	expect(t, dp, http.StatusCreated, "")
	raw := signTx(t, h.srv.Merchant.Key(), dp.json(t)["unsigned_transaction"].(string))
	expect(t, h.call("POST", "/payments/"+id+"/dispute", merchant, map[string]string{"signed_transaction": raw}), http.StatusForbidden, "not_the_payer")
	expect(t, h.call("POST", "/payments/"+id+"/dispute/submitted", merchant,
		map[string]string{"transaction_hash": "0x" + "11"}), http.StatusForbidden, "not_the_payer")
	// Any session may submit the payer's signed dispute.
	raw = signTx(t, h.srv.Buyer.Key(), dp.json(t)["unsigned_transaction"].(string))
	expect(t, h.call("POST", "/payments/"+id+"/dispute", outsider, map[string]string{"signed_transaction": raw}), http.StatusAccepted, "")
}

func TestIdempotentCreate(t *testing.T) {
	h := newHarness(t)
	buyer := h.login(h.srv.Buyer)
	other := stranger(t)
	outsider := h.login(other)
	body := map[string]any{"chain_id": h.srv.ChainID, "mode": "charge", "amount": "12.5", "token": "USDC",
		"payer": h.srv.Buyer.Address, "payee": h.srv.Merchant.Address}
	first := h.call("POST", "/payments", buyer, body, withHeader("Idempotency-Key", "order-7"))
	expect(t, first, http.StatusCreated, "")
	again := h.call("POST", "/payments", buyer, body, withHeader("Idempotency-Key", "order-7"))
	expect(t, again, http.StatusOK, "")
	if first.json(t)["id"] != again.json(t)["id"] || first.json(t)["amount"] != "12500000" {
		t.Fatalf("replay returned another payment: %s vs %s", first.body, again.body)
	}
	if n := h.srv.Ledger.Count(routeCreatePayment, "order-7"); n != 2 {
		t.Fatalf("ledger count = %d, want 2", n)
	}
	if l := h.call("GET", "/payments", buyer, nil).list(t); len(l) != 1 {
		t.Fatalf("payments = %d, want 1", len(l))
	}
	body["payer"] = other.Address
	expect(t, h.call("POST", "/payments", outsider, body, withHeader("Idempotency-Key", "order-7")), http.StatusConflict, "")
}

func TestCreateRefusals(t *testing.T) {
	h := newHarness(t)
	buyer := h.login(h.srv.Buyer)
	base := func(edit func(map[string]any)) map[string]any {
		b := map[string]any{"chain_id": h.srv.ChainID, "mode": "authorize", "amount": "1.00", "token": h.srv.Token,
			"payer": h.srv.Buyer.Address, "payee": h.srv.Merchant.Address}
		edit(b)
		return b
	}
	cases := []struct {
		name string
		edit func(map[string]any)
		code string
	}{
		{"too many decimals", func(b map[string]any) { b["amount"] = "1.0000001" }, "invalid_amount"},
		{"zero", func(b map[string]any) { b["amount"] = "0" }, "invalid_amount"},
		{"negative", func(b map[string]any) { b["amount"] = "-1" }, "invalid_amount"},
		{"unknown chain", func(b map[string]any) { b["chain_id"] = 999 }, "unknown_chain"},
		{"unknown token", func(b map[string]any) { b["token"] = "0x0000000000000000000000000000000000000001" }, "unknown_token"},
		{"retired token", func(b map[string]any) { b["token"] = RetiredTokenAddress }, "unknown_token"},
		{"no contract", func(b map[string]any) { b["chain_id"] = MainnetChainID; b["token"] = MainnetTokenAddress }, "no_active_contract"},
		{"payee accepts nothing", func(b map[string]any) { b["payee"] = stranger(t).Address }, "unsupported_payment_method"},
		{"missing amount", func(b map[string]any) { delete(b, "amount") }, "missing_param"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expect(t, h.call("POST", "/payments", buyer, base(c.edit)), http.StatusUnprocessableEntity, c.code)
		})
	}
}

func TestStateGuards(t *testing.T) {
	h := newHarness(t, WithPaymentWindows(time.Hour, 2*time.Hour))
	buyer, merchant := h.login(h.srv.Buyer), h.login(h.srv.Merchant)
	mk := h.srv.Merchant.Key()

	unsigned := h.createPayment(buyer, "authorize", "3", false)
	expect(t, h.call("POST", "/payments/"+unsigned+"/authorize/prepare", merchant, map[string]any{}), http.StatusUnprocessableEntity, "no_signature")
	expect(t, h.call("POST", "/payments/"+unsigned+"/refund/prepare", merchant, map[string]any{"amount": "1"}), http.StatusUnprocessableEntity, "not_refundable")
	expect(t, h.call("PUT", "/payments/"+unsigned+"/sign", buyer, map[string]string{"signature": personalSign(t, h.srv.Buyer.Key(), "x")}),
		http.StatusUnprocessableEntity, "signer_mismatch")

	charged := h.createPayment(buyer, "charge", "3", true)
	expect(t, h.call("PUT", "/payments/"+charged+"/sign", buyer, map[string]string{"signature": "0x00"}), http.StatusUnprocessableEntity, "already_signed")
	expect(t, h.call("POST", "/payments/"+charged+"/authorize/prepare", merchant, map[string]any{}), http.StatusUnprocessableEntity, "wrong_mode")
	h.step(merchant, mk, charged, "charge", nil)
	if p := h.call("GET", "/payments/"+charged, buyer, nil).json(t); p["status"] != "charged" || p["refundable_amount"] != "3000000" {
		t.Fatalf("charged payment = %v", p)
	}
	expect(t, h.call("POST", "/payments/"+charged+"/capture/prepare", merchant, map[string]any{"amount": "1"}), http.StatusUnprocessableEntity, "wrong_mode")
	expect(t, h.call("POST", "/payments/"+charged+"/capture/prepare", merchant, map[string]any{}), http.StatusBadRequest, "missing_param")
	expect(t, h.call("POST", "/payments/"+charged+"/dispute/close/prepare", buyer, map[string]any{}), http.StatusUnprocessableEntity, "not_disputed")
	expect(t, h.call("POST", "/payments/"+charged+"/refund/prepare", merchant, map[string]any{"amount": "4"}), http.StatusUnprocessableEntity, "amount_exceeds_refundable")

	// A full refund settles the payment back and leaves nothing to dispute.
	sig := signTypedData(t, mk, h.call("POST", "/payments/"+charged+"/refund/prepare", merchant, map[string]any{"amount": "3"}).json(t)["signing_payload"])
	h.step(merchant, mk, charged, "refund", map[string]any{"amount": "3", "signature": sig})
	if p := h.call("GET", "/payments/"+charged, buyer, nil).json(t); p["status"] != "refunded" {
		t.Fatalf("after full refund = %v", p)
	}
	expect(t, h.call("POST", "/payments/"+charged+"/dispute/prepare", buyer, map[string]any{}), http.StatusUnprocessableEntity, "nothing_to_dispute")

	// Escrow: void only before a capture; release only after the expiry.
	escrow := h.createPayment(buyer, "authorize", "10", true)
	h.step(merchant, mk, escrow, "authorize", nil)
	expect(t, h.call("POST", "/payments/"+escrow+"/release/prepare", buyer, map[string]any{}), http.StatusUnprocessableEntity, "authorization_not_expired")
	h.step(merchant, mk, escrow, "capture", map[string]any{"amount": "4"})
	expect(t, h.call("POST", "/payments/"+escrow+"/void/prepare", merchant, map[string]any{}), http.StatusUnprocessableEntity, "not_voidable")
	h.clock.Advance(time.Hour)
	expect(t, h.call("POST", "/payments/"+escrow+"/capture/prepare", merchant, map[string]any{"amount": "1"}), http.StatusUnprocessableEntity, "authorization_expired")
	h.step(buyer, h.srv.Buyer.Key(), escrow, "release", map[string]any{})
	p := h.call("GET", "/payments/"+escrow, buyer, nil).json(t)
	if p["status"] != "partially_captured" || p["capturable_amount"] != "0" {
		t.Fatalf("release after a capture must leave the status: %v", p)
	}
	expect(t, h.call("POST", "/payments/"+escrow+"/release/prepare", buyer, map[string]any{}), http.StatusUnprocessableEntity, "not_releasable")
	h.clock.Advance(time.Hour)
	expect(t, h.call("POST", "/payments/"+escrow+"/refund/prepare", merchant, map[string]any{"amount": "1"}), http.StatusUnprocessableEntity, "refund_expired")

	voided := h.createPayment(buyer, "authorize", "2", true)
	h.step(merchant, mk, voided, "authorize", nil)
	h.step(merchant, mk, voided, "void", nil)
	if p := h.call("GET", "/payments/"+voided, buyer, nil).json(t); p["status"] != "voided" || p["capturable_amount"] != "0" {
		t.Fatalf("voided payment = %v", p)
	}
}

// A repeated submit of the same signed transaction (a client's retry after a
// lost answer) is answered as a gateway broadcasting it again would: the node
// knows it (422 already_known while it is pending, nonce_too_low once mined).
// It creates no row and moves nothing; the client reads the payment to learn
// what happened.
func TestRepeatedSubmitIsRefusedAsKnownAndLedgerCountsIt(t *testing.T) {
	h := newHarness(t, WithConfirmationDelay(10*time.Second))
	buyer, merchant := h.login(h.srv.Buyer), h.login(h.srv.Merchant)
	id := h.createPayment(buyer, "authorize", "8", true)
	h.step(merchant, h.srv.Merchant.Key(), id, "authorize", nil)

	prep := h.call("POST", "/payments/"+id+"/capture/prepare", merchant, map[string]any{"amount": "8"}).json(t)
	raw := map[string]string{"signed_transaction": signTx(t, h.srv.Merchant.Key(), prep["unsigned_transaction"].(string))}
	a := h.call("POST", "/payments/"+id+"/capture", merchant, raw)
	expect(t, a, http.StatusAccepted, "")
	expect(t, h.call("POST", "/payments/"+id+"/capture", merchant, raw), http.StatusUnprocessableEntity, "already_known")
	expect(t, h.call("POST", "/payments/"+id+"/capture/prepare", merchant, map[string]any{"amount": "1"}), http.StatusUnprocessableEntity, "transaction_not_overwritable")
	h.clock.Advance(11 * time.Second)
	expect(t, h.call("POST", "/payments/"+id+"/capture", merchant, raw), http.StatusUnprocessableEntity, "nonce_too_low")
	p := h.call("GET", "/payments/"+id, merchant, nil).json(t)
	if p["status"] != "captured" || p["refundable_amount"] != "8000000" {
		t.Fatalf("after one capture = %v", p)
	}
	if txs := p["transactions"].([]any); len(txs) != 2 || txs[1].(map[string]any)["transaction_hash"] != a.json(t)["transaction_hash"] {
		t.Fatalf("transactions after the repeats = %v", txs)
	}
	if n := h.srv.Ledger.CountOperation(id, "capture"); n != 3 {
		t.Fatalf("capture submits in the ledger = %d, want 3", n)
	}
	// Reporting by hash after confirmation is refused: a confirmed row is final.
	res := h.call("POST", "/payments/"+id+"/capture/submitted", merchant, map[string]string{"transaction_hash": a.json(t)["transaction_hash"].(string)})
	if res.status != http.StatusUnprocessableEntity {
		t.Fatalf("by-hash after confirmation: %d", res.status)
	}
}

func TestSubmittedByHashAndFailedTransactions(t *testing.T) {
	h := newHarness(t, WithConfirmationDelay(5*time.Second), WithPaymentWindows(time.Minute, time.Hour))
	buyer, merchant := h.login(h.srv.Buyer), h.login(h.srv.Merchant)
	id := h.createPayment(buyer, "authorize", "8", true)
	h.step(merchant, h.srv.Merchant.Key(), id, "authorize", nil)
	expect(t, h.call("POST", "/payments/"+id+"/capture/prepare", merchant, map[string]any{"amount": "2"}), http.StatusCreated, "")
	bad := h.call("POST", "/payments/"+id+"/capture/submitted", merchant, map[string]string{"transaction_hash": "0x1234"})
	if bad.status != http.StatusBadRequest {
		t.Fatalf("malformed hash: %d", bad.status)
	}
	hash := "0x" + "ab" + "cd00000000000000000000000000000000000000000000000000000000000000"[:62]
	// Reported 50 s into the 60 s capture window and read 14 s later: the block was
	// mined at submission, inside the window, so the capture confirms.
	h.clock.Advance(44 * time.Second)
	sub := h.call("POST", "/payments/"+id+"/capture/submitted", merchant, map[string]string{"transaction_hash": hash})
	expect(t, sub, http.StatusAccepted, "")
	h.clock.Advance(14 * time.Second)
	p := h.call("GET", "/payments/"+id, merchant, nil).json(t)
	tx := p["transactions"].([]any)[1].(map[string]any)
	if tx["status"] != "confirmed" {
		t.Fatalf("capture = %v", tx)
	}

	id2 := h.createPayment(buyer, "authorize", "8", true)
	h.step(merchant, h.srv.Merchant.Key(), id2, "authorize", nil)
	expect(t, h.call("POST", "/payments/"+id2+"/capture/prepare", merchant, map[string]any{"amount": "2"}), http.StatusCreated, "")
	// Reported after the authorization expiry of id2: the chain reverts it, the
	// payment keeps its status and records the error.
	h.clock.Advance(time.Minute)
	// The hash of id's capture is foreign to id2.
	foreign := h.call("POST", "/payments/"+id2+"/capture/submitted", merchant, map[string]string{"transaction_hash": hash})
	if foreign.status != http.StatusUnprocessableEntity {
		t.Fatalf("foreign hash: %d", foreign.status)
	}
	hash2 := "0x" + "ef" + hash[4:]
	expect(t, h.call("POST", "/payments/"+id2+"/capture/submitted", merchant, map[string]string{"transaction_hash": hash2}), http.StatusAccepted, "")
	h.clock.Advance(6 * time.Second)
	p2 := h.call("GET", "/payments/"+id2, merchant, nil).json(t)
	tx2 := p2["transactions"].([]any)[1].(map[string]any)
	if tx2["status"] != "failed" || tx2["error_code"] != "authorization_expired" || p2["last_error_code"] != "authorization_expired" || p2["status"] != "authorized" {
		t.Fatalf("failed capture = %v / %v", tx2, p2)
	}
}

func TestDisputeReportedByHash(t *testing.T) {
	h := newHarness(t)
	buyer, merchant := h.login(h.srv.Buyer), h.login(h.srv.Merchant)
	id := h.createPayment(buyer, "charge", "9", true)
	h.step(merchant, h.srv.Merchant.Key(), id, "charge", nil)

	expect(t, h.call("POST", "/payments/"+id+"/dispute/prepare", buyer, map[string]any{"reason": "0x" + strings.Repeat("0a", 32)}), http.StatusCreated, "")
	hash := "0x" + strings.Repeat("d1", 32)
	expect(t, h.call("POST", "/payments/"+id+"/dispute/submitted", buyer, map[string]string{"transaction_hash": hash}), http.StatusAccepted, "")
	h.clock.Advance(time.Second)
	disputes := h.call("GET", "/payments/"+id+"/disputes?status=open", merchant, nil).list(t)
	if len(disputes) != 1 || disputes[0]["reason"] != "0x"+strings.Repeat("0a", 32) {
		t.Fatalf("open disputes = %v", disputes)
	}
	expect(t, h.call("POST", "/payments/"+id+"/dispute/prepare", buyer, map[string]any{}), http.StatusUnprocessableEntity, "already_disputed")

	expect(t, h.call("POST", "/payments/"+id+"/dispute/close/prepare", buyer, map[string]any{}), http.StatusOK, "")
	expect(t, h.call("POST", "/payments/"+id+"/dispute/close/submitted", merchant,
		map[string]string{"transaction_hash": "0x" + strings.Repeat("d2", 32)}), http.StatusForbidden, "not_the_payer")
	expect(t, h.call("POST", "/payments/"+id+"/dispute/close/submitted", buyer,
		map[string]string{"transaction_hash": "0x" + strings.Repeat("d2", 32)}), http.StatusAccepted, "")
	h.clock.Advance(time.Second)
	p := h.call("GET", "/payments/"+id, buyer, nil).json(t)
	if p["disputed"] != false {
		t.Fatalf("after close = %v", p)
	}
	if l := h.call("GET", "/disputes?status=closed", buyer, nil).list(t); len(l) != 1 || l[0]["closed_by"] != "payer" {
		t.Fatalf("closed disputes = %v", l)
	}
}

func TestFullRefundClosesOpenDispute(t *testing.T) {
	h := newHarness(t)
	buyer, merchant := h.login(h.srv.Buyer), h.login(h.srv.Merchant)
	mk := h.srv.Merchant.Key()
	id := h.createPayment(buyer, "charge", "5", true)
	h.step(merchant, mk, id, "charge", nil)
	h.step(buyer, h.srv.Buyer.Key(), id, "dispute", map[string]any{})
	sig := signTypedData(t, mk, h.call("POST", "/payments/"+id+"/refund/prepare", merchant, map[string]any{"amount": "5"}).json(t)["signing_payload"])
	h.step(merchant, mk, id, "refund", map[string]any{"amount": "5", "signature": sig})
	p := h.call("GET", "/payments/"+id, buyer, nil).json(t)
	d := h.call("GET", "/payments/"+id+"/disputes", buyer, nil).list(t)
	if p["status"] != "refunded" || p["disputed"] != false || len(d) != 1 || d[0]["closed_by"] != "payee" {
		t.Fatalf("after a full refund: %v / %v", p, d)
	}
}
