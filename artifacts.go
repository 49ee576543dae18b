package rail0

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/rail0/rail0-go/internal/evm"
)

// This file checks what the gateway prepares against the payment and the
// caller's request before anything is signed (README section 12.1 of the
// gateway guide). Every artifact of a payment is fully determined by the
// payment's terms and the operation, so the SDK recomputes each field
// locally and refuses any difference: a compromised, impersonated or buggy
// gateway cannot get a signature for another amount, recipient, contract or
// chain. The checks are pure functions; the flows run them, and
// PaymentsService.VerifyPayload and VerifyTransaction expose them to callers
// who drive prepare/submit themselves.

// ErrArtifactMismatch matches an *ArtifactError with errors.Is.
var ErrArtifactMismatch = errors.New("rail0: gateway artifact does not match the request")

// ArtifactError reports a gateway artifact that differs from what the
// payment and the caller's request determine. Nothing was signed or sent.
type ArtifactError struct {
	// PaymentID is the payment the artifact belongs to.
	PaymentID string
	// Operation is the step the artifact was prepared for; empty for the
	// payer's signature.
	Operation Operation
	// Artifact names what was checked: "payment", "signing_payload",
	// "unsigned_transaction" or "transaction" (the prepared transaction's
	// row).
	Artifact string
	// Field is the field that differs, in the artifact's own names
	// ("domain.chainId", "message.value", "to", "data.amount", ...).
	Field string
	// Expected is the value the SDK computed; Got is what came.
	Expected, Got string
	// Reason explains a field that could not be compared at all
	// (malformed, missing, out of bounds).
	Reason string
}

// Error returns one readable line.
func (e *ArtifactError) Error() string {
	what := "payer signature"
	if e.Operation != "" {
		what = string(e.Operation)
	}
	return fmt.Sprintf("rail0: %s of payment %s: %s", what, e.PaymentID, e.detail())
}

// detail is the error without the payment and operation, which a
// *FlowError around it already names.
func (e *ArtifactError) detail() string {
	msg := e.Artifact + " " + e.Field
	switch {
	case e.Reason != "":
		msg += " " + oneLine(e.Reason)
	default:
		msg += fmt.Sprintf(": expected %s, got %s", oneLine(e.Expected), oneLine(e.Got))
	}
	return msg + "; nothing was signed"
}

// Is matches ErrArtifactMismatch.
func (e *ArtifactError) Is(target error) bool { return target == ErrArtifactMismatch }

// Intent is what the caller asked for: the step and its arguments. The
// checks compare every artifact with it and with the payment.
type Intent struct {
	// Operation is the step; empty for the payer's signature of the
	// payment (PayerSign).
	Operation Operation
	// Signer is the address that will sign (and send) the artifact.
	Signer string
	// Amount is the amount asked for, for capture and refund: a human
	// decimal such as "10.00", which VerifyPayload and VerifyTransaction
	// turn into base units with the token's pinned decimals (the
	// registry's or WithTrustedTokens), never the gateway's listing.
	Amount string
	// Reason is the bytes32 reason of a dispute or a dispute close; empty
	// means zero.
	Reason string
	// Signature is the payee's signature of the refund authorization that
	// the refund transaction must carry (0x + 130 hex).
	Signature string
}

// VerifiedPayload is what VerifyPayload checked: the digest to sign and
// the typed data it is the EIP-712 hash of.
type VerifiedPayload struct {
	// Digest is the EIP-712 digest of TypedData, for a signer that signs
	// digests (a KMS, an HSM, a Signer).
	Digest [32]byte
	// TypedData is the EIP-712 document the digest was computed from,
	// encoded by the SDK from the checked values, never the gateway's
	// bytes: hand this to a wallet (eth_signTypedData_v4) so that what it
	// signs is what was checked.
	TypedData json.RawMessage
}

