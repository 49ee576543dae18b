package verify_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rail0/rail0-go/internal/verify"
	"github.com/rail0/rail0-go/internal/verifytest"
)

// FuzzCheckTransaction feeds arbitrary unsigned_transaction strings to the
// check: it never panics, anything it accepts re-encodes to a transaction
// whose fields equal the payment's, and anything it refuses is an
// *verify.Mismatch or a *verify.Invalid (a *rail0.ArtifactError or a
// *rail0.ValidationError to a user).
func FuzzCheckTransaction(f *testing.F) {
	tm, in, tr, fields := captureFixture()
	honest, _ := json.Marshal(fields)
	h := string(honest[:len(honest)-1])
	for _, seed := range []string{string(honest), "", "{}", "null", `{"chain_id": 84532}`, `{"chain_id": "0x14a34"}`,
		`{"chain_id": 1e3}`, `{"chain_id": -1}`, `{"data": "0x"}`, string(honest) + "x",
		// Two readings of one transaction: a repeated key, a case variant,
		// a folded one, an account nonce past EIP-2681's cap.
		h + `,"to":"` + verifytest.Token + `"}`, h + `,"To":"` + verifytest.Token + `"}`, h + `,"max_fee_per_gaſ":"1"}`,
		strings.Replace(string(honest), `"nonce":7`, `"nonce":"18446744073709551615"`, 1)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, unsigned string) {
		tx, err := verify.CheckTransaction(tm, in, unsigned, tr)
		if refused(t, err) {
			return
		}
		// What the SDK hands back is the payment's call, reads the same
		// and has the same digest.
		canonical := tx.Canonical(tm.Payee)
		var got struct {
			ChainID string `json:"chain_id"`
			To      string `json:"to"`
			Value   string `json:"value"`
			Data    string `json:"data"`
		}
		if json.Unmarshal(canonical, &got) != nil || got.ChainID != fmt.Sprint(verifytest.ChainID) || got.To != tm.Contract.String() ||
			got.Value != "0" || len(got.Data) != 2+2*(4+32*8) {
			t.Fatalf("accepted a transaction that differs from the payment: %s", canonical)
		}
		again, err := verify.CheckTransaction(tm, in, string(canonical), tr)
		if err != nil || again.SigningHash() != tx.SigningHash() {
			t.Fatalf("the canonical transaction does not check to the same digest: %v", err)
		}
	})
}

// FuzzCheckPayload does the same for signing payloads.
func FuzzCheckPayload(f *testing.F) {
	tm, p := honestParts()
	honest, _ := json.Marshal(verifytest.PayloadDoc(tm, nil))
	for _, seed := range []string{string(honest), "", "{}", "null", `{"primaryType": "TransferWithAuthorization"}`,
		// The attack of one payload read two ways: honest keys spelled
		// another way after hostile ones, and a repeated message.
		rawObj("types", p.types, "primaryType", p.primary, "domain", p.domain, "message", p.evil, "Domain", p.domain, "Message", p.message),
		rawObj("types", p.types, "primaryType", p.primary, "domain", p.domain, "message", p.evil, "meſſage", p.message),
		rawObj("types", p.types, "primaryType", p.primary, "domain", p.domain, "message", p.evil, "message", p.message),
		rawObj("types", p.types, "primaryType", p.primary, "domain", p.domain, "message", strings.TrimSuffix(p.message, "}")+`,"Value":"1"}`)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		pc, err := verify.CheckPayload(tm, verify.Intent{}, json.RawMessage(payload))
		if refused(t, err) {
			return
		}
		if pc.Digest != verifytest.PayerDigest(tm, pc.Name, pc.Version) {
			t.Fatalf("accepted payload signs another digest")
		}
		// A reader that matches keys exactly, as JSON.parse does, finds in
		// the gateway's payload the values the SDK checked and hands back.
		if !sameReading(t, []byte(payload), pc.TypedData()) {
			t.Fatalf("an exact reader sees another payload than the one checked:\n%s", payload)
		}
		again, err := verify.CheckPayload(tm, verify.Intent{}, pc.TypedData())
		if err != nil || again.Digest != pc.Digest {
			t.Fatalf("the canonical typed data does not check to the same digest: %v", err)
		}
	})
}

// sameReading reports whether an exact-key reader (a Go map, like
// JSON.parse: keys as written, the last of equal keys winning) finds the
// same domain and message values in a and b.
func sameReading(t *testing.T, a, b []byte) bool {
	read := func(doc []byte) map[string]string {
		var top map[string]json.RawMessage
		if json.Unmarshal(doc, &top) != nil {
			t.Fatalf("unreadable: %s", doc)
		}
		out := map[string]string{}
		for _, section := range []string{"domain", "message"} {
			var m map[string]json.RawMessage
			_ = json.Unmarshal(top[section], &m)
			for k, v := range m {
				if n, err := verify.ParseUint(v, 256); err == nil {
					out[section+"."+k] = n.String()
				} else if s, ok := verify.JSONString(v); ok {
					out[section+"."+k] = strings.ToLower(s)
				} else {
					out[section+"."+k] = string(v)
				}
			}
		}
		return out
	}
	x, y := read(a), read(b)
	if len(x) != len(y) {
		return false
	}
	for k, v := range x {
		if y[k] != v {
			return false
		}
	}
	return true
}

// refused reports whether a check refused its input, failing t when the
// refusal is not one of the typed errors the checks promise.
func refused(t *testing.T, err error) bool {
	if err == nil {
		return false
	}
	var ae *verify.Mismatch
	var ve *verify.Invalid
	if !errors.As(err, &ae) && !errors.As(err, &ve) {
		t.Fatalf("untyped error %T: %v", err, err)
	}
	return true
}
