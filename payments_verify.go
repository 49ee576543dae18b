package rail0

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/rail0/rail0-go/internal/verify"
)

// This file is the root's side of verification. What the gateway prepares
// is checked against the payment and the caller's request before anything
// is signed (section 12.1 of the gateway's README). Every artifact of a
// payment is fully determined by the payment's terms and the operation. So
// the SDK recomputes each field locally and refuses any difference. A
// compromised, impersonated or buggy gateway cannot get a signature for
// another amount, recipient, contract or chain.
//
// The checks themselves are pure functions in package internal/verify.
// They cover the terms and config_hash, the nonces, the payload and the
// transaction. That package also holds the strict JSON reader, the EVM
// encoding the checks need, and the pins. Here are:
//   - the errors and results a user sees;
//   - the low-level path that exposes the checks to callers who drive
//     prepare/submit themselves (PaymentsService.VerifyPayload and
//     VerifyTransaction);
//   - the one adapter between the two packages' words.
//
// The package is internal rather than public. So a low-level user has one
// way to check an artifact, the Verify methods, beside the flows (STYLE.md
// 13). Its refusals are its own small types. They are turned here into
// ArtifactError, UntrustedError and ValidationError, so that the root's
// exported errors keep their whole documentation. docs/security.md tells
// users what is checked, and where the checks live.

// ArtifactError reports a gateway artifact that differs from what the
// payment and the caller's request determine. Nothing was signed or sent.
type ArtifactError struct {
	// PaymentID is the payment the artifact belongs to.
	PaymentID string
	// Operation is the step the artifact was prepared for; empty for the
	// payer's signature.
	Operation Operation
	// Artifact names what was checked: "payment", "signing_payload",
	// "unsigned_transaction" or "transaction" (the prepared transaction's
	// row).
	Artifact string
	// Field is the field that differs, in the artifact's own names
	// ("domain.chainId", "message.value", "to", "data.amount", ...).
	Field string
	// Expected is the value the SDK computed; Got is what came.
	Expected, Got string
	// Reason explains a field that could not be compared at all
	// (malformed, missing, out of bounds).
	Reason string
}

// Error returns one readable line.
func (e *ArtifactError) Error() string {
	what := "payer signature"
	if e.Operation != "" {
		what = string(e.Operation)
	}
	return fmt.Sprintf("rail0: %s of payment %s: %s", what, oneLine(e.PaymentID), e.detail())
}

// detail is the error without the payment and operation, which a
// *FlowError around it already names.
func (e *ArtifactError) detail() string {
	msg := e.Artifact + " " + e.Field
	switch {
	case e.Reason != "":
		msg += " " + oneLine(e.Reason)
	default:
		msg += fmt.Sprintf(": expected %s, got %s", oneLine(e.Expected), oneLine(e.Got))
	}
	return msg + "; nothing was signed"
}

// Is matches ErrArtifactMismatch.
func (e *ArtifactError) Is(target error) bool { return target == ErrArtifactMismatch }

// Intent is what the caller asked for: the step and its arguments. The
// checks compare every artifact with it and with the payment.
type Intent struct {
	// Operation is the step; empty for the payer's signature of the
	// payment (PayerSign).
	Operation Operation
	// Signer is the address that will sign (and send) the artifact.
	Signer string
	// Amount is the amount asked for, for capture and refund. It is a
	// human decimal such as "10.00". VerifyPayload and VerifyTransaction
	// turn it into base units with the token's pinned decimals (the
	// registry's or WithTrustedTokens), never the gateway's listing.
	Amount string
	// Reason is the bytes32 reason of a dispute or a dispute close; empty
	// means zero.
	Reason string
	// Signature is the payee's signature of the refund authorization that
	// the refund transaction must carry (0x + 130 hex).
	Signature string
	// Expect is what the caller knows of the payment: its order. It is
	// checked against the payment exactly as a flow's params' Expect is
	// (see Expectation). The payment comes from the gateway. Only this, or
	// this client's record of the Create, tells it is the payment meant.
	//
	// The payer's signature needs the order's terms (ChainID, Mode, Token,
	// Payee and Amount), unless this client created the payment. A refund
	// needs Payer (recommended) or the Rail0ID of the merchant's own order
	// record.
	Expect Expectation
}

// VerifiedPayload is what VerifyPayload checked: the digest to sign and
// the typed data it is the EIP-712 hash of.
type VerifiedPayload struct {
	// Digest is the EIP-712 digest of TypedData, for a signer that signs
	// digests (a KMS, an HSM, a Signer).
	Digest [32]byte
	// TypedData is the EIP-712 document the digest was computed from. The
	// SDK encodes it from the checked values, never the gateway's bytes.
	// Hand this to a wallet (eth_signTypedData_v4), so that what it signs
	// is what was checked.
	TypedData json.RawMessage
}