// VerifiedTransaction is what VerifyTransaction checked: the digest to sign
// and the transaction it is the EIP-1559 signing hash of.
type VerifiedTransaction struct {
	// Digest is keccak256(0x02 ‖ rlp(Transaction's fields)), the hash the
	// sender signs.
	Digest [32]byte
	// Transaction is the checked transaction in unsigned_transaction's own
	// form (chain_id, nonce, to, value, data, gas_limit,
	// max_priority_fee_per_gas, max_fee_per_gas, from), encoded by the SDK:
	// every number a decimal string, from the checked sender. Build the
	// transaction a wallet signs or sends from this, not from the
	// gateway's string.
	Transaction json.RawMessage
}

// checkRequest checks what a VerifyPayload (onChain false) or
// VerifyTransaction (onChain true) call can be refused for without the
// gateway: a payment given and well formed, an operation the method
// serves, a signer who may sign it, and an amount, reason and signature
// that parse. Nothing is fetched for a call refused here.
func checkRequest(payment *PaymentDetail, in Intent, onChain bool) error {
	t, err := decodeTerms(payment)
	if err != nil {
		return err
	}
	switch _, known := callSignatures[in.Operation]; {
	case onChain && !known:
		return &ValidationError{Field: "operation", Reason: fmt.Sprintf("%q is not an on-chain step", in.Operation)}
	case !onChain && in.Operation != "" && in.Operation != OpRefund:
		return &ValidationError{Field: "operation", Reason: fmt.Sprintf("%s has no signing payload", in.Operation)}
	}
	if who, _ := signersOf(t, in.Operation); in.Signer != "" || len(who) != 1 {
		if _, err := checkSigner(t, in.Operation, in.Signer); err != nil {
			return err
		}
	}
	switch in.Operation {
	case OpCapture, OpRefund:
		if err := checkHumanAmount("amount", in.Amount); err != nil {
			return err
		}
	case OpDispute, OpCloseDispute:
		if in.Reason != "" {
			if err := checkHex("reason", in.Reason, 32); err != nil {
				return err
			}
		}
	}
	if onChain && in.Operation == OpRefund {
		if _, err := decodeSignatureHex(in.Signature); err != nil {
			return &ValidationError{Field: "signature", Reason: err.Error()}
		}
	}
	return nil
}

// trust is what the checks take as given besides the payment: the pinned
// contracts and tokens (pins.go), the limits on gas, and token domains
// already seen.
type trust struct {
	// pins are the RAIL0 contract per chain and the decimals per token:
	// the registry's, with the caller's WithTrustedContracts and
	// WithTrustedTokens merged in.
	pins pins
	// maxGas bounds gas_limit when the caller set it (WithFeeCap); zero
	// bounds it per operation (maxGasLimit). maxFee, when the caller set
	// it (WithFeeCap), bounds gas_limit × max_fee_per_gas on every chain,
	// and when nil each chain's default does (defaultFeeBound), so a
	// gateway cannot spend the signer's native currency on gas.
	maxGas uint64
	maxFee *big.Int
	// tokenDomains maps chain/token to the EIP-712 name and version of the
	// token, when known, so the payer's signature inside an authorize or
	// charge call can be recovered.
	tokenDomains map[tokenKey][2]string
}

type tokenKey struct {
	chainID int64
	token   address
}

// The default bounds on the gas of a prepared transaction (see WithFeeCap),
// far above what a RAIL0 call costs but low enough that a gateway cannot
// drain a signer: gas_limit per operation (maxGasLimit, below), and
// gas_limit × max_fee_per_gas per chain in that chain's native unit
// (defaultFeeBound, pins.go).

// contractGas is the gas each call of the RAIL0 contract v1.3.0 used in an
// EVM with a minimal EIP-3009 token (contract guide, section 12.2), in its
// dearest measured case: authorize as the first payment of a fresh
// deployment (411,000 afterwards); charge with the same first-payment
// extra (98,000) over its measured 417,000, since a deployment's first
// payment may as well be a charge; capture the dearer of its two figures.
var contractGas = map[Operation]uint64{
	OpAuthorize: 509_000, OpCharge: 417_000 + 98_000, OpCapture: 175_000, OpRefund: 207_000,
	OpVoid: 77_000, OpRelease: 77_000, OpDispute: 43_000, OpCloseDispute: 43_000,
}

