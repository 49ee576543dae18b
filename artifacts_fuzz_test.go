package rail0

import (
	"encoding/json"
	"errors"
	"testing"
)

// FuzzCheckTransaction feeds arbitrary unsigned_transaction strings to the
// check: it never panics, anything it accepts re-encodes to a transaction
// whose fields equal the payment's, and anything it refuses is an
// *ArtifactError or a *ValidationError.
func FuzzCheckTransaction(f *testing.F) {
	g := newArtGateway(&testing.T{}, ModeAuthorize, StatusPartiallyCaptured)
	tm := g.terms()
	tm.configHash = tm.computeConfigHash()
	honest, _ := json.Marshal(g.txFields(OpCapture, PrepareParams{Amount: "1.00"}))
	for _, seed := range []string{string(honest), "", "{}", "null", `{"chain_id": 84532}`, `{"chain_id": "0x14a34"}`,
		`{"chain_id": 1e3}`, `{"chain_id": -1}`, `{"data": "0x"}`, string(honest) + "x"} {
		f.Add(seed)
	}
	tr := &trust{maxGas: DefaultMaxGasLimit} // the chain's default fee bound
	in := Intent{Operation: OpCapture, Signer: g.payee.Address(), Amount: "1000000"}
	f.Fuzz(func(t *testing.T, unsigned string) {
		tx, err := checkTransaction(tm, in, unsigned, tr)
		if refused(t, err) {
			return
		}
		if tx.chainID.Int64() != artChain || tx.to != tm.contract || tx.value.Sign() != 0 || len(tx.data) != 4+32*8 {
			t.Fatalf("accepted a transaction that differs from the payment: %+v", tx)
		}
	})
}

// FuzzCheckPayload does the same for signing payloads.
func FuzzCheckPayload(f *testing.F) {
	g := newArtGateway(&testing.T{}, ModeAuthorize, StatusUnsigned)
	tm := g.terms()
	tm.configHash = tm.computeConfigHash()
	for _, seed := range []string{string(g.payloadJSON(Intent{})), "", "{}", "null", `{"primaryType": "TransferWithAuthorization"}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		pc, err := checkPayload(tm, Intent{}, json.RawMessage(payload))
		if refused(t, err) {
			return
		}
		if pc.digest != g.authDigestUnder(pc.name, pc.version) {
			t.Fatalf("accepted payload signs another digest")
		}
	})
}

// refused reports whether a check refused its input, failing t when the
// refusal is not one of the typed errors the checks promise.
func refused(t *testing.T, err error) bool {
	if err == nil {
		return false
	}
	var ae *ArtifactError
	var ve *ValidationError
	if !errors.As(err, &ae) && !errors.As(err, &ve) {
		t.Fatalf("untyped error %T: %v", err, err)
	}
	return true
}
