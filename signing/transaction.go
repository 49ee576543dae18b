package signing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"
)

// Keys of the gateway's unsigned_transaction JSON (README section 12).
const (
	fieldChainID     = "chain_id"
	fieldNonce       = "nonce"
	fieldTo          = "to"
	fieldValue       = "value"
	fieldData        = "data"
	fieldGasLimit    = "gas_limit"
	fieldMaxPriority = "max_priority_fee_per_gas"
	fieldMaxFee      = "max_fee_per_gas"
	fieldFrom        = "from"
)

// requiredTxFields lists the keys that must be present, in the order they are
// checked (so the first missing one is reported deterministically).
var requiredTxFields = []string{
	fieldChainID, fieldNonce, fieldTo, fieldValue, fieldData,
	fieldGasLimit, fieldMaxPriority, fieldMaxFee,
}

// UnsignedTransaction is the decoded form of a prepared transaction's
// unsigned_transaction: the fields of an EIP-1559 (type 2) transaction with
// an empty access list. Build one with ParseUnsignedTransaction, which
// enforces the field rules; the zero value (chain id 0) is not signable.
type UnsignedTransaction struct {
	// ChainID is the EIP-155 chain id the signature is bound to.
	ChainID *big.Int
	// Nonce is the sender's account nonce chosen by the gateway.
	Nonce uint64
	// To is the contract called (the RAIL0 escrow).
	To common.Address
	// Value is the native coin sent, in wei (normally 0).
	Value *big.Int
	// Data is the ABI-encoded contract call.
	Data []byte
	// GasLimit is the most gas the transaction may use.
	GasLimit uint64
	// MaxPriorityFeePerGas is the tip per gas, in wei.
	MaxPriorityFeePerGas *big.Int
	// MaxFeePerGas is the cap on base fee plus tip per gas, in wei.
	MaxFeePerGas *big.Int
	// From is the account the gateway expects to send the transaction, or
	// nil when the JSON carries no from.
	From *common.Address
}

// ParseUnsignedTransaction decodes the unsigned_transaction string of a
// prepared Transaction (README section 12). The string must hold one JSON
// object with these keys, none of them null:
//
//	chain_id                  integer > 0, at most 256 bits
//	nonce                     integer, at most 64 bits
//	to                        address, "0x" + 40 hex digits (any letter case)
//	value                     integer, at most 256 bits
//	data                      "0x" + an even number of hex digits ("" or "0x" for none)
//	gas_limit                 integer, at most 64 bits
//	max_priority_fee_per_gas  integer, at most 256 bits, not above max_fee_per_gas
//	max_fee_per_gas           integer, at most 256 bits
//
// and optionally from (an address, or null). Integers may be JSON numbers
// (without fraction or exponent), decimal strings, or "0x"-prefixed hex
// strings; a minus sign is refused. Keys must not repeat; unknown keys are
// ignored so that the gateway can add fields.
//
// Every refusal is a *TransactionError naming the field and matching
// ErrInvalidTransaction plus one of ErrMissingField, ErrDuplicateField,
// ErrNotANumber, ErrNegative, ErrOverflow, ErrZeroChainID, ErrInvalidAddress,
// ErrInvalidHex or ErrTipAboveFeeCap.
func ParseUnsignedTransaction(s string) (*UnsignedTransaction, error) {
	fields, err := decodeObject(s)
	if err != nil {
		return nil, err
	}
	for _, k := range requiredTxFields {
		if isNull(fields[k]) {
			return nil, txErr(k, nil, ErrMissingField)
		}
	}

	tx := &UnsignedTransaction{}
	for _, k := range requiredTxFields {
		raw := fields[k]
		var err error
		switch k {
		case fieldChainID:
			tx.ChainID, err = parseUint(raw, 256)
			if err == nil && tx.ChainID.Sign() == 0 {
				err = ErrZeroChainID
			}
		case fieldNonce:
			tx.Nonce, err = parseUint64(raw)
		case fieldTo:
			tx.To, err = parseAddress(raw)
		case fieldValue:
			tx.Value, err = parseUint(raw, 256)
		case fieldData:
			tx.Data = nil
			if data, ok := parseString(raw); !ok {
				err = ErrInvalidHex
			} else {
				tx.Data, err = parseHexText(data)
			}
		case fieldGasLimit:
			tx.GasLimit, err = parseUint64(raw)
		case fieldMaxPriority:
			tx.MaxPriorityFeePerGas, err = parseUint(raw, 256)
		case fieldMaxFee:
			tx.MaxFeePerGas, err = parseUint(raw, 256)
		}
		if err != nil {
			return nil, txErr(k, raw, err)
		}
	}
	if raw := fields[fieldFrom]; !isNull(raw) {
		from, err := parseAddress(raw)
		if err != nil {
			return nil, txErr(fieldFrom, raw, err)
		}
		tx.From = &from
	}
	if tx.MaxPriorityFeePerGas.Cmp(tx.MaxFeePerGas) > 0 {
		return nil, txErr(fieldMaxPriority, fields[fieldMaxPriority], ErrTipAboveFeeCap)
	}
	return tx, nil
}

