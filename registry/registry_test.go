package registry

import (
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/rail0/rail0-go/internal/evm"
)

// TestPublishedFacts holds the registry against the contract guide's
// section 12.2, one row per fact a check relies on. Addresses are compared
// whatever their case: the guide writes one (Celo's USDC) in lower case
// where the registry keeps the EIP-55 form.
func TestPublishedFacts(t *testing.T) {
	for _, tt := range []struct {
		chainID  int64
		symbol   string
		address  string
		decimals int64
	}{
		{84532, "USDC", "0x036CbD53842c5426634e7929541eC2318f3dCF7e", 6},
		{421614, "USDC", "0x75faf114eafb1BDbe2F0316DF893fd58CE46AA4d", 6},
		{11155420, "USDC", "0x5fd84259d66Cd46123540766Be93DFE6D43130D7", 6},
		{80002, "USDC", "0x41E94Eb019C0762f9Bfcf9Fb1E58725BfB0e7582", 6},
		{5042002, "USDC", "0x3600000000000000000000000000000000000000", 6},
		{5042002, "EURC", "0x89B50855Aa3bE2F677cD6303Cec089B5F319D72a", 6},
		{1, "USDC", "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48", 6},
		{1, "EURC", "0x1aBaEA1f7C830bD89Acc67eC4af516284b1bC33c", 6},
		{1, "PYUSD", "0x6c3ea9036406852006290770BEdFcAbA0e23A0e8", 6},
		{8453, "USDC", "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", 6},
		{8453, "EURC", "0x60a3E35Cc302bFA44Cb288Bc5a4F316Fdb1adb42", 6},
		{137, "USDC", "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359", 6},
		{42161, "USDC", "0xaf88d065e77c8cC2239327C5EDb3A432268e5831", 6},
		{10, "USDC", "0x0b2C639c533813f4Aa9D7837CAf62653d097Ff85", 6},
		{43114, "USDC", "0xB97EF9Ef8734C71904D8002F8b6Bc66Dd9c48a6E", 6},
		{42220, "USDC", "0xcebA9300f2b948710d2De3250b7Ad3e4aFb0e50a", 6},
	} {
		s, ok := LookupStablecoin(tt.chainID, tt.symbol)
		if !ok || !strings.EqualFold(s.Address, tt.address) || s.Decimals != tt.decimals {
			t.Errorf("LookupStablecoin(%d, %s) = %+v, %v; want %s with %d decimals", tt.chainID, tt.symbol, s, ok, tt.address, tt.decimals)
		}
	}
	if got := len(Stablecoins()); got != 16 {
		t.Errorf("%d stablecoins, want the 16 published", got)
	}

	// The deployments: six testnets, one address, version 1.3.0, each
	// with its allowlist; no mainnet.
	want := map[int64][]string{
		421614: {"USDC"}, 5042002: {"USDC", "EURC"}, 84532: {"USDC"},
		11142220: {"USDC", "USD₮"}, 11155420: {"USDC"}, 80002: {"USDC"},
	}
	if got := Deployments(); len(got) != len(want) {
		t.Errorf("%d deployments, want %d", len(got), len(want))
	}
	for chainID, tokens := range want {
		d, ok := LookupDeployment(chainID)
		if !ok || d.Contract != "0x13a46eDDBE6105f5c055A2C8729b773C9C7BBa1F" || d.Version != "1.3.0" || strings.Join(d.Tokens, ",") != strings.Join(tokens, ",") {
			t.Errorf("LookupDeployment(%d) = %+v, %v", chainID, d, ok)
		}
	}
	for _, mainnet := range []int64{1, 8453, 137, 42161, 10, 43114, 42220} {
		if d, ok := LookupDeployment(mainnet); ok {
			t.Errorf("a deployment on mainnet %d: %+v; none is published", mainnet, d)
		}
		if c, ok := LookupChain(mainnet); !ok || c.Testnet {
			t.Errorf("LookupChain(%d) = %+v, %v; want a mainnet", mainnet, c, ok)
		}
	}

	// Celo Sepolia's deployment exists, its tokens' addresses are not
	// published: the caller pins them.
	if _, ok := LookupStablecoin(11142220, "USDC"); ok {
		t.Error("a Celo Sepolia USDC address, which the guide does not publish")
	}

	// Fees are in each chain's native unit; Arc's is USDC with 18
	// decimals, never the ERC-20's 6.
	for _, tt := range []struct {
		chainID int64
		native  Currency
	}{
		{1, Currency{"ETH", 18}}, {84532, Currency{"ETH", 18}}, {8453, Currency{"ETH", 18}},
		{421614, Currency{"ETH", 18}}, {42161, Currency{"ETH", 18}},
		{11155420, Currency{"ETH", 18}}, {10, Currency{"ETH", 18}},
		{80002, Currency{"POL", 18}}, {137, Currency{"POL", 18}},
		{11142220, Currency{"CELO", 18}}, {42220, Currency{"CELO", 18}},
		{43114, Currency{"AVAX", 18}},
		{5042002, Currency{"USDC", 18}},
	} {
		if c, ok := LookupChain(tt.chainID); !ok || c.Native != tt.native {
			t.Errorf("LookupChain(%d).Native = %+v, %v; want %+v", tt.chainID, c.Native, ok, tt.native)
		}
	}
	if usdc, _ := LookupStablecoin(5042002, "USDC"); usdc.Decimals == 18 {
		t.Error("Arc's ERC-20 USDC counted with the native 18 decimals")
	}
}

