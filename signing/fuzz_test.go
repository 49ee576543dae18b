package signing

import (
	"context"
	"errors"
	"testing"

	"github.com/ethereum/go-ethereum/core/types"
)

// FuzzParseUnsignedTransaction checks that the parser never panics, that
// every refusal is a *TransactionError, and that anything it accepts
// re-encodes to JSON that parses back to the same transaction, encodes to
// RLP that decodes to the same transaction, and signs to a raw transaction
// whose sender recovers. Seeds live in testdata/fuzz/FuzzParseUnsignedTransaction.
func FuzzParseUnsignedTransaction(f *testing.F) {
	f.Add(readmeUnsignedTx)
	f.Add(`{"chain_id":"1","nonce":"0x0","to":"0x0000000000000000000000000000000000000000","value":0,"data":"","gas_limit":21000,"max_priority_fee_per_gas":0,"max_fee_per_gas":0}`)
	signer := mustSigner(f, cowKey)
	f.Fuzz(func(t *testing.T, in string) {
		u, err := ParseUnsignedTransaction(in)
		if err != nil {
			var te *TransactionError
			if u != nil || !errors.As(err, &te) || !errors.Is(err, ErrInvalidTransaction) {
				t.Fatalf("refusal %v (%T) with result %v", err, err, u)
			}
			return
		}
		if u.ChainID.Sign() <= 0 || u.ChainID.BitLen() > 256 || u.Value.BitLen() > 256 ||
			u.MaxFeePerGas.BitLen() > 256 || u.MaxPriorityFeePerGas.Cmp(u.MaxFeePerGas) > 0 {
			t.Fatalf("accepted out-of-range values: %+v", u)
		}
		b, err := u.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON: %v", err)
		}
		back, err := ParseUnsignedTransaction(string(b))
		if err != nil || !equalTx(back, u) {
			t.Fatalf("re-encoding %s parses to %+v, %v; want %+v", b, back, err, u)
		}
		b2, _ := back.MarshalJSON()
		if string(b2) != string(b) {
			t.Fatalf("MarshalJSON is not stable:\n%s\n%s", b, b2)
		}

		tx := u.Transaction()
		if h := types.LatestSignerForChainID(u.ChainID).Hash(tx); h != u.SigningHash() {
			t.Fatalf("SigningHash %s, go-ethereum %s", u.SigningHash(), h)
		}
		raw, err := tx.MarshalBinary()
		if err != nil {
			t.Fatalf("MarshalBinary: %v", err)
		}
		var dec types.Transaction
		if err := dec.UnmarshalBinary(raw); err != nil || dec.Hash() != tx.Hash() {
			t.Fatalf("RLP round trip: %v", err)
		}

		if u.From != nil && *u.From != signer.Address() {
			if _, err := SignTransaction(context.Background(), signer, in); !errors.Is(err, ErrSignerMismatch) {
				t.Fatalf("foreign from: %v", err)
			}
			return
		}
		signed, err := SignTransaction(context.Background(), signer, in)
		if err != nil {
			t.Fatalf("SignTransaction of an accepted transaction: %v", err)
		}
		if from, err := RecoverTransactionSender(signed); err != nil || from != signer.Address() {
			t.Fatalf("RecoverTransactionSender = %s, %v", from, err)
		}
	})
}

// FuzzRecoverTransactionSender checks that decoding arbitrary raw
// transactions never panics (go-ethereum's signers panic on chain id 0, for
// one) and that every failure is typed.
func FuzzRecoverTransactionSender(f *testing.F) {
	f.Add(readmeSignedTx)
	f.Add("0x02c0")
	f.Add("0xf86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83")
	f.Fuzz(func(t *testing.T, in string) {
		if _, err := RecoverTransactionSender(in); err != nil &&
			!errors.Is(err, ErrInvalidTransaction) && !errors.Is(err, ErrInvalidSignature) {
			t.Fatalf("untyped error %v (%T)", err, err)
		}
	})
}

// FuzzParsePayload checks that payload validation never panics, that every
// refusal is a *PayloadError, and that an accepted payload signs and
// recovers.
func FuzzParsePayload(f *testing.F) {
	f.Add(string(newPayload(f, PrimaryTypeTransfer, cowAddr).raw(f)))
	f.Add(string(newPayload(f, PrimaryTypeReceive, hardhatAddr).raw(f)))
	f.Add(`{"primaryType":"TransferWithAuthorization","types":{},"domain":{},"message":{}}`)
	signer := mustSigner(f, cowKey)
	f.Fuzz(func(t *testing.T, in string) {
		p, err := ParsePayload([]byte(in))
		if err != nil {
			var pe *PayloadError
			if p != nil || !errors.As(err, &pe) {
				t.Fatalf("refusal %v (%T) with result %v", err, err, p)
			}
			return
		}
		if p.PrimaryType != PrimaryTypeTransfer && p.PrimaryType != PrimaryTypeReceive {
			t.Fatalf("accepted primaryType %q", p.PrimaryType)
		}
		b, err := p.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON: %v", err)
		}
		if back, err := ParsePayload(b); err != nil || back.Digest != p.Digest {
			t.Fatalf("re-encoding %s: %v, %v; want digest %s", b, back, err, p.Digest)
		}
		sig, err := SignPayload(context.Background(), signer, []byte(in))
		if p.From != signer.Address() {
			if !errors.Is(err, ErrSignerMismatch) {
				t.Fatalf("foreign from: %v", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("SignPayload of an accepted payload: %v", err)
		}
		if got, err := RecoverPayloadSigner([]byte(in), sig); err != nil || got != signer.Address() {
			t.Fatalf("RecoverPayloadSigner = %s, %v", got, err)
		}
	})
}
