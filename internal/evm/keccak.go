// Package evm holds the few Ethereum primitives the root package needs to
// check and sign what the gateway prepares: Keccak-256, RLP encoding and
// secp256k1 public-key recovery. They are written here, on the standard
// library only, so that a program importing github.com/rail0/rail0-go does
// not download or compile go-ethereum; package signing, which holds keys,
// uses go-ethereum, and the integration tests check these functions against
// it.
package evm

import (
	"encoding/binary"
	"math/bits"
)

// keccakRounds are the round constants of Keccak-f[1600].
var keccakRounds = [24]uint64{
	0x0000000000000001, 0x0000000000008082, 0x800000000000808a, 0x8000000080008000,
	0x000000000000808b, 0x0000000080000001, 0x8000000080008081, 0x8000000000008009,
	0x000000000000008a, 0x0000000000000088, 0x0000000080008009, 0x000000008000000a,
	0x000000008000808b, 0x800000000000008b, 0x8000000000008089, 0x8000000000008003,
	0x8000000000008002, 0x8000000000000080, 0x000000000000800a, 0x800000008000000a,
	0x8000000080008081, 0x8000000000008080, 0x0000000080000001, 0x8000000080008008,
}

// keccakRotations[x+5y] is the rho rotation of lane (x, y).
var keccakRotations = [25]int{
	0, 1, 62, 28, 27,
	36, 44, 6, 55, 20,
	3, 10, 43, 25, 39,
	41, 45, 15, 21, 8,
	18, 2, 61, 56, 14,
}

// keccakF applies the Keccak-f[1600] permutation to a, indexed a[x+5y].
func keccakF(a *[25]uint64) {
	var c [5]uint64
	var b [25]uint64
	for _, rc := range keccakRounds {
		// θ
		for x := 0; x < 5; x++ {
			c[x] = a[x] ^ a[x+5] ^ a[x+10] ^ a[x+15] ^ a[x+20]
		}
		for x := 0; x < 5; x++ {
			d := c[(x+4)%5] ^ bits.RotateLeft64(c[(x+1)%5], 1)
			for y := 0; y < 25; y += 5 {
				a[x+y] ^= d
			}
		}
		// ρ and π: lane (x, y) moves to (y, 2x+3y).
		for x := 0; x < 5; x++ {
			for y := 0; y < 5; y++ {
				b[y+5*((2*x+3*y)%5)] = bits.RotateLeft64(a[x+5*y], keccakRotations[x+5*y])
			}
		}
		// χ
		for y := 0; y < 25; y += 5 {
			for x := 0; x < 5; x++ {
				a[x+y] = b[x+y] ^ (^b[(x+1)%5+y] & b[(x+2)%5+y])
			}
		}
		// ι
		a[0] ^= rc
	}
}

// keccakRate is the sponge rate of Keccak-256 in bytes (1600 - 2·256 bits).
const keccakRate = 136

// Keccak256 returns the Keccak-256 hash (the pre-standard padding that
// Ethereum uses, not SHA3-256) of the concatenation of parts.
func Keccak256(parts ...[]byte) [32]byte {
	var state [25]uint64
	var block [keccakRate]byte
	n := 0
	absorb := func() {
		for i := 0; i < keccakRate/8; i++ {
			state[i] ^= binary.LittleEndian.Uint64(block[8*i:])
		}
		keccakF(&state)
		n = 0
	}
	for _, p := range parts {
		for len(p) > 0 {
			k := copy(block[n:], p)
			n += k
			p = p[k:]
			if n == keccakRate {
				absorb()
			}
		}
	}
	clear(block[n:])
	block[n] ^= 0x01
	block[keccakRate-1] ^= 0x80
	absorb()
	var out [32]byte
	for i := 0; i < 4; i++ {
		binary.LittleEndian.PutUint64(out[8*i:], state[i])
	}
	return out
}
