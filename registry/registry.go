// Package registry holds the published facts a RAIL0 client trusts without
// asking the gateway. For each chain these are:
//   - the RAIL0 contract deployed on it;
//   - its stablecoins with EIP-3009 (address and decimals);
//   - the currency it charges gas in.
//
// They are the anchors every check of an artifact rests on. The gateway
// cannot vouch for them itself. The payment, its contract and its token's
// decimals all come from the gateway. So a gateway that lies about all
// three alike passes every comparison that uses only what it said. Package rail0
// uses this registry as its default pins. The registry is also usable on
// its own, for an offline lookup of a stablecoin by chain and symbol.
//
// The facts are those of the contract guide's section 12.2 ("Where trust
// comes from"), RAIL0 contract version 1.3.0. A deployment the guide does
// not publish is not here; for now that is every mainnet. Pin it yourself
// (rail0.WithTrustedContracts). Celo Sepolia's deployment is published but
// its tokens' addresses are not. So they have no entry either
// (rail0.WithTrustedTokens).
//
// The package uses the standard library only, keeps no state and returns
// copies. Nothing a caller does to a returned value changes the registry.
package registry

import "slices"

// ContractVersion is the RAIL0 contract version of every deployment listed
// here. It is part of the contract's EIP-712 domain. So a payment signed for
// one version does not verify on another.
const ContractVersion = "1.3.0"

// Currency is a chain's native currency: what its gas is paid in.
type Currency struct {
	// Symbol is the currency's ticker ("ETH", "POL", "CELO", "AVAX",
	// "USDC").
	Symbol string
	// Decimals is the currency's native precision: 18 for all of them,
	// Arc's USDC included. See Stablecoin for its 6-decimal ERC-20 face.
	Decimals int64
}

// Chain is an EVM chain the registry knows.
type Chain struct {
	// ID is the EIP-155 chain id.
	ID int64
	// Name is the chain's common name.
	Name string
	// Testnet is true for a test network, whose coins have no value.
	Testnet bool
	// Native is the currency gas is paid in. On Arc it is USDC counted
	// with 18 decimals. That is the same balance as the 6-decimal ERC-20
	// USDC of Stablecoins. An amount of one is never an amount of the
	// other.
	Native Currency
}

// Deployment is a published RAIL0 contract.
type Deployment struct {
	// ChainID is the chain it is deployed on.
	ChainID int64
	// Contract is its address, in EIP-55 form.
	Contract string
	// Version is its contract version (ContractVersion).
	Version string
	// Tokens are the symbols of the stablecoins the deployment accepts.
	// They were fixed when it was constructed (acceptedTokens() on chain).
	// This contract takes no payment in another token.
	Tokens []string
}

// Stablecoin is a published stablecoin that implements EIP-3009.
// EIP-3009 is the authorization RAIL0 payments are signed with.
type Stablecoin struct {
	// ChainID is the chain the token lives on.
	ChainID int64
	// Symbol is its ticker as published ("USDC", "EURC", "PYUSD").
	Symbol string
	// Address is the token contract, in EIP-55 form.
	Address string
	// Decimals turns a human amount into the base units a payment
	// carries. 10.50 of a 6-decimal token is 10500000.
	Decimals int64
}

// The published RAIL0 deployments share one address on every chain.
const deployedAt = "0x13a46eDDBE6105f5c055A2C8729b773C9C7BBa1F"

var (
	eth  = Currency{Symbol: "ETH", Decimals: 18}
	pol  = Currency{Symbol: "POL", Decimals: 18}
	celo = Currency{Symbol: "CELO", Decimals: 18}
	// AVAX, the gas token of Avalanche's C-Chain, is the one fact here
	// the guide does not state. It lists Avalanche's USDC.
	avax = Currency{Symbol: "AVAX", Decimals: 18}
	// Arc charges gas in USDC at 18 decimals; its ERC-20 interface
	// (Stablecoins) counts the same balance with 6.
	arcUSDC = Currency{Symbol: "USDC", Decimals: 18}
)

// chains, deployments and stablecoins are read-only.
// Every function returns copies of them.
var chains = []Chain{
	{ID: 84532, Name: "Base Sepolia", Testnet: true, Native: eth},
	{ID: 421614, Name: "Arbitrum Sepolia", Testnet: true, Native: eth},
	{ID: 11155420, Name: "Optimism Sepolia", Testnet: true, Native: eth},
	{ID: 80002, Name: "Polygon Amoy", Testnet: true, Native: pol},
	{ID: 5042002, Name: "Arc Testnet", Testnet: true, Native: arcUSDC},
	{ID: 11142220, Name: "Celo Sepolia", Testnet: true, Native: celo},
	{ID: 1, Name: "Ethereum", Native: eth},
	{ID: 8453, Name: "Base", Native: eth},
	{ID: 137, Name: "Polygon", Native: pol},
	{ID: 42161, Name: "Arbitrum One", Native: eth},
	{ID: 10, Name: "Optimism", Native: eth},
	{ID: 43114, Name: "Avalanche", Native: avax},
	{ID: 42220, Name: "Celo", Native: celo},
}

