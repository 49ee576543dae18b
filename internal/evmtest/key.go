// Package evmtest provides a secp256k1 test key for the root package's
// tests. Those must not import go-ethereum, because a user's go mod tidy
// loads the root's tests. Keys are derived from a seed, so they are the
// same on every run. Never use one for real funds.
package evmtest

import (
	"context"
	"encoding/hex"
	"math/big"
	"sync/atomic"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"

	"github.com/rail0/rail0-go/internal/evm"
)

// Key is a secp256k1 key that implements the root package's Signer.
type Key struct {
	key  *secp256k1.PrivateKey
	addr string
	// Signed counts the digests signed.
	Signed atomic.Int64
	// Err, when set, is returned by SignDigest.
	Err error
}

// NewKey derives a key from seed.
// The key is 1 + Keccak-256("rail0 evmtest key " ‖ seed) mod (N − 1).
// It is always in [1, N − 1].
func NewKey(seed string) *Key {
	h := evm.Keccak256([]byte("rail0 evmtest key " + seed))
	d := new(big.Int).SetBytes(h[:])
	d.Mod(d, new(big.Int).Sub(evm.N(), big.NewInt(1))).Add(d, big.NewInt(1))
	key := secp256k1.PrivKeyFromBytes(d.FillBytes(make([]byte, 32)))
	a := evm.PublicKeyAddress(key.PubKey())
	return &Key{key: key, addr: "0x" + hex.EncodeToString(a[:])}
}

// Address returns the key's address in lower case.
func (k *Key) Address() string { return k.addr }

// String prints the address only.
func (k *Key) String() string { return "evmtest.Key(" + k.addr + ")" }

// SignDigest signs digest with RFC 6979 deterministic nonces.
// It returns r ‖ s ‖ v, with v = 0 or 1 and s in the lower half.
func (k *Key) SignDigest(_ context.Context, digest [32]byte) ([]byte, error) {
	if k.Err != nil {
		return nil, k.Err
	}
	k.Signed.Add(1)
	compact := ecdsa.SignCompact(k.key, digest[:], false) // 27+v ‖ r ‖ s
	return append(compact[1:65:65], compact[0]-27), nil
}
