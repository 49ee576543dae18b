package verify_test

import (
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/rail0/rail0-go/internal/verify"
	"github.com/rail0/rail0-go/registry"
)

// gasBounds are the default bounds on gas_limit: twice what the RAIL0
// contract was measured to use for each step (contract guide section 12.2).
var gasBounds = map[string]uint64{
	verify.OpAuthorize: 1_018_000, verify.OpCharge: 1_030_000, verify.OpRefund: 656_000, verify.OpCapture: 350_000,
	verify.OpVoid: 154_000, verify.OpRelease: 154_000, verify.OpDispute: 86_000, verify.OpCloseDispute: 86_000,
}

// TestGasLimitBoundPerOperation: without WithFeeCap, each step's gas_limit
// is bounded at twice its measured gas; WithFeeCap's bound replaces them
// all, and on Arbitrum, whose gas limit also pays for L1 data, only the fee
// bound applies (root TestGasLimitBoundPerOperation runs each flow at the
// bound and one gas above).
func TestGasLimitBoundPerOperation(t *testing.T) {
	t.Parallel()
	def, capped := &verify.Trust{}, &verify.Trust{MaxGas: 2_000_000}
	for op, bound := range gasBounds {
		if got := def.MaxGasLimit(op, 84532); got != bound {
			t.Errorf("%s: bound %d, want %d", op, got, bound)
		}
		if got := capped.MaxGasLimit(op, 84532); got != 2_000_000 {
			t.Errorf("%s under WithFeeCap: bound %d", op, got)
		}
		for _, arbitrum := range []int64{42161, 42170, 421614} {
			if got := def.MaxGasLimit(op, arbitrum); got != 0 {
				t.Errorf("%s on %d: bound %d, want none", op, arbitrum, got)
			}
		}
	}
	// On Arbitrum the limit carries the L1 data charge: 5,000,000 gas for
	// a capture passes, bounded by the fee alone.
	tm, in, tr, fields := captureFixture()
	tm.ChainID = big.NewInt(421614)
	fields["chain_id"], fields["gas_limit"] = 421614, 5_000_000
	if _, err := verify.CheckTransaction(tm, in, mustJSON(t, fields), tr); err != nil {
		t.Fatalf("capture with 5,000,000 gas on Arbitrum Sepolia: %v", err)
	}
}

// TestAccountNonceBounds: EIP-2681 caps an account nonce at 2⁶⁴−2, so a
// transaction carrying 2⁶⁴−1 (or anything that is not a uint64) can never
// be valid and is refused before it is signed (root TestAccountNonceBounds
// runs a capture prepared with the last nonce).
func TestAccountNonceBounds(t *testing.T) {
	t.Parallel()
	tm, in, tr, fields := captureFixture()
	for _, tt := range []struct {
		nonce any
		ok    bool
	}{
		{0, true}, {7, true}, {"18446744073709551614", true}, {"0xfffffffffffffffe", true},
		{"18446744073709551615", false}, {uint64(1<<64 - 1), false}, {"0xffffffffffffffff", false},
		{"18446744073709551616", false}, {-1, false}, {1.5, false}, {"1e3", false}, {nil, false}, {"", false},
	} {
		fields["nonce"] = tt.nonce
		tx, err := verify.CheckTransaction(tm, in, mustJSON(t, fields), tr)
		if tt.ok {
			if err != nil {
				t.Errorf("nonce %v: %v", tt.nonce, err)
			}
			continue
		}
		var ae *verify.Mismatch
		if !errors.As(err, &ae) || ae.Field != "nonce" {
			t.Errorf("nonce %v: %v (tx %+v), want a *verify.Mismatch on nonce", tt.nonce, err, tx)
		}
	}
}

// TestDefaultFeeBound: every chain of the registry has a fee bound of its
// own, in its own native unit, and a chain the registry does not know has
// none (a pin of one needs WithFeeCap, root TestTrustOptions).
func TestDefaultFeeBound(t *testing.T) {
	want := map[int64]string{
		1: "0.03", 8453: "0.002", 84532: "0.002", 10: "0.002", 11155420: "0.002", 42161: "0.002", 421614: "0.002",
		137: "1", 80002: "1", 43114: "0.1", 42220: "0.2", 11142220: "0.2",
		5042002: "0.2", // USDC counted with Arc's native 18 decimals: 2×10^17, twenty cents
	}
	for _, c := range registry.Chains() {
		bound, ok := verify.DefaultFeeBound(c.ID)
		if !ok {
			t.Errorf("%s (%d) has no default fee bound", c.Name, c.ID)
			continue
		}
		if got := verify.FormatUnits(bound, c.Native.Decimals); got != want[c.ID] {
			t.Errorf("%s: bound %s %s, want %s", c.Name, got, c.Native.Symbol, want[c.ID])
		}
	}
	if len(want) != len(registry.Chains()) {
		t.Errorf("%d bounds expected for %d chains", len(want), len(registry.Chains()))
	}
	if _, ok := verify.DefaultFeeBound(31337); ok {
		t.Error("a default fee bound for a chain the registry does not know")
	}
}

// TestFeeBoundPerChain: a transaction spending exactly its chain's bound is
// signed, one base unit more is refused, in that chain's native unit; the
// caller's WithFeeCap replaces the bound on every chain.
func TestFeeBoundPerChain(t *testing.T) {
	for _, tt := range []struct {
		chainID int64
		symbol  string
	}{{84532, "ETH"}, {1, "ETH"}, {137, "POL"}, {5042002, "USDC"}, {42220, "CELO"}, {43114, "AVAX"}} {
		tm, in, _, fields := captureFixture()
		tm.ChainID = big.NewInt(tt.chainID)
		bound, _ := verify.DefaultFeeBound(tt.chainID)
		fields["chain_id"], fields["gas_limit"] = tt.chainID, 1000
		perGas := new(big.Int).Quo(bound, big.NewInt(1000))
		fields["max_priority_fee_per_gas"] = "0"
		for _, extra := range []int64{0, 1} {
			fields["max_fee_per_gas"] = new(big.Int).Add(perGas, big.NewInt(extra)).String()
			unsigned := mustJSON(t, fields)
			_, err := verify.CheckTransaction(tm, in, unsigned, &verify.Trust{})
			var ae *verify.Mismatch
			switch {
			case extra == 0 && err != nil:
				t.Errorf("chain %d at its bound: %v", tt.chainID, err)
			case extra == 1 && (!errors.As(err, &ae) || ae.Field != "max_fee_per_gas" || !strings.Contains(ae.Expected, tt.symbol)):
				t.Errorf("chain %d above its bound: %v, want a *verify.Mismatch on max_fee_per_gas in %s", tt.chainID, err, tt.symbol)
			}
			if extra == 1 {
				if _, err := verify.CheckTransaction(tm, in, unsigned, &verify.Trust{MaxFee: new(big.Int).Add(bound, big.NewInt(1000))}); err != nil {
					t.Errorf("chain %d under the caller's WithFeeCap: %v", tt.chainID, err)
				}
			}
		}
	}
	// A chain without a default, checked without WithFeeCap (NewClient
	// refuses such a client; the check refuses on its own too).
	tm, in, _, fields := captureFixture()
	tm.ChainID = big.NewInt(31337)
	fields["chain_id"] = 31337
	var ae *verify.Mismatch
	if _, err := verify.CheckTransaction(tm, in, mustJSON(t, fields), &verify.Trust{}); !errors.As(err, &ae) || !strings.Contains(ae.Reason, "WithFeeCap") {
		t.Errorf("chain 31337 without a fee bound: %v, want a refusal naming WithFeeCap", err)
	}
}
