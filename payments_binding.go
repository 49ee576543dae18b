package rail0

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rail0/rail0-go/internal/verify"
)

// This file binds a flow to the payment the caller meant. The checks of
// package internal/verify prove that what the gateway prepared agrees with
// the payment it returned, and that the payment agrees with itself
// (config_hash, pins); they cannot tell that it is the payment the caller had in mind. A gateway
// or a proxy that answers every request about payment A with payment B,
// consistent in itself, passes them all. What stops it is something the
// gateway does not choose: the rail0_id the caller names (the chain holds
// each payment's terms under its rail0_id, so a step bound to it acts on that
// payment or reverts), what the caller states it expects (Expectation), or
// what this client asked Create for.
//
// It also reconciles a repeat that the gateway refuses because the work is
// done already (a payer signature on file, a transaction already known):
// the payment is read, and the repeat is reported as a success only when the
// work found is provably this client's.

// Expectation is what the caller knows of the payment a flow acts on: its
// order. Every field that is set must match the payment the gateway returns,
// or the flow is refused before anything is prepared or signed, with an
// *ArtifactError on the payment's field inside a *FlowError at StepVerify.
// The other checks of a flow prove the payment consistent; only this, a
// rail0_id, or what this client asked Create for, proves it is the payment
// meant, against a gateway or a proxy that answers for one payment with
// another (the same merchant, another payer). A zero field is not checked.
type Expectation struct {
	// Rail0ID is the contract's id of the payment, 0x + 64 hex. The chain
	// keeps the payment's terms under it, so a step bound to it acts on
	// that payment or reverts: naming it binds a flow as fully as naming
	// the payment by it. It must come from the merchant's own order record,
	// stored at checkout (Create's answer): one read from the gateway when
	// the flow runs is whatever payment the gateway chose, and binds
	// nothing. Payer is the binding to prefer for a refund.
	Rail0ID string
	// ChainID is the payment's chain.
	ChainID int64
	// Mode is ModeAuthorize or ModeCharge. It decides whether the payer's
	// signature escrows the funds or pays the payee at once.
	Mode PaymentMode
	// Token is the token's address.
	Token string
	// Payer is the payer's address: the one a refund pays.
	Payer string
	// Payee is the payee's address: the one a charge or a capture pays.
	Payee string
	// Amount is the payment's whole amount as a human decimal ("25.00"),
	// compared in base units with the pinned decimals.
	Amount string
	// LatestAuthorizationExpiry is the latest authorization_expiry the
	// order allows: after it the payer can release an escrow's funds.
	LatestAuthorizationExpiry time.Time
	// EarliestRefundExpiry is the earliest refund_expiry the order
	// allows: refunds and disputes are possible until it.
	EarliestRefundExpiry time.Time
}

// check validates the expectation's own fields, so that a typo fails before
// any request rather than as a mismatch that looks like an attack.
func (e Expectation) check() error {
	if e.Rail0ID != "" {
		if err := checkHex("expect.rail0_id", e.Rail0ID, 32); err != nil {
			return err
		}
	}
	if e.ChainID < 0 {
		return &ValidationError{Field: "expect.chain_id", Reason: fmt.Sprintf("%d is not a chain id", e.ChainID)}
	}
	if e.Mode != "" && e.Mode != ModeAuthorize && e.Mode != ModeCharge {
		return &ValidationError{Field: "expect.mode", Reason: fmt.Sprintf("%q is neither %s nor %s", e.Mode, ModeAuthorize, ModeCharge)}
	}
	for _, f := range []struct{ field, value string }{{"token", e.Token}, {"payer", e.Payer}, {"payee", e.Payee}} {
		if f.value == "" {
			continue
		}
		if _, err := verify.ParseAddress(f.value); err != nil {
			return &ValidationError{Field: "expect." + f.field, Reason: err.Error()}
		}
	}
	if e.Amount != "" {
		return checkHumanAmount("expect.amount", e.Amount)
	}
	return nil
}

// ordersTerms reports whether e states every term the payer's signature
// commits to (Payer aside: it is the signer): what PayerSign needs to sign
// without a record of the Create.
func (e Expectation) ordersTerms() bool {
	return e.ChainID != 0 && e.Mode != "" && e.Token != "" && e.Payee != "" && e.Amount != ""
}

