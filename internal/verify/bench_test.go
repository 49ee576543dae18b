package verify_test

import (
	"encoding/json"
	"testing"

	"github.com/rail0/rail0-go/internal/verify"
	"github.com/rail0/rail0-go/internal/verifytest"
)

// BenchmarkCheckPayload and BenchmarkCheckTransaction measure the checks of
// one artifact, strict reading included.
func BenchmarkCheckPayload(b *testing.B) {
	tm := testTerms(verify.ModeAuthorize)
	payload, _ := json.Marshal(verifytest.PayloadDoc(tm, nil))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := verify.CheckPayload(tm, verify.Intent{}, payload); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheckTransaction(b *testing.B) {
	tm, in, tr, fields := captureFixture()
	unsigned, _ := json.Marshal(fields)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := verify.CheckTransaction(tm, in, string(unsigned), tr); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckPayment measures the check of a payment's terms: what a
// signing client's WaitForStatus poll adds to its read, so that the next flow
// step needs none (the root's flow_known.go).
func BenchmarkCheckPayment(b *testing.B) {
	p := verifytest.Payment(verify.ModeAuthorize, payer.Address(), payee.Address())
	mine, _ := verify.ParseAddress(verifytest.Contract)
	tr := &verify.Trust{Pins: verify.NewPins(nil, nil, map[int64]verify.Address{verifytest.ChainID: mine},
		map[verify.TokenKey]int64{{ChainID: verifytest.ChainID, Token: verifytest.Terms(p).Token}: 6})}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := verify.CheckPayment(p, tr); err != nil {
			b.Fatal(err)
		}
	}
}
