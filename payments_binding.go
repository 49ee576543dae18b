package rail0

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/rail0/rail0-go/internal/verify"
)

// This file binds a flow to the payment the caller meant. The checks of
// package internal/verify prove two things. What the gateway prepared
// agrees with the payment it returned. The payment agrees with itself
// (config_hash, pins). They cannot tell that it is the payment the caller
// had in mind.
//
// A gateway or a proxy may answer every request about payment A with
// payment B, consistent in itself. That passes them all. What stops it is
// something the gateway does not choose:
//   - the rail0_id the caller names: the chain holds each payment's terms
//     under its rail0_id, so a step bound to it acts on that payment or
//     reverts;
//   - what the caller states it expects (Expectation);
//   - what this client asked Create for.
//
// It also reconciles a repeat that the gateway refuses because the work is
// done already: a payer signature on file, a transaction already known.
// The payment is read. The repeat is reported as a success only when the
// work found is provably this client's.
//
// docs/security.md tells both for users ("Which payment" and "A repeat
// that finds its work done").

// Expectation is what the caller knows of the payment a flow acts on: its
// order. Every field that is set must match the payment the gateway
// returns. Otherwise the flow is refused before anything is prepared or
// signed. The error is an *ArtifactError on the payment's field, inside a
// *FlowError at StepVerify. A zero field is not checked.
//
// The other checks of a flow prove the payment consistent. Only this, a
// rail0_id, or what this client asked Create for proves it is the payment
// meant. That guards against a gateway or a proxy that answers for one
// payment with another (the same merchant, another payer).
type Expectation struct {
	// Rail0ID is the contract's id of the payment, 0x + 64 hex. The chain
	// keeps the payment's terms under it. So a step bound to it acts on
	// that payment or reverts. Setting it binds a flow as fully as naming
	// the payment by it.
	//
	// It must come from the merchant's own order record, stored at
	// checkout (Create's answer). One read from the gateway when the flow
	// runs is whatever payment the gateway chose, and binds nothing. Payer
	// is the binding to prefer for a refund.
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
	// order allows. After it the payer can release an escrow's funds.
	LatestAuthorizationExpiry time.Time
	// EarliestRefundExpiry is the earliest refund_expiry the order
	// allows. Refunds and disputes are possible until it.
	EarliestRefundExpiry time.Time
}

// check validates the expectation's own fields. So a typo fails before any
// request, rather than as a mismatch that looks like an attack.
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
// commits to. Payer is aside: it is the signer. These terms are what
// PayerSign needs to sign without a record of the Create.
func (e Expectation) ordersTerms() bool {
	return e.ChainID != 0 && e.Mode != "" && e.Token != "" && e.Payee != "" && e.Amount != ""
}

// forCheck is e as the checks take it.
func (e Expectation) forCheck() verify.Expectation {
	return verify.Expectation{Rail0ID: e.Rail0ID, ChainID: e.ChainID, Mode: string(e.Mode), Token: e.Token, Payer: e.Payer,
		Payee: e.Payee, Amount: e.Amount, LatestAuthorizationExpiry: e.LatestAuthorizationExpiry, EarliestRefund: e.EarliestRefundExpiry}
}

// rail0IDOf reports whether id names a payment by its rail0_id (0x + 64
// hex) rather than its UUID, and returns it.
func rail0IDOf(id string) (verify.Word, bool) { return verify.Rail0IDOf(id) }

// namedBy reports whether p is the payment that id, as the caller typed
// it, names. That is its rail0_id when id is one. Otherwise it is its
// UUID, ignoring case as sameUUID does.
func namedBy(p *PaymentDetail, id string) bool { return verify.NamedBy(id, p.ID, p.Rail0ID) }

// maxCreated bounds how many payments a client remembers having created
// for PayerSign. A payment signed is forgotten at once. A payment pushed
// out by newer ones is not signed unchecked. PayerSign then refuses it
// (ErrUnbound) until the caller does one of two things:
//   - states the order (PaymentPayerSignParams.Expect);
//   - calls Create again with the order's IdempotencyKey, which the
//     gateway answers with the same payment.
const maxCreated = 1024