// gasMargin turns contractGas into the default bound on gas_limit. An
// honest limit exceeds the measured figure for two reasons: a production
// token costs more than the minimal one measured (USDC sits behind a proxy,
// which adds a delegatecall, its storage reads and a blocklist check to
// every transfer), allowed for here up to a third more; and a gateway
// estimates on the chain and adds its own margin, commonly 10 to 50%.
// 4/3 × 3/2 = 2. A limit above that is not an estimate of this call.
const gasMargin = 2

// l1DataInGasLimit lists the chains whose gas limit also pays for the
// transaction's L1 data (Arbitrum One, Nova and Sepolia charge it in L2
// gas, before execution): there an honest limit follows the L1 price and
// can be many times the call's own gas, so the default bound per
// operation does not apply; the fee bound still does.
var l1DataInGasLimit = map[int64]bool{42161: true, 42170: true, 421614: true}

// maxGasLimit is the bound on the gas_limit of op on chainID: the caller's
// (WithFeeCap) when set, else gasMargin × contractGas[op]; zero means no
// bound but the fee's.
func (tr *trust) maxGasLimit(op Operation, chainID int64) uint64 {
	switch {
	case tr.maxGas != 0:
		return tr.maxGas
	case l1DataInGasLimit[chainID]:
		return 0
	}
	return gasMargin * contractGas[op]
}

// terms is the contract's Payment struct, decoded from a PaymentDetail.
type terms struct {
	id           string
	rail0ID      word
	chainID      *big.Int
	contract     address
	payer, payee address
	token        address
	amount       *big.Int
	authExpiry   uint64
	refundExpiry uint64
	refundable   *big.Int
	capturable   *big.Int
	mode         PaymentMode
	configHash   word
	// decimals are the token's pinned decimals (checkPayment), with which
	// the caller's human amounts become base units.
	decimals int64
}

const paymentType = "Payment(address payer,address payee,address token,uint120 amount,uint48 authorizationExpiry,uint48 refundExpiry)"

// rail0Domain is the RAIL0 contract's EIP-712 name and version.
const (
	rail0DomainName    = "RAIL0"
	rail0DomainVersion = "1.3.0"
)

// termNames names the fields of the Payment tuple, in order.
var termNames = [6]string{"payer", "payee", "token", "amount", "authorizationExpiry", "refundExpiry"}

// words returns the Payment tuple as six ABI words.
func (t *terms) words() [6]word {
	return [6]word{t.payer.word(), t.payee.word(), t.token.word(), uintWord(t.amount), u64Word(t.authExpiry), u64Word(t.refundExpiry)}
}

// computeConfigHash is the EIP-712 hash of the terms under the contract's
// domain.
func (t *terms) computeConfigHash() word {
	w := t.words()
	structHash := keccakWords(keccakString(paymentType), w[0], w[1], w[2], w[3], w[4], w[5])
	return eip712Digest(eip712Domain{name: rail0DomainName, version: rail0DomainVersion, chainID: t.chainID, contract: t.contract}, structHash)
}

// nonce is the EIP-3009 nonce of an authorization for op.
func (t *terms) nonce(op Operation) word {
	switch op {
	case OpRefund:
		return keccakWords(keccakString("RAIL0.REFUND"), t.rail0ID, t.configHash, uintWord(t.refundable))
	case OpCharge:
		return keccakWords(keccakString("RAIL0.CHARGE"), t.rail0ID, t.configHash)
	default:
		return keccakWords(keccakString("RAIL0.AUTHORIZE"), t.rail0ID, t.configHash)
	}
}

// maxUint48 bounds the expiries, which the contract stores as uint48.
const maxUint48 = uint64(1)<<48 - 1