// VerifiedTransaction is what VerifyTransaction checked: the digest to sign
// and the transaction it is the EIP-1559 signing hash of.
type VerifiedTransaction struct {
	// Digest is keccak256(0x02 ‖ rlp(Transaction's fields)), the hash the
	// sender signs.
	Digest [32]byte
	// Transaction is the checked transaction in unsigned_transaction's own
	// form: chain_id, nonce, to, value, data, gas_limit,
	// max_priority_fee_per_gas, max_fee_per_gas, from. The SDK encodes it,
	// every number a decimal string, from the checked sender. Build the
	// transaction a wallet signs or sends from this, not from the
	// gateway's string.
	Transaction json.RawMessage
}

// checkRequest checks what a VerifyPayload or VerifyTransaction call can
// be refused for without the gateway. onChain is true for
// VerifyTransaction. It checks:
//   - a payment given and well formed;
//   - an operation the method serves;
//   - a signer who may sign it;
//   - an amount, reason and signature that parse and apply to the
//     operation;
//   - a well-formed expectation.
//
// A field that does not apply is refused: a caller who set Amount for the
// payer's signature believed it checked. Nothing is fetched for a call
// refused here. It returns the payment's terms as decoded, for
// checkIntent to check against the pins. So the payment is decoded once.
func checkRequest(payment *PaymentDetail, in Intent, onChain bool) (*verify.Terms, error) {
	if payment == nil {
		return nil, &ValidationError{Field: "payment", Reason: "is required"}
	}
	t, err := verify.DecodeTerms(paymentOf(payment))
	if err != nil {
		return nil, fromVerify(err)
	}
	switch known := verify.OnChain(string(in.Operation)); {
	case onChain && !known:
		return nil, &ValidationError{Field: "operation", Reason: fmt.Sprintf("%q is not an on-chain step", in.Operation)}
	case !onChain && in.Operation != "" && in.Operation != OpRefund:
		return nil, &ValidationError{Field: "operation", Reason: fmt.Sprintf("%s has no signing payload", in.Operation)}
	}
	if who, _ := verify.Signers(t, string(in.Operation)); in.Signer != "" || len(who) != 1 {
		if _, err := checkSigner(t, in.Operation, in.Signer); err != nil {
			return nil, err
		}
	}
	if err := inapplicable(in, onChain); err != nil {
		return nil, err
	}
	switch in.Operation {
	case OpCapture, OpRefund:
		if err := checkHumanAmount("amount", in.Amount); err != nil {
			return nil, err
		}
	case OpDispute, OpCloseDispute:
		if in.Reason != "" {
			if err := checkHex("reason", in.Reason, 32); err != nil {
				return nil, err
			}
		}
	}
	if onChain && in.Operation == OpRefund {
		if _, err := verify.DecodeSignatureHex(in.Signature); err != nil {
			return nil, &ValidationError{Field: "signature", Reason: err.Error()}
		}
	}
	if err := in.Expect.check(); err != nil {
		return nil, err
	}
	return t, nil
}

// inapplicable refuses an Intent field that the operation does not use.
// Ignoring it would let a caller believe it was checked. An Amount stated
// for the payer's signature, say, bound nothing: that signature covers the
// payment's whole amount.
func inapplicable(in Intent, onChain bool) error {
	what := "the payer's signature"
	if in.Operation != "" {
		what = string(in.Operation)
	}
	refuse := func(field, hint string) error {
		return &ValidationError{Field: field, Reason: "does not apply to " + what + hint}
	}
	switch {
	case in.Amount != "" && in.Operation != OpCapture && in.Operation != OpRefund:
		hint := ""
		if in.Operation == "" {
			hint = ", which signs the payment's whole amount: state the order's amount in Expect.Amount"
		}
		return refuse("amount", hint)
	case in.Reason != "" && in.Operation != OpDispute && in.Operation != OpCloseDispute:
		return refuse("reason", "")
	case in.Signature != "" && !(onChain && in.Operation == OpRefund):
		return refuse("signature", "")
	}
	return nil
}

// baseUnits converts a human amount of t's token with the token's pinned
// decimals, which checkPayment found for t.
func baseUnits(t *verify.Terms, field, amount string) (string, error) {
	if err := checkHumanAmount(field, amount); err != nil {
		return "", err
	}
	return ToBaseUnits(amount, t.Decimals)
}