// checkExpected compares payment p, named id by the caller, with e. The
// amount is compared in base units: toBase converts a human amount with the
// payment's token, and is called only once the token is known to match.
func checkExpected(p *PaymentDetail, id string, e Expectation, toBase func(string) (string, error)) error {
	fail := func(field, expected, got string) error {
		return &ArtifactError{PaymentID: id, Artifact: "payment", Field: field, Expected: expected, Got: got}
	}
	if e.Rail0ID != "" {
		want, _ := verify.ParseWord(e.Rail0ID)
		if got, err := verify.ParseWord(p.Rail0ID); err != nil || got != want {
			return fail("rail0_id", e.Rail0ID, p.Rail0ID)
		}
	}
	if e.ChainID != 0 && p.ChainID != e.ChainID {
		return fail("chain_id", strconv.FormatInt(e.ChainID, 10), strconv.FormatInt(p.ChainID, 10))
	}
	if e.Mode != "" && p.Mode != e.Mode {
		return fail("mode", string(e.Mode), string(p.Mode))
	}
	for _, f := range []struct{ field, expected, got string }{
		{"token", e.Token, p.Token}, {"payer", e.Payer, p.Payer}, {"payee", e.Payee, p.Payee},
	} {
		if f.expected != "" && !sameAddress(f.expected, f.got) {
			return fail(f.field, f.expected, f.got)
		}
	}
	if latest := e.LatestAuthorizationExpiry; !latest.IsZero() && int64(p.AuthorizationExpiry) > latest.Unix() {
		return fail("authorization_expiry", "at most "+strconv.FormatInt(latest.Unix(), 10), strconv.FormatInt(int64(p.AuthorizationExpiry), 10))
	}
	if earliest := e.EarliestRefundExpiry; !earliest.IsZero() && int64(p.RefundExpiry) < earliest.Unix() {
		return fail("refund_expiry", "at least "+strconv.FormatInt(earliest.Unix(), 10), strconv.FormatInt(int64(p.RefundExpiry), 10))
	}
	if e.Amount == "" {
		return nil
	}
	base, err := toBase(e.Amount)
	if err != nil {
		return err
	}
	got, ok := new(big.Int).SetString(p.Amount, 10)
	want, _ := new(big.Int).SetString(base, 10)
	if !ok || want == nil || got.Cmp(want) != 0 {
		return fail("amount", base, p.Amount)
	}
	return nil
}

// sameAddress compares two addresses whatever their case; text that is not
// an address only equals itself, ignoring case.
func sameAddress(a, b string) bool {
	x, errA := verify.ParseAddress(a)
	y, errB := verify.ParseAddress(b)
	if errA != nil || errB != nil {
		return errA != nil && errB != nil && strings.EqualFold(a, b)
	}
	return x == y
}

// rail0IDOf reports whether id names a payment by its rail0_id (0x + 64
// hex) rather than its UUID, and returns it.
func rail0IDOf(id string) (verify.Word, bool) {
	if len(id) != 66 {
		return verify.Word{}, false
	}
	w, err := verify.ParseWord(id)
	return w, err == nil
}

// namedBy reports whether p is the payment id, as the caller typed it,
// names: its rail0_id when id is one, its UUID otherwise (ignoring case, as
// sameUUID).
func namedBy(p *PaymentDetail, id string) bool {
	if w, ok := rail0IDOf(id); ok {
		got, err := verify.ParseWord(p.Rail0ID)
		return err == nil && got == w
	}
	return sameUUID(id, p.ID)
}

// maxCreated bounds how many payments a client remembers having created
// for PayerSign; a payment signed is forgotten at once. A payment pushed out
// by newer ones is not signed unchecked: PayerSign then refuses it
// (ErrUnbound) until the caller states the order (PaymentPayerSignParams.Expect) or
// calls Create again with the order's IdempotencyKey, which the gateway
// answers with the same payment.
const maxCreated = 1024

// createdLog remembers what the caller asked Create for, by payment id, so
// that PayerSign on the same client signs those terms and no others, even
// if the gateway's later read of the payment differs from its answer to
// Create. The oldest entries go first when it is full. It lives in memory,
// on purpose: the binding that survives a restart is the caller's own
// (PaymentPayerSignParams.Expect, or Create again with the order's IdempotencyKey),
// so the SDK keeps no state on disk and a lost record fails closed.
type createdLog struct {
	recent[Expectation] // Rail0ID is Create's answer's, for lookups by rail0_id
}

