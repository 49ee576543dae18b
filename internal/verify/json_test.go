package verify_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/rail0/rail0-go/internal/verify"
	"github.com/rail0/rail0-go/internal/verifytest"
)

// rawObj writes a JSON object from key and raw-value pairs, in order,
// repeats included: what a hostile gateway can send and a map cannot hold.
func rawObj(kv ...string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(kv[i]) + ":" + kv[i+1])
	}
	return b.String() + "}"
}

func quoted(s string) string { return strconv.Quote(s) }

// fieldsJSON writes a type's field list as typed data does.
func fieldsJSON(fields []verify.TypedField) string {
	b, _ := json.Marshal(fields)
	return string(b)
}

// payloadParts are the honest pieces of the payer's payload of a payment,
// in raw JSON, to be put together in any order, with anything added.
type payloadParts struct {
	types, primary, domain, message string
	// evil is the message a thief wants signed: 1,000,000 USDC to verifytest.Other.
	evil string
}

func honestParts() (*verify.Terms, payloadParts) {
	tm := testTerms(verify.ModeAuthorize)
	message := func(to, value string) string {
		return rawObj("from", quoted(tm.Payer.String()), "to", quoted(to), "value", quoted(value),
			"validAfter", `"0"`, "validBefore", quoted(fmt.Sprint(verifytest.AuthExpiry)), "nonce", quoted(tm.Nonce(verify.OpAuthorize).String()))
	}
	return tm, payloadParts{
		types:   rawObj("EIP712Domain", fieldsJSON(verify.DomainFields), "TransferWithAuthorization", fieldsJSON(verify.EIP3009Typed)),
		primary: quoted("TransferWithAuthorization"),
		domain:  rawObj("name", `"USDC"`, "version", `"2"`, "chainId", fmt.Sprint(verifytest.ChainID), "verifyingContract", quoted(verifytest.Token)),
		message: message(verifytest.Contract, fmt.Sprint(verifytest.Amount)),
		evil:    message(verifytest.Other, "1000000000000"),
	}
}

