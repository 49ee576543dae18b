package signing

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/rail0/rail0-go"
)

// Account is what the root package's Login and payment flows sign with.
var _ rail0.Signer = (*Account)(nil)

// Account adapts a Signer to the rail0.Signer interface of the root package,
// whose methods speak the gateway's wire formats (EIP-55 address strings,
// signing_payload JSON, unsigned_transaction strings, 0x-hex signatures), so
// that the root package never imports go-ethereum:
//
//	acct, err := signing.AccountFromPrivateKey(os.Getenv("PAYER_KEY"))
//	session, err := client.Auth.Login(ctx, acct, rail0.LoginParams{...})
//
// Like PrivateKeySigner, an Account prints and logs as its address only. It is
// safe for concurrent use when its Signer is.
type Account struct {
	signer Signer
}

// NewAccount returns an Account signing with s, which must not be nil.
func NewAccount(s Signer) *Account {
	return &Account{signer: s}
}

// AccountFromPrivateKey is NewAccount(NewPrivateKeySigner(hexKey)).
func AccountFromPrivateKey(hexKey string) (*Account, error) {
	s, err := NewPrivateKeySigner(hexKey)
	if err != nil {
		return nil, err
	}
	return NewAccount(s), nil
}

// Signer returns the underlying Signer.
func (a *Account) Signer() Signer { return a.signer }

// Address returns the signer's address in EIP-55 checksummed form, as SIWE
// messages require.
func (a *Account) Address() string { return a.signer.Address().Hex() }

// SignMessage is SignMessage(ctx, a.Signer(), message): an EIP-191
// signature, v = 27 or 28, for SIWE login and wallet proofs.
func (a *Account) SignMessage(ctx context.Context, message string) (string, error) {
	return SignMessage(ctx, a.signer, message)
}

// SignPayload is SignPayload(ctx, a.Signer(), signingPayload): an EIP-712
// signature of an EIP-3009 authorization whose from must be this account.
func (a *Account) SignPayload(ctx context.Context, signingPayload json.RawMessage) (string, error) {
	return SignPayload(ctx, a.signer, signingPayload)
}

// SignPayloadForChain is SignPayloadForChain(ctx, a.Signer(), signingPayload,
// chainID): SignPayload that also requires the payload to be for chainID.
func (a *Account) SignPayloadForChain(ctx context.Context, signingPayload json.RawMessage, chainID int64) (string, error) {
	return SignPayloadForChain(ctx, a.signer, signingPayload, chainID)
}

// SignTransaction is SignTransaction(ctx, a.Signer(), unsignedTransaction):
// the raw "0x02…" signed EIP-1559 transaction.
func (a *Account) SignTransaction(ctx context.Context, unsignedTransaction string) (string, error) {
	return SignTransaction(ctx, a.signer, unsignedTransaction)
}

// String returns "Account(<EIP-55 address>)".
func (a *Account) String() string {
	if a == nil || a.signer == nil {
		return "Account(nil)"
	}
	return "Account(" + a.Address() + ")"
}

// GoString returns a Go-syntax-like description holding only the address.
func (a *Account) GoString() string {
	if a == nil {
		return "(*signing.Account)(nil)"
	}
	if a.signer == nil {
		return "&signing.Account{}"
	}
	return `&signing.Account{Address: "` + a.Address() + `"}`
}

// Format implements fmt.Formatter: every verb prints the address only, never
// the Signer's internals.
func (a *Account) Format(f fmt.State, verb rune) {
	formatRedacted(f, verb, a.String(), a.GoString())
}

// LogValue implements slog.LogValuer: an Account logs as its address.
func (a *Account) LogValue() slog.Value {
	if a == nil || a.signer == nil {
		return slog.StringValue("<nil>")
	}
	return slog.StringValue(a.Address())
}
