package rail0

import (
	"errors"
	"fmt"
	"maps"
	"math/big"
	"slices"

	"github.com/rail0/rail0-go/registry"
)

// This file decides what the checks take as given besides the payment: which
// RAIL0 contract is trusted on which chain, which tokens and with how many
// decimals, and how much a transaction may spend on gas. None of it comes
// from the gateway: the payment, its contract and its token's decimals are
// all the gateway's word, so a gateway lying about all of them alike would
// pass every comparison that uses only what it said. The anchors are the
// published deployments and stablecoins of package registry, which the
// caller's pins (WithTrustedContracts, WithTrustedTokens) extend or replace
// chain by chain and token by token. What neither pins is refused before
// anything is prepared or signed.

// ErrUntrusted matches an *UntrustedError with errors.Is.
var ErrUntrusted = errors.New("rail0: neither the registry nor the client's pins trust it")

// UntrustedError reports a payment whose chain, RAIL0 contract or token
// neither the published registry (package registry) nor the client's pins
// vouch for, so the SDK cannot tell which contract a signature would serve
// or how many decimals an amount has. Nothing was prepared or signed. Option
// names the option that would trust it: trusting more is the caller's
// decision, never the gateway's. It also matches ErrArtifactMismatch, since
// like a mismatch it is something the gateway handed over that the SDK
// refuses to sign.
type UntrustedError struct {
	// PaymentID is the payment that named it.
	PaymentID string
	// ChainID is the payment's chain.
	ChainID int64
	// Field is the payment's field that is not trusted: "chain_id" (no
	// RAIL0 contract is trusted on that chain), "rail0_contract" (another
	// contract than the one trusted there, Trusted) or "token" (not a
	// token trusted on that chain).
	Field string
	// Got is the payment's value of Field.
	Got string
	// Trusted is the contract trusted on the chain, for Field
	// "rail0_contract".
	Trusted string
	// Option is the client option that trusts it: "WithTrustedContracts"
	// or "WithTrustedTokens".
	Option string
}

// Error returns one readable line.
func (e *UntrustedError) Error() string {
	var msg string
	switch e.Field {
	case "chain_id":
		msg = fmt.Sprintf("chain %d has no trusted RAIL0 contract: none is published for it and %s pins none", e.ChainID, e.Option)
	case "rail0_contract":
		msg = fmt.Sprintf("contract %s is not the RAIL0 contract trusted on chain %d (%s); trust it with %s", oneLine(e.Got), e.ChainID, oneLine(e.Trusted), e.Option)
	default:
		msg = fmt.Sprintf("token %s is not trusted on chain %d: it is not a published stablecoin of that chain's contract and %s does not pin it", oneLine(e.Got), e.ChainID, e.Option)
	}
	return "rail0: " + msg + "; nothing was signed"
}

// Is matches ErrUntrusted and ErrArtifactMismatch.
func (e *UntrustedError) Is(target error) bool {
	return target == ErrUntrusted || target == ErrArtifactMismatch
}

// pins are the anchors of one client: the RAIL0 contract per chain and the
// decimals per token, the registry's merged with the caller's. They are
// built once, in NewClient, and never modified.
type pins struct {
	contracts map[int64]address
	decimals  map[tokenKey]int64
}

// newPins merges the caller's pins (contracts, decimals) into the published
// ones (deployments, stablecoins; NewClient passes package registry's). A
// chain the caller pins a contract for is the caller's: its published
// contract is no longer trusted, and the published deployment's token
// allowlist no longer limits it (the caller's contract accepts what it
// accepts), while the published stablecoins on that chain keep their
// decimals. On a chain whose contract is the published one, only the
// stablecoins that deployment accepts are trusted: a signature for another
// token would move the payer's funds to a contract that cannot account for
// them. A token the caller pins is trusted on its chain with the caller's
// decimals, whatever the registry says.
func newPins(deployments []registry.Deployment, stablecoins []registry.Stablecoin, contracts map[int64]address, decimals map[tokenKey]int64) pins {
	p := pins{contracts: map[int64]address{}, decimals: map[tokenKey]int64{}}
	accepts := map[int64][]string{}
	for _, d := range deployments {
		p.contracts[d.ChainID] = mustAddress(d.Contract)
		accepts[d.ChainID] = d.Tokens
	}
	maps.Copy(p.contracts, contracts)
	for _, s := range stablecoins {
		allow, published := accepts[s.ChainID]
		_, own := contracts[s.ChainID]
		if published && !own && !slices.Contains(allow, s.Symbol) {
			continue
		}
		p.decimals[tokenKey{s.ChainID, mustAddress(s.Address)}] = s.Decimals
	}
	maps.Copy(p.decimals, decimals)
	return p
}

// mustAddress parses an address of the registry, whose test proves them
// well formed.
func mustAddress(s string) address {
	a, err := parseAddress(s)
	if err != nil {
		panic("rail0: the registry holds a malformed address " + s)
	}
	return a
}

