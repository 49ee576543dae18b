package rail0test

import (
	"crypto/ecdsa"
	"encoding/hex"
	"fmt"

	"github.com/ethereum/go-ethereum/crypto"
)

// Party is a demo key pair the server knows about.
// The keys are derived from fixed, public seeds. They are for tests and
// examples only and must never hold real funds.
type Party struct {
	// Name says who this is, "merchant" or "buyer".
	Name string
	// Address is the EIP-55 checksummed address.
	Address string
	// PrivateKey is the secp256k1 private key as 64 hex digits without 0x.
	// That is the form go-ethereum's crypto.HexToECDSA takes.
	PrivateKey string
	// AccountID is the merchant account the address belongs to.
	// It is "" for an account-less party such as the buyer.
	AccountID string

	key *ecdsa.PrivateKey
}

// Key returns the party's private key.
func (p Party) Key() *ecdsa.PrivateKey { return p.key }

// String names the party and its address. It never prints the private key.
func (p Party) String() string { return fmt.Sprintf("%s %s", p.Name, p.Address) }

// demoParty derives a deterministic key pair from a label.
func demoParty(name string) Party {
	seed := crypto.Keccak256([]byte("rail0test demo key: " + name))
	key, err := crypto.ToECDSA(seed)
	if err != nil {
		// A keccak digest is a valid secp256k1 scalar with overwhelming
		// probability. And these labels are fixed, so this cannot happen at
		// run time.
		panic(err)
	}
	return Party{
		Name:       name,
		Address:    crypto.PubkeyToAddress(key.PublicKey).Hex(),
		PrivateKey: hex.EncodeToString(crypto.FromECDSA(key)),
		key:        key,
	}
}
