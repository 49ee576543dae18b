package verify_test

import (
	"errors"
	"testing"

	"github.com/rail0/rail0-go/internal/verify"
	"github.com/rail0/rail0-go/internal/verifytest"
	"github.com/rail0/rail0-go/registry"
)

// Addresses of the pin tests: the published RAIL0 deployment, a published
// stablecoin, a contract and a token nobody publishes.
const (
	pinPublished   = "0x13a46eDDBE6105f5c055A2C8729b773C9C7BBa1F"
	pinSepoliaUSDC = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
	pinMine        = "0x00000000000000000000000000000000000000c0"
	pinOdd         = "0x00000000000000000000000000000000000000bb"
)

// TestPublishedAllowlist: on a chain whose contract is the published one,
// a published stablecoin that deployment does not accept is not trusted (a
// signature for it would move the payer's funds to a contract that cannot
// account for them); once the caller pins its own contract there, the
// deployment's allowlist no longer applies.
func TestPublishedAllowlist(t *testing.T) {
	deployments := []registry.Deployment{{ChainID: 7, Contract: pinPublished, Version: "1.3.0", Tokens: []string{"USDC"}}}
	coins := []registry.Stablecoin{
		{ChainID: 7, Symbol: "USDC", Address: pinSepoliaUSDC, Decimals: 6},
		{ChainID: 7, Symbol: "PYUSD", Address: pinOdd, Decimals: 6},
	}
	published := verify.NewPins(deployments, coins, nil, nil)
	if _, err := published.Anchor(verifytest.TermsAt(7, pinPublished, pinSepoliaUSDC)); err != nil {
		t.Errorf("an accepted token: %v", err)
	}
	var ue *verify.Untrusted
	if _, err := published.Anchor(verifytest.TermsAt(7, pinPublished, pinOdd)); !errors.As(err, &ue) || ue.Field != "token" {
		t.Errorf("a published token the deployment does not accept: %v, want a *verify.Untrusted on the token", err)
	}
	mine, _ := verify.ParseAddress(pinMine)
	own := verify.NewPins(deployments, coins, map[int64]verify.Address{7: mine}, nil)
	if d, err := own.Anchor(verifytest.TermsAt(7, pinMine, pinOdd)); err != nil || d != 6 {
		t.Errorf("the caller's contract with a published token: %d, %v", d, err)
	}
}
