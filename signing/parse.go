package signing

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"
)

// The parsers below return bare sentinels; callers attach the field name.

// parseUint reads a non-negative integer of at most bits bits from a JSON
// value: a JSON number without fraction or exponent, a decimal string, or a
// "0x"-prefixed hex string.
func parseUint(raw []byte, bits int) (*big.Int, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, ErrNotANumber
	}
	var text string
	switch c := raw[0]; {
	case c == '"':
		if err := json.Unmarshal(raw, &text); err != nil {
			return nil, ErrNotANumber
		}
	case c == '-' || ('0' <= c && c <= '9'):
		text = string(raw)
	default:
		return nil, ErrNotANumber
	}
	return parseUintText(text, bits)
}

// parseUintText parses a decimal or "0x"-hex string as in parseUint.
func parseUintText(s string, bits int) (*big.Int, error) {
	neg := false
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		neg, s = true, rest
	}
	base, maxDigits := 10, bits*30103/100000+1 // digits of 2^bits, rounded up
	if rest, ok := strings.CutPrefix(s, "0x"); ok {
		base, maxDigits, s = 16, bits/4, rest
	}
	if s == "" || !allDigits(s, base) {
		return nil, ErrNotANumber
	}
	if neg {
		return nil, ErrNegative
	}
	// Refuse absurd lengths before big.Int does quadratic work on them.
	if len(strings.TrimLeft(s, "0")) > maxDigits {
		return nil, ErrOverflow
	}
	n, ok := new(big.Int).SetString(s, base)
	if !ok {
		return nil, ErrNotANumber
	}
	if n.BitLen() > bits {
		return nil, ErrOverflow
	}
	return n, nil
}

func allDigits(s string, base int) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
		case base == 16 && ('a' <= c && c <= 'f' || 'A' <= c && c <= 'F'):
		default:
			return false
		}
	}
	return true
}

// parseString reads a JSON string.
func parseString(raw []byte) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// parseAddressText reads "0x" followed by 40 hex digits in any letter case.
// The EIP-55 checksum is not enforced: the gateway compares addresses
// case-insensitively and may send them in lower case.
func parseAddressText(s string) (common.Address, error) {
	h, ok := strings.CutPrefix(s, "0x")
	if !ok || len(h) != 2*common.AddressLength || !allDigits(h, 16) {
		return common.Address{}, ErrInvalidAddress
	}
	var a common.Address
	if _, err := hex.Decode(a[:], []byte(h)); err != nil {
		return common.Address{}, ErrInvalidAddress
	}
	return a, nil
}

// parseAddress reads a JSON string holding an address.
func parseAddress(raw []byte) (common.Address, error) {
	s, ok := parseString(raw)
	if !ok {
		return common.Address{}, ErrInvalidAddress
	}
	return parseAddressText(s)
}

// parseHexText reads "0x" followed by an even number of hex digits; "" and
// "0x" both mean no bytes.
func parseHexText(s string) ([]byte, error) {
	if s == "" {
		return []byte{}, nil
	}
	h, ok := strings.CutPrefix(s, "0x")
	if !ok || len(h)%2 != 0 {
		return nil, ErrInvalidHex
	}
	b, err := hex.DecodeString(h)
	if err != nil {
		return nil, ErrInvalidHex
	}
	return b, nil
}

// isNull reports whether raw is absent or the JSON literal null.
func isNull(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}