// VerifyPayload checks a signing_payload against payment and intent before
// anyone signs it. It returns the EIP-712 digest to sign, with the typed
// data it was computed from. The SDK encodes that TypedData from the
// checked values. Give a wallet the TypedData, never the gateway's
// payload.
//
// intent.Operation is empty for the payer's signature of the payment
// (payment.SigningPayload). It is OpRefund for the refund authorization of
// PrepareRefund, with intent.Amount the human refund amount.
//
// The payment's own fields are checked first: config_hash, the chain's
// trusted contract, the token's pinned decimals. Then the payment is bound
// to what the caller meant, as a flow's payment is. intent.Expect and this
// client's record of the Create must match it. The payer's signature and a
// refund need one of them, or the call fails with ErrUnbound (see
// Intent.Expect). The payer's signature has its expiries bounded as
// PayerSign bounds them (WithExpiryBounds).
//
// The payload is read strictly, at every level. These are refused:
//   - a repeated key;
//   - keys that differ only by case or Unicode folding ("Domain" beside
//     "domain");
//   - a key EIP-712 does not define.
//
// Such a payload would be read one way by encoding/json and another by a
// wallet.
//
// The errors:
//   - a mismatch is an *ArtifactError naming the field;
//   - a chain or token neither the registry nor the client's pins trust
//     is an *UntrustedError;
//   - a nil payment, or an intent that cannot be served (a field the
//     operation does not use included), is a *ValidationError.
//
// It sends no request: what it checks against is the client's own. It
// remembers the payer payloads it passed (the last 1024 payments). So
// SubmitSignature can reconcile a signature on file.
func (s *PaymentsService) VerifyPayload(ctx context.Context, payment *PaymentDetail, intent Intent, payload json.RawMessage) (*VerifiedPayload, error) {
	decoded, err := checkRequest(payment, intent, false)
	if err != nil {
		return nil, err
	}
	if err := s.requireBinding(payment, intent); err != nil {
		return nil, err
	}
	t, in, _, err := s.checkIntent(payment, decoded, intent)
	if err != nil {
		return nil, err
	}
	if in.Operation == "" {
		if err := s.client.checkExpiries(t); err != nil {
			return nil, err
		}
	}
	pc, err := checkPayload(t, in, payload)
	if err != nil {
		return nil, err
	}
	if in.Operation == "" {
		// What the wallet will sign, for SubmitSignature to reconcile a
		// signature on file with.
		s.client.payloads.remember(payment.ID, signedFor{terms: t, digest: pc.Digest})
	}
	return &VerifiedPayload{Digest: pc.Digest, TypedData: pc.TypedData()}, nil
}

// VerifyTransaction checks an unsigned_transaction against payment and
// intent before anyone signs it. The transaction was prepared for
// intent.Operation. It checks:
//   - the chain, the contract, a zero value and the sender;
//   - the account nonce;
//   - the gas bounds: gas_limit per operation and the fee per chain, or
//     WithFeeCap;
//   - the function selector, the payment id and the Payment tuple;
//   - the operation's own arguments: the amount asked for, the dispute
//     reason, the refund signature, the payer's signature.
//
// It returns the digest to sign and the transaction it was computed from,
// encoded by the SDK. Build what a wallet signs or sends from that
// Transaction, never from the gateway's string. The transaction is read as
// strictly as VerifyPayload reads a payload. The payment is bound to what
// the caller meant as VerifyPayload binds it.
//
// The errors:
//   - a mismatch is an *ArtifactError naming the field;
//   - a chain or token neither the registry nor the client's pins trust
//     is an *UntrustedError;
//   - a nil payment or an intent that cannot be served is a
//     *ValidationError.
//
// It sends no request: what it checks against is the client's own.
func (s *PaymentsService) VerifyTransaction(ctx context.Context, payment *PaymentDetail, intent Intent, unsignedTransaction string) (*VerifiedTransaction, error) {
	decoded, err := checkRequest(payment, intent, true)
	if err != nil {
		return nil, err
	}
	if err := s.requireBinding(payment, intent); err != nil {
		return nil, err
	}
	t, in, tr, err := s.checkIntent(payment, decoded, intent)
	if err != nil {
		return nil, err
	}
	tx, err := checkTransaction(t, in, unsignedTransaction, tr)
	if err != nil {
		s.client.forgetTokenDomain(t, in, tr, err)
		return nil, err
	}
	from, _ := verify.ParseAddress(in.Signer) // checkIntent has checked it
	return &VerifiedTransaction{Digest: tx.SigningHash(), Transaction: tx.Canonical(from)}, nil
}

// requireBinding refuses a payer's signature or a refund that nothing
// binds to the payment the caller meant. A flow refuses it the same way
// (flow.requireBinding). The binding is this client's record of the
// Create, or intent.Expect.
func (s *PaymentsService) requireBinding(payment *PaymentDetail, intent Intent) error {
	_, _, asked := s.client.created.lookup(payment.ID)
	if !unbound(intent.Operation, asked, false, intent.Expect) {
		return nil
	}
	return fmt.Errorf("%w: %s; nothing was signed", ErrUnbound, bindHow(intent.Operation, oneLine(payment.ID), "Intent.Expect", false))
}

