// Package demo sets up what the examples need: a gateway and two parties, a
// buyer and a merchant. By default it starts the in-process gateway of
// package rail0test, so every example runs offline with nothing to install.
// With RAIL0_BASE_URL set it uses that gateway instead, with the keys and
// catalog entries given in the environment (see Setup).
package demo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0test"
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
	// ChainID and Token select the stablecoin to pay with; Decimals is its
	// number of decimals.
	ChainID  int64
	Token    string
	Decimals int64
	// Server is the embedded gateway, nil for a real one.
	Server *rail0test.Server
}

// Setup returns the example's environment. Without RAIL0_BASE_URL it starts
// rail0test with fast confirmations (opts are passed on). With it, it reads
// RAIL0_BUYER_KEY and RAIL0_MERCHANT_KEY (hex private keys of test wallets),
// RAIL0_CHAIN_ID, RAIL0_TOKEN and RAIL0_TOKEN_DECIMALS. Call Close when done.
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
	return &Env{
		BaseURL: srv.URL, Embedded: true, Server: srv,
		Buyer: buyer, Merchant: merchant,
		ChainID: srv.ChainID, Token: srv.Token, Decimals: 6,
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
	decimals := int64(6)
	if d := os.Getenv("RAIL0_TOKEN_DECIMALS"); d != "" {
		if decimals, err = strconv.ParseInt(d, 10, 64); err != nil {
			return nil, fmt.Errorf("demo: RAIL0_TOKEN_DECIMALS: %w", err)
		}
	}
	buyer, err := signing.NewPrivateKeySigner(buyerKey)
	if err != nil {
		return nil, fmt.Errorf("demo: RAIL0_BUYER_KEY: %w", err)
	}
	merchant, err := signing.NewPrivateKeySigner(merchantKey)
	if err != nil {
		return nil, fmt.Errorf("demo: RAIL0_MERCHANT_KEY: %w", err)
	}
	return &Env{BaseURL: base, Buyer: buyer, Merchant: merchant, ChainID: chainID, Token: token, Decimals: decimals}, nil
}

// Close stops the embedded gateway, if any.
func (e *Env) Close() {
	if e.Server != nil {
		e.Server.Close()
	}
}

// Client returns a client with signer's identity: it signs in now (so that
// the session, returned too, is at hand) and again before the session
// expires, and its flows sign with signer.
func (e *Env) Client(ctx context.Context, signer rail0.Signer, opts ...rail0.Option) (*rail0.Client, *rail0.Session, error) {
	c, err := rail0.NewClient(e.BaseURL, append([]rail0.Option{rail0.WithSigner(signer)}, opts...)...)
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

// Poll is the polling the examples use while waiting for confirmations:
// quick at first, never faster than the gateway's session budget allows.
func Poll() rail0.WaitOption { return rail0.WithPollInterval(250*time.Millisecond, 2*time.Second) }

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
