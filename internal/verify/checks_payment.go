package verify

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/rail0/rail0-go/internal/evm"
)

// The rows that read a payment (checks.go lists them). They read:
//   - its terms, its anchors and its config_hash;
//   - its binding to the caller's order;
//   - the expiries a payer signs;
//   - the payment a write answers with;
//   - the payment read back to reconcile a signature on file.

// termsCase is a payment's decoded terms.
type termsCase struct{ t *Terms }

func (c *termsCase) refuse(field, expected, got, reason string) error {
	return paymentMismatch(c.t.ID, "", field, expected, got, reason)
}

func termsPayee(c *termsCase) error {
	if c.t.Payer == c.t.Payee {
		return c.refuse("payee", "", "", "equals the payer, which the contract refuses")
	}
	return nil
}

func termsAmount(c *termsCase) error {
	if c.t.Amount.Sign() == 0 {
		return c.refuse("amount", "", "", "is zero, which the contract refuses")
	}
	return nil
}

func termsAuthExpiry(c *termsCase) error {
	if c.t.AuthExpiry > c.t.RefundExpiry {
		return c.refuse("authorization_expiry", "", "", "is after refund_expiry, which the contract refuses")
	}
	return nil
}

func termsCapturable(c *termsCase) error {
	if c.t.Capturable.Cmp(c.t.Amount) > 0 {
		return c.refuse("capturable_amount", "at most "+c.t.Amount.String(), c.t.Capturable.String(), "")
	}
	return nil
}

func termsRefundable(c *termsCase) error {
	if c.t.Refundable.Cmp(c.t.Amount) > 0 {
		return c.refuse("refundable_amount", "at most "+c.t.Amount.String(), c.t.Refundable.String(), "")
	}
	return nil
}

// pinsCase is a payment's terms and the client's pins; the token row
// finds the token's pinned decimals.
type pinsCase struct {
	t        *Terms
	pins     *Pins
	decimals int64
}

func (c *pinsCase) untrusted(field, got, trusted, option string) error {
	return &Untrusted{PaymentID: c.t.ID, ChainID: c.t.ChainID.Int64(), Field: field, Got: got, Trusted: trusted, Option: option}
}

// pinsChain: the chain must have a trusted RAIL0 contract.
func pinsChain(c *pinsCase) error {
	if _, ok := c.pins.contracts[c.t.ChainID.Int64()]; !ok {
		return c.untrusted("chain_id", c.t.ChainID.String(), "", "WithTrustedContracts")
	}
	return nil
}

// pinsContract: the payment must name that contract.
func pinsContract(c *pinsCase) error {
	if want := c.pins.contracts[c.t.ChainID.Int64()]; want != c.t.Contract {
		return c.untrusted("rail0_contract", c.t.Contract.String(), want.String(), "WithTrustedContracts")
	}
	return nil
}

// pinsToken: its token must be trusted on that chain, with its decimals.
func pinsToken(c *pinsCase) error {
	decimals, ok := c.pins.decimals[TokenKey{c.t.ChainID.Int64(), c.t.Token}]
	if !ok {
		return c.untrusted("token", c.t.Token.String(), "", "WithTrustedTokens")
	}
	c.decimals = decimals
	return nil
}

// paymentCase is a payment's terms, anchored.
type paymentCase struct{ t *Terms }

// paymentConfigHash: config_hash binds every term and the contract.
func paymentConfigHash(c *paymentCase) error {
	if want := c.t.ComputeConfigHash(); want != c.t.ConfigHash {
		return paymentMismatch(c.t.ID, "", "config_hash", want.String(), c.t.ConfigHash.String(), "")
	}
	return nil
}

// Expectation is what the caller knows of a payment (rail0.Expectation):
// zero fields are not compared; Amount is a human decimal.
type Expectation struct {
	Rail0ID                                   string
	ChainID                                   int64
	Mode, Token, Payer, Payee, Amount         string
	LatestAuthorizationExpiry, EarliestRefund time.Time
}

// orderCase is a payment as the gateway returned it and the caller's
// order. id is the name the caller gave it, compared when named. expect
// is what the caller expects of it. toBase converts a human amount with
// the payment's pinned decimals, once its token is known to match.
type orderCase struct {
	p      *Payment
	id, op string
	named  bool
	expect []Expectation
	toBase func(string) (string, error)
}

func (c *orderCase) refuse(field, expected, got string) error {
	return paymentMismatch(c.id, c.op, field, expected, got, "")
}

// orderNamed: the payment is the one the caller named, by its UUID
// (ignoring case) or its rail0_id.
func orderNamed(c *orderCase) error {
	if !c.named || NamedBy(c.id, c.p.ID, c.p.Rail0ID) {
		return nil
	}
	if _, ok := Rail0IDOf(c.id); ok {
		return c.refuse("rail0_id", c.id, c.p.Rail0ID)
	}
	return c.refuse("id", c.id, c.p.ID)
}