func parseUint64(raw []byte) (uint64, error) {
	n, err := parseUint(raw, 64)
	if err != nil {
		return 0, err
	}
	return n.Uint64(), nil
}

// decodeObject reads s as exactly one JSON object, refusing repeated keys.
func decodeObject(s string) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	notObject := func(err error) error {
		return &TransactionError{Err: fmt.Errorf("not a JSON object: %w", err)}
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, notObject(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, notObject(errors.New("does not start with {"))
	}
	fields := make(map[string]json.RawMessage, len(requiredTxFields)+1)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, notObject(err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, notObject(errors.New("object key is not a string"))
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, notObject(err)
		}
		if _, dup := fields[key]; dup {
			return nil, txErr(key, v, ErrDuplicateField)
		}
		fields[key] = v
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, notObject(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, notObject(errors.New("trailing data after the object"))
	}
	return fields, nil
}

// Transaction returns the unsigned type-2 transaction with an empty access
// list. Nil numeric fields count as zero.
func (u UnsignedTransaction) Transaction() *types.Transaction {
	to := u.To
	return types.NewTx(&types.DynamicFeeTx{
		ChainID:    bigOrZero(u.ChainID),
		Nonce:      u.Nonce,
		GasTipCap:  bigOrZero(u.MaxPriorityFeePerGas),
		GasFeeCap:  bigOrZero(u.MaxFeePerGas),
		Gas:        u.GasLimit,
		To:         &to,
		Value:      bigOrZero(u.Value),
		Data:       append([]byte{}, u.Data...),
		AccessList: types.AccessList{},
	})
}

// SigningHash returns the digest a sender signs for this transaction, as
// EIP-1559 defines it: keccak256(0x02 ‖ rlp([chain_id, nonce,
// max_priority_fee_per_gas, max_fee_per_gas, gas_limit, to, value, data,
// access_list])), with an empty access list. Nil numeric fields count as zero.
func (u UnsignedTransaction) SigningHash() common.Hash {
	enc, err := rlp.EncodeToBytes([]any{
		bigOrZero(u.ChainID), u.Nonce, bigOrZero(u.MaxPriorityFeePerGas), bigOrZero(u.MaxFeePerGas),
		u.GasLimit, u.To, bigOrZero(u.Value), u.Data, types.AccessList{},
	})
	if err != nil {
		// Unreachable: every element has a fixed, encodable type.
		panic("signing: RLP-encode transaction: " + err.Error())
	}
	return crypto.Keccak256Hash([]byte{types.DynamicFeeTxType}, enc)
}

// bigOrZero returns a copy of n, or zero for nil.
func bigOrZero(n *big.Int) *big.Int {
	if n == nil {
		return new(big.Int)
	}
	return new(big.Int).Set(n)
}

