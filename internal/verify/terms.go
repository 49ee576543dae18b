package verify

import (
	"fmt"
	"math/big"
	"slices"
)

// The steps of a payment, as the gateway names them (the values of
// rail0.Operation), and its modes (rail0.PaymentMode).
const (
	OpAuthorize    = "authorize"
	OpCharge       = "charge"
	OpCapture      = "capture"
	OpVoid         = "void"
	OpRelease      = "release"
	OpRefund       = "refund"
	OpDispute      = "dispute"
	OpCloseDispute = "close_dispute"

	ModeAuthorize = "authorize"
	ModeCharge    = "charge"
)

// Payment is what the checks read of a payment record. It is the
// gateway's PaymentDetail, as text, the way it came.
type Payment struct {
	ID, Rail0ID, ConfigHash, Mode              string
	ChainID                                    int64
	Contract, Payer, Payee, Token              string
	Amount, CapturableAmount, RefundableAmount string
	AuthorizationExpiry, RefundExpiry          int64
}

// Terms is the contract's Payment struct, decoded from a Payment, with what
// else of the record the checks use.
type Terms struct {
	ID           string
	Rail0ID      Word
	ChainID      *big.Int
	Contract     Address
	Payer, Payee Address
	Token        Address
	Amount       *big.Int
	AuthExpiry   uint64
	RefundExpiry uint64
	// Refundable and Capturable are the balances as the record says. They
	// are the only terms that change. The refund nonce commits to
	// Refundable.
	Refundable *big.Int
	Capturable *big.Int
	Mode       string
	ConfigHash Word
	// Decimals are the token's pinned decimals (CheckPayment). With them
	// the caller's human amounts become base units.
	Decimals int64
}

// Intent is what the caller asked for (rail0.Intent, in base units):
//   - the step, empty for the payer's signature;
//   - who signs;
//   - the amount of a capture or refund;
//   - the reason of a dispute step;
//   - the payee's refund signature that the refund transaction must carry.
type Intent struct {
	Operation, Signer, Amount, Reason, Signature string
}

const paymentType = "Payment(address payer,address payee,address token,uint120 amount,uint48 authorizationExpiry,uint48 refundExpiry)"

// rail0Domain is the RAIL0 contract's EIP-712 name and version.
const (
	rail0DomainName    = "RAIL0"
	rail0DomainVersion = "1.3.0"
)

// termNames names the fields of the Payment tuple, in order.
var termNames = [6]string{"payer", "payee", "token", "amount", "authorizationExpiry", "refundExpiry"}

// Words returns the Payment tuple as six ABI words.
func (t *Terms) Words() [6]Word {
	return [6]Word{t.Payer.Word(), t.Payee.Word(), t.Token.Word(), UintWord(t.Amount), U64Word(t.AuthExpiry), U64Word(t.RefundExpiry)}
}

// ComputeConfigHash is the EIP-712 hash of the terms under the contract's
// domain: what config_hash must be.
func (t *Terms) ComputeConfigHash() Word {
	w := t.Words()
	structHash := KeccakWords(KeccakString(paymentType), w[0], w[1], w[2], w[3], w[4], w[5])
	return eip712Digest(eip712Domain{name: rail0DomainName, version: rail0DomainVersion, chainID: t.ChainID, contract: t.Contract}, structHash)
}

// Nonce is the EIP-3009 nonce of an authorization for op.
func (t *Terms) Nonce(op string) Word {
	switch op {
	case OpRefund:
		return KeccakWords(KeccakString("RAIL0.REFUND"), t.Rail0ID, t.ConfigHash, UintWord(t.Refundable))
	case OpCharge:
		return KeccakWords(KeccakString("RAIL0.CHARGE"), t.Rail0ID, t.ConfigHash)
	default:
		return KeccakWords(KeccakString("RAIL0.AUTHORIZE"), t.Rail0ID, t.ConfigHash)
	}
}

// maxUint48 bounds the expiries, which the contract stores as uint48.
const maxUint48 = uint64(1)<<48 - 1

// CheckPayment decodes p's terms and checks them for consistency:
//   - well-formed fields;
//   - terms the contract accepts;
//   - a chain with a trusted contract that the payment names;
//   - a token trusted on that chain, whose pinned decimals the terms keep;
//   - a config_hash equal to the one computed locally, which binds every
//     term and the contract address.
func CheckPayment(p *Payment, tr *Trust) (*Terms, error) {
	t, err := DecodeTerms(p)
	if err != nil {
		return nil, err
	}
	if err := CheckTerms(t, tr); err != nil {
		return nil, err
	}
	return t, nil
}

// CheckTerms is CheckPayment's check of terms already decoded
// (DecodeTerms). It serves a caller that decoded them to check a request
// first. It runs the rows of ArtPins and ArtPayment. The pins anchor the
// chain, contract and token, and give the decimals (set in t). config_hash
// must be the hash of the terms.
func CheckTerms(t *Terms, tr *Trust) error {
	var err error
	if t.Decimals, err = tr.Pins.Anchor(t); err != nil {
		return err
	}
	return run(ArtPayment, &paymentCase{t: t})
}