// TestStrictReadingOfPayloads: a signing_payload that encoding/json and
// JSON.parse would read differently is refused, at every level, with an
// *verify.Mismatch naming the key; the same payload in another key order is
// accepted with the same digest.
func TestStrictReadingOfPayloads(t *testing.T) {
	t.Parallel()
	tm, p := honestParts()
	honest := rawObj("types", p.types, "primaryType", p.primary, "domain", p.domain, "message", p.message)
	want, err := verify.CheckPayload(tm, verify.Intent{}, json.RawMessage(honest))
	if err != nil {
		t.Fatalf("honest payload: %v", err)
	}
	evilDomain := rawObj("name", `"USDC"`, "version", `"2"`, "chainId", "1", "verifyingContract", quoted(verifytest.Other))
	refused := []struct {
		name, payload, field, reason string
	}{
		// The attack: an honest "Domain"/"Message" after a hostile
		// "domain"/"message". encoding/json keeps the last; JSON.parse
		// and a wallet read "domain" and "message".
		{"honest Domain and Message after hostile ones",
			rawObj("types", p.types, "primaryType", p.primary, "domain", evilDomain, "message", p.evil, "Domain", p.domain, "Message", p.message),
			"Domain", "and domain differ only by case"},
		{"honest Message only", rawObj("types", p.types, "primaryType", p.primary, "domain", p.domain, "message", p.evil, "Message", p.message),
			"Message", "and message differ only by case"},
		{"hostile message repeated after the honest one", rawObj("types", p.types, "primaryType", p.primary, "domain", p.domain, "message", p.message, "message", p.evil),
			"message", "is repeated"},
		{"long s: meſſage beside message", rawObj("types", p.types, "primaryType", p.primary, "domain", p.domain, "message", p.evil, "meſſage", p.message),
			`"me\u017f\u017fage"`, "and message differ only by case or Unicode folding"},
		{"long s: meſſage alone", rawObj("types", p.types, "primaryType", p.primary, "domain", p.domain, "meſſage", p.message),
			`"me\u017f\u017fage"`, `differs from "message" only by case or Unicode folding`},
		{"Kelvin sign beside k", rawObj("types", p.types, "primaryType", p.primary, "domain", p.domain, "message", p.message, "k", "1", "\u212a", "2"),
			`"\u212a"`, "and k differ only by case or Unicode folding"},
		{"primaryType in capitals alone", rawObj("types", p.types, "PRIMARYTYPE", p.primary, "domain", p.domain, "message", p.message),
			"PRIMARYTYPE", `differs from "primaryType" only by case`},
		{"repeated top-level key", rawObj("primaryType", p.primary, "types", p.types, "primaryType", p.primary, "domain", p.domain, "message", p.message),
			"primaryType", "is repeated"},
		{"unknown top-level key", rawObj("types", p.types, "primaryType", p.primary, "domain", p.domain, "message", p.message, "extra", "1"),
			"extra", "is not a key"},
		// One level down.
		{"message value repeated", rawObj("types", p.types, "primaryType", p.primary, "domain", p.domain,
			"message", strings.TrimSuffix(p.message, "}")+`,"value":"1000000000000"}`), "message.value", "is repeated"},
		{"domain chainId beside ChainId", rawObj("types", p.types, "primaryType", p.primary,
			"domain", strings.TrimSuffix(p.domain, "}")+`,"ChainId":1}`, "message", p.message), "domain.ChainId", "and chainId differ only by case"},
		{"domain salt", rawObj("types", p.types, "primaryType", p.primary,
			"domain", strings.TrimSuffix(p.domain, "}")+`,"salt":"0x00"}`, "message", p.message), "domain.salt", "is not a key"},
		{"message To alone", rawObj("types", p.types, "primaryType", p.primary, "domain", p.domain,
			"message", strings.Replace(p.message, `"to"`, `"To"`, 1)), "message.To", `differs from "to" only by case`},
		{"an unknown type", rawObj("types", strings.TrimSuffix(p.types, "}")+`,"Mail":[]}`, "primaryType", p.primary, "domain", p.domain, "message", p.message),
			"types.Mail", "is not a key"},
		{"a type repeated", rawObj("types", strings.TrimSuffix(p.types, "}")+`,"TransferWithAuthorization":[]}`, "primaryType", p.primary, "domain", p.domain, "message", p.message),
			"types.TransferWithAuthorization", "is repeated"},
		// Two levels down: a field of a type.
		{"a field's name repeated", rawObj("types", strings.Replace(p.types, `{"name":"to","type":"address"}`, `{"name":"to","type":"address","name":"from"}`, 1),
			"primaryType", p.primary, "domain", p.domain, "message", p.message), "types.TransferWithAuthorization[1].name", "is repeated"},
		{"a field's Type beside type", rawObj("types", strings.Replace(p.types, `{"name":"to","type":"address"}`, `{"name":"to","type":"address","Type":"uint256"}`, 1),
			"primaryType", p.primary, "domain", p.domain, "message", p.message), "types.TransferWithAuthorization[1].Type", "and type differ only by case"},
		{"a field with an unknown key", rawObj("types", strings.Replace(p.types, `{"name":"to","type":"address"}`, `{"name":"to","type":"address","indexed":true}`, 1),
			"primaryType", p.primary, "domain", p.domain, "message", p.message), "types.TransferWithAuthorization[1].indexed", "is not a key"},
		// The document as a whole.
		{"a second document", honest + rawObj("message", p.evil), "", "has data after"},
		{"invalid UTF-8", strings.Replace(honest, `"USDC"`, "\"US\xffDC\"", 1), "", "is not valid UTF-8"},
		{"nested too deep", rawObj("types", p.types, "primaryType", p.primary, "domain", p.domain, "message", p.message,
			"x", strings.Repeat("[", 40)+strings.Repeat("]", 40)), "x" + strings.Repeat("[0]", 15), "nested more than"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			_, err := verify.CheckPayload(tm, verify.Intent{}, json.RawMessage(tt.payload))
			var ae *verify.Mismatch
			if !errors.As(err, &ae) || ae.Artifact != "signing_payload" || ae.Field != tt.field || !strings.Contains(ae.Error(), tt.reason) {
				t.Fatalf("err = %v (field %q), want a *verify.Mismatch on signing_payload field %q saying %q", err, fieldOf(err), tt.field, tt.reason)
			}
		})
	}

	// Honest payloads in other key orders and spellings are accepted, with
	// the same digest and the same typed data.
	reversed := func(obj string) string { // an object's keys in reverse order
		var m map[string]json.RawMessage
		_ = json.Unmarshal([]byte(obj), &m)
		var kv []string
		for _, k := range []string{"verifyingContract", "chainId", "version", "name", "nonce", "validBefore", "validAfter", "value", "to", "from"} {
			if v, ok := m[k]; ok {
				kv = append(kv, k, string(v))
			}
		}
		return rawObj(kv...)
	}
	for name, payload := range map[string]string{
		"message first":          rawObj("message", p.message, "domain", p.domain, "primaryType", p.primary, "types", p.types),
		"inner keys reversed":    rawObj("types", p.types, "primaryType", p.primary, "domain", reversed(p.domain), "message", reversed(p.message)),
		"type before name":       rawObj("types", swapFieldKeys(p.types), "primaryType", p.primary, "domain", p.domain, "message", p.message),
		"chainId as a string":    rawObj("types", p.types, "primaryType", p.primary, "domain", strings.Replace(p.domain, `"chainId":84532`, `"chainId":"84532"`, 1), "message", p.message),
		"whitespace and escapes": strings.ReplaceAll(rawObj("types", p.types, "primaryType", p.primary, "domain", p.domain, "message", p.message), `":`, "\"\n :\t") + "\n",
		"a key escaped":          strings.Replace(honest, `"domain"`, `"\u0064omain"`, 1),
	} {
		got, err := verify.CheckPayload(tm, verify.Intent{}, json.RawMessage(payload))
		if err != nil {
			t.Errorf("%s: %v\n%s", name, err, payload)
			continue
		}
		if got.Digest != want.Digest || string(got.TypedData()) != string(want.TypedData()) {
			t.Errorf("%s: another digest or typed data", name)
		}
	}
}

