package signing

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"sync"
	"testing"

	"github.com/rail0/rail0-go/internal/evm"
)

// Well-known keys and their addresses: Hardhat's first account, the EIP-712
// "Mail" example's cow key (keccak256("cow")) and the EIP-155 example key.
const (
	hardhatKey  = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
	hardhatAddr = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
	cowKey      = "c85ef7d79691fe79573b1a7064c19c1a9819ebdbd1faaab1a8ec92344438aaf4"
	cowAddr     = "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"
	eip155Key   = "4646464646464646464646464646464646464646464646464646464646464646"
	eip155Addr  = "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F"
)

func TestNewPrivateKeySignerAddressEIP55(t *testing.T) {
	for _, tc := range []struct{ key, addr string }{
		{cowKey, cowAddr},
		{hardhatKey, hardhatAddr},
		{eip155Key, eip155Addr},
		{"0X" + strings.ToUpper(hardhatKey), hardhatAddr},
		{"  " + cowKey + "\n", cowAddr},
	} {
		s, err := NewPrivateKeySigner(tc.key)
		if err != nil {
			t.Fatalf("NewPrivateKeySigner(%.8s...): %v", tc.key, err)
		}
		if got := s.Address(); got != tc.addr {
			t.Errorf("Address() = %s, want %s", got, tc.addr)
		}
	}
}

func TestNewPrivateKeySignerRejectsBadKeysWithoutEchoingThem(t *testing.T) {
	secp256k1N := "fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141"
	for name, key := range map[string]string{
		"empty":      "",
		"short":      hardhatKey[:62],
		"long":       hardhatKey + "00",
		"non-hex":    "zz" + hardhatKey[2:],
		"inner-0x":   "0x0x" + hardhatKey[4:],
		"zero":       strings.Repeat("0", 64),
		"equal to N": secp256k1N,
		"above N":    strings.Repeat("f", 64),
	} {
		t.Run(name, func(t *testing.T) {
			s, err := NewPrivateKeySigner(key)
			if s != nil || !errors.Is(err, ErrInvalidPrivateKey) {
				t.Fatalf("got (%v, %v), want ErrInvalidPrivateKey", s, err)
			}
			if len(key) >= 10 && strings.Contains(err.Error(), key[2:10]) {
				t.Errorf("error %q repeats part of the key", err)
			}
		})
	}
}

func TestSignDigestIsDeterministicLowSAndRecoverable(t *testing.T) {
	s, err := NewPrivateKeySigner(hardhatKey)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		digest := evm.Keccak256([]byte{byte(i)})
		a, err := s.SignDigest(context.Background(), digest)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := s.SignDigest(context.Background(), digest)
		if !bytes.Equal(a, b) {
			t.Fatal("signatures differ for the same digest")
		}
		if a[64] > 1 {
			t.Fatalf("v = %d, want 0 or 1", a[64])
		}
		got, err := evm.Recover(digest, a)
		if err != nil || evm.ChecksumAddress(got) != hardhatAddr {
			t.Fatalf("signature does not recover to the signer: %v", err)
		}
		if !evm.IsLowS(a[32:64]) {
			t.Fatal("s is not in the lower half")
		}
	}
}

// TestSignDigestKnownAnswer signs the transaction of EIP-155's example (its
// signing hash) and expects the r and s the EIP publishes, with v = 37 − 35 −
// 2·chainID = 0: the nonce is RFC 6979's and s is low.
func TestSignDigestKnownAnswer(t *testing.T) {
	s, err := NewPrivateKeySigner(eip155Key)
	if err != nil {
		t.Fatal(err)
	}
	digest, _ := hex.DecodeString("daf5a779ae972f972197303d7b574746c7ef83eadac0f2791ad23db92e4c8e53")
	sig, err := s.SignDigest(context.Background(), [32]byte(digest))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := new(big.Int).SetString("18515461264373351373200002665853028612451056578545711640558177340181847433846", 10)
	ss, _ := new(big.Int).SetString("46948507304638947509940763649030358759909902576025900602547168820602576006531", 10)
	want := append(append(r.FillBytes(make([]byte, 32)), ss.FillBytes(make([]byte, 32))...), 0)
	if !bytes.Equal(sig, want) {
		t.Fatalf("signature %x, want %x", sig, want)
	}
}

func TestSignDigestHonoursDoneContext(t *testing.T) {
	s, _ := NewPrivateKeySigner(hardhatKey)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.SignDigest(ctx, [32]byte{1}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestGenerateKeyGivesDistinctSigners(t *testing.T) {
	a, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := GenerateKey()
	if a.Address() == b.Address() {
		t.Fatal("two generated keys share an address")
	}
}

func TestFormattingNeverShowsTheKey(t *testing.T) {
	s, _ := NewPrivateKeySigner(hardhatKey)
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("signer", "s", s, "in", struct{ S *PrivateKeySigner }{s})
	outs := []string{buf.String()}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%o"} {
		outs = append(outs, fmt.Sprintf(verb, s), fmt.Sprintf(verb, *s), fmt.Sprintf(verb, []*PrivateKeySigner{s}))
	}
	for _, out := range outs {
		if strings.Contains(strings.ToLower(out), hardhatKey[:16]) {
			t.Fatalf("formatted signer shows the key: %s", out)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	s, _ := NewPrivateKeySigner(cowKey)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.SignDigest(context.Background(), [32]byte{byte(i)}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}