// MarshalJSON encodes u in the gateway's unsigned_transaction layout:
// chain_id, nonce and gas_limit as JSON numbers, value and the fees as decimal
// strings, to and from as EIP-55 addresses, data as 0x hex. The output parses
// back to an equal UnsignedTransaction, which makes it useful to fake servers.
func (u UnsignedTransaction) MarshalJSON() ([]byte, error) {
	if u.ChainID == nil || u.Value == nil || u.MaxPriorityFeePerGas == nil || u.MaxFeePerGas == nil {
		return nil, errors.New("signing: UnsignedTransaction has nil numeric fields")
	}
	var b strings.Builder
	b.WriteString(`{"chain_id":` + u.ChainID.String())
	b.WriteString(`,"nonce":` + strconv.FormatUint(u.Nonce, 10))
	b.WriteString(`,"to":"` + u.To.Hex() + `"`)
	b.WriteString(`,"value":"` + u.Value.String() + `"`)
	b.WriteString(`,"data":"` + hexutil.Encode(u.Data) + `"`)
	b.WriteString(`,"gas_limit":` + strconv.FormatUint(u.GasLimit, 10))
	b.WriteString(`,"max_priority_fee_per_gas":"` + u.MaxPriorityFeePerGas.String() + `"`)
	b.WriteString(`,"max_fee_per_gas":"` + u.MaxFeePerGas.String() + `"`)
	if u.From != nil {
		b.WriteString(`,"from":"` + u.From.Hex() + `"`)
	}
	b.WriteString("}")
	return []byte(b.String()), nil
}

// SignTransaction signs the unsigned_transaction string of a prepared
// Transaction with s and returns the raw signed transaction, "0x02…" hex of
// its canonical encoding, ready for the signed_transaction field of
// POST /payments/{id}/{operation}.
//
// The JSON is parsed by ParseUnsignedTransaction. When it names a from, that
// address must be s's (ErrSignerMismatch otherwise), because the gateway
// answers 403 to a transaction sent by anyone else. The transaction is signed
// for its own chain_id, so it cannot be replayed on another chain.
func SignTransaction(ctx context.Context, s Signer, unsignedTransaction string) (string, error) {
	if s == nil {
		return "", ErrNilSigner
	}
	u, err := ParseUnsignedTransaction(unsignedTransaction)
	if err != nil {
		return "", err
	}
	if addr := s.Address(); u.From != nil && *u.From != addr {
		return "", &TransactionError{
			Field: fieldFrom,
			Err:   fmt.Errorf("%w: the transaction is from %s but the signer is %s", ErrSignerMismatch, u.From.Hex(), addr.Hex()),
		}
	}
	signer := types.LatestSignerForChainID(u.ChainID)
	tx := u.Transaction()
	sig, err := signDigest(ctx, s, signer.Hash(tx))
	if err != nil {
		return "", err
	}
	signed, err := tx.WithSignature(signer, sig)
	if err != nil {
		return "", fmt.Errorf("signing: attach signature: %w", err)
	}
	raw, err := signed.MarshalBinary()
	if err != nil {
		return "", fmt.Errorf("signing: encode transaction: %w", err)
	}
	return hexutil.Encode(raw), nil
}

// RecoverTransactionSender decodes a raw signed EIP-1559 transaction ("0x02…"
// hex, as produced by SignTransaction) and returns its sender, the check the
// gateway makes before broadcasting. Other transaction types are refused with
// ErrInvalidTransaction.
func RecoverTransactionSender(signedTransaction string) (common.Address, error) {
	raw, err := hexutil.Decode(signedTransaction)
	if err != nil {
		return common.Address{}, &TransactionError{Err: fmt.Errorf("%w: %v", ErrInvalidHex, err)}
	}
	var tx types.Transaction
	if err := tx.UnmarshalBinary(raw); err != nil {
		return common.Address{}, &TransactionError{Err: err}
	}
	if tx.Type() != types.DynamicFeeTxType {
		return common.Address{}, &TransactionError{Err: fmt.Errorf("transaction type %d is not EIP-1559 (2)", tx.Type())}
	}
	if tx.ChainId().Sign() == 0 {
		return common.Address{}, &TransactionError{Field: fieldChainID, Err: ErrZeroChainID}
	}
	from, err := types.Sender(types.LatestSignerForChainID(tx.ChainId()), &tx)
	if err != nil {
		return common.Address{}, fmt.Errorf("%w: %v", ErrInvalidSignature, err)
	}
	return from, nil
}
