package evmtest

import (
	"context"
	"testing"

	"github.com/rail0/rail0-go/internal/evm"
)

func TestKeySignaturesRecoverToItsAddress(t *testing.T) {
	for i, seed := range []string{"a", "b", "c"} {
		k := NewKey(seed)
		digest := evm.Keccak256([]byte{byte(i)})
		sig, err := k.SignDigest(context.Background(), digest)
		if err != nil {
			t.Fatal(err)
		}
		got, err := evm.Recover(digest, sig)
		if err != nil {
			t.Fatal(err)
		}
		if "0x"+hexs(got[:]) != k.Address() {
			t.Fatalf("recovered %x, want %s", got, k.Address())
		}
		if !evm.IsLowS(sig[32:64]) {
			t.Fatal("high s")
		}
	}
}

func hexs(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}
