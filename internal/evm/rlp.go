package evm

import "math/big"

// RLP is an item of Ethereum's recursive length prefix encoding.
// It is a byte string or a list of items. Only encoding is needed here.
type RLP interface{ appendRLP(dst []byte) []byte }

// Bytes is an RLP byte string.
type Bytes []byte

// Uint is an RLP unsigned integer: its minimal big-endian bytes.
// Zero is the empty string. A nil or negative value encodes as zero;
// callers check signs.
type Uint struct{ *big.Int }

// List is an RLP list.
type List []RLP

// EncodeRLP returns the RLP encoding of item.
func EncodeRLP(item RLP) []byte { return item.appendRLP(nil) }

func (b Bytes) appendRLP(dst []byte) []byte {
	if len(b) == 1 && b[0] < 0x80 {
		return append(dst, b[0])
	}
	dst = appendRLPHeader(dst, 0x80, len(b))
	return append(dst, b...)
}

func (u Uint) appendRLP(dst []byte) []byte {
	if u.Int == nil || u.Sign() <= 0 {
		return append(dst, 0x80)
	}
	return Bytes(u.Bytes()).appendRLP(dst)
}

func (l List) appendRLP(dst []byte) []byte {
	var payload []byte
	for _, item := range l {
		payload = item.appendRLP(payload)
	}
	dst = appendRLPHeader(dst, 0xc0, len(payload))
	return append(dst, payload...)
}

// appendRLPHeader appends the prefix of an item whose payload is n bytes
// long. The base is 0x80 for a string and 0xc0 for a list.
func appendRLPHeader(dst []byte, base byte, n int) []byte {
	if n <= 55 {
		return append(dst, base+byte(n))
	}
	size := big.NewInt(int64(n)).Bytes()
	dst = append(dst, base+55+byte(len(size)))
	return append(dst, size...)
}
