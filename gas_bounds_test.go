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
// (contract guide section 12.2; the bounds themselves, and Arbitrum's, are
// internal/verify's TestGasLimitBoundPerOperation): through every flow, a
// limit at the bound is signed, one gas more is refused before anything is
// signed, and WithFeeCap's bound replaces them all.
func TestGasLimitBoundPerOperation(t *testing.T) {
	t.Parallel()
	want := map[Operation]uint64{
		OpAuthorize: 1_018_000, OpCharge: 1_030_000, OpRefund: 656_000, OpCapture: 350_000,
		OpVoid: 154_000, OpRelease: 154_000, OpDispute: 86_000, OpCloseDispute: 86_000,
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
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
