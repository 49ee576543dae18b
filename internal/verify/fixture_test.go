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

// A payment's amounts are base units as a decimal integer string (the
// contract's "integer string"): the same number in 0x form is refused, so
// the SDK never signs an amount that a reader of the field as documented
// reads differently.
func TestPaymentAmountsAreDecimal(t *testing.T) {
	for _, field := range []string{"amount", "capturable_amount", "refundable_amount"} {
		for _, tc := range []struct {
			value string
			ok    bool
		}{{"25000000", true}, {"0x17d7840", false}, {"0X17D7840", false}, {"", false}, {"+25000000", false}, {"25e6", false}} {
			p := verifytest.Payment(verify.ModeAuthorize, payer.Address(), payee.Address())
			switch field {
			case "amount":
				p.Amount = tc.value
			case "capturable_amount":
				p.CapturableAmount = tc.value
			case "refundable_amount":
				p.RefundableAmount = tc.value
			}
			_, err := verify.DecodeTerms(p)
			if (err == nil) != tc.ok {
				t.Errorf("%s %q: err = %v, want ok %v", field, tc.value, err, tc.ok)
			}
		}
	}
}
