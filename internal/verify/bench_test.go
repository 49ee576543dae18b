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
