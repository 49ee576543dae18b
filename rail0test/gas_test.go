package rail0test

import "testing"

// TestPreparedGasCoversTheRealContract: every transaction rail0test
// prepares asks for the gas the real RAIL0 contract uses (shared contract
// guide, section 12.2) and 25% more, as a gateway estimating on the chain
// would; authorize and charge at a deployment's first payment. The chain
// charges those figures: the deployment's first payment 98,000 more than
// the next one.
func TestPreparedGasCoversTheRealContract(t *testing.T) {
	measured := map[string]uint64{ // the guide's figures; authorize and charge as a first payment
		opAuthorize: 509_000, opCharge: 417_000 + 98_000, opRefund: 207_000, opCapture: 175_000,
		opVoid: 77_000, opRelease: 77_000, opDispute: 43_000, opCloseDispute: 43_000,
	}
	for _, op := range allOperations {
		if want := measured[op] + measured[op]/4; gasLimit(op) != want {
			t.Errorf("%s prepared with %d gas, want %d (the contract's %d and 25%%)", op, gasLimit(op), want, measured[op])
		}
		if gasLimit(op) < gasUsed(op, true) {
			t.Errorf("%s: prepared %d, below the %d the chain charges", op, gasLimit(op), gasUsed(op, true))
		}
	}

	h := newHarness(t)
	buyer, merchant := h.login(h.srv.Buyer), h.login(h.srv.Merchant)
	mk := h.srv.Merchant.Key()
	var used []string
	for range 2 {
		id := h.createPayment(buyer, modeAuthorize, "5", true)
		tx := h.step(merchant, mk, id, opAuthorize, nil)
		used = append(used, tx["gas_used"].(string))
	}
	if used[0] != "509000" || used[1] != "411000" {
		t.Fatalf("authorize gas used %v, want the first payment's 509000 then 411000", used)
	}
}
