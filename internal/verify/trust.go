package verify

import (
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"

	"github.com/rail0/rail0-go/registry"
)

// This file decides what the checks take as given besides the payment:
//   - which RAIL0 contract is trusted on which chain;
//   - which tokens, and with how many decimals;
//   - how much a transaction may spend on gas.
//
// None of it comes from the gateway. The payment, its contract and its
// token's decimals are all the gateway's word. A gateway lying about all
// of them alike would pass every comparison that uses only what it said.
// The anchors are the published deployments and stablecoins of package
// registry. The caller's pins (WithTrustedContracts, WithTrustedTokens)
// extend or replace them, chain by chain and token by token. What neither
// pins is refused before anything is prepared or signed.

// Trust is what the checks take as given besides the payment. That is the
// pinned contracts and tokens, the limits on gas, and token domains
// already seen.
type Trust struct {
	// Pins are the RAIL0 contract per chain and the decimals per token.
	// They are the registry's, with the caller's WithTrustedContracts and
	// WithTrustedTokens merged in.
	Pins Pins
	// MaxGas bounds gas_limit when the caller set it (WithFeeCap). Zero
	// bounds it per operation (MaxGasLimit). MaxFee, when the caller set
	// it (WithFeeCap), bounds gas_limit × max_fee_per_gas on every chain.
	// When it is nil, each chain's default does (DefaultFeeBound). So a
	// gateway cannot spend the signer's native currency on gas.
	MaxGas uint64
	MaxFee *big.Int
	// TokenDomains maps chain/token to the EIP-712 name and version of the
	// token, when known. With them the payer's signature inside an
	// authorize or charge call can be recovered.
	TokenDomains map[TokenKey][2]string
}

// TokenKey names a token on a chain.
type TokenKey struct {
	ChainID int64
	Token   Address
}

// Pins are the anchors of one client: the RAIL0 contract per chain and the
// decimals per token. They are the registry's, merged with the caller's.
// They are built once, in NewClient, and never modified.
type Pins struct {
	contracts map[int64]Address
	decimals  map[TokenKey]int64
}

// NewPins merges the caller's pins (contracts, decimals) into the
// published ones (deployments, stablecoins). NewClient passes package
// registry's.
//
// A chain the caller pins a contract for is the caller's. Its published
// contract is no longer trusted. The published deployment's token
// allowlist no longer limits it: the caller's contract accepts what it
// accepts. The published stablecoins on that chain keep their decimals.
//
// On a chain whose contract is the published one, only the stablecoins
// that deployment accepts are trusted. A signature for another token would
// move the payer's funds to a contract that cannot account for them.
//
// A token the caller pins is trusted on its chain with the caller's
// decimals, whatever the registry says.
func NewPins(deployments []registry.Deployment, stablecoins []registry.Stablecoin, contracts map[int64]Address, decimals map[TokenKey]int64) Pins {
	p := Pins{contracts: map[int64]Address{}, decimals: map[TokenKey]int64{}}
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
		p.decimals[TokenKey{s.ChainID, mustAddress(s.Address)}] = s.Decimals
	}
	maps.Copy(p.decimals, decimals)
	return p
}

// mustAddress parses an address of the registry, whose test proves them
// well formed.
func mustAddress(s string) Address {
	a, err := ParseAddress(s)
	if err != nil {
		panic("rail0: the registry holds a malformed address " + s)
	}
	return a
}

// Anchor is the decision (the rows of ArtPins):
//   - the payment's chain must have a trusted RAIL0 contract;
//   - the payment must name that contract;
//   - its token must be trusted on that chain.
//
// It returns the token's trusted decimals. Or it returns an *Untrusted
// naming the field that is not trusted.
func (p *Pins) Anchor(t *Terms) (int64, error) {
	c := &pinsCase{t: t, pins: p}
	if err := run(ArtPins, c); err != nil {
		return 0, err
	}
	return c.decimals, nil
}

// feeBoundGas is the gas every default fee bound is computed for. It is a
// constant of its own, not the per-operation gas bound (MaxGasLimit). It
// is about twice the dearest RAIL0 call the contract guide measured:
// authorize, 509,000 gas on a fresh deployment with a minimal token. USDC
// behind its proxy and a gateway's estimate margin add to that. So it
// makes a fee bound per chain, not per operation.
//
// It is not an exact ceiling of the gas bound. Authorize and charge may
// ask for up to 1,018,000 and 1,030,000 gas. Those fit at up to 98% and
// 97% of the ceiling price below, still many times what the chain charges.
// On Arbitrum the gas limit also pays for L1 data and has no bound of its
// own. There this bound is the only one.
const feeBoundGas = 1_000_000

// DefaultFeeBound returns the bound on gas_limit × max_fee_per_gas for a
// chain of the registry, when the caller gave none (WithFeeCap). It is in
// base units of the chain's native currency (registry.Chain.Native). It is
// feeBoundGas at a max_fee_per_gas well above what the chain charges, even
// when busy. A transaction within the gas bound at an honest price always
// fits. A gateway that asks for more is refused before the signer is used.
//
// One native amount for every chain would be $0.05 on Arc and far more on
// Ethereum. Hence one figure per chain, testnets like their mainnets. A
// chain the registry does not know has no default. A client that pins one
// needs WithFeeCap (NewClient says so).
func DefaultFeeBound(chainID int64) (*big.Int, bool) {
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

// CheckFeeBounds refuses a configuration that pins a contract on a chain
// the registry does not know, without a fee bound (WithFeeCap). The SDK
// cannot know what that chain's native unit is worth. So it has no default
// to offer, and a transaction there could not be bounded.
func CheckFeeBounds(contracts map[int64]Address, maxFee *big.Int) error {
	if maxFee != nil {
		return nil
	}
	for _, chainID := range slices.Sorted(maps.Keys(contracts)) {
		if _, ok := DefaultFeeBound(chainID); !ok {
			return fmt.Errorf("rail0: WithTrustedContracts: chain %d is not in the registry, so the SDK has no fee bound in its native unit: set one with WithFeeCap", chainID)
		}
	}
	return nil
}

// FeeBound is the bound on gas_limit × max_fee_per_gas on a chain: the
// caller's (WithFeeCap), else the chain's default.
func (tr *Trust) FeeBound(chainID int64) (*big.Int, bool) {
	if tr.MaxFee != nil {
		return tr.MaxFee, true
	}
	return DefaultFeeBound(chainID)
}

// nativeAmount shows base units of a chain's native currency for an error,
// as "0.002 ETH". On a chain the registry does not know it shows the base
// units alone.
func nativeAmount(chainID int64, units *big.Int) string {
	c, ok := registry.LookupChain(chainID)
	if !ok {
		return units.String() + " base units of the native currency"
	}
	return FormatUnits(units, c.Native.Decimals) + " " + c.Native.Symbol
}

// FormatUnits writes base units as the shortest exact decimal with decimals
// places: no trailing fractional zeros, no trailing dot ("1.5", "25",
// "0.000001"). units must not be negative, nor decimals.
func FormatUnits(units *big.Int, decimals int64) string {
	digits, d := units.String(), int(decimals)
	if len(digits) <= d {
		digits = strings.Repeat("0", d-len(digits)+1) + digits
	}
	whole, frac := digits[:len(digits)-d], strings.TrimRight(digits[len(digits)-d:], "0")
	if frac == "" {
		return whole
	}
	return whole + "." + frac
}
