package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0test"
)

// Attack 3 of issue 19: one payload, two readings. encoding/json matches
// keys ignoring case and Unicode folding and keeps the last of equal keys;
// JSON.parse, and so eth_signTypedData_v4 in a browser wallet, matches them
// exactly. A proxy in front of rail0test adds a hostile "domain" and
// "message" (1,000,000 USDC to the thief) ahead of the honest ones, which
// it spells "Domain" and "Message": a Go reader sees an honest payload, a
// wallet the thief's. The SDK must refuse it: no signature, a typed error.

// rawProxy sits in front of rail0test and rewrites raw answer bodies, so
// that it can send what a Go map cannot hold: repeated keys, keys that
// differ only by case.
type rawProxy struct {
	*httptest.Server
	mu      sync.Mutex
	rewrite func(route string, body []byte) []byte // nil, or a body that replaces the answer's
	hits    int
	sent    [][]byte // the rewritten bodies
}

func newRawProxy(t *testing.T, gw *rail0test.Server) *rawProxy {
	rp := &rawProxy{}
	rp.Server = newProxy(t, gw, proxyHooks{out: func(resp *http.Response) error {
		rp.mu.Lock()
		rewrite := rp.rewrite
		rp.mu.Unlock()
		if rewrite == nil || resp.StatusCode >= 300 {
			return nil
		}
		body, err := drain(resp.Body)
		if err != nil {
			return err
		}
		if changed := rewrite(resp.Request.Method+" "+resp.Request.URL.Path, body); changed != nil {
			body = changed
			rp.mu.Lock()
			rp.hits++
			rp.sent = append(rp.sent, changed)
			rp.mu.Unlock()
		}
		resp.Body, resp.ContentLength = withBody(resp.Header, body)
		return nil
	}})
	return rp
}

func (rp *rawProxy) set(f func(route string, body []byte) []byte) {
	rp.mu.Lock()
	rp.rewrite, rp.hits, rp.sent = f, 0, nil
	rp.mu.Unlock()
}

// orderedObject writes a JSON object from key and raw-value pairs, in
// order, repeats and all.
func orderedObject(kv ...any) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(kv[i].(string)) + ":")
		b.Write(kv[i+1].(json.RawMessage))
	}
	b.WriteByte('}')
	return b.Bytes()
}

// twoReadings rewrites the signing_payload of answers on routes containing
// route into the attack: the thief's "domain" and "message" (value to thief,
// the rest unchanged) first, then the honest ones as "Domain" and "Message".
func twoReadings(route, thief, value string) func(string, []byte) []byte {
	return func(path string, body []byte) []byte {
		var answer map[string]json.RawMessage
		if !strings.Contains(path, route) || json.Unmarshal(body, &answer) != nil || len(answer["signing_payload"]) < 2 {
			return nil
		}
		var doc map[string]json.RawMessage
		if json.Unmarshal(answer["signing_payload"], &doc) != nil {
			return nil
		}
		var message map[string]any
		_ = json.Unmarshal(doc["message"], &message)
		message["to"], message["value"] = thief, value
		evil, _ := json.Marshal(message)
		answer["signing_payload"] = orderedObject("types", doc["types"], "primaryType", doc["primaryType"],
			"domain", doc["domain"], "message", json.RawMessage(evil), "Domain", doc["domain"], "Message", doc["message"])
		out, _ := json.Marshal(answer)
		return out
	}
}

// wallets reads a payload as JSON.parse does (keys exactly, the last of
// equal keys winning), and so as a browser wallet signs it.
func walletReads(t *testing.T, payload []byte) (to, value string) {
	t.Helper()
	var doc map[string]json.RawMessage
	var message map[string]any
	if json.Unmarshal(payload, &doc) != nil || json.Unmarshal(doc["message"], &message) != nil {
		t.Fatalf("not a payload: %s", payload)
	}
	to, _ = message["to"].(string)
	value, _ = message["value"].(string)
	return to, value
}