// checkIntent checks the payment and readies intent for the checks. t is
// the payment's terms, as checkRequest decoded them. It:
//   - checks the terms against the pins, as checkPayment does;
//   - binds the payment to what the caller meant, as a flow's bind does:
//     intent.Expect, and this client's record of the Create;
//   - turns intent's human amount into base units.
//
// It returns the terms, the intent so completed and the trust it checked
// with.
func (s *PaymentsService) checkIntent(payment *PaymentDetail, t *verify.Terms, intent Intent) (*verify.Terms, Intent, *verify.Trust, error) {
	tr := s.client.trust()
	err := fromVerify(verify.CheckTerms(t, tr))
	if err != nil {
		return nil, intent, nil, err
	}
	expected := []Expectation{intent.Expect}
	if asked, _, ok := s.client.created.lookup(payment.ID); ok {
		expected = append(expected, asked)
	}
	if err := checkOrder(payment, payment.ID, intent.Operation, false, t, expected...); err != nil {
		return nil, intent, nil, err
	}
	if intent.Amount != "" {
		if intent.Amount, err = baseUnits(t, "amount", intent.Amount); err != nil {
			return nil, intent, nil, err
		}
	}
	// checkRequest checked a signer given, or that the role has one.
	if who, _ := verify.Signers(t, string(intent.Operation)); intent.Signer == "" && len(who) == 1 {
		intent.Signer = who[0].String() // the role determines the signer
	}
	return t, intent, tr, nil
}

// The adapter: what the checks read of the root's values, and the root's
// errors for their refusals. Every call into package verify goes through
// these.

// paymentOf is what the checks read of p.
func paymentOf(p *PaymentDetail) *verify.Payment {
	if p == nil {
		return nil
	}
	return &verify.Payment{
		ID: p.ID, Rail0ID: p.Rail0ID, ConfigHash: p.ConfigHash, Mode: string(p.Mode), ChainID: p.ChainID,
		Contract: p.Rail0Contract, Payer: p.Payer, Payee: p.Payee, Token: p.Token,
		Amount: p.Amount, CapturableAmount: p.CapturableAmount, RefundableAmount: p.RefundableAmount,
		AuthorizationExpiry: int64(p.AuthorizationExpiry), RefundExpiry: int64(p.RefundExpiry),
	}
}

// intentOf is in as the checks take it.
func intentOf(in Intent) verify.Intent {
	return verify.Intent{Operation: string(in.Operation), Signer: in.Signer, Amount: in.Amount, Reason: in.Reason, Signature: in.Signature}
}

// fromVerify turns a refusal of package verify into the root's error of the
// same meaning.
func fromVerify(err error) error {
	var m *verify.Mismatch
	var u *verify.Untrusted
	var v *verify.Invalid
	switch {
	case err == nil:
		return nil
	case errors.As(err, &m):
		return &ArtifactError{PaymentID: m.PaymentID, Operation: Operation(m.Operation), Artifact: m.Artifact,
			Field: m.Field, Expected: m.Expected, Got: m.Got, Reason: m.Reason}
	case errors.As(err, &u):
		return &UntrustedError{PaymentID: u.PaymentID, ChainID: u.ChainID, Field: u.Field, Got: u.Got, Trusted: u.Trusted, Option: u.Option}
	case errors.As(err, &v):
		return &ValidationError{Field: v.Field, Reason: v.Reason}
	}
	return err
}

// clip shortens text that came from the gateway or the caller for an error
// message, as the checks do (verify.Clip).
func clip(s string) string { return verify.Clip(s) }

// checkPayment decodes p's terms and checks them against tr:
// verify.CheckPayment. It checks the terms the contract accepts, the pins
// and config_hash.
func checkPayment(p *PaymentDetail, tr *verify.Trust) (*verify.Terms, error) {
	if p == nil {
		return nil, &ValidationError{Field: "payment", Reason: "is required"}
	}
	t, err := verify.CheckPayment(paymentOf(p), tr)
	return t, fromVerify(err)
}

// checkPayload checks a signing_payload for in against t: verify.CheckPayload.
func checkPayload(t *verify.Terms, in Intent, payload json.RawMessage) (*verify.Payload, error) {
	pc, err := verify.CheckPayload(t, intentOf(in), payload)
	return pc, fromVerify(err)
}

// checkTransaction checks an unsigned_transaction for in against t and tr:
// verify.CheckTransaction.
func checkTransaction(t *verify.Terms, in Intent, unsigned string, tr *verify.Trust) (*verify.Tx, error) {
	tx, err := verify.CheckTransaction(t, intentOf(in), unsigned, tr)
	return tx, fromVerify(err)
}

// checkSigner checks that signer may act for op on t: verify.CheckSigner.
func checkSigner(t *verify.Terms, op Operation, signer string) (verify.Address, error) {
	a, err := verify.CheckSigner(t, string(op), signer)
	return a, fromVerify(err)
}
