package rail0

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"

	"github.com/rail0/rail0-go/internal/evm"
)

// This file turns the gateway's artifacts into the digests a Signer signs and
// the signed forms the gateway takes back: EIP-191 for sign-in, EIP-712 for
// EIP-3009 authorizations, EIP-1559 for transactions. The SDK computes every
// digest itself from fields it has checked (artifacts.go), so a Signer only
// ever sees 32-byte digests of what the caller asked for.

// address is a 20-byte Ethereum address.
type address [20]byte

// word is one 32-byte ABI word.
type word [32]byte

func (a address) String() string { return "0x" + hex.EncodeToString(a[:]) }

// word returns a left-padded to 32 bytes.
func (a address) word() word {
	var w word
	copy(w[12:], a[:])
	return w
}

func (w word) String() string { return "0x" + hex.EncodeToString(w[:]) }

// decodeFixedHex reads exactly 0x followed by 2·len(dst) hex digits, in
// any case, into dst.
func decodeFixedHex(s string, dst []byte) error {
	if len(s) != 2+2*len(dst) || (s[:2] != "0x" && s[:2] != "0X") || !isHex(s[2:]) {
		return fmt.Errorf("%q is not 0x followed by %d hex digits", clip(s), 2*len(dst))
	}
	_, _ = hex.Decode(dst, []byte(s[2:])) // cannot fail: checked above
	return nil
}

// parseAddress reads 0x + 40 hex digits, in any case (addresses are compared
// case-insensitively, README section 1).
func parseAddress(s string) (address, error) {
	var a address
	return a, decodeFixedHex(s, a[:])
}

// parseWord reads a bytes32 value: 0x + 64 hex digits.
func parseWord(s string) (word, error) {
	var w word
	return w, decodeFixedHex(s, w[:])
}

// uintWord encodes n (0 <= n < 2²⁵⁶) as an ABI word.
func uintWord(n *big.Int) word {
	var w word
	n.FillBytes(w[:])
	return w
}

func u64Word(n uint64) word { return uintWord(new(big.Int).SetUint64(n)) }

// keccak hashes the concatenation of words.
func keccakWords(ws ...word) word {
	parts := make([][]byte, len(ws))
	for i := range ws {
		parts[i] = ws[i][:]
	}
	return evm.Keccak256(parts...)
}

func keccakString(s string) word { return evm.Keccak256([]byte(s)) }

// parseUint reads a non-negative integer that fits in bits bits, given as a
// JSON number, a decimal string or a 0x-hex string (README section 12 allows
// numbers or decimal strings; hex is common in EIP-712 documents).
func parseUint(raw json.RawMessage, bits int) (*big.Int, error) {
	raw = bytes.TrimSpace(raw)
	s := string(raw)
	if len(raw) > 0 && raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
	}
	return parseUintText(s, bits)
}

func parseUintText(s string, bits int) (*big.Int, error) {
	n := new(big.Int)
	ok := false
	switch {
	case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X") && isHex(s[2:]) && len(s) <= 2+bits/4+64:
		_, ok = n.SetString(s[2:], 16)
	case s != "" && isDigits(s) && len(s) <= 80:
		_, ok = n.SetString(s, 10)
	}
	if !ok {
		return nil, fmt.Errorf("%q is not an unsigned integer", clip(s))
	}
	if n.BitLen() > bits {
		return nil, fmt.Errorf("%s does not fit in %d bits", clip(s), bits)
	}
	return n, nil
}

// clip shortens s for an error message: artifacts come from the gateway and
// can be arbitrarily long.
func clip(s string) string {
	const n = 80
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ---- EIP-712 ----

const eip712DomainType = "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"

// eip712Domain is a domain with the four fields tokens and RAIL0 use.
type eip712Domain struct {
	name, version string
	chainID       *big.Int
	contract      address
}

func (d eip712Domain) separator() word {
	return keccakWords(keccakString(eip712DomainType), keccakString(d.name), keccakString(d.version),
		uintWord(d.chainID), d.contract.word())
}

// eip712Digest is keccak256("\x19\x01" ‖ domainSeparator ‖ structHash).
func eip712Digest(d eip712Domain, structHash word) word {
	sep := d.separator()
	return evm.Keccak256([]byte{0x19, 0x01}, sep[:], structHash[:])
}

// eip191Digest is the personal_sign digest of message.
func eip191Digest(message string) word {
	return evm.Keccak256([]byte("\x19Ethereum Signed Message:\n"+strconv.Itoa(len(message))), []byte(message))
}

// ---- signing through a Signer ----

// signDigest has signer sign digest, checks that the signature recovers to
// the signer's address, and returns it as 65 bytes r ‖ s ‖ v with v = 27 or
// 28. A signature over another key, a high s or a malformed answer is an
// error, so a misconfigured signer is caught before anything is sent.
func signDigest(ctx context.Context, signer Signer, digest word) ([]byte, error) {
	want, err := parseAddress(signer.Address())
	if err != nil {
		return nil, fmt.Errorf("rail0: signer address: %w", err)
	}
	sig, err := signer.SignDigest(ctx, digest)
	if err != nil {
		return nil, err
	}
	if len(sig) != 65 {
		return nil, fmt.Errorf("%w: %d bytes, want 65", ErrBadSignature, len(sig))
	}
	sig = bytes.Clone(sig)
	if sig[64] < 27 {
		sig[64] += 27
	}
	if !evm.IsLowS(sig[32:64]) {
		return nil, fmt.Errorf("%w: s is in the upper half of the curve order", ErrBadSignature)
	}
	got, err := evm.Recover(digest, sig)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSignature, err)
	}
	if address(got) != want {
		return nil, fmt.Errorf("%w: it recovers to %s, not to the signer's address %s", ErrBadSignature, address(got), want)
	}
	return sig, nil
}