func TestAttackOnePayloadTwoReadings(t *testing.T) {
	clock := rail0test.NewManualClock(time.Now())
	gw := rail0test.NewServer(rail0test.WithoutRateLimits(), rail0test.WithClock(clock))
	defer gw.Close()
	rp := newRawProxy(t, gw)
	ctx := context.Background()
	buyer, merchant := signingClients(t, gw, rp.URL)
	const thief = "0x00000000000000000000000000000000000Bad00"
	const million = "1000000000000" // 1,000,000 USDC in base units

	create := func(t *testing.T) *rail0.PaymentDetail {
		t.Helper()
		rp.set(nil)
		p, err := buyer.Payments.Create(ctx, rail0.PaymentCreateParams{ChainID: gw.ChainID, Mode: rail0.ModeAuthorize, Amount: "25.00",
			Token: gw.Token, Payer: gw.Buyer.Address, Payee: gw.Merchant.Address})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// premise checks that the proxy did send two readings of one payload:
	// a wallet reads the thief's message, go-ethereum's encoding/json
	// reader the honest one, whose digest the SDK used to accept.
	premise := func(t *testing.T, honestDigest [32]byte) {
		t.Helper()
		rp.mu.Lock()
		sent := append([][]byte(nil), rp.sent...)
		rp.mu.Unlock()
		if len(sent) == 0 {
			t.Fatal("the proxy rewrote nothing: the test proves nothing")
		}
		var answer map[string]json.RawMessage
		_ = json.Unmarshal(sent[len(sent)-1], &answer)
		payload := answer["signing_payload"]
		if to, value := walletReads(t, payload); !strings.EqualFold(to, thief) || value != million {
			t.Fatalf("a wallet reads to %s, value %s: the attack is not in place", to, value)
		}
		var td apitypes.TypedData
		if err := json.Unmarshal(payload, &td); err != nil {
			t.Fatal(err)
		}
		if digest, _, err := apitypes.TypedDataAndHash(td); err != nil || common.BytesToHash(digest) != common.Hash(honestDigest) {
			t.Fatalf("encoding/json does not read the honest payload (%x, %v)", digest, err)
		}
	}
	// arm checks the honest payload with c and has the proxy attack the
	// answers on route from now on; it returns the honest digest.
	arm := func(t *testing.T, c *rail0.Client, p *rail0.PaymentDetail, in rail0.Intent, payload json.RawMessage, route string) [32]byte {
		t.Helper()
		honest, err := c.Payments.VerifyPayload(ctx, p, in, payload)
		if err != nil {
			t.Fatal(err)
		}
		rp.set(twoReadings(route, thief, million))
		return honest.Digest
	}
	refusedOnDomain := func(t *testing.T, err error) {
		t.Helper()
		var ae *rail0.ArtifactError
		if !errors.As(err, &ae) || ae.Artifact != "signing_payload" || ae.Field != "Domain" || !strings.Contains(err.Error(), "differ only by case") {
			t.Fatalf("err = %v, want an *ArtifactError on signing_payload key Domain", err)
		}
	}

	t.Run("PayerSign", func(t *testing.T) {
		p := create(t)
		honest := arm(t, buyer, p, rail0.Intent{}, p.SigningPayload, "GET /payments/")
		_, err := buyer.Payments.PayerSign(ctx, p.ID, rail0.PaymentPayerSignParams{})
		premise(t, honest)
		refusedOnDomain(t, err)
		if n := gw.Ledger.Count("PUT /payments/{id}/sign", ""); n != 0 {
			t.Fatalf("%d signatures reached the gateway", n)
		}
	})

	t.Run("VerifyPayload", func(t *testing.T) {
		p := create(t)
		honest := arm(t, buyer, p, rail0.Intent{}, p.SigningPayload, "GET /payments/")
		read, err := buyer.Payments.Get(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		premise(t, honest)
		got, err := buyer.Payments.VerifyPayload(ctx, read, rail0.Intent{}, read.SigningPayload)
		refusedOnDomain(t, err)
		if got != nil {
			t.Fatalf("a refusal came with a result: %+v", got)
		}
	})

	t.Run("Refund", func(t *testing.T) {
		p := create(t)
		if _, err := buyer.Payments.PayerSign(ctx, p.ID, rail0.PaymentPayerSignParams{}); err != nil {
			t.Fatal(err)
		}
		for _, step := range []func() (*rail0.Transaction, error){
			func() (*rail0.Transaction, error) {
				return merchant.Payments.Authorize(ctx, p.ID, rail0.PaymentAuthorizeParams{})
			},
			func() (*rail0.Transaction, error) {
				return merchant.Payments.Capture(ctx, p.ID, rail0.PaymentCaptureParams{Amount: "10.00"})
			},
		} {
			tx, err := step()
			if err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Minute)
			if _, err := merchant.Payments.WaitForTransaction(ctx, p.ID, tx.ID, rail0.PaymentWaitForTransactionParams{PollInterval: 200 * time.Millisecond, MaxPollInterval: 200 * time.Millisecond}); err != nil {
				t.Fatal(err)
			}
		}
		read, err := merchant.Payments.Get(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		auth, err := merchant.Payments.PrepareRefund(ctx, p.ID, rail0.PaymentPrepareRefundParams{Amount: "4.00"})
		if err != nil {
			t.Fatal(err)
		}
		honest := arm(t, merchant, read, rail0.Intent{Operation: rail0.OpRefund, Amount: "4.00", Expect: rail0.Expectation{Payer: read.Payer}}, auth.SigningPayload, "/refund/prepare")
		_, err = merchant.Payments.Refund(ctx, p.ID, rail0.PaymentRefundParams{Amount: "4.00", Expect: rail0.Expectation{Payer: read.Payer}})
		premise(t, honest)
		refusedOnDomain(t, err)
		if n := gw.Ledger.CountOperation(p.ID, "refund"); n != 0 {
			t.Fatalf("%d refunds reached the gateway", n)
		}
	})
}
