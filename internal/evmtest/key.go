// Package evmtest provides a secp256k1 test key for the root package's
// tests, which must not import go-ethereum (a user's go mod tidy loads the
// root's tests). Its signatures are deterministic and it is not constant
// time: never use it for real keys.
package evmtest

import (
	"context"
	"encoding/hex"
	"math/big"
	"strconv"
	"sync/atomic"

	"github.com/rail0/rail0-go/internal/evm"
)

// Key is a secp256k1 key that implements the root package's Signer.
type Key struct {
	d    *big.Int
	addr string
	// Signed counts the digests signed.
	Signed atomic.Int64
	// Err, when set, is returned by SignDigest.
	Err error
}

// NewKey derives a key from seed.
func NewKey(seed string) *Key {
	h := evm.Keccak256([]byte("rail0 evmtest key " + seed))
	d := new(big.Int).SetBytes(h[:])
	d.Mod(d, new(big.Int).Sub(evm.N(), big.NewInt(1))).Add(d, big.NewInt(1))
	x, y := evm.ScalarBaseMult(d)
	a := evm.Keccak256(x[:], y[:])
	return &Key{d: d, addr: "0x" + hex.EncodeToString(a[12:])}
}

// Address returns the key's address in lower case.
func (k *Key) Address() string { return k.addr }

// String prints the address only.
func (k *Key) String() string { return "evmtest.Key(" + k.addr + ")" }

// SignDigest signs digest with a deterministic nonce and returns r ‖ s ‖ v,
// v = 0 or 1, s in the lower half.
func (k *Key) SignDigest(_ context.Context, digest [32]byte) ([]byte, error) {
	if k.Err != nil {
		return nil, k.Err
	}
	k.Signed.Add(1)
	n := evm.N()
	e := new(big.Int).SetBytes(digest[:])
	for i := 0; ; i++ {
		kh := evm.Keccak256(k.d.Bytes(), digest[:], []byte(strconv.Itoa(i)))
		nonce := new(big.Int).SetBytes(kh[:])
		nonce.Mod(nonce, n)
		if nonce.Sign() == 0 {
			continue
		}
		rx, ry := evm.ScalarBaseMult(nonce)
		r := new(big.Int).SetBytes(rx[:])
		r.Mod(r, n)
		if r.Sign() == 0 {
			continue
		}
		s := new(big.Int).Mul(r, k.d)
		s.Add(s, e).Mul(s, new(big.Int).ModInverse(nonce, n)).Mod(s, n)
		if s.Sign() == 0 {
			continue
		}
		v := byte(ry[31] & 1)
		if s.Cmp(new(big.Int).Rsh(n, 1)) > 0 {
			s.Sub(n, s)
			v ^= 1
		}
		sig := make([]byte, 65)
		r.FillBytes(sig[:32])
		s.FillBytes(sig[32:64])
		sig[64] = v
		return sig, nil
	}
}
