package verify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// This file checks a signing_payload: the EIP-3009 authorization the payer
// signs for a payment (TransferWithAuthorization) or the payee for a refund
// (ReceiveWithAuthorization), each field recomputed from the terms.

// eip3009Fields is the field list of both EIP-3009 authorizations.
const eip3009Fields = "(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"

// AuthorizationDigest is the EIP-712 digest of an EIP-3009 authorization
// (primary TransferWithAuthorization or ReceiveWithAuthorization) of value
// from from to the RAIL0 contract, valid from 0 until validBefore, under the
// token's domain with the given name and version.
func AuthorizationDigest(t *Terms, primary, name, version string, from Address, value *big.Int, validBefore uint64, nonce Word) Word {
	structHash := KeccakWords(KeccakString(primary+eip3009Fields),
		from.Word(), t.Contract.Word(), UintWord(value), Word{}, U64Word(validBefore), nonce)
	return eip712Digest(eip712Domain{name: name, version: version, chainID: t.ChainID, contract: t.Token}, structHash)
}

// Payload is the outcome of a verified signing payload: the digest to
// sign and every value it was computed from, so that the typed data handed
// to a wallet can be encoded from them.
type Payload struct {
	// Digest is the EIP-712 digest to sign.
	Digest Word
	// Name and Version are the token's EIP-712 domain, as checked.
	Name, Version string
	primary       string
	chainID       *big.Int
	token         Address // the domain's verifyingContract
	from, to      Address
	value         *big.Int
	validBefore   uint64
	nonce         Word
}

// typedField is one field of an EIP-712 struct type, as typed data lists it.
type typedField struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// The EIP-712 types the payloads use: the four-field domain of the tokens
// and of RAIL0, and the six fields of both EIP-3009 authorizations.
var (
	domainFields = []typedField{{"name", "string"}, {"version", "string"}, {"chainId", "uint256"}, {"verifyingContract", "address"}}
	eip3009Typed = []typedField{{"from", "address"}, {"to", "address"}, {"value", "uint256"},
		{"validAfter", "uint256"}, {"validBefore", "uint256"}, {"nonce", "bytes32"}}
)

// fieldList writes fields as "name type,name type,…" for comparison and
// errors.
func fieldList(fields []typedField) string {
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = f.Name + " " + f.Type
	}
	return strings.Join(parts, ",")
}

// TypedData encodes the EIP-712 document the digest was computed from, in
// the SDK's own words: the canonical types, the domain and message values
// that were checked, uint256 values as decimal strings (exact in every
// language; a JSON number above 2⁵³ is not, in JavaScript). Its hash under
// eth_signTypedData_v4 is the digest.
func (pc *Payload) TypedData() json.RawMessage {
	type domain struct {
		Name              string      `json:"name"`
		Version           string      `json:"version"`
		ChainID           json.Number `json:"chainId"`
		VerifyingContract string      `json:"verifyingContract"`
	}
	type message struct {
		From        string `json:"from"`
		To          string `json:"to"`
		Value       string `json:"value"`
		ValidAfter  string `json:"validAfter"`
		ValidBefore string `json:"validBefore"`
		Nonce       string `json:"nonce"`
	}
	doc := struct {
		Types       map[string][]typedField `json:"types"`
		PrimaryType string                  `json:"primaryType"`
		Domain      domain                  `json:"domain"`
		Message     message                 `json:"message"`
	}{
		Types:       map[string][]typedField{"EIP712Domain": domainFields, pc.primary: eip3009Typed},
		PrimaryType: pc.primary,
		Domain:      domain{pc.Name, pc.Version, json.Number(pc.chainID.String()), pc.token.String()},
		Message: message{pc.from.String(), pc.to.String(), pc.value.String(), "0",
			strconv.FormatUint(pc.validBefore, 10), pc.nonce.String()},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic("rail0: encoding checked typed data: " + err.Error()) // plain strings and numbers cannot fail
	}
	return b
}

