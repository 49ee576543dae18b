package signing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"
)

// The EIP-3009 primary types the gateway asks for.
const (
	// PrimaryTypeTransfer is the payer's payment authorization
	// (transferWithAuthorization).
	PrimaryTypeTransfer = "TransferWithAuthorization"
	// PrimaryTypeReceive is the payee's refund authorization
	// (receiveWithAuthorization).
	PrimaryTypeReceive = "ReceiveWithAuthorization"
)

const eip712Domain = "EIP712Domain"

// authorizationFields is the field list of both EIP-3009 structs, in the order
// that defines their type hashes on chain.
var authorizationFields = []apitypes.Type{
	{Name: "from", Type: "address"},
	{Name: "to", Type: "address"},
	{Name: "value", Type: "uint256"},
	{Name: "validAfter", Type: "uint256"},
	{Name: "validBefore", Type: "uint256"},
	{Name: "nonce", Type: "bytes32"},
}

// domainFields is the EIP712Domain of EIP-3009 tokens such as USDC.
var domainFields = []apitypes.Type{
	{Name: "name", Type: "string"},
	{Name: "version", Type: "string"},
	{Name: "chainId", Type: "uint256"},
	{Name: "verifyingContract", Type: "address"},
}

// Payload is a validated EIP-3009 signing payload, as returned by
// ParsePayload. Its fields are decoded copies; Digest is computed from the
// payload exactly as received.
type Payload struct {
	// PrimaryType is PrimaryTypeTransfer or PrimaryTypeReceive.
	PrimaryType string
	// Domain is the token's EIP-712 domain.
	Domain PayloadDomain
	// From is the account whose funds move; it must sign.
	From common.Address
	// To is the recipient.
	To common.Address
	// Value is the amount in the token's base units.
	Value *big.Int
	// ValidAfter and ValidBefore bound, in Unix seconds, when the
	// authorization can be used on chain.
	ValidAfter, ValidBefore *big.Int
	// Nonce is the EIP-3009 authorization nonce.
	Nonce common.Hash
	// Digest is the EIP-712 hash keccak256("\x19\x01" ‖ domainSeparator ‖
	// hashStruct(message)) that is signed.
	Digest common.Hash
}

// PayloadDomain is the EIP-712 domain of an EIP-3009 token.
type PayloadDomain struct {
	// Name is the token's EIP-712 name, e.g. "USDC" (or "USD Coin" on some
	// chains); it must match the contract's exactly.
	Name string
	// Version is the token's EIP-712 version, e.g. "2".
	Version string
	// ChainID is the chain the authorization is valid on.
	ChainID *big.Int
	// VerifyingContract is the token contract.
	VerifyingContract common.Address
}

