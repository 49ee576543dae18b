package signing

import (
	"context"
	"strconv"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// MessageHash returns the EIP-191 personal_sign digest of message:
// keccak256("\x19Ethereum Signed Message:\n" + decimal byte length + message).
func MessageHash(message string) common.Hash {
	prefix := "\x19Ethereum Signed Message:\n" + strconv.Itoa(len(message))
	return crypto.Keccak256Hash([]byte(prefix), []byte(message))
}

// SignMessage signs message the way personal_sign does (EIP-191) and returns
// "0x" + 65 bytes r ‖ s ‖ v hex with v = 27 or 28. It is how a SIWE
// (EIP-4361) login or wallet-ownership proof is signed; the message text
// itself is built by the root package (rail0.SIWEMessage) and must be passed
// byte for byte as it will be sent to the gateway.
func SignMessage(ctx context.Context, s Signer, message string) (string, error) {
	sig, err := signDigest(ctx, s, MessageHash(message))
	if err != nil {
		return "", err
	}
	return encodeSignature(sig), nil
}

// RecoverMessageSigner returns the address whose key produced signature, an
// EIP-191 personal_sign signature of message ("0x" + 65 bytes hex, v in
// {27, 28} or {0, 1}). It is what the gateway does when verifying a SIWE
// login.
func RecoverMessageSigner(message, signature string) (common.Address, error) {
	return recoverAddress(MessageHash(message), signature)
}