// checkPayment decodes p's terms and checks them for consistency: well-formed
// fields, terms the contract accepts, a chain with a trusted contract that
// the payment names, a token trusted on that chain (whose pinned decimals
// the terms keep), and a config_hash equal to the one computed locally,
// which binds every term and the contract address.
func checkPayment(p *PaymentDetail, tr *trust) (*terms, error) {
	t, err := decodeTerms(p)
	if err != nil {
		return nil, err
	}
	if t.decimals, err = tr.pins.anchor(t); err != nil {
		return nil, err
	}
	if want := t.computeConfigHash(); want != t.configHash {
		return nil, &ArtifactError{PaymentID: p.ID, Artifact: "payment", Field: "config_hash", Expected: want.String(), Got: t.configHash.String()}
	}
	return t, nil
}

// decodeTerms decodes p's terms and checks that they are well formed and
// acceptable to the contract.
func decodeTerms(p *PaymentDetail) (*terms, error) {
	if p == nil {
		return nil, &ValidationError{Field: "payment", Reason: "is required"}
	}
	fail := func(field, expected, got, reason string) (*terms, error) {
		return nil, &ArtifactError{PaymentID: p.ID, Artifact: "payment", Field: field, Expected: expected, Got: got, Reason: reason}
	}
	t := &terms{id: p.ID, mode: p.Mode}
	var err error
	if t.rail0ID, err = parseWord(p.Rail0ID); err != nil {
		return fail("rail0_id", "", "", err.Error())
	}
	if t.configHash, err = parseWord(p.ConfigHash); err != nil {
		return fail("config_hash", "", "", err.Error())
	}
	if p.ChainID <= 0 {
		return fail("chain_id", "", "", fmt.Sprintf("%d is not a chain id", p.ChainID))
	}
	t.chainID = big.NewInt(p.ChainID)
	for _, f := range []struct {
		name, value string
		dst         *address
	}{{"rail0_contract", p.Rail0Contract, &t.contract}, {"payer", p.Payer, &t.payer}, {"payee", p.Payee, &t.payee}, {"token", p.Token, &t.token}} {
		if *f.dst, err = parseAddress(f.value); err != nil {
			return fail(f.name, "", "", err.Error())
		}
	}
	for _, f := range []struct {
		name, value string
		dst         **big.Int
	}{{"amount", p.Amount, &t.amount}, {"capturable_amount", p.CapturableAmount, &t.capturable}, {"refundable_amount", p.RefundableAmount, &t.refundable}} {
		if *f.dst, err = parseUintText(f.value, 120); err != nil {
			return fail(f.name, "", "", err.Error())
		}
	}
	if p.AuthorizationExpiry < 0 || uint64(p.AuthorizationExpiry) > maxUint48 || p.RefundExpiry < 0 || uint64(p.RefundExpiry) > maxUint48 {
		return fail("expiry", "", "", "is outside uint48")
	}
	t.authExpiry, t.refundExpiry = uint64(p.AuthorizationExpiry), uint64(p.RefundExpiry)
	switch {
	case t.payer == t.payee:
		return fail("payee", "", "", "equals the payer, which the contract refuses")
	case t.amount.Sign() == 0:
		return fail("amount", "", "", "is zero, which the contract refuses")
	case t.authExpiry > t.refundExpiry:
		return fail("authorization_expiry", "", "", "is after refund_expiry, which the contract refuses")
	case t.capturable.Cmp(t.amount) > 0:
		return fail("capturable_amount", "at most "+t.amount.String(), t.capturable.String(), "")
	case t.refundable.Cmp(t.amount) > 0:
		return fail("refundable_amount", "at most "+t.amount.String(), t.refundable.String(), "")
	}
	return t, nil
}

// signersOf returns who may sign op on t: the payer for the payer's
// signature and the disputes, either participant for a release, the payee
// for everything else; role names them for an error.
func signersOf(t *terms, op Operation) (who []address, role string) {
	switch op {
	case "", OpDispute, OpCloseDispute:
		return []address{t.payer}, "the payer"
	case OpRelease:
		return []address{t.payer, t.payee}, "the payer or the payee"
	default:
		return []address{t.payee}, "the payee"
	}
}

