package integration_test

import (
	"bytes"
	"context"
	"errors"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/rail0/rail0-go/internal/evm"
	"github.com/rail0/rail0-go/signing"
)

// Package signing and internal/evm rest on decred's secp256k1 and
// x/crypto's Keccak, not on go-ethereum; here go-ethereum, an independent
// implementation, checks them: the same keys accepted, the same addresses,
// byte-identical signatures, the same recoveries.

// TestPrivateKeySignerMatchesGoEthereum signs random digests with random
// keys through package signing and through go-ethereum's crypto.Sign.
func TestPrivateKeySignerMatchesGoEthereum(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for i := range 40 {
		var raw, digest [32]byte
		fill(rng, raw[:])
		fill(rng, digest[:])
		if i == 0 {
			raw = [32]byte{31: 1} // the smallest key
		}
		key, err := crypto.ToECDSA(raw[:])
		if err != nil {
			t.Fatal(err)
		}
		s, err := signing.NewPrivateKeySigner(common.Bytes2Hex(raw[:]))
		if err != nil {
			t.Fatal(err)
		}
		if want := crypto.PubkeyToAddress(key.PublicKey).Hex(); s.Address() != want {
			t.Fatalf("address %s, go-ethereum %s", s.Address(), want)
		}
		got, err := s.SignDigest(context.Background(), digest)
		if err != nil {
			t.Fatal(err)
		}
		want, err := crypto.Sign(digest[:], key)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("signature %x, go-ethereum %x", got, want)
		}
	}
}

// TestPrivateKeyRangeMatchesGoEthereum: a key is accepted exactly when
// go-ethereum accepts it, at the edges of [1, N-1].
func TestPrivateKeyRangeMatchesGoEthereum(t *testing.T) {
	n := evm.N()
	for name, k := range map[string]*big.Int{
		"0":   big.NewInt(0),
		"1":   big.NewInt(1),
		"N-1": new(big.Int).Sub(n, big.NewInt(1)),
		"N":   n,
		"N+1": new(big.Int).Add(n, big.NewInt(1)),
		"max": new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1)),
	} {
		raw := k.FillBytes(make([]byte, 32))
		_, theirs := crypto.ToECDSA(raw)
		s, ours := signing.NewPrivateKeySigner(common.Bytes2Hex(raw))
		if (ours == nil) != (theirs == nil) {
			t.Errorf("%s: signing says %v, go-ethereum %v", name, ours, theirs)
		}
		if ours != nil && !errors.Is(ours, signing.ErrInvalidPrivateKey) {
			t.Errorf("%s: %v is not ErrInvalidPrivateKey", name, ours)
		}
		if ours == nil && s == nil {
			t.Errorf("%s: no signer and no error", name)
		}
	}
}

// TestChecksumAddressMatchesGoEthereum compares EIP-55 forms of random
// addresses.
func TestChecksumAddressMatchesGoEthereum(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for range 500 {
		var a [20]byte
		fill(rng, a[:])
		if got, want := evm.ChecksumAddress(a), common.Address(a).Hex(); got != want {
			t.Fatalf("ChecksumAddress %s, go-ethereum %s", got, want)
		}
	}
}

// TestRecoverOfArbitrarySignaturesMatchesGoEthereum feeds both recoveries
// signatures a hostile gateway could hand over: random r and s (about half
// are not a curve point), s in the upper half, r or s of zero or at least N.
// Both must refuse the same ones and recover the same address from the rest.
func TestRecoverOfArbitrarySignaturesMatchesGoEthereum(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	nBytes := evm.N().FillBytes(make([]byte, 32))
	for i := range 400 {
		var digest [32]byte
		fill(rng, digest[:])
		sig := make([]byte, 65)
		fill(rng, sig[:64])
		sig[64] = byte(i % 2)
		switch i % 10 {
		case 1:
			clear(sig[:32])
		case 2:
			clear(sig[32:64])
		case 3:
			copy(sig[:32], nBytes)
		case 4:
			copy(sig[32:64], nBytes)
		}
		got, ourErr := evm.Recover(digest, sig)
		pub, theirErr := crypto.SigToPub(digest[:], sig)
		if (ourErr == nil) != (theirErr == nil) {
			t.Fatalf("case %d: Recover says %v, go-ethereum %v", i, ourErr, theirErr)
		}
		if ourErr == nil && got != crypto.PubkeyToAddress(*pub) {
			t.Fatalf("case %d: recovered %x, go-ethereum %x", i, got, crypto.PubkeyToAddress(*pub))
		}
	}
}

func fill(rng *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
}