// createdLog remembers what the caller asked Create for, by payment id.
// PayerSign on the same client then signs those terms and no others. That
// holds even if the gateway's later read of the payment differs from its
// answer to Create. The oldest entries go first when it is full.
//
// It lives in memory, on purpose. The binding that survives a restart is
// the caller's own: PaymentPayerSignParams.Expect, or Create again with
// the order's IdempotencyKey. So the SDK keeps no state on disk, and a
// lost record fails closed.
type createdLog struct {
	recent[Expectation] // Rail0ID is Create's answer's, for lookups by rail0_id
}

func (l *createdLog) remember(id string, a Expectation) { l.put(maxCreated, id, a) }

// lookup finds the record of the payment id names, by its UUID or by its
// rail0_id. It returns the record with the UUID it is kept under.
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

// askedOf is the record Create keeps. It holds the terms asked for and the
// rail0_id of the gateway's answer. PayerSign may name the payment by that
// rail0_id too.
func askedOf(params PaymentCreateParams, answer *PaymentDetail) Expectation {
	e := Expectation{ChainID: params.ChainID, Mode: params.Mode, Amount: params.Amount,
		Token: params.Token, Payer: params.Payer, Payee: params.Payee}
	if _, err := verify.ParseWord(answer.Rail0ID); err == nil {
		e.Rail0ID = answer.Rail0ID
	}
	return e
}

// unbound reports whether op would sign, on the gateway's word alone,
// what sends the caller's money away:
//   - the payer's signature needs the terms of the order: asked (this
//     client's record of Create), or an expectation stating them;
//   - a refund needs its payer. That is a rail0_id the caller named it by
//     (byRail0ID), which the chain binds to the payment's terms. Or it is
//     the expectation's Rail0ID or Payer.
//
// The flows and the low-level path (VerifyPayload, VerifyTransaction)
// share this one rule.
func unbound(op Operation, asked, byRail0ID bool, e Expectation) bool {
	switch op {
	case "":
		return !asked && !e.ordersTerms()
	case OpRefund:
		return !asked && !byRail0ID && e.Rail0ID == "" && e.Payer == ""
	}
	return false
}

// bindHow says how to bind op on payment id. expect names where the
// caller sets the expectation ("PaymentRefundParams.Expect",
// "Intent.Expect"). byName is true when the caller may also name the
// payment by its rail0_id.
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
	// chose. Only one the caller kept before the gateway could lie binds.
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

// requireBinding refuses a flow that nothing binds to the payment the
// caller meant (see unbound). It refuses before any request.
func (f *flow) requireBinding() error {
	_, byRail0ID := rail0IDOf(f.id)
	if unbound(f.op, f.asked != nil, byRail0ID, f.expect) {
		return f.unbound()
	}
	return nil
}

// bind checks that the payment read is the one the caller named and
// meant. It compares the id or rail0_id the caller gave, the caller's
// expectation, and what this client asked Create for. It records the
// payment's UUID, which every later answer of the flow must carry.
func (f *flow) bind(p *PaymentDetail, t *verify.Terms) error {
	expected := []Expectation{f.expect}
	if f.asked != nil {
		expected = append(expected, *f.asked)
	}
	if err := checkOrder(p, f.id, f.op, true, t, expected...); err != nil {
		return err
	}
	f.paymentID, f.payment = p.ID, p
	return nil
}

// checkOrder compares payment p with each expectation of what the caller
// meant, for op. The checks are the rows of verify.ArtOrder. The caller
// named p by id, which is compared when named is true. p's terms t were
// checked.
func checkOrder(p *PaymentDetail, id string, op Operation, named bool, t *verify.Terms, expected ...Expectation) error {
	toBase := func(amount string) (string, error) { return baseUnits(t, "amount", amount) }
	expect := make([]verify.Expectation, 0, len(expected))
	for _, e := range expected {
		if e != (Expectation{}) {
			expect = append(expect, e.forCheck())
		}
	}
	return fromVerify(verify.CheckOrder(paymentOf(p), id, string(op), named, toBase, expect...))
}

// signedFor is what a payer's signature was made for: the payment's terms
// as checked, and the digest signed. PayerSign knows it. SubmitSignature
// finds it in what VerifyPayload checked on this client (checkedPayloads).
type signedFor struct {
	terms  *verify.Terms
	digest verify.Word
}

