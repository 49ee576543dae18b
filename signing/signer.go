package signing

import (
	"context"
	"crypto/ecdsa"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/big"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// Signer is an Ethereum account that can sign 32-byte digests. It is the
// seam that lets keys live outside the process: PrivateKeySigner keeps a key in
// memory, and an adapter for an HSM or a cloud KMS only has to implement these
// two methods.
//
// SignDigest signs digest as is (it must not hash it again) with the secp256k1
// key of Address and returns 65 bytes r ‖ s ‖ v, where r and s are 32-byte
// big-endian integers, s is in the lower half of the curve order (as Ethereum
// requires since Homestead), and v is the recovery id 0 or 1 (not 27 or 28).
// Adapters for devices that return DER signatures must convert them and work out
// v by recovery. The functions of this package check every signature a Signer
// returns against Address before using it, so a misconfigured key is reported
// as an error rather than sent to the gateway.
//
// Implementations must be safe for concurrent use. SignDigest should honour
// ctx when it does I/O.
type Signer interface {
	Address() common.Address
	SignDigest(ctx context.Context, digest [32]byte) ([]byte, error)
}

// PrivateKeySigner is a Signer holding a secp256k1 private key in memory.
//
// The key cannot be read back: PrivateKeySigner prints, formats (with every
// fmt verb, including %#v) and logs (slog.LogValuer) as its address only, and
// no error of this package repeats a key. It is safe for concurrent use.
type PrivateKeySigner struct {
	key  *ecdsa.PrivateKey
	addr common.Address
}

// NewPrivateKeySigner returns a signer for the 32-byte private key written as
// 64 hex digits, with or without a "0x" prefix; surrounding white space is
// ignored. A malformed key is reported as ErrInvalidPrivateKey with a message
// that never contains the input.
func NewPrivateKeySigner(hexKey string) (*PrivateKeySigner, error) {
	h := strings.TrimSpace(hexKey)
	if strings.HasPrefix(h, "0x") || strings.HasPrefix(h, "0X") {
		h = h[2:]
	}
	if len(h) != 64 {
		return nil, fmt.Errorf("%w: want 64 hex digits", ErrInvalidPrivateKey)
	}
	hb, b := []byte(h), make([]byte, 32)
	defer clear(hb)
	defer clear(b)
	// hex.Decode's error names the offending character; do not pass it on.
	if _, err := hex.Decode(b, hb); err != nil {
		return nil, fmt.Errorf("%w: want 64 hex digits", ErrInvalidPrivateKey)
	}
	key, err := crypto.ToECDSA(b)
	if err != nil {
		return nil, fmt.Errorf("%w: not in the secp256k1 range", ErrInvalidPrivateKey)
	}
	return newPrivateKeySigner(key), nil
}

// GenerateKey returns a signer for a fresh random key drawn from crypto/rand.
// The key cannot be exported, so it suits tests and short-lived identities.
func GenerateKey() (*PrivateKeySigner, error) {
	key, err := crypto.GenerateKey()
	if err != nil {
		return nil, fmt.Errorf("signing: generate key: %w", err)
	}
	return newPrivateKeySigner(key), nil
}

func newPrivateKeySigner(key *ecdsa.PrivateKey) *PrivateKeySigner {
	return &PrivateKeySigner{key: key, addr: crypto.PubkeyToAddress(key.PublicKey)}
}

// Address returns the account address derived from the key.
func (s *PrivateKeySigner) Address() common.Address { return s.addr }

// SignDigest signs digest with RFC 6979 deterministic nonces, so the same key
// and digest always give the same signature. It returns r ‖ s ‖ v with v in
// {0, 1}. It does no I/O; it only refuses a context that is already done.
func (s *PrivateKeySigner) SignDigest(ctx context.Context, digest [32]byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sig, err := crypto.Sign(digest[:], s.key)
	if err != nil {
		// crypto.Sign's errors describe the digest or key length, never the key.
		return nil, fmt.Errorf("signing: sign digest: %w", err)
	}
	return sig, nil
}

// String returns "PrivateKeySigner(<EIP-55 address>)".
func (s *PrivateKeySigner) String() string {
	if s == nil {
		return "PrivateKeySigner(nil)"
	}
	return "PrivateKeySigner(" + s.addr.Hex() + ")"
}

// GoString returns a Go-syntax-like description holding only the address.
func (s *PrivateKeySigner) GoString() string {
	if s == nil {
		return "(*signing.PrivateKeySigner)(nil)"
	}
	return `&signing.PrivateKeySigner{Address: "` + s.addr.Hex() + `"}`
}

// Format implements fmt.Formatter so that every verb and flag, %#v and %+v
// included, prints the address and never the key.
func (s *PrivateKeySigner) Format(f fmt.State, verb rune) {
	formatRedacted(f, verb, s.String(), s.GoString())
}

// LogValue implements slog.LogValuer: a signer logs as its address.
func (s *PrivateKeySigner) LogValue() slog.Value {
	if s == nil {
		return slog.StringValue("<nil>")
	}
	return slog.StringValue(s.addr.Hex())
}

// formatRedacted writes str for every verb except %#v (goStr) and %q (quoted).
func formatRedacted(f fmt.State, verb rune, str, goStr string) {
	switch {
	case verb == 'v' && f.Flag('#'):
		fmt.Fprint(f, goStr)
	case verb == 'q':
		fmt.Fprint(f, strconv.Quote(str))
	default:
		fmt.Fprint(f, str)
	}
}

// signDigest asks s to sign digest and checks the answer: 65 bytes, v in
// {0, 1}, canonical low-s values, and recovery to s.Address(). It returns a
// fresh slice with v in {0, 1}.
func signDigest(ctx context.Context, s Signer, digest [32]byte) ([]byte, error) {
	if s == nil {
		return nil, ErrNilSigner
	}
	want := s.Address()
	sig, err := s.SignDigest(ctx, digest)
	if err != nil {
		return nil, fmt.Errorf("signing: signer %s: %w", want.Hex(), err)
	}
	if len(sig) != crypto.SignatureLength {
		return nil, fmt.Errorf("%w: signer %s returned %d bytes, want 65", ErrInvalidSignature, want.Hex(), len(sig))
	}
	out := make([]byte, crypto.SignatureLength)
	copy(out, sig)
	r, sv, v := new(big.Int).SetBytes(out[:32]), new(big.Int).SetBytes(out[32:64]), out[64]
	if !crypto.ValidateSignatureValues(v, r, sv, true) {
		return nil, fmt.Errorf("%w: signer %s returned v=%d or r, s out of range (v must be 0 or 1, s in the lower half)", ErrInvalidSignature, want.Hex(), v)
	}
	pub, err := crypto.SigToPub(digest[:], out)
	if err != nil {
		return nil, fmt.Errorf("%w: signer %s: %v", ErrInvalidSignature, want.Hex(), err)
	}
	if got := crypto.PubkeyToAddress(*pub); got != want {
		return nil, fmt.Errorf("%w: signer %s returned a signature that recovers to %s", ErrInvalidSignature, want.Hex(), got.Hex())
	}
	return out, nil
}

// decodeSignature parses "0x" + 130 hex digits into r ‖ s ‖ v with v
// normalised to {0, 1}; it accepts v as 0, 1, 27 or 28.
func decodeSignature(signature string) ([]byte, error) {
	h, ok := strings.CutPrefix(signature, "0x")
	if !ok || len(h) != 2*crypto.SignatureLength {
		return nil, fmt.Errorf("%w: want 0x followed by 130 hex digits", ErrInvalidSignature)
	}
	sig, err := hex.DecodeString(h)
	if err != nil {
		return nil, fmt.Errorf("%w: want 0x followed by 130 hex digits", ErrInvalidSignature)
	}
	if sig[64] >= 27 {
		sig[64] -= 27
	}
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:64])
	if !crypto.ValidateSignatureValues(sig[64], r, s, true) {
		return nil, fmt.Errorf("%w: v must be 27 or 28 (or 0 or 1), r and s in range with s in the lower half", ErrInvalidSignature)
	}
	return sig, nil
}

// recoverAddress returns the address that produced signature over digest.
func recoverAddress(digest [32]byte, signature string) (common.Address, error) {
	sig, err := decodeSignature(signature)
	if err != nil {
		return common.Address{}, err
	}
	pub, err := crypto.SigToPub(digest[:], sig)
	if err != nil {
		return common.Address{}, fmt.Errorf("%w: %v", ErrInvalidSignature, err)
	}
	return crypto.PubkeyToAddress(*pub), nil
}

// encodeSignature returns sig (v in {0, 1}) as "0x" hex with v = 27 or 28,
// the form the gateway and personal_sign verifiers expect.
func encodeSignature(sig []byte) string {
	out := make([]byte, len(sig))
	copy(out, sig)
	out[64] += 27
	return "0x" + hex.EncodeToString(out)
}