// anchor is the decision: the payment's chain must have a trusted RAIL0
// contract, the payment must name that contract, and its token must be
// trusted on that chain; it returns the token's trusted decimals, or an
// *UntrustedError naming the field that is not trusted.
func (p *pins) anchor(t *terms) (int64, error) {
	chainID := t.chainID.Int64()
	untrusted := func(field, got, option string) (int64, error) {
		return 0, &UntrustedError{PaymentID: t.id, ChainID: chainID, Field: field, Got: got, Option: option}
	}
	want, ok := p.contracts[chainID]
	if !ok {
		return untrusted("chain_id", t.chainID.String(), "WithTrustedContracts")
	}
	if want != t.contract {
		return 0, &UntrustedError{PaymentID: t.id, ChainID: chainID, Field: "rail0_contract", Got: t.contract.String(),
			Trusted: want.String(), Option: "WithTrustedContracts"}
	}
	decimals, ok := p.decimals[tokenKey{chainID, t.token}]
	if !ok {
		return untrusted("token", t.token.String(), "WithTrustedTokens")
	}
	return decimals, nil
}

// feeBoundGas is the gas every default fee bound is computed for, a
// constant of its own rather than the per-operation gas bound
// (maxGasLimit): about twice the dearest RAIL0 call the contract guide
// measured (authorize, 509,000 gas on a fresh deployment with a minimal
// token; USDC behind its proxy and a gateway's estimate margin add to it),
// and so a fee bound per chain, not per operation. It is not an exact
// ceiling of the gas bound: authorize and charge may ask for up to
// 1,018,000 and 1,030,000 gas, which fit at up to 98% and 97% of the
// ceiling price below, still many times what the chain charges; on
// Arbitrum, where the gas limit also pays for L1 data and has no bound of
// its own, this bound is the only one.
const feeBoundGas = 1_000_000

// defaultFeeBound returns the bound on gas_limit × max_fee_per_gas for a
// chain of the registry when the caller gave none (WithFeeCap), in base
// units of the chain's native currency (registry.Chain.Native): feeBoundGas
// at a max_fee_per_gas well above what the chain charges even when busy. A
// transaction within the gas bound at an honest price always fits; a
// gateway that asks for more is refused before the signer is used. One
// native amount for every chain would be $0.05 on Arc and far more on
// Ethereum, hence one figure per chain, testnets like their mainnets. A
// chain the registry does not know has no default: a client that pins one
// needs WithFeeCap (NewClient says so).
func defaultFeeBound(chainID int64) (*big.Int, bool) {
	var gwei int64 // the max_fee_per_gas ceiling, in 10^-9 of the native unit
	switch chainID {
	case 1:
		// Ethereum: blocks cost a few gwei when calm and tens when busy.
		// 30 gwei: 0.03 ETH.
		gwei = 30
	case 8453, 84532, 10, 11155420, 42161, 421614:
		// Base, Optimism, Arbitrum and their Sepolias: rollups whose L2
		// gas costs hundredths of a gwei, a few tenths at the busiest.
		// 2 gwei: 0.002 ETH.
		gwei = 2
	case 137, 80002:
		// Polygon and Amoy: a 25–30 gwei minimum tip, hundreds of gwei
		// in a rush. 1,000 gwei: 1 POL.
		gwei = 1_000
	case 43114:
		// Avalanche C-Chain: a few nAVAX, tens when busy. 100: 0.1 AVAX.
		gwei = 100
	case 42220, 11142220:
		// Celo and Celo Sepolia: a base fee of a few to 25 gwei.
		// 200 gwei: 0.2 CELO.
		gwei = 200
	case 5042002:
		// Arc Testnet: gas in USDC with 18 decimals, a base fee held
		// near its 20 gwei floor (about $0.01 a call). 200 gwei, ten times
		// the floor: 0.2 USDC.
		gwei = 200
	default:
		return nil, false
	}
	return new(big.Int).Mul(big.NewInt(feeBoundGas), big.NewInt(gwei*1_000_000_000)), true
}

// checkFeeBounds refuses a configuration that pins a contract on a chain
// the registry does not know without a fee bound (WithFeeCap): the SDK
// cannot know what that chain's native unit is worth, so it has no default
// to offer, and a transaction there could not be bounded.
func checkFeeBounds(contracts map[int64]address, maxFee *big.Int) error {
	if maxFee != nil {
		return nil
	}
	for _, chainID := range slices.Sorted(maps.Keys(contracts)) {
		if _, ok := defaultFeeBound(chainID); !ok {
			return fmt.Errorf("rail0: WithTrustedContracts: chain %d is not in the registry, so the SDK has no fee bound in its native unit: set one with WithFeeCap", chainID)
		}
	}
	return nil
}

// feeBound is the bound on gas_limit × max_fee_per_gas on a chain: the
// caller's (WithFeeCap), else the chain's default.
func (tr *trust) feeBound(chainID int64) (*big.Int, bool) {
	if tr.maxFee != nil {
		return tr.maxFee, true
	}
	return defaultFeeBound(chainID)
}

// nativeAmount shows base units of a chain's native currency for an error:
// "0.002 ETH", or the base units alone on a chain the registry does not
// know.
func nativeAmount(chainID int64, units *big.Int) string {
	c, ok := registry.LookupChain(chainID)
	if !ok {
		return units.String() + " base units of the native currency"
	}
	human, err := FormatAmount(units.String(), c.Native.Decimals)
	if err != nil {
		return units.String() + " base units of " + c.Native.Symbol
	}
	return human + " " + c.Native.Symbol
}
