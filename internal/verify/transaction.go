package verify

import (
	"errors"
	"fmt"
	"math/big"

	"github.com/rail0/rail0-go/internal/evm"
)

// This file checks an unsigned_transaction: the call of the RAIL0 contract
// that the step must make, on the payment's terms, and the gas it may
// spend.

// The default bounds on the gas of a prepared transaction (see WithFeeCap),
// far above what a RAIL0 call costs but low enough that a gateway cannot
// drain a signer: gas_limit per operation (maxGasLimit, below), and
// gas_limit × max_fee_per_gas per chain in that chain's native unit
// (DefaultFeeBound, trust.go).

// contractGas is the gas each call of the RAIL0 contract v1.3.0 used in an
// EVM with a minimal EIP-3009 token (contract guide, section 12.2), in its
// dearest measured state: authorize as the first payment of a fresh
// deployment (411,000 afterwards); charge with the same first-payment
// extra (98,000) over its measured 417,000, since a deployment's first
// payment may as well be a charge; capture the dearer of its two figures;
// refund while the contract holds none of the token (207,000 from escrow).
var contractGas = map[string]uint64{
	OpAuthorize: 509_000, OpCharge: 417_000 + 98_000, OpCapture: 175_000, OpRefund: 328_000,
	OpVoid: 77_000, OpRelease: 77_000, OpDispute: 43_000, OpCloseDispute: 43_000,
}

// gasMargin turns contractGas into the default bound on gas_limit. An
// honest limit exceeds the measured figure for two reasons: a production
// token costs more than the minimal one measured (USDC sits behind a proxy,
// which adds a delegatecall, its storage reads and a blocklist check to
// every transfer), allowed for here up to a third more; and a gateway
// estimates on the chain and adds its own margin, commonly 10 to 50%.
// 4/3 × 3/2 = 2. A limit above that is not an estimate of this call.
const gasMargin = 2

// ContractGas is the gas op was measured to use (contractGas): what an
// honest estimate starts from.
func ContractGas(op string) uint64 { return contractGas[op] }

// l1DataInGasLimit lists the chains whose gas limit also pays for the
// transaction's L1 data (Arbitrum One, Nova and Sepolia charge it in L2
// gas, before execution): there an honest limit follows the L1 price and
// can be many times the call's own gas, so the default bound per
// operation does not apply; the fee bound still does.
var l1DataInGasLimit = map[int64]bool{42161: true, 42170: true, 421614: true}

// MaxGasLimit is the bound on the gas_limit of op on chainID: the caller's
// (WithFeeCap) when set, else gasMargin × contractGas[op]; zero means no
// bound but the fee's.
func (tr *Trust) MaxGasLimit(op string, chainID int64) uint64 {
	switch {
	case tr.MaxGas != 0:
		return tr.MaxGas
	case l1DataInGasLimit[chainID]:
		return 0
	}
	return gasMargin * contractGas[op]
}

// Function selectors of the RAIL0 contract (README section 12.1): the first
// four bytes of keccak256 of each signature, Payment as its tuple.
const paymentTuple = "(address,address,address,uint120,uint48,uint48)"

var callSignatures = map[string]string{
	OpAuthorize:    "authorize(bytes32," + paymentTuple + ",uint8,bytes32,bytes32)",
	OpCharge:       "charge(bytes32," + paymentTuple + ",uint8,bytes32,bytes32)",
	OpCapture:      "capture(bytes32," + paymentTuple + ",uint256)",
	OpVoid:         "void(bytes32," + paymentTuple + ")",
	OpRelease:      "release(bytes32," + paymentTuple + ")",
	OpRefund:       "refund(bytes32," + paymentTuple + ",uint256,uint8,bytes32,bytes32)",
	OpDispute:      "dispute(bytes32," + paymentTuple + ",bytes32)",
	OpCloseDispute: "closeDispute(bytes32," + paymentTuple + ",bytes32)",
}

// OnChain reports whether op is a step with an on-chain call.
func OnChain(op string) bool {
	_, ok := callSignatures[op]
	return ok
}