// checkSigner checks that the intent's signer may act for op on t.
func checkSigner(t *terms, op Operation, signer string) (address, error) {
	a, err := parseAddress(signer)
	if err != nil {
		return a, &ValidationError{Field: "signer", Reason: err.Error()}
	}
	who, role := signersOf(t, op)
	if !slices.Contains(who, a) {
		what := "the payer signature"
		if op != "" {
			what = string(op)
		}
		return a, &ValidationError{Field: "signer", Reason: fmt.Sprintf("%s is not %s of payment %s, who must sign %s", a, role, t.id, what)}
	}
	return a, nil
}

// eip3009Fields is the field list of both EIP-3009 authorizations.
const eip3009Fields = "(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"

// authorizationDigest is the EIP-712 digest of an EIP-3009 authorization
// (primary TransferWithAuthorization or ReceiveWithAuthorization) of value
// from from to the RAIL0 contract, valid from 0 until validBefore, under the
// token's domain with the given name and version.
func authorizationDigest(t *terms, primary, name, version string, from address, value *big.Int, validBefore uint64, nonce word) word {
	structHash := keccakWords(keccakString(primary+eip3009Fields),
		from.word(), t.contract.word(), uintWord(value), word{}, u64Word(validBefore), nonce)
	return eip712Digest(eip712Domain{name: name, version: version, chainID: t.chainID, contract: t.token}, structHash)
}

