package signing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"sync"
	"testing"

	"github.com/ethereum/go-ethereum/crypto"
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
		digest := crypto.Keccak256Hash([]byte{byte(i)})
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
		pub, err := crypto.SigToPub(digest[:], a)
		if err != nil || crypto.PubkeyToAddress(*pub).Hex() != hardhatAddr {
			t.Fatalf("signature does not recover to the signer: %v", err)
		}
		if !crypto.ValidateSignatureValues(a[64], bytesInt(a[:32]), bytesInt(a[32:64]), true) {
			t.Fatal("s is not in the lower half")
		}
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

func bytesInt(b []byte) *big.Int { return new(big.Int).SetBytes(b) }