// maxChecked bounds how many payer payloads a client remembers having
// checked with VerifyPayload. A payment pushed out by newer ones is
// reconciled only with a token domain the client learned.
const maxChecked = 1024

// checkedPayloads remembers the payer payloads VerifyPayload checked, by
// payment (its UUID, foldID). They are what a browser wallet was given to
// sign. SubmitSignature reconciles with it a signature on file, which the
// gateway does not show. The signature sent must be the payer's over that
// payment's authorization.
type checkedPayloads struct {
	recent[signedFor]
}

func (l *checkedPayloads) remember(id string, s signedFor) { l.put(maxChecked, foldID(id), s) }

// lookup finds what was checked of the payment id names (its UUID or its
// rail0_id).
func (l *checkedPayloads) lookup(id string) (signedFor, bool) {
	if s, ok := l.get(foldID(id)); ok {
		return s, true
	}
	if w, ok := rail0IDOf(id); ok {
		_, s, ok := l.find(func(_ string, s signedFor) bool { return s.terms.Rail0ID == w })
		return s, ok
	}
	return signedFor{}, false
}

// claimsSigned reports whether cause, the failure of PUT .../sign, says a
// signature is on file already. The codes are already_signed, and
// not_signable (the payment is past unsigned).
func claimsSigned(cause error) bool {
	var apiErr *APIError
	return errors.As(cause, &apiErr) && apiErr.StatusCode == http.StatusUnprocessableEntity &&
		(apiErr.Code == CodeAlreadySigned || apiErr.Code == CodeNotSignable)
}

// claimsKnown reports whether cause, the failure of a submit, says the
// transaction is known already. The codes are already_known,
// nonce_too_low and transaction_not_overwritable. A 422 without a code
// says so too: a report by hash of a confirmed row.
func claimsKnown(cause error) bool {
	var apiErr *APIError
	if !errors.As(cause, &apiErr) || apiErr.StatusCode != http.StatusUnprocessableEntity {
		return false
	}
	switch apiErr.Code {
	case CodeAlreadyKnown, CodeNonceTooLow, CodeTransactionNotOverwritable, "":
		return true
	}
	return false
}

// unreadAnswer reports whether cause is a 2xx that is not the resource
// promised (request.identify). It is a proxy's page or JSON, written after
// the write ran or not.
func unreadAnswer(cause error) bool {
	var decodeErr *DecodeError
	return errors.As(cause, &decodeErr) && decodeErr.StatusCode >= 200 && decodeErr.StatusCode <= 299
}

// reconcileSignature reconciles PUT .../sign of signature on payment id,
// failed with cause. It acts in three cases:
//   - the gateway says a signature is on file (claimsSigned): the answer
//     to a repeat whose first answer was lost;
//   - the outcome is unknown;
//   - a 2xx is not the payment.
//
// The payment is read back. It is returned, with Response.Reconciled, when
// it holds what this call sent (signatureOnFile). The gateway does not
// show the signature it keeps. It keeps only one that recovers to the
// payer over that authorization, whose nonce is spent once. So a signature
// sent that recovers too authorizes exactly what is on file.
//
// Otherwise a claim the read does not bear out, or another signature on
// file, is a *ReconcileError. Anything else leaves cause. signed is what
// the signature was made for, nil for SubmitSignature.
func (s *PaymentsService) reconcileSignature(ctx context.Context, id, signature string, signed *signedFor, cause error) (*PaymentDetail, error) {
	claim := claimsSigned(cause)
	if !claim && !errors.Is(cause, ErrOutcomeUnknown) && !unreadAnswer(cause) {
		return nil, cause
	}
	p, err := s.Get(ctx, id)
	if err != nil {
		if claim {
			return nil, &ReconcileError{PaymentID: id, Reason: "the read failed", Err: cause, ReadErr: err}
		}
		return nil, cause
	}
	if why := s.signatureOnFile(p, id, signature, signed); why != nil {
		if claim || isSigned(p) {
			return nil, &ReconcileError{PaymentID: id, Reason: reasonOf(why), Err: cause}
		}
		return nil, cause
	}
	p.Response.Reconciled = &Reconciliation{Err: cause}
	return p, nil
}