func orderRail0ID(c *orderCase) error {
	for _, e := range c.expect {
		if e.Rail0ID == "" {
			continue
		}
		want, _ := ParseWord(e.Rail0ID)
		if got, err := ParseWord(c.p.Rail0ID); err != nil || got != want {
			return c.refuse("rail0_id", e.Rail0ID, c.p.Rail0ID)
		}
	}
	return nil
}

func orderChain(c *orderCase) error {
	for _, e := range c.expect {
		if e.ChainID != 0 && c.p.ChainID != e.ChainID {
			return c.refuse("chain_id", strconv.FormatInt(e.ChainID, 10), strconv.FormatInt(c.p.ChainID, 10))
		}
	}
	return nil
}

func orderMode(c *orderCase) error {
	for _, e := range c.expect {
		if e.Mode != "" && c.p.Mode != e.Mode {
			return c.refuse("mode", e.Mode, c.p.Mode)
		}
	}
	return nil
}

func orderToken(c *orderCase) error {
	return c.address("token", c.p.Token, func(e Expectation) string { return e.Token })
}

func orderPayer(c *orderCase) error {
	return c.address("payer", c.p.Payer, func(e Expectation) string { return e.Payer })
}

func orderPayee(c *orderCase) error {
	return c.address("payee", c.p.Payee, func(e Expectation) string { return e.Payee })
}

// address compares an address of the payment with each expectation's.
func (c *orderCase) address(field, got string, of func(Expectation) string) error {
	for _, e := range c.expect {
		if want := of(e); want != "" && !SameAddress(want, got) {
			return c.refuse(field, want, got)
		}
	}
	return nil
}

func orderAuthExpiry(c *orderCase) error {
	for _, e := range c.expect {
		if latest := e.LatestAuthorizationExpiry; !latest.IsZero() && c.p.AuthorizationExpiry > latest.Unix() {
			return c.refuse("authorization_expiry", "at most "+strconv.FormatInt(latest.Unix(), 10), strconv.FormatInt(c.p.AuthorizationExpiry, 10))
		}
	}
	return nil
}

func orderRefundExpiry(c *orderCase) error {
	for _, e := range c.expect {
		if earliest := e.EarliestRefund; !earliest.IsZero() && c.p.RefundExpiry < earliest.Unix() {
			return c.refuse("refund_expiry", "at least "+strconv.FormatInt(earliest.Unix(), 10), strconv.FormatInt(c.p.RefundExpiry, 10))
		}
	}
	return nil
}

// orderAmount compares in base units, after the token: the amount is
// converted with the decimals of the token the payment names.
func orderAmount(c *orderCase) error {
	for _, e := range c.expect {
		if e.Amount == "" {
			continue
		}
		base, err := c.toBase(e.Amount)
		if err != nil {
			return err
		}
		got, ok := new(big.Int).SetString(c.p.Amount, 10)
		want, _ := new(big.Int).SetString(base, 10)
		if !ok || want == nil || got.Cmp(want) != 0 {
			return c.refuse("amount", base, c.p.Amount)
		}
	}
	return nil
}

// expiriesCase is a payment's terms, the signer's clock and the bounds.
type expiriesCase struct {
	t   *Terms
	now time.Time
	b   ExpiryBounds
}

// at is the moment d from now, as Unix seconds, never negative.
func (c *expiriesCase) at(d time.Duration) uint64 { return uint64(max(c.now.Add(d).Unix(), 0)) }

func (c *expiriesCase) refuse(field, expected string, got uint64, d time.Duration) error {
	return paymentMismatch(c.t.ID, "", field, fmt.Sprintf("%s %d (%s from now)", expected, c.now.Add(d).Unix(), days(d)), fmt.Sprint(got), "")
}

func expiriesAuth(c *expiriesCase) error {
	if c.t.AuthExpiry > c.at(c.b.MaxAuthorization) {
		return c.refuse("authorization_expiry", "at most", c.t.AuthExpiry, c.b.MaxAuthorization)
	}
	return nil
}

func expiriesRefund(c *expiriesCase) error {
	switch {
	case c.t.RefundExpiry > c.at(c.b.MaxRefund):
		return c.refuse("refund_expiry", "at most", c.t.RefundExpiry, c.b.MaxRefund)
	case c.t.RefundExpiry < c.at(c.b.MinRefund):
		return c.refuse("refund_expiry", "at least", c.t.RefundExpiry, c.b.MinRefund)
	}
	return nil
}

// PaymentAnswer is what the rows read of a 2xx answer carrying a payment.
type PaymentAnswer struct {
	ID, Rail0ID string
}

// paymentAnswerCase is such an answer and the name the request gave the
// payment. The name is "" for Create, which names none. Create's answer
// must carry the rail0_id the gateway assigned.
type paymentAnswerCase struct {
	p     PaymentAnswer
	named string
}

// paymentAnswerID: the gateway assigns an id, and answers about the payment
// the request named.
func paymentAnswerID(c *paymentAnswerCase) error {
	switch {
	case c.p.ID == "":
		return reasonOnly(ArtPaymentAnswer, "id", "carries no payment id")
	case c.named != "" && !NamedBy(c.named, c.p.ID, c.p.Rail0ID):
		return reasonOnly(ArtPaymentAnswer, "id", "is payment %q (rail0_id %q), not %s", Clip(c.p.ID), Clip(c.p.Rail0ID), Clip(c.named))
	}
	return nil
}

