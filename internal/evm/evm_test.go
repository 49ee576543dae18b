package evm_test

import (
	"context"
	"encoding/hex"
	"math/big"
	"strings"
	"testing"

	"github.com/rail0/rail0-go/internal/evm"
	"github.com/rail0/rail0-go/internal/evmtest"
)

// Known answers from the Keccak team's and Ethereum's published vectors; the
// integration tests also compare these functions with go-ethereum's on
// random inputs.
func TestKeccak256KnownAnswers(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"},
		{"abc", "4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45"},
		// The ERC-20 transfer selector is the first four bytes of this hash.
		{"transfer(address,uint256)", "a9059cbb2ab09eb219583f4a59a5d0623ade346d962bcd4e46b11da047c9049b"},
	} {
		got := evm.Keccak256([]byte(tc.in))
		if hex.EncodeToString(got[:]) != tc.want {
			t.Errorf("Keccak256(%q) = %x, want %s", tc.in, got, tc.want)
		}
	}
	// Input across the 136-byte rate boundary, in parts or whole.
	long := []byte(strings.Repeat("a", 300))
	if evm.Keccak256(long) != evm.Keccak256(long[:135], long[135:137], long[137:]) {
		t.Error("hashing in parts differs from hashing the whole")
	}
}

// RLP examples from the Ethereum yellow paper's appendix and wiki.
func TestRLPKnownAnswers(t *testing.T) {
	for _, tc := range []struct {
		item evm.RLP
		want string
	}{
		{evm.Bytes("dog"), "83646f67"},
		{evm.List{evm.Bytes("cat"), evm.Bytes("dog")}, "c88363617483646f67"},
		{evm.Bytes(""), "80"},
		{evm.List{}, "c0"},
		{evm.Uint{Int: big.NewInt(0)}, "80"},
		{evm.Uint{Int: big.NewInt(15)}, "0f"},
		{evm.Uint{Int: big.NewInt(1024)}, "820400"},
		{evm.List{evm.List{}, evm.List{evm.List{}}, evm.List{evm.List{}, evm.List{evm.List{}}}}, "c7c0c1c0c3c0c1c0"},
		{evm.Bytes("Lorem ipsum dolor sit amet, consectetur adipisicing elit"),
			"b8384c6f72656d20697073756d20646f6c6f722073697420616d65742c20636f6e7365637465747572206164697069736963696e6720656c6974"},
	} {
		if got := hex.EncodeToString(evm.EncodeRLP(tc.item)); got != tc.want {
			t.Errorf("EncodeRLP(%v) = %s, want %s", tc.item, got, tc.want)
		}
	}
}

func TestRecover(t *testing.T) {
	k := evmtest.NewKey("recover")
	digest := evm.Keccak256([]byte("message"))
	sig, err := k.SignDigest(context.Background(), digest)
	if err != nil {
		t.Fatal(err)
	}
	got, err := evm.Recover(digest, sig)
	if err != nil || "0x"+hex.EncodeToString(got[:]) != k.Address() {
		t.Fatalf("Recover = %x, %v; want %s", got, err, k.Address())
	}
	for name, bad := range map[string][]byte{
		"short": sig[:64],
		"v=2":   append(append([]byte{}, sig[:64]...), 2),
		"r=0":   append(make([]byte, 32), sig[32:]...),
		"s=0":   append(append(append([]byte{}, sig[:32]...), make([]byte, 32)...), sig[64]),
		"r>=n":  append(append(evm.N().FillBytes(make([]byte, 32)), sig[32:64]...), sig[64]),
	} {
		if _, err := evm.Recover(digest, bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if !evm.IsLowS(sig[32:64]) || evm.IsLowS(new(big.Int).Sub(evm.N(), big.NewInt(1)).Bytes()) {
		t.Error("IsLowS")
	}
}
