package rail0test

import (
	"net/http"
	"strings"
	"testing"
)

func TestWalletRegistrationAndTokens(t *testing.T) {
	h := newHarness(t)
	merchant, buyer := h.login(h.srv.Merchant), h.login(h.srv.Buyer)
	acc := h.srv.Merchant.AccountID
	base := "/accounts/" + acc + "/wallets"
	fresh := stranger(t)

	// Ownership proof: a wallet statement signed by the wallet being added.
	loginMsg, loginSig := h.proof(fresh, loginStatement, nil)
	refused := h.call("POST", base, merchant, map[string]string{"address": fresh.Address, "message": loginMsg, "signature": loginSig})
	if refused.status != http.StatusUnprocessableEntity || len(refused.body) != 0 {
		t.Fatalf("login proof at wallet registration: %d %q", refused.status, refused.body)
	}
	msg, sig := h.proof(fresh, walletStatement, nil)
	created := h.call("POST", base, merchant, map[string]any{"address": fresh.Address, "message": msg, "signature": sig, "label": "Store 2"})
	expect(t, created, http.StatusCreated, "")
	wid := created.json(t)["id"].(string)
	msg, sig = h.proof(fresh, walletStatement, nil)
	dup := h.call("POST", base, merchant, map[string]any{"address": fresh.Address, "message": msg, "signature": sig})
	if dup.status != http.StatusConflict {
		t.Fatalf("duplicate registration: %d", dup.status)
	}
	// A wallet proof is refused at sign-in.
	msg, sig = h.proof(fresh, walletStatement, nil)
	expect(t, h.call("POST", "/auth", "", map[string]string{"message": msg, "signature": sig}), http.StatusUnprocessableEntity, "siwe_purpose_mismatch")

	// Without an active holding the wallet is no payment method yet.
	if l := h.call("GET", "/payment_methods?address="+fresh.Address, "", nil).list(t); len(l) != 0 {
		t.Fatalf("payment methods before a token = %v", l)
	}
	expect(t, h.call("POST", base+"/"+wid+"/tokens", merchant, map[string]any{"chain_id": 1, "token": "USDC"}), http.StatusUnprocessableEntity, "unknown_chain")
	expect(t, h.call("POST", base+"/"+wid+"/tokens", merchant, map[string]any{"chain_id": 84532, "token": "DAI"}), http.StatusUnprocessableEntity, "unknown_token")
	wt := h.call("POST", base+"/"+wid+"/tokens", merchant, map[string]any{"chain_id": 84532, "token": "USDC", "default": true})
	expect(t, wt, http.StatusCreated, "")
	expect(t, h.call("POST", base+"/"+wid+"/tokens", merchant, map[string]any{"chain_id": 84532, "token": h.srv.Token}), http.StatusOK, "")
	if l := h.call("GET", "/payment_methods?address="+strings.ToLower(fresh.Address), "", nil).list(t); len(l) != 1 {
		t.Fatalf("payment methods after a token = %v", l)
	}

	// The holding is addressed by the token's UUID from the listing.
	list := h.call("GET", base+"?chain_id=84532&per_page=1", merchant, nil)
	if list.header.Get("X-Total-Count") != "2" || len(list.list(t)) != 1 {
		t.Fatalf("wallet list: %v %s", list.header, list.body)
	}
	w := h.call("GET", base+"/"+fresh.Address, merchant, nil).json(t)
	if w["id"] != wid || w["label"] != "Store 2" {
		t.Fatalf("wallet by address = %v", w)
	}
	all := h.call("GET", base+"?active=true", merchant, nil).list(t)
	var tokenID string
	for _, x := range all {
		if x["id"] == wid {
			tokenID = x["tokens"].([]any)[0].(map[string]any)["token_id"].(string)
		}
	}
	if off := h.call("PATCH", base+"/"+wid+"/tokens/"+tokenID+"/disable", merchant, nil).json(t); off["active"] != false {
		t.Fatalf("disable holding = %v", off)
	}
	expect(t, h.call("PATCH", base+"/"+wid+"/tokens/"+tokenID+"/enable", merchant, nil), http.StatusOK, "")
	expect(t, h.call("PATCH", base+"/"+wid+"/tokens/"+h.srv.Merchant.AccountID+"/enable", merchant, nil), http.StatusNotFound, "not_found")
	expect(t, h.call("DELETE", base+"/"+wid+"/tokens/"+tokenID, merchant, nil), http.StatusNoContent, "")

	if p := h.call("PATCH", base+"/"+wid, merchant, map[string]any{"label": "Renamed"}).json(t); p["label"] != "Renamed" {
		t.Fatalf("patch = %v", p)
	}
	bal := h.call("GET", base+"/"+wid+"/balances?chain_id=84532", merchant, nil).json(t)
	chains := bal["balances"].([]any)
	if len(chains) != 1 || chains[0].(map[string]any)["tokens"].([]any)[0].(map[string]any)["amount"] != "1000000.00" {
		t.Fatalf("balances = %v", bal)
	}
	expect(t, h.call("DELETE", base+"/"+wid, merchant, nil), http.StatusNoContent, "")
	if w := h.call("GET", base+"/"+wid, merchant, nil).json(t); w["active"] != false {
		t.Fatalf("deactivated wallet = %v", w)
	}

	// Only sessions of the account.
	expect(t, h.call("GET", base, buyer, nil), http.StatusForbidden, "account_required")
	expect(t, h.call("GET", "/accounts/other/wallets", merchant, nil), http.StatusForbidden, "forbidden")
}