func (l *createdLog) remember(id string, a Expectation) { l.put(maxCreated, id, a) }

// lookup finds the record of the payment id names (by its UUID or by its
// rail0_id) and returns it with the UUID it is kept under.
func (l *createdLog) lookup(id string) (Expectation, string, bool) {
	if a, ok := l.get(id); ok {
		return a, id, true
	}
	if w, ok := rail0IDOf(id); ok {
		key, a, ok := l.find(func(_ string, a Expectation) bool {
			got, err := verify.ParseWord(a.Rail0ID)
			return err == nil && got == w
		})
		return a, key, ok
	}
	return Expectation{}, "", false
}

// askedOf is the record Create keeps: the terms asked for, and the rail0_id
// of the gateway's answer, under which PayerSign may name the payment too.
func askedOf(params PaymentCreateParams, answer *PaymentDetail) Expectation {
	e := Expectation{ChainID: params.ChainID, Mode: params.Mode, Amount: params.Amount,
		Token: params.Token, Payer: params.Payer, Payee: params.Payee}
	if _, err := verify.ParseWord(answer.Rail0ID); err == nil {
		e.Rail0ID = answer.Rail0ID
	}
	return e
}

// unbound reports whether op would sign on the gateway's word alone what
// sends the caller's money away: the payer's signature needs the terms of
// the order (asked, this client's record of Create, or an expectation
// stating them); a refund needs its payer (a rail0_id the caller named it
// by, byRail0ID, which the chain binds to the payment's terms, or the
// expectation's Rail0ID or Payer). The flows and the low-level path
// (VerifyPayload, VerifyTransaction) share this one rule.
func unbound(op Operation, asked, byRail0ID bool, e Expectation) bool {
	switch op {
	case "":
		return !asked && !e.ordersTerms()
	case OpRefund:
		return !asked && !byRail0ID && e.Rail0ID == "" && e.Payer == ""
	}
	return false
}

// bindHow says how to bind op on payment id, whose expectation the caller
// sets in expect ("PaymentRefundParams.Expect", "Intent.Expect"); byName
// when the caller may also name the payment by its rail0_id.
func bindHow(op Operation, id, expect string, byName bool) string {
	if op == "" {
		return fmt.Sprintf("this client did not create payment %s, or no longer remembers it (a restart, a signature already made, "+
			"or more than %d payments created since): set %s to the order's ChainID, Mode, Token, Payee and Amount, "+
			"or call Create again on this client with the order's IdempotencyKey", id, maxCreated, expect)
	}
	how := fmt.Sprintf("set %s.Payer to the payer of the order (recommended), or %s.Rail0ID", expect, expect)
	if byName {
		how += " (or name the payment by it)"
	}
	// A rail0_id read from the gateway names whatever payment the gateway
	// chose: only one the caller kept before the gateway could lie binds.
	return how + " to the rail0_id stored in your own order record at checkout, never one read from the gateway at refund time"
}

// unbound is the refusal of a flow that needs a binding and has none.
func (f *flow) unbound() error {
	expect := "PaymentRefundParams.Expect"
	if f.op == "" {
		expect = "PaymentPayerSignParams.Expect"
	}
	return f.fail(StepVerify, fmt.Errorf("%w: %s; nothing was read or signed", ErrUnbound, bindHow(f.op, f.id, expect, true)))
}

// requireBinding refuses, before any request, a flow that nothing binds to
// the payment the caller meant (see unbound).
func (f *flow) requireBinding() error {
	_, byRail0ID := rail0IDOf(f.id)
	if unbound(f.op, f.asked != nil, byRail0ID, f.expect) {
		return f.unbound()
	}
	return nil
}