// ErrBadSignature is returned when a Signer's answer is not a valid
// signature by its own address over the digest it was given.
var ErrBadSignature = errors.New("rail0: signer returned an invalid signature")

// signMessage signs a SIWE message (EIP-191) and returns 0x hex.
func signMessage(ctx context.Context, signer Signer, message string) (string, error) {
	sig, err := signDigest(ctx, signer, eip191Digest(message))
	if err != nil {
		return "", err
	}
	return "0x" + hex.EncodeToString(sig), nil
}

// ---- EIP-1559 transactions ----

// unsignedTx is a parsed unsigned_transaction (README section 12).
type unsignedTx struct {
	chainID              *big.Int
	nonce                uint64
	to                   address
	value                *big.Int
	data                 []byte
	gasLimit             uint64
	maxPriorityFeePerGas *big.Int
	maxFeePerGas         *big.Int
	from                 *address // the optional hint
}

// unsignedTxKeys are the keys of an unsigned_transaction (README section
// 12 of the gateway guide), from being optional.
var unsignedTxKeys = []string{"chain_id", "nonce", "to", "value", "data", "gas_limit", "max_priority_fee_per_gas", "max_fee_per_gas", "from"}

// maxAccountNonce is the highest account nonce a transaction may carry:
// EIP-2681 caps an account's nonce at 2⁶⁴−1, so a transaction with that
// nonce could never be followed and is invalid, like any above it.
const maxAccountNonce = 1<<64 - 2

// parseUnsignedTx decodes the JSON string of an unsigned_transaction,
// strictly: read by readArtifact (no key repeated or differing from another
// only by case or folding, no unknown key), every field present and well
// formed, numbers as JSON numbers or decimal strings.
//
// The account nonce is checked only for what holds on every chain: at most
// maxAccountNonce. Whether it is the signer's next nonce needs the chain
// (eth_getTransactionCount): a nonce already used makes the transaction
// invalid, and a nonce ahead of the account's parks it, signed, until the
// account catches up, so a gateway could keep it and broadcast it later.
// What it would then run is only the call that was checked, on the
// payment it was checked against; callers who care when it runs compare
// the nonce with their own node before signing.
func parseUnsignedTx(s string) (*unsignedTx, error) {
	fields, err := readArtifact([]byte(s), unsignedTxKeys...)
	if err != nil {
		var fe *artifactFieldError
		if errors.As(err, &fe) && fe.field == "" {
			fe.field = "unsigned_transaction"
		}
		return nil, err
	}
	var tx unsignedTx
	num := func(name string, bits int) *big.Int {
		if err != nil {
			return nil
		}
		raw, ok := fields[name]
		if !ok {
			err = &artifactFieldError{field: name, reason: "is missing"}
			return nil
		}
		n, e := parseUint(raw, bits)
		if e != nil {
			err = &artifactFieldError{field: name, got: clip(string(raw)), reason: e.Error()}
		}
		return n
	}
	tx.chainID = num("chain_id", 64)
	if n := num("nonce", 64); n != nil {
		if n.Uint64() > maxAccountNonce { // parseUint kept it within 64 bits
			return nil, &artifactFieldError{field: "nonce", got: n.String(), reason: "is above 2⁶⁴−2, the highest account nonce (EIP-2681)"}
		}
		tx.nonce = n.Uint64()
	}
	tx.value = num("value", 256)
	if n := num("gas_limit", 64); n != nil {
		tx.gasLimit = n.Uint64()
	}
	tx.maxPriorityFeePerGas = num("max_priority_fee_per_gas", 256)
	tx.maxFeePerGas = num("max_fee_per_gas", 256)
	if err != nil {
		return nil, err
	}
	str := func(name string) (string, error) {
		raw, ok := fields[name]
		if !ok {
			return "", &artifactFieldError{field: name, reason: "is missing"}
		}
		v, ok := jsonString(raw)
		if !ok {
			return "", &artifactFieldError{field: name, got: clip(string(raw)), reason: "is not a string"}
		}
		return v, nil
	}
	to, err := str("to")
	if err != nil {
		return nil, err
	}
	if tx.to, err = parseAddress(to); err != nil {
		return nil, &artifactFieldError{field: "to", got: clip(to), reason: err.Error()}
	}
	data, err := str("data")
	if err != nil {
		return nil, err
	}
	if len(data) < 2 || (data[:2] != "0x" && data[:2] != "0X") || len(data)%2 != 0 || !isHex(data[2:]) {
		return nil, &artifactFieldError{field: "data", got: clip(data), reason: "is not 0x-prefixed hex"}
	}
	tx.data, _ = hex.DecodeString(data[2:])
	if raw, ok := fields["from"]; ok && string(bytes.TrimSpace(raw)) != "null" {
		from, err := str("from")
		if err != nil {
			return nil, err
		}
		a, err := parseAddress(from)
		if err != nil {
			return nil, &artifactFieldError{field: "from", got: clip(from), reason: err.Error()}
		}
		tx.from = &a
	}
	return &tx, nil
}

