package rail0

import (
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"
)

// TestGasLimitBoundPerOperation: without WithFeeCap, each step's gas_limit
// is bounded at twice what the RAIL0 contract was measured to use for it
// (contract guide section 12.2): a limit at the bound is signed, one gas
// more is refused before anything is signed. WithFeeCap's bound replaces
// them all, and on Arbitrum, whose gas limit also pays for L1 data, only
// the fee bound applies.
func TestGasLimitBoundPerOperation(t *testing.T) {
	t.Parallel()
	want := map[Operation]uint64{
		OpAuthorize: 1_018_000, OpCharge: 1_030_000, OpRefund: 414_000, OpCapture: 350_000,
		OpVoid: 154_000, OpRelease: 154_000, OpDispute: 86_000, OpCloseDispute: 86_000,
	}
	def, capped := &trust{}, &trust{maxGas: 2_000_000}
	for op, bound := range want {
		if got := def.maxGasLimit(op, artChain); got != bound {
			t.Errorf("%s: bound %d, want %d", op, got, bound)
		}
		if got := capped.maxGasLimit(op, artChain); got != 2_000_000 {
			t.Errorf("%s under WithFeeCap: bound %d", op, got)
		}
		for _, arbitrum := range []int64{42161, 42170, 421614} {
			if got := def.maxGasLimit(op, arbitrum); got != 0 {
				t.Errorf("%s on %d: bound %d, want none", op, arbitrum, got)
			}
		}
	}

	for _, fc := range flowCases {
		if fc.submit == "PUT sign" {
			continue // the payer's signature carries no gas
		}
		op := Operation(strings.TrimPrefix(fc.submit, "POST "))
		if op == "dispute/close" {
			op = OpCloseDispute
		}
		t.Run(fc.name, func(t *testing.T) {
			t.Parallel()
			withGas := func(gas uint64) func(*artGateway) {
				return func(g *artGateway) {
					g.tamperTx = func(o Operation, tx map[string]any) {
						if o == op {
							tx["gas_limit"] = gas
						}
					}
				}
			}
			if _, _, err := runFlow(t, fc, withGas(want[op])); err != nil {
				t.Fatalf("gas_limit %d, the bound: %v", want[op], err)
			}
			g, key, err := runFlow(t, fc, withGas(want[op]+1))
			var ae *ArtifactError
			if !errors.As(err, &ae) || ae.Field != "gas_limit" || len(g.submitted()) != 0 {
				t.Fatalf("gas_limit %d: %v, submitted %v", want[op]+1, err, g.submitted())
			}
			if op != OpRefund && key.Signed.Load() != 0 { // a refund signs its authorization first
				t.Fatalf("%d signatures before the refusal", key.Signed.Load())
			}
			if _, _, err := runFlow(t, fc, withGas(1_500_000), WithFeeCap(2_000_000, big.NewInt(50_000_000_000_000_000))); err != nil {
				t.Fatalf("1,500,000 gas under WithFeeCap(2,000,000): %v", err)
			}
		})
	}

	// On Arbitrum the limit carries the L1 data charge: 5,000,000 gas for
	// a capture passes, bounded by the fee alone.
	g, tm, in, tr := captureFixture(t)
	tm.chainID = big.NewInt(421614)
	fields := g.txFields(OpCapture, PrepareParams{Amount: "1.00"})
	fields["chain_id"], fields["gas_limit"] = 421614, 5_000_000
	if _, err := checkTransaction(tm, in, mustJSON(t, fields), tr); err != nil {
		t.Fatalf("capture with 5,000,000 gas on Arbitrum Sepolia: %v", err)
	}
}

// captureFixture is a partially captured payment of the test gateway, its
// checked terms, a capture of 1.00 by its payee and the trust of a client
// whose gas_limit is bounded per operation and whose fee bound is 0.05 ETH
// (Arbitrum's default, 0.002 ETH, would refuse the 5,000,000 gas at 1.5
// gwei above): what a check of a capture transaction takes.
func captureFixture(t *testing.T) (*artGateway, *terms, Intent, *trust) {
	g := newArtGateway(t, ModeAuthorize, StatusPartiallyCaptured)
	tm := g.terms()
	tm.configHash = tm.computeConfigHash()
	return g, tm, Intent{Operation: OpCapture, Signer: g.payee.Address(), Amount: "1000000"}, &trust{maxFee: big.NewInt(50_000_000_000_000_000)}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
