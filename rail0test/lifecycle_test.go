package rail0test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// received is one webhook delivery as the receiver saw it.
type received struct {
	header http.Header
	body   []byte
}

// newReceiver starts a webhook receiver answering status and recording deliveries.
func newReceiver(t *testing.T, status int) (*httptest.Server, chan received) {
	t.Helper()
	ch := make(chan received, 64)
	rs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		ch <- received{header: r.Header.Clone(), body: b}
		w.WriteHeader(status)
	}))
	t.Cleanup(rs.Close)
	return rs, ch
}

func waitDelivery(t *testing.T, ch chan received) received {
	t.Helper()
	select {
	case d := <-ch:
		return d
	case <-time.After(time.Second):
		t.Fatal("no webhook delivery within 1 s")
		return received{}
	}
}

func verifyDelivery(t *testing.T, d received, secret, topic string) {
	t.Helper()
	if got := d.header.Get("X-Rail0-Topic"); got != topic {
		t.Fatalf("X-Rail0-Topic = %q, want %q", got, topic)
	}
	stamp := d.header.Get("X-Rail0-Timestamp")
	if _, err := strconv.ParseInt(stamp, 10, 64); err != nil {
		t.Fatalf("X-Rail0-Timestamp %q: %v", stamp, err)
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(stamp + "." + string(d.body)))
	want := hex.EncodeToString(mac.Sum(nil))
	if !hmac.Equal([]byte(want), []byte(d.header.Get("X-Rail0-Signature"))) {
		t.Fatalf("X-Rail0-Signature = %s, want %s", d.header.Get("X-Rail0-Signature"), want)
	}
}

