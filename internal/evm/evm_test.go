package evm_test

import (
	"context"
	"encoding/hex"
	"errors"
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
		// 29..34 are recovery codes in decred's compact form (an overflowed
		// r, a compressed key), never Ethereum's v.
		"v=29": append(append([]byte{}, sig[:64]...), 29),
		"v=31": append(append([]byte{}, sig[:64]...), 31),
		"r=0":  append(make([]byte, 32), sig[32:]...),
		"s=0":  append(append(append([]byte{}, sig[:32]...), make([]byte, 32)...), sig[64]),
		"r>=n": append(append(evm.N().FillBytes(make([]byte, 32)), sig[32:64]...), sig[64]),
	} {
		if _, err := evm.Recover(digest, bad); !errors.Is(err, evm.ErrInvalidSignature) {
			t.Errorf("%s: got %v, want ErrInvalidSignature", name, err)
		}
	}
	if !evm.IsLowS(sig[32:64]) || evm.IsLowS(new(big.Int).Sub(evm.N(), big.NewInt(1)).Bytes()) {
		t.Error("IsLowS")
	}
}

// The examples of EIP-55 itself, and two well-known accounts.
func TestChecksumAddress(t *testing.T) {
	for _, want := range []string{
		"0x52908400098527886E0F7030069857D2E4169EE7",
		"0x8617E340B3D01FA5F11F306F4090FD50E238070D",
		"0xde709f2102306220921060314715629080e2fb77",
		"0x27b1fdb04752bbc536007a920d24acb045561c26",
		"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
		"0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
		"0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
		"0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
		"0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
		"0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826",
	} {
		b, err := hex.DecodeString(strings.ToLower(want[2:]))
		if err != nil {
			t.Fatal(err)
		}
		if got := evm.ChecksumAddress([20]byte(b)); got != want {
			t.Errorf("ChecksumAddress = %s, want %s", got, want)
		}
	}
}