// Selector is the function selector of op's call.
func Selector(op string) [4]byte {
	h := KeccakString(callSignatures[op])
	return [4]byte(h[:4])
}

// CheckTransaction verifies an unsigned_transaction for in against t and
// returns it parsed, ready to sign.
func CheckTransaction(t *Terms, in Intent, unsigned string, tr *Trust) (*Tx, error) {
	fail := func(field, expected, got, reason string) (*Tx, error) {
		return nil, &Mismatch{PaymentID: t.ID, Operation: in.Operation, Artifact: "unsigned_transaction",
			Field: field, Expected: expected, Got: got, Reason: reason}
	}
	// mismatch is fail for the signature check, which returns only an error.
	mismatch := func(field, expected, got string) error {
		_, err := fail(field, expected, got, "")
		return err
	}
	if _, ok := callSignatures[in.Operation]; !ok {
		return nil, &Invalid{Field: "operation", Reason: fmt.Sprintf("%q is not an on-chain step", in.Operation)}
	}
	signer, err := CheckSigner(t, in.Operation, in.Signer)
	if err != nil {
		return nil, err
	}
	tx, err := ParseUnsignedTx(unsigned)
	if err != nil {
		var fe *fieldError
		if errors.As(err, &fe) {
			return fail(fe.field, "", fe.got, fe.reason)
		}
		return nil, err
	}
	limit := tr.MaxGasLimit(in.Operation, t.ChainID.Int64())
	switch {
	case tx.chainID.Cmp(t.ChainID) != 0:
		return fail("chain_id", t.ChainID.String(), tx.chainID.String(), "")
	case tx.to != t.Contract:
		return fail("to", t.Contract.String(), tx.to.String(), "")
	case tx.value.Sign() != 0:
		return fail("value", "0", tx.value.String(), "")
	case tx.from != nil && *tx.from != signer:
		return fail("from", signer.String(), tx.from.String(), "")
	case tx.gasLimit == 0:
		return fail("gas_limit", "", "0", "is zero")
	case limit != 0 && tx.gasLimit > limit:
		return fail("gas_limit", fmt.Sprintf("at most %d for %s", limit, in.Operation), fmt.Sprint(tx.gasLimit), "")
	case tx.maxPriorityFeePerGas.Cmp(tx.maxFeePerGas) > 0:
		return fail("max_priority_fee_per_gas", "at most max_fee_per_gas "+tx.maxFeePerGas.String(), tx.maxPriorityFeePerGas.String(), "")
	}
	chainID := t.ChainID.Int64()
	maxFee, ok := tr.FeeBound(chainID)
	if !ok {
		return fail("max_fee_per_gas", "", "", fmt.Sprintf("cannot be bounded: chain %d has no default fee bound; set one with WithFeeCap", chainID))
	}
	if fee := new(big.Int).Mul(tx.maxFeePerGas, new(big.Int).SetUint64(tx.gasLimit)); fee.Cmp(maxFee) > 0 {
		return fail("max_fee_per_gas", "gas_limit × max_fee_per_gas at most "+nativeAmount(chainID, maxFee), nativeAmount(chainID, fee), "")
	}

	// The call: selector, paymentId, the Payment tuple, then the
	// operation's own arguments, all static 32-byte words.
	data := tx.data
	sel := Selector(in.Operation)
	if len(data) < 4 || [4]byte(data[:4]) != sel {
		got := data
		if len(got) > 4 {
			got = got[:4]
		}
		return fail("data.selector", fmt.Sprintf("0x%x (%s)", sel, callSignatures[in.Operation]), fmt.Sprintf("0x%x", got), "")
	}
	var extra []string
	switch in.Operation {
	case OpAuthorize, OpCharge:
		extra = []string{"v", "r", "s"}
	case OpCapture:
		extra = []string{"amount"}
	case OpRefund:
		extra = []string{"amount", "v", "r", "s"}
	case OpDispute, OpCloseDispute:
		extra = []string{"reason"}
	}
	if want := 4 + 32*(7+len(extra)); len(data) != want {
		return fail("data", fmt.Sprintf("%d bytes", want), fmt.Sprintf("%d bytes", len(data)), "")
	}
	arg := func(i int) Word { return Word(data[4+32*i : 4+32*(i+1)]) }
	if got := arg(0); got != t.Rail0ID {
		return fail("data.paymentId", t.Rail0ID.String(), got.String(), "")
	}
	for i, w := range t.Words() {
		if got := arg(1 + i); got != w {
			return fail("data.p."+termNames[i], w.String(), got.String(), "")
		}
	}
	args := map[string]Word{}
	for i, name := range extra {
		args[name] = arg(7 + i)
	}
	if w, ok := args["amount"]; ok {
		want, err := ParseUintText(in.Amount, 120)
		if err != nil || want.Sign() == 0 {
			return nil, &Invalid{Field: "amount", Reason: "must be a positive base-unit integer"}
		}
		if got := new(big.Int).SetBytes(w[:]); got.Cmp(want) != 0 {
			return fail("data.amount", want.String(), got.String(), "")
		}
	}
	if w, ok := args["reason"]; ok {
		var want Word
		if in.Reason != "" {
			if want, err = ParseWord(in.Reason); err != nil {
				return nil, &Invalid{Field: "reason", Reason: err.Error()}
			}
		}
		if w != want {
			return fail("data.reason", want.String(), w.String(), "")
		}
	}
	if _, ok := args["v"]; ok {
		if err := checkCallSignature(t, in, args, tr, mismatch); err != nil {
			return nil, err
		}
	}
	return tx, nil
}

