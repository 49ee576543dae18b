package rail0test

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// TestGasFollowsTheState: the gas of each call is the figure the shared
// contract guide measured in the state it meets (section 12.2), and the
// prepared limit is that and 60% more, enough for the dearest state the
// call can meet by the time it is mined.
func TestGasFollowsTheState(t *testing.T) {
	fresh, later := gasState{first: true, unheld: true}, gasState{}
	for _, c := range []struct {
		op         string
		st         gasState
		used, dear uint64 // the guide's figure here, and in the op's dearest state
	}{
		{opAuthorize, fresh, 509_000, 509_000},
		{opAuthorize, later, 411_000, 509_000},
		{opCharge, fresh, 515_000, 515_000},
		{opCharge, later, 417_000, 515_000},
		{opRefund, gasState{unheld: true}, 328_000, 328_000},
		{opRefund, later, 207_000, 328_000},
		{opCapture, later, 175_000, 175_000},
		{opVoid, later, 77_000, 77_000},
		{opRelease, later, 77_000, 77_000},
		{opDispute, later, 43_000, 43_000},
		{opCloseDispute, later, 43_000, 43_000},
	} {
		if got := gasUsed(c.op, c.st); got != c.used {
			t.Errorf("%s in %+v uses %d, want %d", c.op, c.st, got, c.used)
		}
		limit := gasLimit(c.op, c.st)
		if limit != c.used+c.used*3/5 {
			t.Errorf("%s in %+v prepared with %d, want %d and 60%%", c.op, c.st, limit, c.used)
		}
		// A deployment's first payment is known when it is prepared; a
		// refund may meet an empty contract by the time it is mined.
		if c.op == opRefund && limit < c.dear {
			t.Errorf("%s in %+v prepared with %d, below the %d it may meet", c.op, c.st, limit, c.dear)
		}
	}
}

// TestRefundGasWithoutEscrow: a refund while the contract holds none of the
// token (after a charge, once the escrow is fully captured, or after the
// rest is released) uses 328,000 gas on the contract, more than one from
// escrow; it is prepared for that and confirmed. The deployment's first
// payment costs 98,000 more than the next.
func TestRefundGasWithoutEscrow(t *testing.T) {
	h := newHarness(t, WithPaymentWindows(time.Hour, 48*time.Hour))
	buyer, merchant := h.login(h.srv.Buyer), h.login(h.srv.Merchant)
	mk := h.srv.Merchant.Key()
	refund := func(id, amount string, prepared, used uint64) {
		t.Helper()
		phase1 := h.call("POST", "/payments/"+id+"/refund/prepare", merchant, map[string]any{"amount": amount})
		expect(t, phase1, http.StatusOK, "")
		sig := signTypedData(t, mk, phase1.json(t)["signing_payload"])
		prep := h.call("POST", "/payments/"+id+"/refund/prepare", merchant, map[string]any{"amount": amount, "signature": sig})
		expect(t, prep, http.StatusCreated, "")
		if got := preparedGas(t, prep.json(t)); got != prepared {
			t.Errorf("refund prepared with %d gas, want %d", got, prepared)
		}
		tx := h.step(merchant, mk, id, opRefund, map[string]any{"amount": amount, "signature": sig})
		if tx["gas_used"] != fmt.Sprint(used) {
			t.Errorf("refund used %v gas, want %d", tx["gas_used"], used)
		}
	}

	charged := h.createPayment(buyer, modeCharge, "25", true) // the deployment's first payment
	if tx := h.step(merchant, mk, charged, opCharge, nil); tx["gas_used"] != "515000" {
		t.Errorf("the first payment, a charge, used %v gas, want 515000", tx["gas_used"])
	}
	refund(charged, "5", 524_800, 328_000)

	captured := h.createPayment(buyer, modeAuthorize, "25", true)
	if tx := h.step(merchant, mk, captured, opAuthorize, nil); tx["gas_used"] != "411000" {
		t.Errorf("a later authorize used %v gas, want 411000", tx["gas_used"])
	}
	h.step(merchant, mk, captured, opCapture, map[string]any{"amount": "10"})
	refund(captured, "1", 331_200, 207_000) // 15 still held in escrow
	h.step(merchant, mk, captured, opCapture, map[string]any{"amount": "15"})
	refund(captured, "2", 524_800, 328_000)

	released := h.createPayment(buyer, modeAuthorize, "25", true)
	h.step(merchant, mk, released, opAuthorize, nil)
	h.step(merchant, mk, released, opCapture, map[string]any{"amount": "10"})
	h.clock.Advance(2 * time.Hour) // past authorization_expiry
	h.step(merchant, mk, released, opRelease, map[string]any{"from": h.srv.Merchant.Address})
	refund(released, "10", 524_800, 328_000)
}

// TestRefundGasWhenTheEscrowLeaves: a refund prepared while the contract
// holds another payment's escrow, and mined after that escrow left, meets
// the dearer state; its margin covers it, and it is confirmed.
func TestRefundGasWhenTheEscrowLeaves(t *testing.T) {
	h := newHarness(t)
	buyer, merchant := h.login(h.srv.Buyer), h.login(h.srv.Merchant)
	mk := h.srv.Merchant.Key()
	charged := h.createPayment(buyer, modeCharge, "25", true)
	h.step(merchant, mk, charged, opCharge, nil)
	held := h.createPayment(buyer, modeAuthorize, "25", true)
	h.step(merchant, mk, held, opAuthorize, nil)

	phase1 := h.call("POST", "/payments/"+charged+"/refund/prepare", merchant, map[string]any{"amount": "5"})
	sig := signTypedData(t, mk, phase1.json(t)["signing_payload"])
	body := map[string]any{"amount": "5", "signature": sig}
	prep := h.call("POST", "/payments/"+charged+"/refund/prepare", merchant, body)
	if got := preparedGas(t, prep.json(t)); got != 331_200 {
		t.Fatalf("refund prepared with %d gas while the contract holds escrow, want 331200", got)
	}
	h.step(merchant, mk, held, opVoid, nil)             // the contract holds none of the token now
	tx := h.step(merchant, mk, charged, opRefund, body) // the pending row, as prepared
	if tx["gas_used"] != "328000" || tx["gas_limit"] != "331200" {
		t.Fatalf("refund used %v of %v gas, want 328000 of 331200", tx["gas_used"], tx["gas_limit"])
	}
}
