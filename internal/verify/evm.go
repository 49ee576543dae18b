package verify

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"

	"github.com/rail0/rail0-go/internal/evm"
)

// This file holds the EVM encoding the checks need:
//   - addresses and ABI words;
//   - the numbers and hex the gateway writes them in;
//   - Keccak of words;
//   - EIP-712 digests over the four-field domain that tokens and RAIL0 use.

// Address is a 20-byte Ethereum address.
type Address [20]byte

// Word is one 32-byte ABI word.
type Word [32]byte

// String returns a in lower-case 0x hex.
func (a Address) String() string { return "0x" + hex.EncodeToString(a[:]) }

// Word returns a left-padded to 32 bytes.
func (a Address) Word() Word {
	var w Word
	copy(w[12:], a[:])
	return w
}

// String returns w in lower-case 0x hex.
func (w Word) String() string { return "0x" + hex.EncodeToString(w[:]) }

// has0x reports whether s starts with 0x or 0X, the prefix of every hex
// string of the contract.
func has0x(s string) bool { return len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') }

// DecodeHex reads 0x followed by an even number of hex digits, in any
// case: bytes of any length ("0x" is none).
func DecodeHex(s string) ([]byte, error) {
	if has0x(s) {
		if b, err := hex.DecodeString(s[2:]); err == nil {
			return b, nil
		}
	}
	return nil, fmt.Errorf("%q is not 0x-prefixed hex", Clip(s))
}

// DecodeFixedHex reads exactly 0x followed by 2·len(dst) hex digits, in
// any case, into dst.
func DecodeFixedHex(s string, dst []byte) error {
	if len(s) != 2+2*len(dst) || !has0x(s) || !IsHex(s[2:]) {
		return fmt.Errorf("%q is not 0x followed by %d hex digits", Clip(s), 2*len(dst))
	}
	_, _ = hex.Decode(dst, []byte(s[2:])) // cannot fail: checked above
	return nil
}

// ParseAddress reads 0x + 40 hex digits, in any case (addresses are compared
// case-insensitively, README section 1).
func ParseAddress(s string) (Address, error) {
	var a Address
	return a, DecodeFixedHex(s, a[:])
}

// ParseWord reads a bytes32 value: 0x + 64 hex digits.
func ParseWord(s string) (Word, error) {
	var w Word
	return w, DecodeFixedHex(s, w[:])
}

// UintWord encodes n (0 <= n < 2²⁵⁶) as an ABI word.
func UintWord(n *big.Int) Word {
	var w Word
	n.FillBytes(w[:])
	return w
}

// U64Word encodes n as an ABI word.
func U64Word(n uint64) Word { return UintWord(new(big.Int).SetUint64(n)) }

// KeccakWords hashes the concatenation of words.
func KeccakWords(ws ...Word) Word {
	parts := make([][]byte, len(ws))
	for i := range ws {
		parts[i] = ws[i][:]
	}
	return evm.Keccak256(parts...)
}

// KeccakString hashes the bytes of s.
func KeccakString(s string) Word { return evm.Keccak256([]byte(s)) }

// ParseUint reads a non-negative integer that fits in bits bits. It may be
// given as a JSON number, a decimal string or a 0x-hex string. README
// section 12 allows numbers or decimal strings. Hex is common in EIP-712
// documents.
func ParseUint(raw json.RawMessage, bits int) (*big.Int, error) {
	raw = bytes.TrimSpace(raw)
	s := string(raw)
	if len(raw) > 0 && raw[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
	}
	return ParseUintText(s, bits)
}

// ParseUintText reads a non-negative integer of at most bits bits written
// in decimal or 0x-hex.
func ParseUintText(s string, bits int) (*big.Int, error) {
	n := new(big.Int)
	ok := false
	switch {
	case len(s) > 2 && has0x(s) && IsHex(s[2:]) && len(s) <= 2+bits/4+64:
		_, ok = n.SetString(s[2:], 16)
	case s != "" && IsDigits(s) && len(s) <= 80:
		_, ok = n.SetString(s, 10)
	}
	if !ok {
		return nil, fmt.Errorf("%q is not an unsigned integer", Clip(s))
	}
	if n.BitLen() > bits {
		return nil, fmt.Errorf("%s does not fit in %d bits", Clip(s), bits)
	}
	return n, nil
}

// Clip shortens s for an error message: artifacts come from the gateway and
// can be arbitrarily long.
func Clip(s string) string {
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
	contract      Address
}

func (d eip712Domain) separator() Word {
	return KeccakWords(KeccakString(eip712DomainType), KeccakString(d.name), KeccakString(d.version),
		UintWord(d.chainID), d.contract.Word())
}

// eip712Digest is keccak256("\x19\x01" ‖ domainSeparator ‖ structHash).
func eip712Digest(d eip712Domain, structHash Word) Word {
	sep := d.separator()
	return evm.Keccak256([]byte{0x19, 0x01}, sep[:], structHash[:])
}

// IsHex reports whether s is made only of hex digits.
func IsHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// IsDigits reports whether s is non-empty and made only of ASCII digits.
func IsDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