// swapFieldKeys rewrites every {"name":N,"type":T} of a types object as
// {"type":T,"name":N}.
func swapFieldKeys(types string) string {
	var m map[string][]verify.TypedField
	_ = json.Unmarshal([]byte(types), &m)
	var kv []string
	for _, name := range []string{"EIP712Domain", "TransferWithAuthorization", "ReceiveWithAuthorization"} {
		fields, ok := m[name]
		if !ok {
			continue
		}
		parts := make([]string, len(fields))
		for i, f := range fields {
			parts[i] = rawObj("type", quoted(f.Type), "name", quoted(f.Name))
		}
		kv = append(kv, name, "["+strings.Join(parts, ",")+"]")
	}
	return rawObj(kv...)
}

func fieldOf(err error) string {
	var ae *verify.Mismatch
	if errors.As(err, &ae) {
		return ae.Field
	}
	return ""
}

// TestStrictReadingOfTransactions: the same rules for unsigned_transaction,
// whose JSON sits in a string.
func TestStrictReadingOfTransactions(t *testing.T) {
	t.Parallel()
	tm, in, tr, f := captureFixture()
	raw := func(k string) string { b, _ := json.Marshal(f[k]); return string(b) }
	pairs := func(keys ...string) []string {
		var kv []string
		for _, k := range keys {
			kv = append(kv, k, raw(k))
		}
		return kv
	}
	order := []string{"chain_id", "nonce", "to", "value", "data", "gas_limit", "max_priority_fee_per_gas", "max_fee_per_gas", "from"}
	honest := rawObj(pairs(order...)...)
	want, err := verify.CheckTransaction(tm, in, honest, tr)
	if err != nil {
		t.Fatalf("honest transaction: %v", err)
	}
	with := func(kv ...string) string { return rawObj(append(pairs(order...), kv...)...) }
	for _, tt := range []struct {
		name, tx, field, reason string
	}{
		{"to repeated", with("to", quoted(verifytest.Token)), "to", "is repeated"},
		{"To beside to", with("To", quoted(verifytest.Token)), "To", "and to differ only by case"},
		{"Data alone", strings.Replace(honest, `"data"`, `"Data"`, 1), "Data", `differs from "data" only by case`},
		{"long s: max_fee_per_gaſ beside max_fee_per_gas", with("max_fee_per_gaſ", `"1"`), `"max_fee_per_ga\u017f"`, "and max_fee_per_gas differ only by case or Unicode folding"},
		{"Kelvin sign beside k", with("k", "1", "\u212a", "1"), `"\u212a"`, "and k differ only by case or Unicode folding"},
		{"unknown key", with("gas", "21000"), "gas", "is not a key"},
		{"access list", with("access_list", "[]"), "access_list", "is not a key"},
		{"a second object", honest + "{}", "unsigned_transaction", "has data after"},
		{"not an object", `[1]`, "unsigned_transaction", "is not a JSON object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := verify.CheckTransaction(tm, in, tt.tx, tr)
			var ae *verify.Mismatch
			if !errors.As(err, &ae) || ae.Artifact != "unsigned_transaction" || ae.Field != tt.field || !strings.Contains(ae.Error(), tt.reason) {
				t.Fatalf("err = %v (field %q), want a *verify.Mismatch on unsigned_transaction field %q saying %q", err, fieldOf(err), tt.field, tt.reason)
			}
		})
	}
	reversed := make([]string, len(order))
	for i, k := range order {
		reversed[len(order)-1-i] = k
	}
	for name, tx := range map[string]string{
		"keys reversed":       rawObj(pairs(reversed...)...),
		"numbers as strings":  strings.Replace(strings.Replace(honest, `"chain_id":84532`, `"chain_id":"84532"`, 1), `"nonce":7`, `"nonce":"7"`, 1),
		"without from":        rawObj(pairs(order[:8]...)...),
		"from null":           rawObj(append(pairs(order[:8]...), "from", "null")...),
		"whitespace, escapes": strings.Replace(honest, `"nonce"`, "\n\"n\\u006fnce\" ", 1),
	} {
		got, err := verify.CheckTransaction(tm, in, tx, tr)
		if err != nil {
			t.Errorf("%s: %v\n%s", name, err, tx)
			continue
		}
		if got.SigningHash() != want.SigningHash() {
			t.Errorf("%s: another digest", name)
		}
	}
}