// TestRegistryIsConsistent: every chain a deployment or a stablecoin names
// is a chain the registry knows, nothing is listed twice, and every address
// is in EIP-55 form (a typo in a mixed-case address fails its checksum).
func TestRegistryIsConsistent(t *testing.T) {
	ids := map[int64]bool{}
	for _, c := range Chains() {
		if ids[c.ID] || c.ID <= 0 || c.Name == "" || c.Native.Symbol == "" {
			t.Errorf("chain %+v is malformed or listed twice", c)
		}
		ids[c.ID] = true
	}
	deployed := map[int64]bool{}
	for _, d := range Deployments() {
		if !ids[d.ChainID] || deployed[d.ChainID] {
			t.Errorf("deployment %+v: unknown chain or listed twice", d)
		}
		deployed[d.ChainID] = true
		checkEIP55(t, d.Contract)
	}
	type key struct {
		chainID int64
		name    string
	}
	keys := map[key]bool{}
	for _, s := range Stablecoins() {
		if !ids[s.ChainID] {
			t.Errorf("stablecoin %+v on an unknown chain", s)
		}
		bySymbol, byAddress := key{s.ChainID, s.Symbol}, key{s.ChainID, strings.ToLower(s.Address)}
		if keys[bySymbol] || keys[byAddress] {
			t.Errorf("stablecoin %+v listed twice", s)
		}
		keys[bySymbol], keys[byAddress] = true, true
		checkEIP55(t, s.Address)
		// A published token on a published deployment's chain is one
		// that deployment accepts.
		if d, ok := LookupDeployment(s.ChainID); ok && !slices.Contains(d.Tokens, s.Symbol) {
			t.Errorf("%s on chain %d is not in the deployment's allowlist %v", s.Symbol, s.ChainID, d.Tokens)
		}
	}
}

// checkEIP55 checks an address's mixed-case checksum (EIP-55); an address
// in one case only carries none.
func checkEIP55(t *testing.T, addr string) {
	t.Helper()
	hexPart, ok := strings.CutPrefix(addr, "0x")
	if _, err := hex.DecodeString(hexPart); !ok || err != nil || len(hexPart) != 40 {
		t.Errorf("%s is not an address", addr)
		return
	}
	lower := strings.ToLower(hexPart)
	if hexPart == lower || hexPart == strings.ToUpper(hexPart) {
		return
	}
	h := evm.Keccak256([]byte(lower))
	for i, c := range lower {
		nibble := h[i/2] >> (4 * (1 - uint(i%2))) & 0xf
		want := string(c)
		if c >= 'a' && nibble >= 8 {
			want = strings.ToUpper(want)
		}
		if hexPart[i:i+1] != want {
			t.Errorf("%s fails its EIP-55 checksum at digit %d", addr, i)
			return
		}
	}
}

// TestReturnsCopies: what a caller does to a returned value never changes
// the registry.
func TestReturnsCopies(t *testing.T) {
	Chains()[0].Native.Decimals = 6
	Stablecoins()[0].Decimals = 18
	Deployments()[0].Tokens[0] = "FAKE"
	d, _ := LookupDeployment(84532)
	d.Tokens[0] = "FAKE"
	if c, _ := LookupChain(84532); c.Native.Decimals != 18 {
		t.Error("Chains returned the registry's own slice")
	}
	if s, _ := LookupStablecoin(84532, "USDC"); s.Decimals != 6 {
		t.Error("Stablecoins returned the registry's own slice")
	}
	for _, d := range Deployments() {
		if slices.Contains(d.Tokens, "FAKE") {
			t.Errorf("a deployment's allowlist was changed through a returned copy: %+v", d)
		}
	}
}

func TestLookups(t *testing.T) {
	for _, tt := range []struct {
		chainID int64
		symbol  string
		found   bool
	}{
		{84532, "USDC", true},
		{5042002, "EURC", true},
		{84532, "usdc", false},    // symbols as published
		{84532, "EURC", false},    // no EURC on Base Sepolia
		{1, "USDT", false},        // no EIP-3009
		{11142220, "USDC", false}, // not published
		{31337, "USDC", false},    // unknown chain
	} {
		if _, ok := LookupStablecoin(tt.chainID, tt.symbol); ok != tt.found {
			t.Errorf("LookupStablecoin(%d, %q) found = %v, want %v", tt.chainID, tt.symbol, ok, tt.found)
		}
	}
	if _, ok := LookupChain(31337); ok {
		t.Error("LookupChain found an unknown chain")
	}
	if _, ok := LookupDeployment(31337); ok {
		t.Error("LookupDeployment found an unknown chain")
	}
}
