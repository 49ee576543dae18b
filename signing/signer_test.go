package signing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

func TestNewPrivateKeySignerAddressEIP55(t *testing.T) {
	for _, tc := range []struct{ key, addr string }{
		{cowKey, cowAddr},
		{hardhatKey, hardhatAddr},
		{eip155Key, eip155Addr},
		{web3Key, web3Addr},
		{"0X" + strings.ToUpper(hardhatKey), hardhatAddr},
		{"  " + cowKey + "\n", cowAddr},
	} {
		s, err := NewPrivateKeySigner(tc.key)
		if err != nil {
			t.Fatalf("NewPrivateKeySigner(%.8s...): %v", tc.key, err)
		}
		if got := s.Address().Hex(); got != tc.addr {
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
			if len(key) >= 8 && strings.Contains(err.Error(), key[2:10]) {
				t.Errorf("error %q repeats part of the key", err)
			}
		})
	}
}

func TestPrivateKeySignerSignDigestIsDeterministicAndRecoverable(t *testing.T) {
	s := mustSigner(t, cowKey)
	digest := crypto.Keccak256Hash([]byte("digest"))
	a, err := s.SignDigest(context.Background(), digest)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.SignDigest(context.Background(), digest)
	if !bytes.Equal(a, b) {
		t.Fatalf("RFC 6979 signing is deterministic; got %x then %x", a, b)
	}
	if len(a) != 65 || a[64] > 1 {
		t.Fatalf("signature %x: want 65 bytes with v in {0,1}", a)
	}
	pub, err := crypto.Ecrecover(digest[:], a)
	if err != nil {
		t.Fatal(err)
	}
	if got := common.BytesToAddress(crypto.Keccak256(pub[1:])[12:]); got != s.Address() {
		t.Fatalf("Ecrecover = %s, want %s", got, s.Address())
	}
}

func TestPrivateKeySignerHonoursDoneContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := mustSigner(t, cowKey).SignDigest(ctx, [32]byte{1}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestGenerateKeyGivesDistinctWorkingSigners(t *testing.T) {
	a, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	b, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if a.Address() == b.Address() || a.Address() == (common.Address{}) {
		t.Fatalf("GenerateKey gave %s and %s", a.Address(), b.Address())
	}
	sig, err := SignMessage(context.Background(), a, "hi")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := RecoverMessageSigner("hi", sig); got != a.Address() {
		t.Fatalf("recovered %s, want %s", got, a.Address())
	}
}

// keyLeaks reports whether out contains the key in any usual rendering: hex
// in either case, or the decimal value of D that fmt prints for a big.Int.
func keyLeaks(out, hexKey string) bool {
	h := strings.TrimPrefix(hexKey, "0x")
	d, _ := new(big.Int).SetString(h, 16)
	lower := strings.ToLower(out)
	return strings.Contains(lower, h[:16]) || strings.Contains(out, d.String()[:16])
}

func TestFormattingNeverShowsTheKey(t *testing.T) {
	s := mustSigner(t, hardhatKey)
	acct := NewAccount(s)
	// Control: the detector does see a key printed the way fmt prints one.
	if !keyLeaks(fmt.Sprintf("%v", s.key), hardhatKey) || !keyLeaks(fmt.Sprintf("%x", crypto.FromECDSA(s.key)), hardhatKey) {
		t.Fatal("keyLeaks misses a printed key")
	}
	values := map[string]any{
		"*PrivateKeySigner":      s,
		"PrivateKeySigner value": *s,
		"*Account":               acct,
		"Account value":          *acct,
		"Signer interface":       Signer(s),
		"in a struct":            struct{ S *PrivateKeySigner }{s},
		"in a slice":             []any{s, acct},
	}
	for name, v := range values {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T"} {
			out := fmt.Sprintf(verb, v)
			if keyLeaks(out, hardhatKey) {
				t.Errorf("%s with %s leaks the key: %s", name, verb, out)
			}
		}
	}
	// The pointer types print as their address, whatever the verb.
	for _, tc := range []struct {
		verb string
		v    any
		want string
	}{
		{"%v", s, "PrivateKeySigner(" + hardhatAddr + ")"},
		{"%+v", s, "PrivateKeySigner(" + hardhatAddr + ")"},
		{"%s", s, "PrivateKeySigner(" + hardhatAddr + ")"},
		{"%#v", s, `&signing.PrivateKeySigner{Address: "` + hardhatAddr + `"}`},
		{"%q", s, `"PrivateKeySigner(` + hardhatAddr + `)"`},
		{"%v", acct, "Account(" + hardhatAddr + ")"},
		{"%#v", acct, `&signing.Account{Address: "` + hardhatAddr + `"}`},
	} {
		if got := fmt.Sprintf(tc.verb, tc.v); got != tc.want {
			t.Errorf("Sprintf(%q, %T) = %s, want %s", tc.verb, tc.v, got, tc.want)
		}
	}
	if got := s.String() + s.GoString() + acct.String() + acct.GoString(); keyLeaks(got, hardhatKey) {
		t.Errorf("String/GoString leak the key: %s", got)
	}

	for _, v := range []any{s, acct} {
		b, err := json.Marshal(v)
		if err != nil || keyLeaks(string(b), hardhatKey) {
			t.Errorf("json.Marshal(%T) = %s, %v", v, b, err)
		}
	}

	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	logger.Info("signing", "signer", s, "account", acct)
	if keyLeaks(buf.String(), hardhatKey) || !strings.Contains(buf.String(), `"signer":"`+hardhatAddr+`"`) {
		t.Errorf("slog output %s: want the address and no key", buf.String())
	}
}

