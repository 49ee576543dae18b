package verify_test

import (
	"encoding/json"
	"math/big"
	"testing"

	"github.com/rail0/rail0-go/internal/evmtest"
	"github.com/rail0/rail0-go/internal/verify"
	"github.com/rail0/rail0-go/internal/verifytest"
)

// The parties of the test payment (internal/verifytest).
var payer, payee = evmtest.NewKey("payer"), evmtest.NewKey("payee")

// testTerms are the checked terms of the test payment in mode.
func testTerms(mode string) *verify.Terms {
	return verifytest.Terms(verifytest.Payment(mode, payer.Address(), payee.Address()))
}

// captureFixture is the test payment's checked terms, a capture of 1.00 by
// its payee and the trust of a client whose gas_limit is bounded per
// operation and whose fee bound is 0.05 ETH (Arbitrum's default, 0.002 ETH,
// would refuse the 5,000,000 gas at 1.5 gwei of TestGasLimitBoundPerOperation),
// with the fields of the honest capture transaction: what a check of a
// capture transaction takes.
func captureFixture() (*verify.Terms, verify.Intent, *verify.Trust, map[string]any) {
	tm := testTerms(verify.ModeAuthorize)
	fields := verifytest.TxFields(tm, verify.OpCapture, []verify.Word{verify.UintWord(big.NewInt(1_000_000))}, payee.Address())
	return tm, verify.Intent{Operation: verify.OpCapture, Signer: payee.Address(), Amount: "1000000"},
		&verify.Trust{MaxFee: big.NewInt(50_000_000_000_000_000)}, fields
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