// ParsePayload validates a gateway signing payload (EIP-712 typed data, README
// section 12) and computes its digest, without signing anything. It refuses,
// with a *PayloadError:
//
//   - a primaryType other than TransferWithAuthorization or
//     ReceiveWithAuthorization (ErrUnknownPrimaryType), checked first;
//   - type definitions for the primary type or EIP712Domain that differ from
//     EIP-3009's, since any difference changes the type hash
//     (ErrUnexpectedTypes);
//   - a domain that is not exactly name, version, chainId (positive) and
//     verifyingContract, all well-formed (ErrInvalidDomain);
//   - a message that is not exactly from, to, value, validAfter, validBefore
//     and nonce, all well-formed (ErrInvalidMessage).
//
// The digest is computed by go-ethereum's apitypes.TypedDataAndHash over the
// payload as received. Integers in the message may be JSON numbers, decimal
// strings or 0x-hex strings; JSON numbers are kept exact rather than rounded
// through float64. When types omits EIP712Domain, as ethers and viem allow,
// the EIP-3009 domain type is used, which is the one that matches the four
// domain fields required above.
func ParsePayload(signingPayload json.RawMessage) (*Payload, error) {
	var env struct {
		Types       json.RawMessage `json:"types"`
		PrimaryType json.RawMessage `json:"primaryType"`
		Domain      json.RawMessage `json:"domain"`
		Message     json.RawMessage `json:"message"`
	}
	if err := json.Unmarshal(signingPayload, &env); err != nil {
		return nil, payloadErr(err, "not a JSON object: "+err.Error())
	}
	if isNull(env.PrimaryType) {
		return nil, payloadErr(ErrUnknownPrimaryType, "primaryType is missing")
	}
	primary, ok := parseString(env.PrimaryType)
	if !ok {
		return nil, payloadErr(ErrUnknownPrimaryType, "primaryType is not a string")
	}
	if primary != PrimaryTypeTransfer && primary != PrimaryTypeReceive {
		return nil, payloadErr(ErrUnknownPrimaryType, fmt.Sprintf("primaryType %q is not %s or %s", primary, PrimaryTypeTransfer, PrimaryTypeReceive))
	}

	types, err := checkTypes(env.Types, primary)
	if err != nil {
		return nil, err
	}
	domain, tdDomain, err := parseDomain(env.Domain)
	if err != nil {
		return nil, err
	}
	p := &Payload{PrimaryType: primary, Domain: domain}
	msg, err := parseMessage(env.Message, p)
	if err != nil {
		return nil, err
	}

	td := apitypes.TypedData{Types: types, PrimaryType: primary, Domain: tdDomain, Message: msg}
	digest, _, err := apitypes.TypedDataAndHash(td)
	if err != nil {
		// Unreachable after the checks above, but apitypes has the last word.
		return nil, payloadErr(err, "EIP-712 hashing failed: "+err.Error())
	}
	p.Digest = common.BytesToHash(digest)
	return p, nil
}

func checkTypes(raw json.RawMessage, primary string) (apitypes.Types, error) {
	if isNull(raw) {
		return nil, payloadErr(ErrUnexpectedTypes, "types is missing")
	}
	var types apitypes.Types
	if err := json.Unmarshal(raw, &types); err != nil {
		return nil, payloadErr(ErrUnexpectedTypes, "types is ill-formed: "+err.Error())
	}
	if !slices.Equal(types[primary], authorizationFields) {
		return nil, payloadErr(ErrUnexpectedTypes, fmt.Sprintf("types.%s is %s, want the EIP-3009 %s", primary, encodeType(primary, types[primary]), encodeType(primary, authorizationFields)))
	}
	if d, ok := types[eip712Domain]; ok {
		if !slices.Equal(d, domainFields) {
			return nil, payloadErr(ErrUnexpectedTypes, fmt.Sprintf("types.EIP712Domain is %s, want %s", encodeType(eip712Domain, d), encodeType(eip712Domain, domainFields)))
		}
	} else {
		types[eip712Domain] = domainFields
	}
	return types, nil
}

// encodeType renders a struct type the way EIP-712 does, for error messages.
func encodeType(name string, fields []apitypes.Type) string {
	var b bytes.Buffer
	b.WriteString(name + "(")
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(f.Type + " " + f.Name)
	}
	b.WriteByte(')')
	return b.String()
}

func parseDomain(raw json.RawMessage) (PayloadDomain, apitypes.TypedDataDomain, error) {
	var d PayloadDomain
	if isNull(raw) {
		return d, apitypes.TypedDataDomain{}, payloadErr(ErrInvalidDomain, "domain is missing")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return d, apitypes.TypedDataDomain{}, payloadErr(ErrInvalidDomain, "domain is not a JSON object")
	}
	for k := range m {
		if !slices.ContainsFunc(domainFields, func(t apitypes.Type) bool { return t.Name == k }) {
			return d, apitypes.TypedDataDomain{}, payloadErr(ErrInvalidDomain, fmt.Sprintf("domain has unexpected field %q", k))
		}
	}
	bad := func(field, why string) error {
		return payloadErr(ErrInvalidDomain, "domain."+field+" "+why)
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"name", &d.Name}, {"version", &d.Version}} {
		if isNull(m[f.key]) {
			return d, apitypes.TypedDataDomain{}, bad(f.key, "is missing")
		}
		s, ok := parseString(m[f.key])
		if !ok || s == "" {
			return d, apitypes.TypedDataDomain{}, bad(f.key, "must be a non-empty string")
		}
		*f.dst = s
	}
	if isNull(m["chainId"]) {
		return d, apitypes.TypedDataDomain{}, bad("chainId", "is missing")
	}
	chainID, err := parseUint(m["chainId"], 256)
	if err != nil || chainID.Sign() == 0 {
		return d, apitypes.TypedDataDomain{}, bad("chainId", "must be a positive integer, got "+string(m["chainId"]))
	}
	d.ChainID = chainID
	if isNull(m["verifyingContract"]) {
		return d, apitypes.TypedDataDomain{}, bad("verifyingContract", "is missing")
	}
	vc, err := parseAddress(m["verifyingContract"])
	if err != nil {
		return d, apitypes.TypedDataDomain{}, bad("verifyingContract", "must be an address, got "+string(m["verifyingContract"]))
	}
	d.VerifyingContract = vc
	return d, apitypes.TypedDataDomain{
		Name:              d.Name,
		Version:           d.Version,
		ChainId:           (*math.HexOrDecimal256)(new(big.Int).Set(chainID)),
		VerifyingContract: vc.Hex(),
	}, nil
}

