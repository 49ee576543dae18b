// Package demo sets up what the examples need: a gateway and two parties,
// a buyer and a merchant.
//
// By default it starts the in-process gateway of package rail0test. So
// every example runs offline with nothing to install. Its clients trust
// that gateway's own RAIL0 contract (rail0test's Pins). Otherwise they run
// with the SDK's defaults.
//
// With RAIL0_BASE_URL set it uses that gateway instead. The keys and token
// then come from the environment (see Setup). There the trust is the SDK's
// registry of published deployments and stablecoins.
package demo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0test"
	"github.com/rail0/rail0-go/registry"
	"github.com/rail0/rail0-go/signing"
)

// Env is a gateway and the parties an example works with.
type Env struct {
	// BaseURL is the gateway's URL.
	BaseURL string
	// Embedded is true when the gateway is the in-process rail0test one.
	Embedded bool
	// Buyer pays; Merchant is paid.
	Buyer, Merchant *signing.PrivateKeySigner
	// ChainID and Token select the stablecoin to pay with.
	// Decimals is its number of decimals.
	ChainID  int64
	Token    string
	Decimals int64
	// Server is the embedded gateway, nil for a real one.
	Server *rail0test.Server
	// trust is what every client of the example trusts besides the SDK's
	// registry. It is the embedded gateway's contract, or a token the
	// registry does not publish.
	trust []rail0.Option
}

// Setup returns the example's environment.
// Without RAIL0_BASE_URL it starts rail0test with fast confirmations; opts
// are passed on. With RAIL0_BASE_URL it reads these variables:
//   - RAIL0_BUYER_KEY and RAIL0_MERCHANT_KEY: hex private keys of test
//     wallets.
//   - RAIL0_CHAIN_ID: the chain's EIP-155 id.
//   - RAIL0_TOKEN: a stablecoin's symbol ("USDC") or address. The SDK's
//     registry must publish it for that chain, with its decimals.
//   - RAIL0_TOKEN_DECIMALS: pins a token the registry does not publish,
//     with those decimals. Celo Sepolia's is one such token.
//
// Nothing else is trusted beyond the registry. Call Close when done.
func Setup(opts ...rail0test.Option) (*Env, error) {
	if base := os.Getenv("RAIL0_BASE_URL"); base != "" {
		return fromEnvironment(base)
	}
	opts = append([]rail0test.Option{rail0test.WithConfirmationDelay(300 * time.Millisecond)}, opts...)
	srv := rail0test.NewServer(opts...)
	buyer, err := signing.NewPrivateKeySigner(srv.Buyer.PrivateKey)
	if err != nil {
		srv.Close()
		return nil, err
	}
	merchant, err := signing.NewPrivateKeySigner(srv.Merchant.PrivateKey)
	if err != nil {
		srv.Close()
		return nil, err
	}
	usdc, _ := registry.LookupStablecoin(srv.ChainID, "USDC") // rail0test's USDC is the published one
	return &Env{
		BaseURL: srv.URL, Embedded: true, Server: srv,
		Buyer: buyer, Merchant: merchant,
		ChainID: srv.ChainID, Token: srv.Token, Decimals: usdc.Decimals,
		trust: []rail0.Option{srv.Pins()},
	}, nil
}