// TestLifecycleAgainstContract runs an escrow payment end to end over raw HTTP,
// signing with go-ethereum, and validates every response against openapi.json.
func TestLifecycleAgainstContract(t *testing.T) {
	h := newHarness(t, WithConfirmationDelay(30*time.Second))
	srv := h.srv

	// Discovery and catalog.
	expect(t, h.call("GET", "/", "", nil), http.StatusOK, "")
	expect(t, h.call("GET", "/openapi.json", "", nil), http.StatusOK, "")
	anon := h.call("GET", "/health", "", nil).json(t)
	if _, ok := anon["api_version"]; ok {
		t.Fatalf("anonymous health shows api_version: %v", anon)
	}
	if chains := h.call("GET", "/blockchains?network_type=testnet", "", nil).list(t); len(chains) != 1 || chains[0]["chain_id"] != float64(TestChainID) {
		t.Fatalf("testnet chains = %v", chains)
	}
	expect(t, h.call("GET", "/blockchains?network_type=devnet", "", nil), http.StatusBadRequest, "invalid_param")
	if toks := h.call("GET", "/tokens?chain_id=84532&active=true", "", nil).list(t); len(toks) != 1 || toks[0]["decimals"] != float64(6) {
		t.Fatalf("active tokens = %v", toks)
	}
	if all := h.call("GET", "/tokens?chain_id=84532", "", nil).list(t); len(all) != 2 {
		t.Fatalf("tokens including retired = %v", all)
	}
	methods := h.call("GET", "/payment_methods?account_id="+srv.Merchant.AccountID, "", nil).list(t)
	if len(methods) != 1 || methods[0]["address"] != srv.Merchant.Address {
		t.Fatalf("payment methods = %v", methods)
	}
	expect(t, h.call("GET", "/payment_methods", "", nil), http.StatusBadRequest, "")

	buyer := h.login(srv.Buyer)
	merchant := h.login(srv.Merchant)
	full := h.call("GET", "/health", merchant, nil).json(t)
	if full["api_version"] == nil || full["active_contracts"] != float64(1) {
		t.Fatalf("health with token = %v", full)
	}

	// The merchant subscribes to captures.
	receiver, deliveries := newReceiver(t, http.StatusOK)
	hook := h.call("POST", "/webhooks", merchant, map[string]string{
		"name": "captures", "callback_url": receiver.URL + "/hooks", "topic": "payments.captured"})
	expect(t, hook, http.StatusCreated, "")
	secret := hook.json(t)["shared_secret"].(string)
	hookID := hook.json(t)["id"].(string)
	if _, ok := h.call("GET", "/webhooks/"+hookID, merchant, nil).json(t)["shared_secret"]; ok {
		t.Fatal("shared_secret shown outside create and rotate")
	}

	// The buyer creates and signs.
	created := h.call("POST", "/payments", buyer, map[string]any{
		"chain_id": srv.ChainID, "mode": "authorize", "amount": "25.00", "token": srv.Token,
		"payer": srv.Buyer.Address, "payee": srv.Merchant.Address, "description": "Order 1042",
		"metadata": map[string]string{"order_id": "1042"},
	}, withHeader("Idempotency-Key", "order-1042"))
	expect(t, created, http.StatusCreated, "")
	p := created.json(t)
	id := p["id"].(string)
	if p["status"] != "unsigned" || p["amount"] != "25000000" || p["signing_payload"] == nil {
		t.Fatalf("created payment = %v", p)
	}
	sig := signTypedData(t, srv.Buyer.Key(), p["signing_payload"])
	signed := h.call("PUT", "/payments/"+id+"/sign", buyer, map[string]string{"signature": sig})
	expect(t, signed, http.StatusOK, "")
	if got := signed.json(t); got["status"] != "signed" || got["signing_payload"] != nil {
		t.Fatalf("signed payment = %v", got)
	}

	// The merchant authorizes: prepare (twice: the same pending row), sign, submit.
	prep := h.call("POST", "/payments/"+id+"/authorize/prepare", merchant, map[string]any{})
	expect(t, prep, http.StatusCreated, "")
	again := h.call("POST", "/payments/"+id+"/authorize/prepare", merchant, map[string]any{})
	expect(t, again, http.StatusOK, "")
	if prep.json(t)["id"] != again.json(t)["id"] {
		t.Fatal("a second prepare did not return the pending transaction")
	}
	raw := signTx(t, srv.Merchant.Key(), prep.json(t)["unsigned_transaction"].(string))
	sub := h.call("POST", "/payments/"+id+"/authorize", merchant, map[string]string{"signed_transaction": raw})
	expect(t, sub, http.StatusAccepted, "")
	if st := sub.json(t)["status"]; st != "submitted" {
		t.Fatalf("submitted transaction status = %v", st)
	}
	// Not confirmed until the server clock passes the confirmation delay.
	h.clock.Advance(29 * time.Second)
	if st := h.call("GET", "/payments/"+id, buyer, nil).json(t)["status"]; st != "signed" {
		t.Fatalf("status before confirmation = %v", st)
	}
	h.clock.Advance(2 * time.Second)
	auth := h.call("GET", "/payments/"+id, buyer, nil).json(t)
	if auth["status"] != "authorized" || auth["capturable_amount"] != "25000000" {
		t.Fatalf("after authorize = %v", auth)
	}

	// Partial capture.
	capTx := h.step(merchant, srv.Merchant.Key(), id, "capture", map[string]any{"amount": "10.00"})
	if capTx["amount"] != "10000000" || capTx["block_number"] == nil || capTx["gas_cost"] == nil {
		t.Fatalf("capture transaction = %v", capTx)
	}
	pc := h.call("GET", "/payments/"+id, merchant, nil).json(t)
	if pc["status"] != "partially_captured" || pc["capturable_amount"] != "15000000" || pc["refundable_amount"] != "10000000" {
		t.Fatalf("after capture = %v", pc)
	}
	d := waitDelivery(t, deliveries)
	verifyDelivery(t, d, secret, "payments.captured")

	// A capture above the escrow is refused before it costs gas.
	over := h.call("POST", "/payments/"+id+"/capture/prepare", merchant, map[string]any{"amount": "20.00"})
	expect(t, over, http.StatusUnprocessableEntity, "amount_exceeds_capturable")
	if e := over.json(t); e["status"] != "invalid_state" || e["error"] != "amount_exceeds_capturable" {
		t.Fatalf("error envelope = %v", e)
	}

	// Two-phase refund.
	phase1 := h.call("POST", "/payments/"+id+"/refund/prepare", merchant, map[string]any{"amount": "4.00"})
	expect(t, phase1, http.StatusOK, "")
	payload := phase1.json(t)["signing_payload"].(map[string]any)
	if payload["primaryType"] != "ReceiveWithAuthorization" {
		t.Fatalf("refund payload = %v", payload)
	}
	refundSig := signTypedData(t, srv.Merchant.Key(), payload)
	h.step(merchant, srv.Merchant.Key(), id, "refund", map[string]any{"amount": "4.00", "signature": refundSig})
	if rf := h.call("GET", "/payments/"+id, merchant, nil).json(t); rf["refundable_amount"] != "6000000" || rf["status"] != "partially_captured" {
		t.Fatalf("after refund = %v", rf)
	}

	// Dispute, opened and closed by the payer.
	h.step(buyer, srv.Buyer.Key(), id, "dispute", map[string]any{})
	if dp := h.call("GET", "/payments/"+id, buyer, nil).json(t); dp["disputed"] != true {
		t.Fatalf("after dispute = %v", dp)
	}
	open := h.call("GET", "/disputes?status=open", merchant, nil)
	if l := open.list(t); len(l) != 1 || l[0]["payment"].(map[string]any)["id"] != id {
		t.Fatalf("open disputes = %s", open.body)
	}
	h.step(buyer, srv.Buyer.Key(), id, opCloseDispute, map[string]any{})
	closed := h.call("GET", "/payments/"+id+"/disputes", buyer, nil).list(t)
	if len(closed) != 1 || closed[0]["status"] != "closed" || closed[0]["closed_by"] != "payer" {
		t.Fatalf("payment disputes = %v", closed)
	}

	// Lists, pagination headers and validated filters.
	txs := h.call("GET", "/payments/"+id+"/transactions?per_page=2&page=2&sort=created_at", merchant, nil)
	if txs.header.Get("X-Total-Count") != "5" || txs.header.Get("X-Page") != "2" || txs.header.Get("X-Per-Page") != "2" {
		t.Fatalf("pagination headers = %v", txs.header)
	}
	if l := txs.list(t); len(l) != 2 || l[0]["operation"] != "refund" {
		t.Fatalf("page 2 of transactions = %s", txs.body)
	}
	if l := h.call("GET", "/payments?sort=-created_at,status&status=partially_captured", buyer, nil).list(t); len(l) != 1 {
		t.Fatalf("filtered payments = %v", l)
	}
	expect(t, h.call("GET", "/payments?status=bogus", buyer, nil), http.StatusBadRequest, "invalid_param")

	// Analytics for the merchant; the account-less buyer is refused.
	sum := h.call("GET", "/analytics/summary", merchant, nil).json(t)
	vol := sum["volume"].([]any)[0].(map[string]any)
	if sum["orders"] != float64(1) || vol["captured"] != "10000000" || vol["refunded"] != "4000000" || vol["escrowed"] != "15000000" {
		t.Fatalf("summary = %v", sum)
	}
	expect(t, h.call("GET", "/analytics/timeseries?interval=week&token="+srv.Token+"&chain_id=84532", merchant, nil), http.StatusOK, "")
	expect(t, h.call("GET", "/analytics/breakdown?by=token", merchant, nil), http.StatusOK, "")
	expect(t, h.call("GET", "/analytics/summary", buyer, nil), http.StatusForbidden, "account_required")

	// The delivery log holds the exact body that was sent.
	cbs := h.call("GET", "/webhooks/"+hookID+"/event_callbacks?status=delivered", merchant, nil).list(t)
	if len(cbs) != 1 || cbs[0]["payload"] != string(d.body) {
		t.Fatalf("event callbacks = %v", cbs)
	}

	// Logout revokes exactly that token.
	out := h.call("POST", "/auth/logout", buyer, nil)
	if out.json(t)["revoked"] != true {
		t.Fatalf("logout = %s", out.body)
	}
	expect(t, h.call("GET", "/payments", buyer, nil), http.StatusUnauthorized, "unauthorized")
	expect(t, h.call("GET", "/payments", merchant, nil), http.StatusOK, "")
}