// parseMessage validates the EIP-3009 message, fills p, and returns the
// message map for apitypes with integers as exact *big.Int values.
func parseMessage(raw json.RawMessage, p *Payload) (apitypes.TypedDataMessage, error) {
	if isNull(raw) {
		return nil, payloadErr(ErrInvalidMessage, "message is missing")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, payloadErr(ErrInvalidMessage, "message is not a JSON object")
	}
	for k := range m {
		if !slices.ContainsFunc(authorizationFields, func(t apitypes.Type) bool { return t.Name == k }) {
			return nil, payloadErr(ErrInvalidMessage, fmt.Sprintf("message has unexpected field %q", k))
		}
	}
	bad := func(field, why string) error {
		return payloadErr(ErrInvalidMessage, "message."+field+" "+why)
	}
	for _, f := range authorizationFields {
		if isNull(m[f.Name]) {
			return nil, bad(f.Name, "is missing")
		}
	}
	out := make(apitypes.TypedDataMessage, len(authorizationFields))
	for _, f := range []struct {
		key string
		dst *common.Address
	}{{"from", &p.From}, {"to", &p.To}} {
		a, err := parseAddress(m[f.key])
		if err != nil {
			return nil, bad(f.key, "must be an address, got "+string(m[f.key]))
		}
		*f.dst = a
		out[f.key] = a.Hex()
	}
	for _, f := range []struct {
		key string
		dst **big.Int
	}{{"value", &p.Value}, {"validAfter", &p.ValidAfter}, {"validBefore", &p.ValidBefore}} {
		n, err := parseUint(m[f.key], 256)
		if err != nil {
			return nil, bad(f.key, "must be a uint256 ("+trimPrefix(err.Error())+"), got "+string(m[f.key]))
		}
		*f.dst = n
		out[f.key] = new(big.Int).Set(n)
	}
	nonce, ok := parseString(m["nonce"])
	b, err := parseHexText(nonce)
	if !ok || err != nil || len(b) != common.HashLength {
		return nil, bad("nonce", "must be 0x followed by 64 hex digits, got "+string(m["nonce"]))
	}
	p.Nonce = common.BytesToHash(b)
	out["nonce"] = b
	return out, nil
}

// SignPayload signs a gateway signing payload (PaymentDetail.signing_payload
// or the refund phase-1 signing_payload) with s, after ParsePayload has
// validated it and after checking that message.from is s's address
// (ErrSignerMismatch otherwise). It returns the signature as "0x" + 65 bytes
// r ‖ s ‖ v hex with v = 27 or 28, ready for PUT /payments/{id}/sign or the
// refund prepare call. Refusals are *PayloadError values; nothing is signed
// when one is returned.
func SignPayload(ctx context.Context, s Signer, signingPayload json.RawMessage) (string, error) {
	return signPayload(ctx, s, signingPayload, nil)
}

// SignPayloadForChain is SignPayload that also requires the payload's domain
// chainId to equal chainID, the chain the caller's payment lives on
// (ErrChainMismatch otherwise). A non-positive chainID matches no payload.
func SignPayloadForChain(ctx context.Context, s Signer, signingPayload json.RawMessage, chainID int64) (string, error) {
	return signPayload(ctx, s, signingPayload, big.NewInt(chainID))
}