func TestNilFormatting(t *testing.T) {
	var s *PrivateKeySigner
	var a *Account
	if got := fmt.Sprintf("%v %#v %v %#v", s, s, a, a); got != "PrivateKeySigner(nil) (*signing.PrivateKeySigner)(nil) Account(nil) (*signing.Account)(nil)" {
		t.Errorf("nil formatting = %s", got)
	}
}

// TestSignDigestChecksWhatTheSignerReturns covers the checks applied to a
// Signer's output before it is used, e.g. an HSM adapter with the wrong key.
func TestSignDigestChecksWhatTheSignerReturns(t *testing.T) {
	real := mustSigner(t, cowKey)
	other := mustSigner(t, hardhatKey)
	boom := errors.New("kms unavailable")
	highS := func(ctx context.Context, d [32]byte) ([]byte, error) {
		sig, _ := real.SignDigest(ctx, d)
		n := crypto.S256().Params().N
		sv := new(big.Int).Sub(n, new(big.Int).SetBytes(sig[32:64]))
		sv.FillBytes(sig[32:64])
		sig[64] ^= 1
		return sig, nil
	}
	for name, tc := range map[string]struct {
		sign func(context.Context, [32]byte) ([]byte, error)
		want error
	}{
		"error": {func(context.Context, [32]byte) ([]byte, error) { return nil, boom }, boom},
		"64 bytes": {func(ctx context.Context, d [32]byte) ([]byte, error) {
			s, _ := real.SignDigest(ctx, d)
			return s[:64], nil
		}, ErrInvalidSignature},
		"v=27": {func(ctx context.Context, d [32]byte) ([]byte, error) {
			s, _ := real.SignDigest(ctx, d)
			s[64] += 27
			return s, nil
		}, ErrInvalidSignature},
		"high s":    {highS, ErrInvalidSignature},
		"wrong key": {other.SignDigest, ErrInvalidSignature},
		"flipped v": {func(ctx context.Context, d [32]byte) ([]byte, error) {
			s, _ := real.SignDigest(ctx, d)
			s[64] ^= 1
			return s, nil
		}, ErrInvalidSignature},
		"all zeroes": {func(context.Context, [32]byte) ([]byte, error) { return make([]byte, 65), nil }, ErrInvalidSignature},
	} {
		t.Run(name, func(t *testing.T) {
			fs := funcSigner{addr: real.Address(), sign: tc.sign}
			if _, err := SignMessage(context.Background(), fs, "x"); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	// The same adapter with a correct key passes the checks.
	fs := funcSigner{addr: real.Address(), sign: real.SignDigest}
	if _, err := SignMessage(context.Background(), fs, "x"); err != nil {
		t.Fatalf("well-behaved adapter: %v", err)
	}
}

func TestNilSigner(t *testing.T) {
	ctx := context.Background()
	if _, err := SignMessage(ctx, nil, "x"); !errors.Is(err, ErrNilSigner) {
		t.Errorf("SignMessage: %v", err)
	}
	if _, err := SignPayload(ctx, nil, newPayload(t, PrimaryTypeTransfer, cowAddr).raw(t)); !errors.Is(err, ErrNilSigner) {
		t.Errorf("SignPayload: %v", err)
	}
	if _, err := SignTransaction(ctx, nil, "{}"); !errors.Is(err, ErrNilSigner) {
		t.Errorf("SignTransaction: %v", err)
	}
}

func TestPrivateKeySignerConcurrentUse(t *testing.T) {
	s := mustSigner(t, cowKey)
	payload := newPayload(t, PrimaryTypeTransfer, cowAddr).raw(t)
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			sig, err := SignPayload(context.Background(), s, payload)
			if err == nil && sig != transferSignature {
				err = fmt.Errorf("signature %s, want %s", sig, transferSignature)
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