// jsonString reads raw as a JSON string; null, a number or anything else is
// not one.
func jsonString(raw json.RawMessage) (string, bool) {
	var s string
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// CheckPayload verifies a signing_payload for the payer's signature (intent
// operation empty) or a refund (OpRefund) against t and in. The payload is
// read strictly (readArtifact): no key repeated, none that differs from
// another only by case or folding, none that EIP-712 typed data does not
// define, at any level.
func CheckPayload(t *Terms, in Intent, payload json.RawMessage) (*Payload, error) {
	fail := func(field, expected, got, reason string) (*Payload, error) {
		return nil, &Mismatch{PaymentID: t.ID, Operation: in.Operation, Artifact: "signing_payload",
			Field: field, Expected: expected, Got: got, Reason: reason}
	}
	// failRead reports an error of the strict reader.
	failRead := func(err error) (*Payload, error) {
		var fe *fieldError
		if errors.As(err, &fe) {
			return fail(fe.field, "", fe.got, fe.reason)
		}
		return nil, err
	}
	var primary string
	var nonceOp string
	var from Address
	var value *big.Int
	var validBefore uint64
	switch in.Operation {
	case "":
		primary, from, value, validBefore = "TransferWithAuthorization", t.Payer, t.Amount, t.AuthExpiry
		nonceOp = OpAuthorize
		if t.Mode == ModeCharge {
			nonceOp = OpCharge
		} else if t.Mode != ModeAuthorize {
			return fail("mode", "", "", fmt.Sprintf("%q is not a mode the payer can sign for", t.Mode))
		}
	case OpRefund:
		amount, err := ParseUintText(in.Amount, 120)
		if err != nil || amount.Sign() == 0 {
			return nil, &Invalid{Field: "amount", Reason: "must be a positive base-unit integer"}
		}
		primary, from, value, validBefore, nonceOp = "ReceiveWithAuthorization", t.Payee, amount, t.RefundExpiry, OpRefund
	default:
		return nil, &Invalid{Field: "operation", Reason: fmt.Sprintf("%s has no signing payload", in.Operation)}
	}

	doc, err := readArtifact(payload, "types", "primaryType", "domain", "message")
	if err != nil {
		var fe *fieldError
		if errors.As(err, &fe) && fe.field == "" {
			return fail("", "", "", fe.reason+": not EIP-712 typed data")
		}
		return failRead(err)
	}
	if got, ok := jsonString(doc["primaryType"]); !ok {
		return fail("primaryType", "", "", "is missing or not a string")
	} else if got != primary {
		return fail("primaryType", primary, Clip(got), "")
	}
	types, err := members(doc["types"], "types", "EIP712Domain", primary)
	if err != nil {
		return failRead(err)
	}
	for _, want := range []struct {
		name   string
		fields []typedField
	}{{"EIP712Domain", domainFields}, {primary, eip3009Typed}} {
		raw, ok := types[want.name]
		if !ok {
			if want.name == primary {
				return fail("types."+primary, "", "", "is missing")
			}
			continue
		}
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) != nil {
			return fail("types."+want.name, "", "", "is not a list of fields")
		}
		got := make([]typedField, len(list))
		for i, f := range list {
			path := fmt.Sprintf("types.%s[%d]", want.name, i)
			m, err := members(f, path, "name", "type")
			if err != nil {
				return failRead(err)
			}
			var okName, okType bool
			got[i].Name, okName = jsonString(m["name"])
			got[i].Type, okType = jsonString(m["type"])
			if !okName || !okType {
				return fail(path, "", "", "must hold a string name and type")
			}
		}
		if fieldList(got) != fieldList(want.fields) {
			return fail("types."+want.name, fieldList(want.fields), fieldList(got), "")
		}
	}

	// The domain: the token's, on the payment's chain.
	domain, err := members(doc["domain"], "domain", "name", "version", "chainId", "verifyingContract")
	if err != nil {
		return failRead(err)
	}
	if len(domain) != 4 {
		return fail("domain", "", "", "must hold exactly name, version, chainId and verifyingContract")
	}
	pc := &Payload{primary: primary, chainID: t.ChainID, token: t.Token, from: from, to: t.Contract,
		value: value, validBefore: validBefore, nonce: t.Nonce(nonceOp)}
	var contract string
	for field, dst := range map[string]*string{"name": &pc.Name, "version": &pc.Version, "verifyingContract": &contract} {
		var ok bool
		if *dst, ok = jsonString(domain[field]); !ok {
			return fail("domain."+field, "", "", "is missing or not a string")
		}
	}
	chainID, err := ParseUint(domain["chainId"], 256)
	if err != nil {
		return fail("domain.chainId", "", "", err.Error())
	}
	if chainID.Cmp(t.ChainID) != 0 {
		return fail("domain.chainId", t.ChainID.String(), chainID.String(), "")
	}
	verifying, err := ParseAddress(contract)
	if err != nil {
		return fail("domain.verifyingContract", "", "", err.Error())
	}
	if verifying != t.Token {
		return fail("domain.verifyingContract", t.Token.String(), verifying.String(), "")
	}

	// The message.
	message, err := members(doc["message"], "message", "from", "to", "value", "validAfter", "validBefore", "nonce")
	if err != nil {
		return failRead(err)
	}
	if len(message) != 6 {
		return fail("message", "", "", "must hold exactly from, to, value, validAfter, validBefore and nonce")
	}
	for _, f := range []struct {
		field string
		want  Address
	}{{"from", pc.from}, {"to", pc.to}} {
		text, ok := jsonString(message[f.field])
		if !ok {
			return fail("message."+f.field, "", "", "is missing or not a string")
		}
		a, err := ParseAddress(text)
		if err != nil {
			return fail("message."+f.field, "", "", err.Error())
		}
		if a != f.want {
			return fail("message."+f.field, f.want.String(), a.String(), "")
		}
	}
	for _, f := range []struct {
		field string
		want  *big.Int
	}{{"value", value}, {"validAfter", new(big.Int)}, {"validBefore", new(big.Int).SetUint64(validBefore)}, {"nonce", new(big.Int).SetBytes(pc.nonce[:])}} {
		got, err := ParseUint(message[f.field], 256)
		if err != nil {
			return fail("message."+f.field, "", "", err.Error())
		}
		if got.Cmp(f.want) != 0 {
			want, have := f.want.String(), got.String()
			if f.field == "nonce" {
				want, have = pc.nonce.String(), UintWord(got).String()
			}
			return fail("message."+f.field, want, have, "")
		}
	}

	// The digest is computed from the checked values with the canonical
	// EIP-3009 types, so what is signed is exactly what was verified.
	pc.Digest = AuthorizationDigest(t, primary, pc.Name, pc.Version, from, value, validBefore, pc.nonce)
	return pc, nil
}
