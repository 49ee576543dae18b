// Package verify holds the SDK's checks of what the gateway hands over for
// signing, as pure functions with no client and no I/O: a payment's terms
// and their config_hash (terms.go), the EIP-3009 nonces, the signing
// payloads (payload.go) and the unsigned transactions (transaction.go)
// recomputed field by field from the terms and the caller's intent, the
// strict JSON reader every artifact goes through (json.go), the EVM encoding
// they need (evm.go, tx.go), and what the checks take as given: the pinned
// contracts, tokens and decimals, and the bounds on gas (trust.go).
//
// It is internal on purpose. The root package exposes the checks once, as
// PaymentsService.VerifyPayload and VerifyTransaction for callers who sign
// elsewhere, beside the flows that run them: a public package would be a
// second way to do the same thing, with a second set of types. Its refusals
// are its own (*Mismatch, *Untrusted, *Invalid); the root turns each into
// its exported error (*rail0.ArtifactError, *rail0.UntrustedError,
// *rail0.ValidationError), so that those keep their documentation in the
// package users read.
package verify
