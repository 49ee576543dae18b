package verify

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"strconv"

	"github.com/rail0/rail0-go/internal/evm"
)

// This file reads an unsigned_transaction and encodes what was read. A
// wallet gets the SDK's own canonical form. A Signer gets the EIP-1559
// signing hash and the signed RLP.

// Tx is a parsed unsigned_transaction (README section 12).
type Tx struct {
	chainID              *big.Int
	nonce                uint64
	to                   Address
	value                *big.Int
	data                 []byte
	gasLimit             uint64
	maxPriorityFeePerGas *big.Int
	maxFeePerGas         *big.Int
	from                 *Address // the optional hint
}

// unsignedTxKeys are the keys of an unsigned_transaction (README section
// 12 of the gateway guide), from being optional.
var unsignedTxKeys = []string{"chain_id", "nonce", "to", "value", "data", "gas_limit", "max_priority_fee_per_gas", "max_fee_per_gas", "from"}

// maxAccountNonce is the highest account nonce a transaction may carry.
// EIP-2681 caps an account's nonce at 2⁶⁴−1. So a transaction with that
// nonce could never be followed, and is invalid, like any above it.
const maxAccountNonce = 1<<64 - 2

// ParseUnsignedTx decodes the JSON string of an unsigned_transaction,
// strictly:
//   - it is read by readArtifact: no key repeated, none differing from
//     another only by case or folding, no unknown key;
//   - every field is present and well formed;
//   - numbers are JSON numbers or decimal strings.
//
// What the fields must say is for the rows of ArtUnsignedTx (checks.go).
// The account nonce is checked there only for what holds on every chain:
// at most maxAccountNonce. Whether it is the signer's next nonce needs the
// chain (eth_getTransactionCount). A nonce already used makes the
// transaction invalid. A nonce ahead of the account's parks it, signed,
// until the account catches up. So a gateway could keep it and broadcast
// it later. What it would then run is only the call that was checked, on
// the payment it was checked against. Callers who care when it runs
// compare the nonce with their own node before signing.
func ParseUnsignedTx(s string) (*Tx, error) {
	fields, err := readArtifact([]byte(s), unsignedTxKeys...)
	if err != nil {
		var fe *fieldError
		if errors.As(err, &fe) && fe.field == "" {
			fe.field = "unsigned_transaction"
		}
		return nil, err
	}
	var tx Tx
	num := func(name string, bits int) *big.Int {
		if err != nil {
			return nil
		}
		raw, ok := fields[name]
		if !ok {
			err = &fieldError{field: name, reason: "is missing"}
			return nil
		}
		n, e := ParseUint(raw, bits)
		if e != nil {
			err = &fieldError{field: name, got: Clip(string(raw)), reason: e.Error()}
		}
		return n
	}
	tx.chainID = num("chain_id", 64)
	if n := num("nonce", 64); n != nil {
		tx.nonce = n.Uint64() // at most 2⁶⁴−1; the nonce row bounds it
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
			return "", &fieldError{field: name, reason: "is missing"}
		}
		v, ok := jsonString(raw)
		if !ok {
			return "", &fieldError{field: name, got: Clip(string(raw)), reason: "is not a string"}
		}
		return v, nil
	}
	to, err := str("to")
	if err != nil {
		return nil, err
	}
	if tx.to, err = ParseAddress(to); err != nil {
		return nil, &fieldError{field: "to", got: Clip(to), reason: err.Error()}
	}
	data, err := str("data")
	if err != nil {
		return nil, err
	}
	if tx.data, err = DecodeHex(data); err != nil {
		return nil, &fieldError{field: "data", got: Clip(data), reason: "is not 0x-prefixed hex"}
	}
	if raw, ok := fields["from"]; ok && string(bytes.TrimSpace(raw)) != "null" {
		from, err := str("from")
		if err != nil {
			return nil, err
		}
		a, err := ParseAddress(from)
		if err != nil {
			return nil, &fieldError{field: "from", got: Clip(from), reason: err.Error()}
		}
		tx.from = &a
	}
	return &tx, nil
}

// Canonical encodes tx, sent by from, in unsigned_transaction's own form
// and in the SDK's words:
//   - the keys in the guide's order;
//   - every number a decimal string, exact in every language (a JSON
//     number above 2⁵³ is not, in JavaScript);
//   - addresses and data in lower-case hex.
//
// Its EIP-1559 signing hash is SigningHash.
func (tx *Tx) Canonical(from Address) json.RawMessage {
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

// rlpFields lists the fields of the EIP-1559 transaction, without the
// signature, in the order that defines its hash.
func (tx *Tx) rlpFields() evm.List {
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

// SigningHash is keccak256(0x02 ‖ rlp(fields)), the digest the sender signs.
func (tx *Tx) SigningHash() Word {
	return evm.Keccak256([]byte{0x02}, evm.EncodeRLP(tx.rlpFields()))
}

// Signed returns the raw transaction of tx signed with sig, in 0x hex:
// what Submit sends. The raw transaction is 0x02 ‖ rlp(fields ‖ v, r, s).
// sig is 65 bytes r ‖ s ‖ v, with v = 27 or 28.
func (tx *Tx) Signed(sig []byte) string {
	fields := append(tx.rlpFields(),
		evm.Uint{Int: big.NewInt(int64(sig[64] - 27))},
		evm.Uint{Int: new(big.Int).SetBytes(sig[:32])},
		evm.Uint{Int: new(big.Int).SetBytes(sig[32:64])},
	)
	return "0x02" + hex.EncodeToString(evm.EncodeRLP(fields))
}
