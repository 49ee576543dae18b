// Package evm holds the few Ethereum primitives the SDK needs to check and
// sign what the gateway prepares. These are Keccak-256, RLP encoding,
// secp256k1 public-key recovery and EIP-55 addresses.
//
// The hashing and the curve arithmetic come from well-kept libraries, not
// from code of our own. Keccak is golang.org/x/crypto/sha3's legacy one.
// The curve is decred's secp256k1, the pure-Go implementation go-ethereum
// itself builds on without cgo. Both are small. So a program importing
// github.com/rail0/rail0-go downloads neither go-ethereum nor its
// dependencies. Only the RLP encoder is written here. It is a page long and
// encodes nothing but what the root package builds. The integration tests
// compare every function with go-ethereum's.
package evm

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
	"golang.org/x/crypto/sha3"
)

// Keccak256 returns the Keccak-256 hash of the concatenation of parts.
// It is the pre-standard padding that Ethereum uses, not SHA3-256.
func Keccak256(parts ...[]byte) [32]byte {
	h := sha3.NewLegacyKeccak256()
	for _, p := range parts {
		h.Write(p)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// ErrInvalidSignature is returned by Recover for a signature that cannot be
// valid on secp256k1. Such a signature is not 65 bytes, or has r or s out
// of range. Or its recovery id is other than 0, 1, 27 or 28. Or its r is
// not the x of a curve point.
var ErrInvalidSignature = errors.New("invalid secp256k1 signature")

// IsLowS reports whether the big-endian integer s is at most half the curve
// order. Ethereum and the tokens' ecrecover checks require that of a
// signature's s.
func IsLowS(s []byte) bool {
	for len(s) > 32 && s[0] == 0 {
		s = s[1:]
	}
	var v secp256k1.ModNScalar
	return len(s) <= 32 && !v.SetByteSlice(s) && !v.IsOverHalfOrder()
}

// Recover returns the address whose key produced sig over digest.
// sig is 65 bytes r ‖ s ‖ v, with v = 0, 1, 27 or 28. Recover accepts an s
// in the upper half too; callers that require a low s check it with IsLowS.
// It runs on public data only (signatures, never keys). So it need not be
// constant-time.
func Recover(digest [32]byte, sig []byte) ([20]byte, error) {
	if len(sig) != 65 {
		return [20]byte{}, fmt.Errorf("%w: %d bytes, want 65", ErrInvalidSignature, len(sig))
	}
	v := sig[64]
	if v >= 27 {
		v -= 27
	}
	if v > 1 {
		return [20]byte{}, fmt.Errorf("%w: recovery id %d", ErrInvalidSignature, sig[64])
	}
	// decred's compact form is the recovery code first, 27 + v for a key
	// referenced uncompressed, then r ‖ s. Recovery ids 2 and 3 (an r that
	// overflowed the order) are refused above: Ethereum never produces them.
	var compact [65]byte
	compact[0] = 27 + v
	copy(compact[1:], sig[:64])
	pub, _, err := ecdsa.RecoverCompact(compact[:], digest[:])
	if err != nil {
		return [20]byte{}, fmt.Errorf("%w: %v", ErrInvalidSignature, err)
	}
	return PublicKeyAddress(pub), nil
}

// PublicKeyAddress returns the Ethereum address of pub.
// That is the last 20 bytes of the Keccak-256 hash of its uncompressed x ‖ y.
func PublicKeyAddress(pub *secp256k1.PublicKey) [20]byte {
	h := Keccak256(pub.SerializeUncompressed()[1:])
	return [20]byte(h[12:])
}

// ChecksumAddress returns a in EIP-55 form: 0x and 40 hex digits.
// A letter is upper case where the matching nibble is 8 or more. The nibbles
// are those of the Keccak-256 hash of the lower-case digits.
func ChecksumAddress(a [20]byte) string {
	lower := hex.EncodeToString(a[:])
	h := Keccak256([]byte(lower))
	out := []byte("0x" + lower)
	for i := range 40 {
		nibble := h[i/2] >> 4
		if i%2 == 1 {
			nibble = h[i/2] & 0x0f
		}
		if out[2+i] >= 'a' && nibble >= 8 {
			out[2+i] -= 'a' - 'A'
		}
	}
	return string(out)
}

// N returns the order of the secp256k1 group.
func N() *big.Int { return new(big.Int).Set(secp256k1.Params().N) }
