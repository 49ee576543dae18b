package rail0

import (
	"encoding/json"
	"testing"
)

// BenchmarkCheckPayload and BenchmarkCheckTransaction measure the checks of
// one artifact, strict reading included.
func BenchmarkCheckPayload(b *testing.B) {
	g := newArtGateway(&testing.T{}, ModeAuthorize, StatusUnsigned)
	tm := g.terms()
	tm.configHash = tm.computeConfigHash()
	payload := g.payloadJSON(Intent{})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := checkPayload(tm, Intent{}, payload); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheckTransaction(b *testing.B) {
	g, tm, in, tr := captureFixture(&testing.T{})
	unsigned, _ := json.Marshal(g.txFields(OpCapture, PrepareParams{Amount: "1.00"}))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := checkTransaction(tm, in, string(unsigned), tr); err != nil {
			b.Fatal(err)
		}
	}
}
