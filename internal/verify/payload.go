package verify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// This file checks a signing_payload: an EIP-3009 authorization. The payer
// signs one for a payment (TransferWithAuthorization). The payee signs one
// for a refund (ReceiveWithAuthorization). Each field is recomputed from
// the terms.

// eip3009Fields is the field list of both EIP-3009 authorizations.
const eip3009Fields = "(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"

// AuthorizationDigest is the EIP-712 digest of an EIP-3009 authorization.
// Its primary type is TransferWithAuthorization or
// ReceiveWithAuthorization. It moves value from from to the RAIL0
// contract, valid from 0 until validBefore. It is under the token's domain
// with the given name and version.
func AuthorizationDigest(t *Terms, primary, name, version string, from Address, value *big.Int, validBefore uint64, nonce Word) Word {
	structHash := KeccakWords(KeccakString(primary+eip3009Fields),
		from.Word(), t.Contract.Word(), UintWord(value), Word{}, U64Word(validBefore), nonce)
	return eip712Digest(eip712Domain{name: name, version: version, chainID: t.ChainID, contract: t.Token}, structHash)
}

// Payload is the outcome of a verified signing payload. It holds the
// digest to sign and every value it was computed from. The typed data
// handed to a wallet is encoded from them.
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
// and of RAIL0. Also the six fields of both EIP-3009 authorizations.
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
// the SDK's own words:
//   - the canonical types;
//   - the domain and message values that were checked;
//   - uint256 values as decimal strings, exact in every language (a JSON
//     number above 2⁵³ is not, in JavaScript).
//
// Its hash under eth_signTypedData_v4 is the digest.
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

// CheckPayload verifies a signing_payload against t and in. It serves the
// payer's signature (intent operation empty) or a refund (OpRefund). The
// payload is read strictly (readArtifact), at any level:
//   - no key repeated;
//   - none that differs from another only by case or folding;
//   - none that EIP-712 typed data does not define.
//
// Then the rows of ArtPayload compare it with what t and in determine. The
// digest is computed from the checked values.
func CheckPayload(t *Terms, in Intent, payload json.RawMessage) (*Payload, error) {
	c := &payloadCase{t: t, in: in}
	switch in.Operation {
	case "":
		c.primary, c.from, c.value, c.validBefore, c.nonceOp = "TransferWithAuthorization", t.Payer, t.Amount, t.AuthExpiry, OpAuthorize
		if t.Mode == ModeCharge {
			c.nonceOp = OpCharge
		}
	case OpRefund:
		amount, err := ParseUintText(in.Amount, 120)
		if err != nil || amount.Sign() == 0 {
			return nil, &Invalid{Field: "amount", Reason: "must be a positive base-unit integer"}
		}
		c.primary, c.from, c.value, c.validBefore, c.nonceOp = "ReceiveWithAuthorization", t.Payee, amount, t.RefundExpiry, OpRefund
	default:
		return nil, &Invalid{Field: "operation", Reason: fmt.Sprintf("%s has no signing payload", in.Operation)}
	}
	var err error
	if c.doc, err = readArtifact(payload, "types", "primaryType", "domain", "message"); err != nil {
		return nil, readRefusal(err, t.ID, in.Operation, "signing_payload", ": not EIP-712 typed data")
	}
	c.pc = &Payload{primary: c.primary, chainID: t.ChainID, token: t.Token, from: c.from, to: t.Contract,
		value: c.value, validBefore: c.validBefore, nonce: t.Nonce(c.nonceOp)}
	if err := run(ArtPayload, c); err != nil {
		return nil, err
	}
	// The digest is computed from the checked values with the canonical
	// EIP-3009 types, so what is signed is exactly what was verified.
	c.pc.Digest = AuthorizationDigest(t, c.primary, c.pc.Name, c.pc.Version, c.from, c.value, c.validBefore, c.pc.nonce)
	return c.pc, nil
}

// PayerDigest is the digest of the payer's TransferWithAuthorization of t,
// under the token domain name and version. It is what the payer signs. Its
// nonce is the one of the payment's mode.
func PayerDigest(t *Terms, name, version string) Word {
	op := OpAuthorize
	if t.Mode == ModeCharge {
		op = OpCharge
	}
	return AuthorizationDigest(t, "TransferWithAuthorization", name, version, t.Payer, t.Amount, t.AuthExpiry, t.Nonce(op))
}
