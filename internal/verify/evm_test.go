package verify_test

import (
	"bytes"
	"testing"

	"github.com/rail0/rail0-go/internal/verify"
)

// DecodeHex is the one reading of a 0x-prefixed byte string of any length:
// a transaction's data, a submit's signed transaction.
func TestDecodeHex(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []byte // nil: refused
	}{
		{"0x", []byte{}},
		{"0x02f8", []byte{0x02, 0xf8}},
		{"0XABcd", []byte{0xab, 0xcd}},
		{"", nil},
		{"0", nil},
		{"02f8", nil},
		{"0x2f8", nil},
		{"0x02g8", nil},
		{"0x02 f8", nil},
		{"x002f8", nil},
		{"0x-2", nil},
	} {
		got, err := verify.DecodeHex(tc.in)
		if tc.want == nil {
			if err == nil {
				t.Errorf("DecodeHex(%q) = %x, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("DecodeHex(%q) = %x, %v, want %x", tc.in, got, err, tc.want)
		}
	}
}
