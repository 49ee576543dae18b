package verify

import "fmt"

// The package reports three kinds of refusal. The root package turns each
// into its exported counterpart: rail0.ArtifactError,
// rail0.UntrustedError, rail0.ValidationError. Their documentation is the
// user's.

// Mismatch is an artifact, or the payment itself, that differs from what
// the payment and the intent determine. It may also be one that cannot be
// compared at all.
type Mismatch struct {
	PaymentID string
	// Operation is the step the artifact was prepared for. It is empty for
	// the payer's signature.
	Operation string
	// Artifact is "payment", "signing_payload" or "unsigned_transaction".
	Artifact string
	// Field is the differing field in the artifact's own names.
	Field string
	// Expected is what the SDK computed; Got what came.
	Expected, Got string
	// Reason explains a field that could not be compared (malformed,
	// missing, out of bounds).
	Reason string
}

func (e *Mismatch) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("%s %s %s", e.Artifact, e.Field, e.Reason)
	}
	return fmt.Sprintf("%s %s: expected %s, got %s", e.Artifact, e.Field, e.Expected, e.Got)
}

// Untrusted is a payment whose chain, RAIL0 contract or token neither the
// published registry nor the client's pins vouch for.
type Untrusted struct {
	PaymentID string
	ChainID   int64
	// Field is "chain_id", "rail0_contract" or "token"; Got its value.
	Field, Got string
	// Trusted is the contract trusted on the chain, for "rail0_contract".
	Trusted string
	// Option is the client option that would trust it.
	Option string
}

func (e *Untrusted) Error() string {
	return fmt.Sprintf("%s %s is not trusted on chain %d (%s)", e.Field, e.Got, e.ChainID, e.Option)
}

// Invalid is an intent that cannot be served, whatever the gateway says.
type Invalid struct {
	Field, Reason string
}

func (e *Invalid) Error() string { return "invalid " + e.Field + ": " + e.Reason }

// fieldError is a malformed field or key of an artifact, found before
// anything can be compared. CheckTransaction and CheckPayload turn it into
// a *Mismatch.
type fieldError struct {
	field, got, reason string
}

func (e *fieldError) Error() string { return e.field + " " + e.reason }
