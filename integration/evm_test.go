package integration_test

import (
	"bytes"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rlp"

	"github.com/rail0/rail0-go/internal/evm"
)

// The root package's Ethereum primitives (internal/evm) rest on x/crypto's
// Keccak and decred's secp256k1, with an RLP encoder of their own, so that
// root users never download go-ethereum; here they are checked against
// go-ethereum on random inputs.

func TestKeccak256MatchesGoEthereum(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 600; n++ {
		in := make([]byte, n)
		for i := range in {
			in[i] = byte(rng.Uint32())
		}
		// Split the input at a random point: parts must hash like the whole.
		cut := 0
		if n > 0 {
			cut = rng.IntN(n)
		}
		got := evm.Keccak256(in[:cut], in[cut:])
		if want := crypto.Keccak256(in); !bytes.Equal(got[:], want) {
			t.Fatalf("len %d: got %x, want %x", n, got, want)
		}
	}
}

func TestRecoverMatchesGoEthereum(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 40; i++ {
		key, err := crypto.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		var digest [32]byte
		for j := range digest {
			digest[j] = byte(rng.Uint32())
		}
		sig, err := crypto.Sign(digest[:], key)
		if err != nil {
			t.Fatal(err)
		}
		got, err := evm.Recover(digest, sig)
		if err != nil {
			t.Fatal(err)
		}
		if want := crypto.PubkeyToAddress(key.PublicKey); got != want {
			t.Fatalf("recovered %x, want %x", got, want)
		}
		if !evm.IsLowS(sig[32:64]) {
			t.Fatal("go-ethereum produced a high s")
		}
		// v = 27/28 is accepted too; the other parity gives another address.
		sig[64] += 27
		if got2, _ := evm.Recover(digest, sig); got2 != got {
			t.Fatal("v+27 recovers differently")
		}
		sig[64] ^= 1
		if got3, err := evm.Recover(digest, sig); err == nil && got3 == got {
			t.Fatal("flipped parity recovers the same address")
		}
	}
}

func TestRLPMatchesGoEthereum(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 200; i++ {
		b := make([]byte, rng.IntN(300))
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		nb := make([]byte, rng.IntN(33))
		for j := range nb {
			nb[j] = byte(rng.Uint32())
		}
		n := new(big.Int).SetBytes(nb)
		ours := evm.EncodeRLP(evm.List{evm.Bytes(b), evm.Uint{Int: n}, evm.List{}, evm.List{evm.Bytes(b[:min(len(b), 1)])}})
		theirs, err := rlp.EncodeToBytes([]any{b, n, []any{}, []any{b[:min(len(b), 1)]}})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ours, theirs) {
			t.Fatalf("rlp differs for len %d, n %v:\n%x\n%x", len(b), n, ours, theirs)
		}
	}
}