// payloadCheck is the outcome of a verified signing payload: the digest to
// sign and every value it was computed from, so that the typed data handed
// to a wallet can be encoded from them.
type payloadCheck struct {
	digest        word
	name, version string
	primary       string
	chainID       *big.Int
	token         address // the domain's verifyingContract
	from, to      address
	value         *big.Int
	validBefore   uint64
	nonce         word
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

// typedData encodes the EIP-712 document the digest was computed from, in
// the SDK's own words: the canonical types, the domain and message values
// that were checked, uint256 values as decimal strings (exact in every
// language; a JSON number above 2⁵³ is not, in JavaScript). Its hash under
// eth_signTypedData_v4 is the digest.
func (pc *payloadCheck) typedData() json.RawMessage {
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
		Domain:      domain{pc.name, pc.version, json.Number(pc.chainID.String()), pc.token.String()},
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

// checkPayload verifies a signing_payload for the payer's signature (intent
// operation empty) or a refund (OpRefund) against t and in. The payload is
// read strictly (readArtifact): no key repeated, none that differs from
// another only by case or folding, none that EIP-712 typed data does not
// define, at any level.
func checkPayload(t *terms, in Intent, payload json.RawMessage) (*payloadCheck, error) {
	fail := func(field, expected, got, reason string) (*payloadCheck, error) {
		return nil, &ArtifactError{PaymentID: t.id, Operation: in.Operation, Artifact: "signing_payload",
			Field: field, Expected: expected, Got: got, Reason: reason}
	}
	// failRead reports an error of the strict reader.
	failRead := func(err error) (*payloadCheck, error) {
		var fe *artifactFieldError
		if errors.As(err, &fe) {
			return fail(fe.field, "", fe.got, fe.reason)
		}
		return nil, err
	}
	var primary string
	var nonceOp Operation
	var from address
	var value *big.Int
	var validBefore uint64
	switch in.Operation {
	case "":
		primary, from, value, validBefore = "TransferWithAuthorization", t.payer, t.amount, t.authExpiry
		nonceOp = OpAuthorize
		if t.mode == ModeCharge {
			nonceOp = OpCharge
		} else if t.mode != ModeAuthorize {
			return fail("mode", "", "", fmt.Sprintf("%q is not a mode the payer can sign for", t.mode))
		}
	case OpRefund:
		amount, err := parseUintText(in.Amount, 120)
		if err != nil || amount.Sign() == 0 {
			return nil, &ValidationError{Field: "amount", Reason: "must be a positive base-unit integer"}
		}
		primary, from, value, validBefore, nonceOp = "ReceiveWithAuthorization", t.payee, amount, t.refundExpiry, OpRefund
	default:
		return nil, &ValidationError{Field: "operation", Reason: fmt.Sprintf("%s has no signing payload", in.Operation)}
	}

	doc, err := readArtifact(payload, "types", "primaryType", "domain", "message")
	if err != nil {
		var fe *artifactFieldError
		if errors.As(err, &fe) && fe.field == "" {
			return fail("", "", "", fe.reason+": not EIP-712 typed data")
		}
		return failRead(err)
	}
	if got, ok := jsonString(doc["primaryType"]); !ok {
		return fail("primaryType", "", "", "is missing or not a string")
	} else if got != primary {
		return fail("primaryType", primary, clip(got), "")
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
	pc := &payloadCheck{primary: primary, chainID: t.chainID, token: t.token, from: from, to: t.contract,
		value: value, validBefore: validBefore, nonce: t.nonce(nonceOp)}
	var contract string
	for field, dst := range map[string]*string{"name": &pc.name, "version": &pc.version, "verifyingContract": &contract} {
		var ok bool
		if *dst, ok = jsonString(domain[field]); !ok {
			return fail("domain."+field, "", "", "is missing or not a string")
		}
	}
	chainID, err := parseUint(domain["chainId"], 256)
	if err != nil {
		return fail("domain.chainId", "", "", err.Error())
	}
	if chainID.Cmp(t.chainID) != 0 {
		return fail("domain.chainId", t.chainID.String(), chainID.String(), "")
	}
	verifying, err := parseAddress(contract)
	if err != nil {
		return fail("domain.verifyingContract", "", "", err.Error())
	}
	if verifying != t.token {
		return fail("domain.verifyingContract", t.token.String(), verifying.String(), "")
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
		want  address
	}{{"from", pc.from}, {"to", pc.to}} {
		text, ok := jsonString(message[f.field])
		if !ok {
			return fail("message."+f.field, "", "", "is missing or not a string")
		}
		a, err := parseAddress(text)
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
		got, err := parseUint(message[f.field], 256)
		if err != nil {
			return fail("message."+f.field, "", "", err.Error())
		}
		if got.Cmp(f.want) != 0 {
			want, have := f.want.String(), got.String()
			if f.field == "nonce" {
				want, have = pc.nonce.String(), uintWord(got).String()
			}
			return fail("message."+f.field, want, have, "")
		}
	}

	// The digest is computed from the checked values with the canonical
	// EIP-3009 types, so what is signed is exactly what was verified.
	pc.digest = authorizationDigest(t, primary, pc.name, pc.version, from, value, validBefore, pc.nonce)
	return pc, nil
}

// Function selectors of the RAIL0 contract (README section 12.1): the first
// four bytes of keccak256 of each signature, Payment as its tuple.
const paymentTuple = "(address,address,address,uint120,uint48,uint48)"

var callSignatures = map[Operation]string{
	OpAuthorize:    "authorize(bytes32," + paymentTuple + ",uint8,bytes32,bytes32)",
	OpCharge:       "charge(bytes32," + paymentTuple + ",uint8,bytes32,bytes32)",
	OpCapture:      "capture(bytes32," + paymentTuple + ",uint256)",
	OpVoid:         "void(bytes32," + paymentTuple + ")",
	OpRelease:      "release(bytes32," + paymentTuple + ")",
	OpRefund:       "refund(bytes32," + paymentTuple + ",uint256,uint8,bytes32,bytes32)",
	OpDispute:      "dispute(bytes32," + paymentTuple + ",bytes32)",
	OpCloseDispute: "closeDispute(bytes32," + paymentTuple + ",bytes32)",
}

func selector(op Operation) [4]byte {
	h := keccakString(callSignatures[op])
	return [4]byte(h[:4])
}

// checkTransaction verifies an unsigned_transaction for in against t and
// returns it parsed, ready to sign.
func checkTransaction(t *terms, in Intent, unsigned string, tr *trust) (*unsignedTx, error) {
	fail := func(field, expected, got, reason string) (*unsignedTx, error) {
		return nil, &ArtifactError{PaymentID: t.id, Operation: in.Operation, Artifact: "unsigned_transaction",
			Field: field, Expected: expected, Got: got, Reason: reason}
	}
	// mismatch is fail for the signature check, which returns only an error.
	mismatch := func(field, expected, got string) error {
		_, err := fail(field, expected, got, "")
		return err
	}
	if _, ok := callSignatures[in.Operation]; !ok {
		return nil, &ValidationError{Field: "operation", Reason: fmt.Sprintf("%q is not an on-chain step", in.Operation)}
	}
	signer, err := checkSigner(t, in.Operation, in.Signer)
	if err != nil {
		return nil, err
	}
	tx, err := parseUnsignedTx(unsigned)
	if err != nil {
		var fe *artifactFieldError
		if errors.As(err, &fe) {
			return fail(fe.field, "", fe.got, fe.reason)
		}
		return nil, err
	}
	limit := tr.maxGasLimit(in.Operation, t.chainID.Int64())
	switch {
	case tx.chainID.Cmp(t.chainID) != 0:
		return fail("chain_id", t.chainID.String(), tx.chainID.String(), "")
	case tx.to != t.contract:
		return fail("to", t.contract.String(), tx.to.String(), "")
	case tx.value.Sign() != 0:
		return fail("value", "0", tx.value.String(), "")
	case tx.from != nil && *tx.from != signer:
		return fail("from", signer.String(), tx.from.String(), "")
	case tx.gasLimit == 0:
		return fail("gas_limit", "", "0", "is zero")
	case limit != 0 && tx.gasLimit > limit:
		return fail("gas_limit", fmt.Sprintf("at most %d for %s", limit, in.Operation), fmt.Sprint(tx.gasLimit), "")
	case tx.maxPriorityFeePerGas.Cmp(tx.maxFeePerGas) > 0:
		return fail("max_priority_fee_per_gas", "at most max_fee_per_gas "+tx.maxFeePerGas.String(), tx.maxPriorityFeePerGas.String(), "")
	}
	chainID := t.chainID.Int64()
	maxFee, ok := tr.feeBound(chainID)
	if !ok {
		return fail("max_fee_per_gas", "", "", fmt.Sprintf("cannot be bounded: chain %d has no default fee bound; set one with WithFeeCap", chainID))
	}
	if fee := new(big.Int).Mul(tx.maxFeePerGas, new(big.Int).SetUint64(tx.gasLimit)); fee.Cmp(maxFee) > 0 {
		return fail("max_fee_per_gas", "gas_limit × max_fee_per_gas at most "+nativeAmount(chainID, maxFee), nativeAmount(chainID, fee), "")
	}

	// The call: selector, paymentId, the Payment tuple, then the
	// operation's own arguments, all static 32-byte words.
	data := tx.data
	sel := selector(in.Operation)
	if len(data) < 4 || [4]byte(data[:4]) != sel {
		got := data
		if len(got) > 4 {
			got = got[:4]
		}
		return fail("data.selector", fmt.Sprintf("0x%x (%s)", sel, callSignatures[in.Operation]), fmt.Sprintf("0x%x", got), "")
	}
	var extra []string
	switch in.Operation {
	case OpAuthorize, OpCharge:
		extra = []string{"v", "r", "s"}
	case OpCapture:
		extra = []string{"amount"}
	case OpRefund:
		extra = []string{"amount", "v", "r", "s"}
	case OpDispute, OpCloseDispute:
		extra = []string{"reason"}
	}
	if want := 4 + 32*(7+len(extra)); len(data) != want {
		return fail("data", fmt.Sprintf("%d bytes", want), fmt.Sprintf("%d bytes", len(data)), "")
	}
	arg := func(i int) word { return word(data[4+32*i : 4+32*(i+1)]) }
	if got := arg(0); got != t.rail0ID {
		return fail("data.paymentId", t.rail0ID.String(), got.String(), "")
	}
	for i, w := range t.words() {
		if got := arg(1 + i); got != w {
			return fail("data.p."+termNames[i], w.String(), got.String(), "")
		}
	}
	args := map[string]word{}
	for i, name := range extra {
		args[name] = arg(7 + i)
	}
	if w, ok := args["amount"]; ok {
		want, err := parseUintText(in.Amount, 120)
		if err != nil || want.Sign() == 0 {
			return nil, &ValidationError{Field: "amount", Reason: "must be a positive base-unit integer"}
		}
		if got := new(big.Int).SetBytes(w[:]); got.Cmp(want) != 0 {
			return fail("data.amount", want.String(), got.String(), "")
		}
	}
	if w, ok := args["reason"]; ok {
		var want word
		if in.Reason != "" {
			if want, err = parseWord(in.Reason); err != nil {
				return nil, &ValidationError{Field: "reason", Reason: err.Error()}
			}
		}
		if w != want {
			return fail("data.reason", want.String(), w.String(), "")
		}
	}
	if _, ok := args["v"]; ok {
		if err := checkCallSignature(t, in, args, tr, mismatch); err != nil {
			return nil, err
		}
	}
	return tx, nil
}

// checkCallSignature checks the v, r, s arguments of an authorize, charge
// or refund call. For a refund they must be the payee signature the caller
// just produced. For authorize and charge they are the payer's signature,
// which the SDK did not produce: they must be well formed with a low s (the
// tokens refuse the high twin), and when the token's EIP-712 name and
// version are known they must recover to the payer over the payment's
// authorization.
func checkCallSignature(t *terms, in Intent, args map[string]word, tr *trust, mismatch func(field, expected, got string) error) error {
	v, r, s := args["v"], args["r"], args["s"]
	if in.Operation == OpRefund {
		sig, err := decodeSignatureHex(in.Signature)
		if err != nil {
			return &ValidationError{Field: "signature", Reason: err.Error()}
		}
		if got, want := (word)(v), u64Word(uint64(sig[64])); got != want {
			return mismatch("data.v", want.String(), got.String())
		}
		if want := word(sig[:32]); r != want {
			return mismatch("data.r", want.String(), r.String())
		}
		if want := word(sig[32:64]); s != want {
			return mismatch("data.s", want.String(), s.String())
		}
		return nil
	}
	if v != u64Word(27) && v != u64Word(28) {
		return mismatch("data.v", "27 or 28", v.String())
	}
	if r == (word{}) || s == (word{}) || !evm.IsLowS(s[:]) {
		return mismatch("data.s", "a non-zero r and an s in the lower half of the curve order", s.String())
	}
	dom, ok := tr.tokenDomains[tokenKey{t.chainID.Int64(), t.token}]
	if !ok {
		return nil
	}
	digest := authorizationDigest(t, "TransferWithAuthorization", dom[0], dom[1], t.payer, t.amount, t.authExpiry, t.nonce(in.Operation))
	sig := append(append(append([]byte{}, r[:]...), s[:]...), v[31])
	got, err := evm.Recover(digest, sig)
	if err != nil || address(got) != t.payer {
		return mismatch("data.r", "the payer's signature of the payment", "a signature by "+address(got).String())
	}
	return nil
}

// decodeSignatureHex reads a 65-byte r ‖ s ‖ v signature with v = 27 or 28.
func decodeSignatureHex(s string) ([]byte, error) {
	b := make([]byte, 65)
	if err := decodeFixedHex(s, b); err != nil {
		return nil, err
	}
	if b[64] < 27 {
		b[64] += 27
	}
	return b, nil
}