func signPayload(ctx context.Context, s Signer, signingPayload json.RawMessage, chainID *big.Int) (string, error) {
	if s == nil {
		return "", ErrNilSigner
	}
	p, err := ParsePayload(signingPayload)
	if err != nil {
		return "", err
	}
	if chainID != nil && p.Domain.ChainID.Cmp(chainID) != 0 {
		return "", payloadErr(ErrChainMismatch, fmt.Sprintf("domain.chainId is %s, want %s", p.Domain.ChainID, chainID))
	}
	if addr := s.Address(); p.From != addr {
		return "", payloadErr(ErrSignerMismatch, fmt.Sprintf("message.from is %s but the signer is %s", p.From.Hex(), addr.Hex()))
	}
	sig, err := signDigest(ctx, s, p.Digest)
	if err != nil {
		return "", err
	}
	return encodeSignature(sig), nil
}

// RecoverPayloadSigner returns the address whose key produced signature over
// signingPayload. The payload is validated as by ParsePayload; signature is
// "0x" + 65 bytes hex with v in {27, 28} (or {0, 1}). Compare the result with
// the payload's message.from (ParsePayload) to verify a payer or payee
// signature the way the gateway does.
func RecoverPayloadSigner(signingPayload json.RawMessage, signature string) (common.Address, error) {
	p, err := ParsePayload(signingPayload)
	if err != nil {
		return common.Address{}, err
	}
	return recoverAddress(p.Digest, signature)
}

// MarshalJSON encodes p as a gateway signing payload: EIP-712 typed data with
// the EIP-3009 types (EIP712Domain included), addresses in EIP-55 form and
// integers as decimal strings. Digest is not encoded; ParsePayload recomputes
// it. This lets fakes and tests build payloads that ParsePayload accepts; it
// fails when PrimaryType is unknown or a numeric field is nil.
func (p *Payload) MarshalJSON() ([]byte, error) {
	if p.PrimaryType != PrimaryTypeTransfer && p.PrimaryType != PrimaryTypeReceive {
		return nil, payloadErr(ErrUnknownPrimaryType, fmt.Sprintf("primaryType %q is not %s or %s", p.PrimaryType, PrimaryTypeTransfer, PrimaryTypeReceive))
	}
	if p.Domain.ChainID == nil || p.Value == nil || p.ValidAfter == nil || p.ValidBefore == nil {
		return nil, errors.New("signing: Payload has nil numeric fields")
	}
	type typedData struct {
		Types       apitypes.Types    `json:"types"`
		PrimaryType string            `json:"primaryType"`
		Domain      map[string]string `json:"domain"`
		Message     map[string]string `json:"message"`
	}
	return json.Marshal(typedData{
		Types:       apitypes.Types{eip712Domain: domainFields, p.PrimaryType: authorizationFields},
		PrimaryType: p.PrimaryType,
		Domain: map[string]string{
			"name":              p.Domain.Name,
			"version":           p.Domain.Version,
			"chainId":           p.Domain.ChainID.String(),
			"verifyingContract": p.Domain.VerifyingContract.Hex(),
		},
		Message: map[string]string{
			"from":        p.From.Hex(),
			"to":          p.To.Hex(),
			"value":       p.Value.String(),
			"validAfter":  p.ValidAfter.String(),
			"validBefore": p.ValidBefore.String(),
			"nonce":       p.Nonce.Hex(),
		},
	})
}

// String describes p in one line, e.g. for logs before asking a human or a
// policy engine to approve a signature.
func (p *Payload) String() string {
	return fmt.Sprintf("%s{chain %s, token %s (%s v%s), from %s, to %s, value %s, valid %s..%s}",
		p.PrimaryType, p.Domain.ChainID, p.Domain.VerifyingContract.Hex(), strconv.Quote(p.Domain.Name), p.Domain.Version,
		p.From.Hex(), p.To.Hex(), p.Value, p.ValidAfter, p.ValidBefore)
}
