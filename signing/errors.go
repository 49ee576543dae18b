package signing

import (
	"errors"
	"strconv"
	"strings"
)

// Sentinel errors, for errors.Is. Each refusal matches one umbrella sentinel
// (ErrInvalidPayload, ErrInvalidTransaction, ErrInvalidSignature,
// ErrInvalidPrivateKey or ErrNilSigner) and, where one applies, a specific
// sentinel such as ErrUnknownPrimaryType or ErrNegative, so callers can branch
// at whichever level they need. An error returned by a Signer's SignDigest is
// wrapped unchanged (errors.Is(err, context.Canceled) holds, for instance).
var (
	// ErrInvalidPayload is wrapped by every *PayloadError: the EIP-712 signing
	// payload was refused and nothing was signed.
	ErrInvalidPayload = errors.New("signing: signing payload refused")

	// ErrUnknownPrimaryType means the payload's primaryType is neither
	// TransferWithAuthorization nor ReceiveWithAuthorization. Guessing would
	// produce a valid-looking signature under the wrong type hash that fails
	// only on chain, so the payload is refused before anything is signed.
	ErrUnknownPrimaryType = errors.New("signing: unknown primaryType")

	// ErrUnexpectedTypes means the payload's type definitions for the primary
	// type or for EIP712Domain differ from the EIP-3009 ones that tokens such as
	// USDC hash on chain.
	ErrUnexpectedTypes = errors.New("signing: unexpected EIP-712 type definition")

	// ErrInvalidDomain means the EIP-712 domain is missing, lacks one of name,
	// version, chainId and verifyingContract, or carries an ill-formed value.
	ErrInvalidDomain = errors.New("signing: invalid EIP-712 domain")

	// ErrInvalidMessage means the EIP-712 message lacks one of the EIP-3009
	// fields, carries an extra one, or holds an ill-formed value.
	ErrInvalidMessage = errors.New("signing: invalid EIP-712 message")

	// ErrChainMismatch means the payload's domain chainId differs from the
	// chain id the caller expected (SignPayloadForChain).
	ErrChainMismatch = errors.New("signing: chain id mismatch")

	// ErrSignerMismatch means the party that must sign (the payload's
	// message.from, or the transaction's from) is not the signer's address.
	// A signature by the wrong key would look valid and fail only when the
	// gateway or the chain verifies it.
	ErrSignerMismatch = errors.New("signing: signer mismatch")

	// ErrInvalidTransaction is wrapped by every *TransactionError: an unsigned
	// transaction was refused (and nothing was signed), or a signed one could
	// not be decoded.
	ErrInvalidTransaction = errors.New("signing: invalid transaction")

	// ErrMissingField means a required field is absent or null.
	ErrMissingField = errors.New("signing: missing required field")

	// ErrDuplicateField means a JSON object names the same key twice, which
	// different parsers resolve differently.
	ErrDuplicateField = errors.New("signing: duplicate field")

	// ErrNotANumber means a numeric field is not a non-negative integer written
	// as a JSON number, a decimal string or a 0x-hex string.
	ErrNotANumber = errors.New("signing: not an integer")

	// ErrNegative means a numeric field is negative.
	ErrNegative = errors.New("signing: negative number")

	// ErrOverflow means a numeric field does not fit its width: 256 bits for
	// amounts, fees and chain ids, 64 bits for nonce and gas_limit.
	ErrOverflow = errors.New("signing: number overflows its field")

	// ErrZeroChainID means chain_id is 0, which no EIP-1559 chain uses.
	ErrZeroChainID = errors.New("signing: chain id is zero")

	// ErrInvalidAddress means a field is not "0x" followed by 40 hex digits.
	ErrInvalidAddress = errors.New("signing: invalid address")

	// ErrInvalidHex means a byte field is not "0x" followed by an even number
	// of hex digits (or the wrong length, for fixed-size fields).
	ErrInvalidHex = errors.New("signing: invalid hex data")

	// ErrTipAboveFeeCap means max_priority_fee_per_gas exceeds
	// max_fee_per_gas; every node rejects such a transaction.
	ErrTipAboveFeeCap = errors.New("signing: max_priority_fee_per_gas above max_fee_per_gas")

	// ErrInvalidSignature means a signature is malformed (length, v, or
	// out-of-range r and s values), or a Signer returned one that does not
	// recover to its own address.
	ErrInvalidSignature = errors.New("signing: invalid signature")

	// ErrInvalidPrivateKey means a private key is not 32 bytes of hex or lies
	// outside the secp256k1 range. Its error never repeats the input.
	ErrInvalidPrivateKey = errors.New("signing: invalid private key")

	// ErrNilSigner means a nil Signer was passed.
	ErrNilSigner = errors.New("signing: nil signer")
)

// PayloadError reports why an EIP-712 signing payload was refused. It matches
// ErrInvalidPayload and its Err with errors.Is.
type PayloadError struct {
	// Reason is a one-line human description, e.g. `primaryType "Mail" is not
	// TransferWithAuthorization or ReceiveWithAuthorization`.
	Reason string
	// Err is the specific sentinel (ErrUnknownPrimaryType, ErrChainMismatch,
	// ...) or the underlying decoding error.
	Err error
}

// Error implements error.
func (e *PayloadError) Error() string {
	return ErrInvalidPayload.Error() + ": " + e.Reason
}

// Unwrap returns ErrInvalidPayload and Err.
func (e *PayloadError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrInvalidPayload}
	}
	return []error{ErrInvalidPayload, e.Err}
}

func payloadErr(err error, reason string) *PayloadError {
	return &PayloadError{Reason: reason, Err: err}
}

// TransactionError reports which field of an unsigned transaction was refused
// and why, or why a signed transaction could not be decoded. It matches ErrInvalidTransaction and its Err with errors.Is.
type TransactionError struct {
	// Field is the JSON key at fault ("nonce", "to", ...), or "" when the
	// input as a whole is at fault (not a JSON object, or not a decodable
	// signed transaction).
	Field string
	// Value is the offending raw JSON value, shortened to at most 80 bytes;
	// empty when the field is missing. Unsigned transactions hold no secrets.
	Value string
	// Err is the specific sentinel (ErrNegative, ErrOverflow, ...) or the
	// underlying JSON syntax error.
	Err error
}

// Error implements error.
func (e *TransactionError) Error() string {
	msg := ErrInvalidTransaction.Error()
	if e.Field != "" {
		msg += ": field " + strconv.Quote(e.Field)
	}
	if e.Err != nil {
		msg += ": " + trimPrefix(e.Err.Error())
	}
	if e.Value != "" {
		msg += " (got " + e.Value + ")"
	}
	return msg
}

// Unwrap returns ErrInvalidTransaction and Err.
func (e *TransactionError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrInvalidTransaction}
	}
	return []error{ErrInvalidTransaction, e.Err}
}

const maxErrorValue = 80

func txErr(field string, raw []byte, err error) *TransactionError {
	v := string(raw)
	if len(v) > maxErrorValue {
		v = strings.ToValidUTF8(v[:maxErrorValue], "") + "..."
	}
	return &TransactionError{Field: field, Value: v, Err: err}
}

// trimPrefix drops this package's "signing: " prefix from a wrapped sentinel's
// text so that composed messages name the package once.
func trimPrefix(s string) string {
	return strings.TrimPrefix(s, "signing: ")
}