// signatureOnFile checks that p, read back as payment id, holds signature.
// The checks are the rows of verify.ArtSignatureOnFile, run once p's terms
// pass the client's pins. What the signature was made for is, first of
// these:
//   - signed;
//   - what VerifyPayload checked of the payment;
//   - the read's terms, with the token domain the client learned from a
//     signature the gateway accepted.
func (s *PaymentsService) signatureOnFile(p *PaymentDetail, id, signature string, signed *signedFor) error {
	tr := s.client.trust()
	t, err := checkPayment(p, tr)
	if err != nil {
		return err
	}
	var digest *verify.Word
	unknown := "this client checked no payer payload of it (VerifyPayload) and knows no EIP-712 domain of its token from a signature the gateway accepted"
	if signed == nil {
		if c, ok := s.client.payloads.lookup(id); ok {
			signed = &c
		} else if dom, ok := tr.TokenDomains[verify.TokenKey{ChainID: t.ChainID.Int64(), Token: t.Token}]; ok {
			signed = &signedFor{terms: t, digest: verify.PayerDigest(t, dom[0], dom[1])}
		}
	}
	checked := t
	if signed != nil {
		checked, digest = signed.terms, &signed.digest
	}
	read := verify.OnFile{Terms: t, Status: string(p.Status), SignedAt: p.SignedAt != nil}
	return fromVerify(verify.CheckSignatureOnFile(id, checked, read, signature, digest, unknown))
}

// isSigned reports whether p carries the payer's signature.
func isSigned(p *PaymentDetail) bool { return verify.IsSigned(string(p.Status), p.SignedAt != nil) }

// reasonOf is a refusal of a read back, as a reason: its field and what is
// wrong with it.
func reasonOf(err error) string {
	var ae *ArtifactError
	if !errors.As(err, &ae) {
		return err.Error()
	}
	if ae.Reason != "" {
		return oneLine(ae.Field + " " + ae.Reason)
	}
	return oneLine(fmt.Sprintf("%s: expected %s, got %s", ae.Field, ae.Expected, ae.Got))
}

// reconcileSubmit reconciles a submit of op on payment id, failed with
// cause. It acts on:
//   - a refusal as known already (claimsKnown): a repeat after a lost
//     answer;
//   - another 422;
//   - a 2xx that is not the transaction: a proxy's page or JSON (see
//     notTheTransaction).
//
// The payment is read. The row of op carrying hash is the submit's result
// (verify.FindSubmitted). That hash is the one this client signed or
// reported. The row carries the read's Response, with Response.Reconciled.
//
// A claim the read does not bear out is a *ReconcileError. Otherwise cause
// stands: a refusal for another reason, or a 2xx whose transaction the
// read does not show. The latter is still an *OutcomeUnknownError for a
// submit of a signed transaction.
func (s *PaymentsService) reconcileSubmit(ctx context.Context, id string, op Operation, hash verify.Word, cause error) (*Transaction, error) {
	var apiErr *APIError
	refused := errors.As(cause, &apiErr) && apiErr.StatusCode == http.StatusUnprocessableEntity
	if !refused && !unreadAnswer(cause) {
		return nil, cause
	}
	claim := claimsKnown(cause)
	p, err := s.Get(ctx, id)
	if err != nil {
		if claim {
			return nil, &ReconcileError{PaymentID: id, Operation: op, Reason: "the read failed", Err: cause, ReadErr: err}
		}
		return nil, cause
	}
	rows := make([]verify.Row, len(p.Transactions))
	for i := range p.Transactions {
		rows[i] = rowOf(&p.Transactions[i])
	}
	i, err := verify.FindSubmitted(id, p.ID, p.Rail0ID, rows, string(op), hash)
	if err != nil {
		if claim {
			return nil, &ReconcileError{PaymentID: id, Operation: op, Reason: reasonOf(fromVerify(err)), Err: cause}
		}
		return nil, cause
	}
	tx := p.Transactions[i]
	tx.Response = p.Response
	tx.Response.Reconciled = &Reconciliation{Err: cause}
	return &tx, nil
}

// rowOf is what the checks read of tx.
func rowOf(tx *Transaction) verify.Row {
	return verify.Row{ID: tx.ID, PaymentID: tx.PaymentID, Operation: string(tx.Operation), Status: string(tx.Status),
		Amount: tx.Amount, Hash: tx.TransactionHash}
}