func fromEnvironment(base string) (*Env, error) {
	get := func(name string) (string, error) {
		v := os.Getenv(name)
		if v == "" {
			return "", fmt.Errorf("demo: RAIL0_BASE_URL is set, so %s is required", name)
		}
		return v, nil
	}
	var errs []error
	buyerKey, err := get("RAIL0_BUYER_KEY")
	errs = append(errs, err)
	merchantKey, err := get("RAIL0_MERCHANT_KEY")
	errs = append(errs, err)
	chain, err := get("RAIL0_CHAIN_ID")
	errs = append(errs, err)
	token, err := get("RAIL0_TOKEN")
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	chainID, err := strconv.ParseInt(chain, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("demo: RAIL0_CHAIN_ID: %w", err)
	}
	env := &Env{BaseURL: base, ChainID: chainID}
	if d := os.Getenv("RAIL0_TOKEN_DECIMALS"); d != "" {
		// A token the registry does not publish: the caller vouches for it.
		if env.Decimals, err = strconv.ParseInt(d, 10, 64); err != nil {
			return nil, fmt.Errorf("demo: RAIL0_TOKEN_DECIMALS: %w", err)
		}
		env.Token = token
		env.trust = []rail0.Option{rail0.WithTrustedTokens(rail0.Token{ChainID: chainID, Address: token, Decimals: env.Decimals})}
	} else {
		coin, ok := publishedToken(chainID, token)
		if !ok {
			return nil, fmt.Errorf("demo: RAIL0_TOKEN %q is not a stablecoin the registry publishes for chain %d; set RAIL0_TOKEN_DECIMALS to trust it", token, chainID)
		}
		env.Token, env.Decimals = coin.Address, coin.Decimals
	}
	buyer, err := signing.NewPrivateKeySigner(buyerKey)
	if err != nil {
		return nil, fmt.Errorf("demo: RAIL0_BUYER_KEY: %w", err)
	}
	merchant, err := signing.NewPrivateKeySigner(merchantKey)
	if err != nil {
		return nil, fmt.Errorf("demo: RAIL0_MERCHANT_KEY: %w", err)
	}
	env.Buyer, env.Merchant = buyer, merchant
	return env, nil
}

// publishedToken finds the registry's stablecoin on chainID by symbol or
// address.
func publishedToken(chainID int64, token string) (registry.Stablecoin, bool) {
	if coin, ok := registry.LookupStablecoin(chainID, token); ok {
		return coin, true
	}
	for _, coin := range registry.Stablecoins() {
		if coin.ChainID == chainID && strings.EqualFold(coin.Address, token) {
			return coin, true
		}
	}
	return registry.Stablecoin{}, false
}

// Close stops the embedded gateway, if any.
func (e *Env) Close() {
	if e.Server != nil {
		e.Server.Close()
	}
}

// Client returns a client with signer's identity.
// It signs in now, so that the session (returned too) is at hand. It signs
// in again before the session expires. Its flows sign with signer. It runs
// with the SDK's defaults and the environment's trust (the embedded
// gateway's contract), then opts.
func (e *Env) Client(ctx context.Context, signer rail0.Signer, opts ...rail0.Option) (*rail0.Client, *rail0.Session, error) {
	all := append(append([]rail0.Option{rail0.WithSigner(signer)}, e.trust...), opts...)
	c, err := rail0.NewClient(e.BaseURL, all...)
	if err != nil {
		return nil, nil, err
	}
	session, err := c.Session(ctx)
	if err != nil {
		return nil, nil, err
	}
	return c, session, nil
}

// Where says which gateway the example talks to.
func (e *Env) Where() string {
	if e.Embedded {
		return "the embedded rail0test gateway at " + e.BaseURL
	}
	return e.BaseURL
}

// Amount shows base units as a human decimal of the example's token.
func (e *Env) Amount(baseUnits string) string {
	s, err := rail0.FormatAmount(baseUnits, e.Decimals)
	if err != nil {
		return baseUnits
	}
	return s
}

// PollInterval and MaxPollInterval are the polling the examples use while
// waiting for confirmations. It is quick at first, but never faster than
// the gateway's session budget allows.
const (
	PollInterval    = 250 * time.Millisecond
	MaxPollInterval = 2 * time.Second
)

// SignIn returns a client for the buyer and one for the merchant, each
// signed in with its own session.
func (e *Env) SignIn(ctx context.Context, opts ...rail0.Option) (buyer, merchant *rail0.Client, err error) {
	if buyer, _, err = e.Client(ctx, e.Buyer, opts...); err != nil {
		return nil, nil, fmt.Errorf("buyer sign-in: %w", err)
	}
	if merchant, _, err = e.Client(ctx, e.Merchant, opts...); err != nil {
		return nil, nil, fmt.Errorf("merchant sign-in: %w", err)
	}
	return buyer, merchant, nil
}