// checkCallSignature checks the v, r, s arguments of an authorize, charge
// or refund call. For a refund they must be the payee signature the caller
// just produced. For authorize and charge they are the payer's signature,
// which the SDK did not produce: they must be well formed with a low s (the
// tokens refuse the high twin), and when the token's EIP-712 name and
// version are known they must recover to the payer over the payment's
// authorization.
func checkCallSignature(t *Terms, in Intent, args map[string]Word, tr *Trust, mismatch func(field, expected, got string) error) error {
	v, r, s := args["v"], args["r"], args["s"]
	if in.Operation == OpRefund {
		sig, err := DecodeSignatureHex(in.Signature)
		if err != nil {
			return &Invalid{Field: "signature", Reason: err.Error()}
		}
		if got, want := (Word)(v), U64Word(uint64(sig[64])); got != want {
			return mismatch("data.v", want.String(), got.String())
		}
		if want := Word(sig[:32]); r != want {
			return mismatch("data.r", want.String(), r.String())
		}
		if want := Word(sig[32:64]); s != want {
			return mismatch("data.s", want.String(), s.String())
		}
		return nil
	}
	if v != U64Word(27) && v != U64Word(28) {
		return mismatch("data.v", "27 or 28", v.String())
	}
	if r == (Word{}) || s == (Word{}) || !evm.IsLowS(s[:]) {
		return mismatch("data.s", "a non-zero r and an s in the lower half of the curve order", s.String())
	}
	dom, ok := tr.TokenDomains[TokenKey{t.ChainID.Int64(), t.Token}]
	if !ok {
		return nil
	}
	digest := AuthorizationDigest(t, "TransferWithAuthorization", dom[0], dom[1], t.Payer, t.Amount, t.AuthExpiry, t.Nonce(in.Operation))
	sig := append(append(append([]byte{}, r[:]...), s[:]...), v[31])
	got, err := evm.Recover(digest, sig)
	if err != nil || Address(got) != t.Payer {
		return mismatch("data.r", "the payer's signature of the payment", "a signature by "+Address(got).String())
	}
	return nil
}

// DecodeSignatureHex reads a 65-byte r ‖ s ‖ v signature with v = 27 or 28.
func DecodeSignatureHex(s string) ([]byte, error) {
	b := make([]byte, 65)
	if err := DecodeFixedHex(s, b); err != nil {
		return nil, err
	}
	if b[64] < 27 {
		b[64] += 27
	}
	return b, nil
}
