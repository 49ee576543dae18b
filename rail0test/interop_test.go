package rail0test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/rail0/rail0-go/signing"
)

// TestSDKSigningInterop signs what this server hands out with the SDK's own
// signing package (SIWE, EIP-712 payer and refund payloads, EIP-1559
// transactions) and checks the server accepts every signature.
func TestSDKSigningInterop(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	buyerAcc, err := signing.AccountFromPrivateKey(h.srv.Buyer.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	merchantAcc, err := signing.AccountFromPrivateKey(h.srv.Merchant.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	login := func(acc *signing.Account) string {
		n := h.call("POST", "/auth/nonces", "", nil).json(t)["nonce"].(string)
		msg := h.srv.SIWEMessage(acc.Address(), n, LoginStatement)
		sig, err := acc.SignMessage(ctx, msg)
		if err != nil {
			t.Fatal(err)
		}
		res := h.call("POST", "/auth", "", map[string]string{"message": msg, "signature": sig})
		expect(t, res, http.StatusCreated, "")
		return res.json(t)["token"].(string)
	}
	buyer, merchant := login(buyerAcc), login(merchantAcc)

	res := h.call("POST", "/payments", buyer, map[string]any{"chain_id": h.srv.ChainID, "mode": "charge", "amount": "7.25",
		"token": h.srv.Token, "payer": h.srv.Buyer.Address, "payee": h.srv.Merchant.Address})
	expect(t, res, http.StatusCreated, "")
	var created struct {
		ID             string          `json:"id"`
		SigningPayload json.RawMessage `json:"signing_payload"`
	}
	if err := json.Unmarshal(res.body, &created); err != nil {
		t.Fatal(err)
	}
	sig, err := buyerAcc.SignPayloadForChain(ctx, created.SigningPayload, h.srv.ChainID)
	if err != nil {
		t.Fatalf("SDK refused the payer payload: %v", err)
	}
	expect(t, h.call("PUT", "/payments/"+created.ID+"/sign", buyer, map[string]string{"signature": sig}), http.StatusOK, "")

	submit := func(token string, acc *signing.Account, op string, body map[string]any) {
		t.Helper()
		prep := h.call("POST", "/payments/"+created.ID+"/"+op+"/prepare", token, body)
		expect(t, prep, http.StatusCreated, "")
		raw, err := acc.SignTransaction(ctx, prep.json(t)["unsigned_transaction"].(string))
		if err != nil {
			t.Fatalf("SDK refused the %s transaction: %v", op, err)
		}
		expect(t, h.call("POST", "/payments/"+created.ID+"/"+op, token, map[string]string{"signed_transaction": raw}), http.StatusAccepted, "")
	}
	submit(merchant, merchantAcc, "charge", map[string]any{})

	phase1 := h.call("POST", "/payments/"+created.ID+"/refund/prepare", merchant, map[string]any{"amount": "7.25"})
	expect(t, phase1, http.StatusOK, "")
	var p1 struct {
		SigningPayload json.RawMessage `json:"signing_payload"`
	}
	if err := json.Unmarshal(phase1.body, &p1); err != nil {
		t.Fatal(err)
	}
	refundSig, err := merchantAcc.SignPayload(ctx, p1.SigningPayload)
	if err != nil {
		t.Fatalf("SDK refused the refund payload: %v", err)
	}
	submit(merchant, merchantAcc, "refund", map[string]any{"amount": "7.25", "signature": refundSig})
	if p := h.call("GET", "/payments/"+created.ID, buyer, nil).json(t); p["status"] != "refunded" {
		t.Fatalf("after the SDK-signed refund = %v", p)
	}
}