var deployments = []Deployment{
	{ChainID: 421614, Contract: deployedAt, Version: ContractVersion, Tokens: []string{"USDC"}},
	{ChainID: 5042002, Contract: deployedAt, Version: ContractVersion, Tokens: []string{"USDC", "EURC"}},
	{ChainID: 84532, Contract: deployedAt, Version: ContractVersion, Tokens: []string{"USDC"}},
	{ChainID: 11142220, Contract: deployedAt, Version: ContractVersion, Tokens: []string{"USDC", "USD₮"}},
	{ChainID: 11155420, Contract: deployedAt, Version: ContractVersion, Tokens: []string{"USDC"}},
	{ChainID: 80002, Contract: deployedAt, Version: ContractVersion, Tokens: []string{"USDC"}},
}

var stablecoins = []Stablecoin{
	// Testnets.
	{ChainID: 84532, Symbol: "USDC", Address: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", Decimals: 6},
	{ChainID: 421614, Symbol: "USDC", Address: "0x75faf114eafb1BDbe2F0316DF893fd58CE46AA4d", Decimals: 6},
	{ChainID: 11155420, Symbol: "USDC", Address: "0x5fd84259d66Cd46123540766Be93DFE6D43130D7", Decimals: 6},
	{ChainID: 80002, Symbol: "USDC", Address: "0x41E94Eb019C0762f9Bfcf9Fb1E58725BfB0e7582", Decimals: 6},
	{ChainID: 5042002, Symbol: "USDC", Address: "0x3600000000000000000000000000000000000000", Decimals: 6},
	{ChainID: 5042002, Symbol: "EURC", Address: "0x89B50855Aa3bE2F677cD6303Cec089B5F319D72a", Decimals: 6},
	// Mainnets, for when deployments are published.
	{ChainID: 1, Symbol: "USDC", Address: "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48", Decimals: 6},
	{ChainID: 1, Symbol: "EURC", Address: "0x1aBaEA1f7C830bD89Acc67eC4af516284b1bC33c", Decimals: 6},
	{ChainID: 1, Symbol: "PYUSD", Address: "0x6c3ea9036406852006290770BEdFcAbA0e23A0e8", Decimals: 6},
	{ChainID: 8453, Symbol: "USDC", Address: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", Decimals: 6},
	{ChainID: 8453, Symbol: "EURC", Address: "0x60a3E35Cc302bFA44Cb288Bc5a4F316Fdb1adb42", Decimals: 6},
	{ChainID: 137, Symbol: "USDC", Address: "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359", Decimals: 6},
	{ChainID: 42161, Symbol: "USDC", Address: "0xaf88d065e77c8cC2239327C5EDb3A432268e5831", Decimals: 6},
	{ChainID: 10, Symbol: "USDC", Address: "0x0b2C639c533813f4Aa9D7837CAf62653d097Ff85", Decimals: 6},
	{ChainID: 43114, Symbol: "USDC", Address: "0xB97EF9Ef8734C71904D8002F8b6Bc66Dd9c48a6E", Decimals: 6},
	// The guide writes Celo's USDC as 0xcebA9300…e50a, which is not its
	// EIP-55 form; the address is the same.
	{ChainID: 42220, Symbol: "USDC", Address: "0xCeBa9300f2b948710d2De3250B7ad3E4AFB0e50a", Decimals: 6},
}

// Chains returns every chain the registry knows, testnets first.
func Chains() []Chain { return slices.Clone(chains) }

// LookupChain returns the chain with the given id, if the registry knows it.
func LookupChain(chainID int64) (Chain, bool) {
	i := slices.IndexFunc(chains, func(c Chain) bool { return c.ID == chainID })
	if i < 0 {
		return Chain{}, false
	}
	return chains[i], true
}

// Deployments returns every published RAIL0 deployment.
func Deployments() []Deployment {
	out := make([]Deployment, len(deployments))
	for i, d := range deployments {
		out[i] = d.clone()
	}
	return out
}

// LookupDeployment returns the published RAIL0 deployment on a chain.
// There is none on a chain whose deployment is not published. For now that
// is every mainnet. A contract there is one the caller must pin.
func LookupDeployment(chainID int64) (Deployment, bool) {
	i := slices.IndexFunc(deployments, func(d Deployment) bool { return d.ChainID == chainID })
	if i < 0 {
		return Deployment{}, false
	}
	return deployments[i].clone(), true
}

// Stablecoins returns every published EIP-3009 stablecoin, testnets first.
func Stablecoins() []Stablecoin { return slices.Clone(stablecoins) }

// LookupStablecoin returns the stablecoin with the given symbol on a chain,
// offline. The symbol is matched exactly as published ("USDC", not "usdc").
// Celo Sepolia's tokens are not published, so they are not found.
func LookupStablecoin(chainID int64, symbol string) (Stablecoin, bool) {
	i := slices.IndexFunc(stablecoins, func(s Stablecoin) bool { return s.ChainID == chainID && s.Symbol == symbol })
	if i < 0 {
		return Stablecoin{}, false
	}
	return stablecoins[i], true
}

func (d Deployment) clone() Deployment {
	d.Tokens = slices.Clone(d.Tokens)
	return d
}