// bind checks that the payment read is the one the caller named and meant:
// the id or rail0_id the caller gave, the caller's expectation, and what
// this client asked Create for. It records the payment's UUID, which every
// later answer of the flow must carry.
func (f *flow) bind(p *PaymentDetail, t *verify.Terms) error {
	if !namedBy(p, f.id) {
		field, got := "id", p.ID
		if _, ok := rail0IDOf(f.id); ok {
			field, got = "rail0_id", p.Rail0ID
		}
		return &ArtifactError{PaymentID: f.id, Operation: f.op, Artifact: "payment", Field: field, Expected: f.id, Got: got}
	}
	expected := []Expectation{f.expect}
	if f.asked != nil {
		expected = append(expected, *f.asked)
	}
	if err := checkBound(p, f.id, f.op, t, expected...); err != nil {
		return err
	}
	f.paymentID, f.payment = p.ID, p
	return nil
}

// checkBound compares payment p, named id by the caller, whose terms t
// were checked, with each expectation of what the caller meant, for op.
func checkBound(p *PaymentDetail, id string, op Operation, t *verify.Terms, expected ...Expectation) error {
	toBase := func(amount string) (string, error) { return baseUnits(t, "amount", amount) }
	for _, e := range expected {
		if e == (Expectation{}) {
			continue
		}
		if err := checkExpected(p, id, e, toBase); err != nil {
			var ae *ArtifactError
			if errors.As(err, &ae) {
				ae.Operation = op
			}
			return err
		}
	}
	return nil
}

// signedAlready reconciles PayerSign's PUT .../sign that failed with cause:
// refused because a signature is on file (already_signed, not_signable: the
// answer to a repeat whose first answer was lost), or of unknown outcome.
// The payment is read again; it is reported signed only when it is the
// payment checked before signing (the same rail0_id, config_hash and mode,
// so the same authorization) and is signed (status past unsigned, signed_at
// set). The gateway stores only a signature that recovers to the payer, who
// is this client's signer, over that authorization: the signature on file
// is this signer's. Otherwise cause stands.
func (f *flow) signedAlready(ctx context.Context, checked *verify.Terms, cause error) (*PaymentDetail, bool) {
	var apiErr *APIError
	refusedAsDone := errors.As(cause, &apiErr) && apiErr.StatusCode == http.StatusUnprocessableEntity &&
		(apiErr.Code == CodeAlreadySigned || apiErr.Code == CodeNotSignable)
	if !refusedAsDone && !errors.Is(cause, ErrOutcomeUnknown) {
		return nil, false
	}
	p, t, _, err := f.read(ctx)
	if err != nil || !isSigned(p) || t.Rail0ID != checked.Rail0ID || t.ConfigHash != checked.ConfigHash || t.Mode != checked.Mode {
		return nil, false
	}
	return p, true
}

// isSigned reports whether p carries the payer's signature.
func isSigned(p *PaymentDetail) bool { return p.Status != StatusUnsigned && p.SignedAt != nil }

// reconcileSubmit reports a submit of op on payment id, failed with cause,
// as what happened when the gateway refused it because the transaction is
// known already (a repeat after a lost answer: already_known, nonce_too_low,
// transaction_not_overwritable, or a report by hash of a confirmed row, all
// 422), or when a 2xx answered it that is not the transaction (a proxy's
// page or JSON written after the gateway ran the submit, or not: see
// notTheTransaction). The payment is read, and the transaction of op that
// carries hash, the one this client signed or reported, is returned as the
// submit's result, with the read's Response. A refusal for any other reason
// leaves no such transaction, and cause stands; so does a failed read, and
// so does a 2xx whose transaction the read does not show (still an
// *OutcomeUnknownError for a submit of a signed transaction).
func (s *PaymentsService) reconcileSubmit(ctx context.Context, id string, op Operation, hash verify.Word, cause error) (*Transaction, error) {
	var apiErr *APIError
	var decodeErr *DecodeError
	refused := errors.As(cause, &apiErr) && apiErr.StatusCode == http.StatusUnprocessableEntity
	unread := errors.As(cause, &decodeErr) && decodeErr.StatusCode >= 200 && decodeErr.StatusCode <= 299
	if !refused && !unread {
		return nil, cause
	}
	p, err := s.Get(ctx, id)
	if err != nil || !namedBy(p, id) {
		return nil, cause
	}
	for i := range p.Transactions {
		tx := p.Transactions[i]
		if tx.Operation != op || tx.TransactionHash == nil {
			continue
		}
		if got, err := verify.ParseWord(*tx.TransactionHash); err == nil && got == hash {
			tx.Response = p.Response
			return &tx, nil
		}
	}
	return nil, cause
}