// canonical encodes tx, sent by from, in unsigned_transaction's own form
// and in the SDK's words: the keys in the guide's order, every number a
// decimal string (exact in every language; a JSON number above 2⁵³ is
// not, in JavaScript), addresses and data in lower-case hex. Its EIP-1559
// signing hash is signingHash.
func (tx *unsignedTx) canonical(from address) json.RawMessage {
	b, err := json.Marshal(struct {
		ChainID              string `json:"chain_id"`
		Nonce                string `json:"nonce"`
		To                   string `json:"to"`
		Value                string `json:"value"`
		Data                 string `json:"data"`
		GasLimit             string `json:"gas_limit"`
		MaxPriorityFeePerGas string `json:"max_priority_fee_per_gas"`
		MaxFeePerGas         string `json:"max_fee_per_gas"`
		From                 string `json:"from"`
	}{
		tx.chainID.String(), strconv.FormatUint(tx.nonce, 10), tx.to.String(), tx.value.String(),
		"0x" + hex.EncodeToString(tx.data), strconv.FormatUint(tx.gasLimit, 10),
		tx.maxPriorityFeePerGas.String(), tx.maxFeePerGas.String(), from.String(),
	})
	if err != nil {
		panic("rail0: encoding a checked transaction: " + err.Error()) // plain strings cannot fail
	}
	return b
}

// artifactFieldError is a malformed field or key of an artifact, found
// before anything can be compared; checkTransaction and checkPayload turn
// it into an *ArtifactError.
type artifactFieldError struct {
	field, got, reason string
}

func (e *artifactFieldError) Error() string { return e.field + " " + e.reason }

// rlpFields lists the fields of the EIP-1559 transaction, without the
// signature, in the order that defines its hash.
func (tx *unsignedTx) rlpFields() evm.List {
	return evm.List{
		evm.Uint{Int: tx.chainID},
		evm.Uint{Int: new(big.Int).SetUint64(tx.nonce)},
		evm.Uint{Int: tx.maxPriorityFeePerGas},
		evm.Uint{Int: tx.maxFeePerGas},
		evm.Uint{Int: new(big.Int).SetUint64(tx.gasLimit)},
		evm.Bytes(tx.to[:]),
		evm.Uint{Int: tx.value},
		evm.Bytes(tx.data),
		evm.List{}, // access list
	}
}

// signingHash is keccak256(0x02 ‖ rlp(fields)).
func (tx *unsignedTx) signingHash() word {
	return evm.Keccak256([]byte{0x02}, evm.EncodeRLP(tx.rlpFields()))
}

// signTx has signer sign tx and returns the raw 0x02… transaction.
func signTx(ctx context.Context, signer Signer, tx *unsignedTx) (string, error) {
	sig, err := signDigest(ctx, signer, tx.signingHash())
	if err != nil {
		return "", err
	}
	fields := append(tx.rlpFields(),
		evm.Uint{Int: big.NewInt(int64(sig[64] - 27))},
		evm.Uint{Int: new(big.Int).SetBytes(sig[:32])},
		evm.Uint{Int: new(big.Int).SetBytes(sig[32:64])},
	)
	return "0x02" + hex.EncodeToString(evm.EncodeRLP(fields)), nil
}
