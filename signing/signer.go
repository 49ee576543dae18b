package signing

import (
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/internal/evm"
)

// PrivateKeySigner implements rail0.Signer, the SDK's one signing interface.
var _ rail0.Signer = (*PrivateKeySigner)(nil)

// PrivateKeySigner is a rail0.Signer holding a secp256k1 private key in
// memory. Give it to a client with rail0.WithSigner.
//
// The key cannot be read back. PrivateKeySigner prints as its address
// only. It formats that way with every fmt verb, %#v included. It logs
// (slog.LogValuer) as its address too. No error of this package repeats a
// key. It is safe for concurrent use.
type PrivateKeySigner struct {
	key  *secp256k1.PrivateKey
	addr string // EIP-55
}

// NewPrivateKeySigner returns a signer for a 32-byte private key.
// hexKey is 64 hex digits, with or without a "0x" prefix. Surrounding white
// space is ignored. A malformed key is reported as ErrInvalidPrivateKey.
// Its message never contains the input.
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
	// A key must be in [1, N-1]; decred's PrivKeyFromBytes would reduce a
	// larger one modulo N instead of refusing it.
	var d secp256k1.ModNScalar
	if overflow := d.SetByteSlice(b); overflow || d.IsZero() {
		d.Zero()
		return nil, fmt.Errorf("%w: not in the secp256k1 range", ErrInvalidPrivateKey)
	}
	key := secp256k1.NewPrivateKey(&d)
	d.Zero()
	return newPrivateKeySigner(key), nil
}

// GenerateKey returns a signer for a fresh random key drawn from crypto/rand.
// The key cannot be exported, so it suits tests and short-lived identities.
func GenerateKey() (*PrivateKeySigner, error) {
	key, err := secp256k1.GeneratePrivateKey()
	if err != nil {
		return nil, fmt.Errorf("signing: generate key: %w", err)
	}
	return newPrivateKeySigner(key), nil
}

func newPrivateKeySigner(key *secp256k1.PrivateKey) *PrivateKeySigner {
	return &PrivateKeySigner{key: key, addr: evm.ChecksumAddress(evm.PublicKeyAddress(key.PubKey()))}
}

// Address returns the account address derived from the key, EIP-55
// checksummed.
func (s *PrivateKeySigner) Address() string { return s.addr }

// SignDigest signs digest with RFC 6979 deterministic nonces.
// So the same key and digest always give the same signature. It is the one
// go-ethereum's crypto.Sign gives. SignDigest returns r ‖ s ‖ v, with s in
// the lower half of the curve order and v in {0, 1}. It does no I/O. It
// only refuses a context that is already done.
func (s *PrivateKeySigner) SignDigest(ctx context.Context, digest [32]byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// decred's compact form is 27+v ‖ r ‖ s, with s already made low;
	// Ethereum's is r ‖ s ‖ v.
	compact := ecdsa.SignCompact(s.key, digest[:], false)
	return append(compact[1:65:65], compact[0]-27), nil
}

// String returns "PrivateKeySigner(<EIP-55 address>)".
func (s *PrivateKeySigner) String() string {
	if s == nil {
		return "PrivateKeySigner(nil)"
	}
	return "PrivateKeySigner(" + s.addr + ")"
}

// GoString returns a Go-syntax-like description holding only the address.
func (s *PrivateKeySigner) GoString() string {
	if s == nil {
		return "(*signing.PrivateKeySigner)(nil)"
	}
	return `&signing.PrivateKeySigner{Address: "` + s.addr + `"}`
}

// Format implements fmt.Formatter.
// Every verb and flag, %#v and %+v included, prints the address, never the
// key.
func (s *PrivateKeySigner) Format(f fmt.State, verb rune) {
	formatRedacted(f, verb, s.String(), s.GoString())
}

// LogValue implements slog.LogValuer: a signer logs as its address.
func (s *PrivateKeySigner) LogValue() slog.Value {
	if s == nil {
		return slog.StringValue("<nil>")
	}
	return slog.StringValue(s.addr)
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
