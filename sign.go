package rail0

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/rail0/rail0-go/internal/evm"
	"github.com/rail0/rail0-go/internal/verify"
)

// This file has the client's Signer sign digests. The SDK computed them
// itself from fields it has checked (package internal/verify): EIP-191 for
// sign-in, EIP-712 for EIP-3009 authorizations, EIP-1559 for transactions.
// A Signer only ever sees 32-byte digests of what the caller asked for.
// Its answer is checked to recover to its own address before it is used.

// eip191Digest is the personal_sign digest of message.
func eip191Digest(message string) [32]byte {
	return evm.Keccak256([]byte("\x19Ethereum Signed Message:\n"+strconv.Itoa(len(message))), []byte(message))
}

// signDigest has signer sign digest and returns the signature. It checks
// that the signature recovers to the signer's address. It returns it as
// 65 bytes r ‖ s ‖ v, with v = 27 or 28. A signature over another key, a
// high s or a malformed answer is an error (the rows of
// verify.ArtSignerAnswer). So a misconfigured signer is caught before
// anything is sent.
func signDigest(ctx context.Context, signer Signer, digest [32]byte) ([]byte, error) {
	want, err := verify.ParseAddress(signer.Address())
	if err != nil {
		return nil, fmt.Errorf("rail0: signer address: %w", err)
	}
	sig, err := signer.SignDigest(ctx, digest)
	if err != nil {
		return nil, err
	}
	sig, err = verify.CheckSignerAnswer(sig, digest, want)
	var m *verify.Mismatch
	if errors.As(err, &m) {
		return nil, fmt.Errorf("%w: %s", ErrBadSignature, m.Reason)
	}
	return sig, err
}

// signMessage signs a SIWE message (EIP-191) and returns 0x hex.
func signMessage(ctx context.Context, signer Signer, message string) (string, error) {
	sig, err := signDigest(ctx, signer, eip191Digest(message))
	if err != nil {
		return "", err
	}
	return "0x" + hex.EncodeToString(sig), nil
}

// signTx has signer sign tx and returns the raw 0x02… transaction.
func signTx(ctx context.Context, signer Signer, tx *verify.Tx) (string, error) {
	sig, err := signDigest(ctx, signer, tx.SigningHash())
	if err != nil {
		return "", err
	}
	return tx.Signed(sig), nil
}
