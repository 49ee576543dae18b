package signing

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ethereum/go-ethereum/common"
)

// Well-known keys, so that the pinned vectors below can be checked by anyone.
const (
	// cowKey is keccak256("cow"), the signer of the EIP-712 specification's
	// "Mail" example.
	cowKey  = "0xc85ef7d79691fe79573b1a7064c19c1a9819ebdbd1faaab1a8ec92344438aaf4"
	cowAddr = "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"

	// hardhatKey is the first account of the Hardhat and Anvil test mnemonic.
	hardhatKey  = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
	hardhatAddr = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"

	// eip155Key is the sender of the EIP-155 specification's example.
	eip155Key  = "0x4646464646464646464646464646464646464646464646464646464646464646"
	eip155Addr = "0x9d8A62f656a8d1615C1294fd71e9CFb3E4855A4F"

	// web3Key is the key of the web3.js accounts.sign documentation example.
	web3Key  = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
	web3Addr = "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23"
)

// The README's example values (Base Sepolia USDC, the RAIL0 contract as the
// gateway spells it, in a case that is not a valid EIP-55 checksum).
const (
	usdcBaseSepolia = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
	rail0Contract   = "0x7c1E3b52fA9d4C26e0a1F83b5D9e6A4c2B0f8E31"
	paymentNonce    = "0x9f2c4e1a7b3d5c8e0f6a2b4d6c8e0a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e2f"
)

func mustSigner(t testing.TB, hexKey string) *PrivateKeySigner {
	t.Helper()
	s, err := NewPrivateKeySigner(hexKey)
	if err != nil {
		t.Fatalf("NewPrivateKeySigner: %v", err)
	}
	return s
}

// payloadDoc is a signing payload as a generic document, so that tests can
// alter one part and re-encode it.
type payloadDoc map[string]any

const eip3009Types = `{
	"EIP712Domain": [
		{"name": "name", "type": "string"},
		{"name": "version", "type": "string"},
		{"name": "chainId", "type": "uint256"},
		{"name": "verifyingContract", "type": "address"}
	],
	"%s": [
		{"name": "from", "type": "address"},
		{"name": "to", "type": "address"},
		{"name": "value", "type": "uint256"},
		{"name": "validAfter", "type": "uint256"},
		{"name": "validBefore", "type": "uint256"},
		{"name": "nonce", "type": "bytes32"}
	]
}`

// newPayload returns the gateway's payment payload: cow pays 25 USDC into the
// RAIL0 contract on Base Sepolia.
func newPayload(t testing.TB, primaryType, from string) payloadDoc {
	t.Helper()
	var types map[string]any
	if err := json.Unmarshal([]byte(strings.Replace(eip3009Types, "%s", primaryType, 1)), &types); err != nil {
		t.Fatal(err)
	}
	return payloadDoc{
		"types":       types,
		"primaryType": primaryType,
		"domain": map[string]any{
			"name":              "USDC",
			"version":           "2",
			"chainId":           json.Number("84532"),
			"verifyingContract": usdcBaseSepolia,
		},
		"message": map[string]any{
			"from":        from,
			"to":          rail0Contract,
			"value":       "25000000",
			"validAfter":  json.Number("0"),
			"validBefore": json.Number("1789985700"),
			"nonce":       paymentNonce,
		},
	}
}

func (p payloadDoc) domain() map[string]any  { return p["domain"].(map[string]any) }
func (p payloadDoc) message() map[string]any { return p["message"].(map[string]any) }
func (p payloadDoc) types() map[string]any   { return p["types"].(map[string]any) }

func (p payloadDoc) raw(t testing.TB) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// countingSigner wraps a Signer and counts SignDigest calls, to prove that a
// refusal happened before anything was signed.
type countingSigner struct {
	Signer
	calls atomic.Int32
}

func (c *countingSigner) SignDigest(ctx context.Context, digest [32]byte) ([]byte, error) {
	c.calls.Add(1)
	return c.Signer.SignDigest(ctx, digest)
}

// funcSigner is a Signer whose SignDigest is a function, to simulate
// misbehaving HSM or KMS adapters.
type funcSigner struct {
	addr common.Address
	sign func(ctx context.Context, digest [32]byte) ([]byte, error)
}

func (f funcSigner) Address() common.Address { return f.addr }
func (f funcSigner) SignDigest(ctx context.Context, d [32]byte) ([]byte, error) {
	return f.sign(ctx, d)
}
