package evm_test

import (
	"context"
	"testing"

	"github.com/rail0/rail0-go/internal/evm"
	"github.com/rail0/rail0-go/internal/evmtest"
)

// BenchmarkRecover measures one public-key recovery, which every signature
// the SDK checks costs (a signer's answer, a payer's authorization). The
// target (issue 20) is at most 0.5 ms.
func BenchmarkRecover(b *testing.B) {
	k := evmtest.NewKey("bench")
	digest := evm.Keccak256([]byte("bench"))
	sig, err := k.SignDigest(context.Background(), digest)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := evm.Recover(digest, sig); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkKeccak256 measures hashing throughput on a 4 KiB input, about the
// size of the largest typed data the SDK hashes.
func BenchmarkKeccak256(b *testing.B) {
	in := make([]byte, 4096)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		evm.Keccak256(in)
	}
}

// BenchmarkKeccak256Word measures the hash of one 64-byte input, the common
// case (a public key, two words of EIP-712 encoding).
func BenchmarkKeccak256Word(b *testing.B) {
	in := make([]byte, 64)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		evm.Keccak256(in)
	}
}