// paymentAnswerRail0ID: a payment created carries the contract's id of it.
func paymentAnswerRail0ID(c *paymentAnswerCase) error {
	if _, err := ParseWord(c.p.Rail0ID); err != nil && c.named == "" {
		return reasonOnly(ArtPaymentAnswer, "rail0_id", "carries rail0_id %q, not 0x and 64 hex digits", Clip(c.p.Rail0ID))
	}
	return nil
}

// IsSigned reports whether a payment in status, with signed_at set or
// not, carries the payer's signature.
func IsSigned(status string, signedAt bool) bool { return status != "unsigned" && signedAt }

// onFileCase is a payment read back to reconcile PUT .../sign. checked
// are the terms the signature was made for. read are the terms read,
// checked against the pins. signature is what was sent. digest is the
// authorization it must sign; nil when unknown, and unknown says why.
type onFileCase struct {
	named         string
	checked, read *Terms
	status        string
	signedAt      bool
	signature     string
	digest        *Word
	unknown       string
}

func (c *onFileCase) refuse(field, expected, got, reason string) error {
	return paymentMismatch(c.read.ID, "", field, expected, got, reason)
}

// onFileNamed: the payment read is the one the request named.
func onFileNamed(c *onFileCase) error {
	if !NamedBy(c.named, c.read.ID, c.read.Rail0ID.String()) {
		return c.refuse("id", c.named, c.read.ID, "")
	}
	return nil
}

// onFileRail0ID, onFileConfigHash and onFileMode: the payment read is the
// one whose authorization was signed.
func onFileRail0ID(c *onFileCase) error {
	if c.read.Rail0ID != c.checked.Rail0ID {
		return c.refuse("rail0_id", c.checked.Rail0ID.String(), c.read.Rail0ID.String(), "")
	}
	return nil
}

func onFileConfigHash(c *onFileCase) error {
	if c.read.ConfigHash != c.checked.ConfigHash {
		return c.refuse("config_hash", c.checked.ConfigHash.String(), c.read.ConfigHash.String(), "")
	}
	return nil
}

func onFileMode(c *onFileCase) error {
	if c.read.Mode != c.checked.Mode {
		return c.refuse("mode", c.checked.Mode, c.read.Mode, "")
	}
	return nil
}

// onFileSigned: it carries a signature: status past unsigned, signed_at set.
func onFileSigned(c *onFileCase) error {
	if !IsSigned(c.status, c.signedAt) {
		at := "unset"
		if c.signedAt {
			at = "set"
		}
		return c.refuse("status", "", "", fmt.Sprintf("is %q with signed_at %s: no signature is on file", Clip(c.status), at))
	}
	return nil
}

// onFileSignature: the signature sent is the payer's authorization of
// this payment. The gateway keeps one signature and does not show it. It
// keeps only one that recovers to the payer over this authorization. That
// authorization's nonce is spent once. So a signature sent that recovers
// too authorizes exactly what is on file; one that does not is another.
func onFileSignature(c *onFileCase) error {
	if c.digest == nil {
		return c.refuse("signature", "", "", "cannot be compared with the one on file: "+c.unknown)
	}
	sig, err := DecodeSignatureHex(c.signature)
	if err != nil {
		return c.refuse("signature", "", "", "sent is not a signature ("+err.Error()+"), so the one on file is another")
	}
	if !evm.IsLowS(sig[32:64]) {
		return c.refuse("signature", "", "", "sent has a high s, which the token refuses, so the one on file is another")
	}
	got, err := evm.Recover(*c.digest, sig)
	if err != nil || Address(got) != c.read.Payer {
		return c.refuse("signature", "the payer's authorization of payment "+c.read.Rail0ID.String(), "a signature by "+Address(got).String(),
			"sent does not authorize this payment's transfer, so the one on file is another")
	}
	return nil
}

// Rail0IDOf reports whether id names a payment by its rail0_id (0x + 64
// hex) rather than its UUID, and returns it.
func Rail0IDOf(id string) (Word, bool) {
	if len(id) != 66 {
		return Word{}, false
	}
	w, err := ParseWord(id)
	return w, err == nil
}

// NamedBy reports whether id names the payment whose UUID and rail0_id
// are given: its rail0_id when id is one, else its UUID. UUIDs compare
// ignoring case (RFC 9562).
func NamedBy(id, uuid, rail0ID string) bool {
	if w, ok := Rail0IDOf(id); ok {
		got, err := ParseWord(rail0ID)
		return err == nil && got == w
	}
	return strings.EqualFold(id, uuid)
}

// SameAddress compares two addresses whatever their case; text that is
// not an address only equals itself, ignoring case.
func SameAddress(a, b string) bool {
	x, errA := ParseAddress(a)
	y, errB := ParseAddress(b)
	if errA != nil || errB != nil {
		return errA != nil && errB != nil && strings.EqualFold(a, b)
	}
	return x == y
}