// DecodeTerms decodes p's terms, each field as the type the contract
// gives it, and checks that the contract accepts them (the rows of
// ArtTerms).
func DecodeTerms(p *Payment) (*Terms, error) {
	if p == nil {
		return nil, &Invalid{Field: "payment", Reason: "is required"}
	}
	malformed := func(field, reason string) (*Terms, error) {
		return nil, readRefusal(&fieldError{field: field, reason: reason}, p.ID, "", "payment", "")
	}
	t := &Terms{ID: p.ID, Mode: p.Mode}
	var err error
	if t.Rail0ID, err = ParseWord(p.Rail0ID); err != nil {
		return malformed("rail0_id", err.Error())
	}
	if t.ConfigHash, err = ParseWord(p.ConfigHash); err != nil {
		return malformed("config_hash", err.Error())
	}
	if p.ChainID <= 0 {
		return malformed("chain_id", fmt.Sprintf("%d is not a chain id", p.ChainID))
	}
	t.ChainID = big.NewInt(p.ChainID)
	for _, f := range []struct {
		name, value string
		dst         *Address
	}{{"rail0_contract", p.Contract, &t.Contract}, {"payer", p.Payer, &t.Payer}, {"payee", p.Payee, &t.Payee}, {"token", p.Token, &t.Token}} {
		if *f.dst, err = ParseAddress(f.value); err != nil {
			return malformed(f.name, err.Error())
		}
	}
	for _, f := range []struct {
		name, value string
		dst         **big.Int
	}{{"amount", p.Amount, &t.Amount}, {"capturable_amount", p.CapturableAmount, &t.Capturable}, {"refundable_amount", p.RefundableAmount, &t.Refundable}} {
		// Base units are a decimal integer string on the wire. A 0x form
		// would be read as one number here, and as another by whoever
		// reads the field as the contract documents it.
		if !IsDigits(f.value) {
			return malformed(f.name, fmt.Sprintf("%q is not a decimal integer", Clip(f.value)))
		}
		if *f.dst, err = ParseUintText(f.value, 120); err != nil {
			return malformed(f.name, err.Error())
		}
	}
	if p.AuthorizationExpiry < 0 || uint64(p.AuthorizationExpiry) > maxUint48 || p.RefundExpiry < 0 || uint64(p.RefundExpiry) > maxUint48 {
		return malformed("expiry", "is outside uint48")
	}
	t.AuthExpiry, t.RefundExpiry = uint64(p.AuthorizationExpiry), uint64(p.RefundExpiry)
	if err := run(ArtTerms, &termsCase{t: t}); err != nil {
		return nil, err
	}
	return t, nil
}

// Signers returns who may sign op on t:
//   - the payer, for the payer's signature and the disputes;
//   - either participant, for a release;
//   - the payee, for everything else.
//
// role names them for an error.
func Signers(t *Terms, op string) (who []Address, role string) {
	switch op {
	case "", OpDispute, OpCloseDispute:
		return []Address{t.Payer}, "the payer"
	case OpRelease:
		return []Address{t.Payer, t.Payee}, "the payer or the payee"
	default:
		return []Address{t.Payee}, "the payee"
	}
}

// CheckSigner checks that the intent's signer may act for op on t.
func CheckSigner(t *Terms, op, signer string) (Address, error) {
	a, err := ParseAddress(signer)
	if err != nil {
		return a, &Invalid{Field: "signer", Reason: err.Error()}
	}
	who, role := Signers(t, op)
	if !slices.Contains(who, a) {
		what := "the payer signature"
		if op != "" {
			what = op
		}
		return a, &Invalid{Field: "signer", Reason: fmt.Sprintf("%s is not %s of payment %s, who must sign %s", a, role, t.ID, what)}
	}
	return a, nil
}

// CheckOrder runs the rows of ArtOrder: payment p against what the caller
// named and meant. When named, p must be the payment id names (its UUID,
// ignoring case, or its rail0_id). Every field each expectation sets must
// match. Refusals name id and op. toBase converts an expected human
// amount with the payment's pinned decimals.
func CheckOrder(p *Payment, id, op string, named bool, toBase func(string) (string, error), expect ...Expectation) error {
	return run(ArtOrder, &orderCase{p: p, id: id, op: op, named: named, expect: expect, toBase: toBase})
}

// CheckPaymentAnswer runs the rows of ArtPaymentAnswer on p, the 2xx
// answer to a write that returns a payment. It carries an id and is the
// payment named. Create's answer (named "") carries a rail0_id.
func CheckPaymentAnswer(p PaymentAnswer, named string) error {
	return run(ArtPaymentAnswer, &paymentAnswerCase{p: p, named: named})
}

// OnFile is a payment read back to reconcile PUT .../sign. It holds its
// terms, checked against the pins, its status, and whether signed_at is
// set.
type OnFile struct {
	Terms    *Terms
	Status   string
	SignedAt bool
}

// CheckSignatureOnFile runs the rows of ArtSignatureOnFile. read is the
// payment named, read back. checked is the terms the signature was made
// for. It must be the same payment, signed. signature (0x hex) must be the
// payer's authorization, digest. A nil digest is never reconciled: unknown
// says why the client has none.
func CheckSignatureOnFile(named string, checked *Terms, read OnFile, signature string, digest *Word, unknown string) error {
	return run(ArtSignatureOnFile, &onFileCase{named: named, checked: checked, read: read.Terms, status: read.Status, signedAt: read.SignedAt,
		signature: signature, digest: digest, unknown: unknown})
}
