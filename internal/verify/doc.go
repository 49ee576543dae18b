// Package verify holds the SDK's checks of what the gateway hands over for
// signing. They are pure functions, with no client and no I/O. Every check
// is a row of one registry, Checks (checks.go): the artifact, the field,
// the function. The entry points read an artifact and run its rows:
//   - a payment's terms and config_hash (terms.go);
//   - the signing payloads (payload.go);
//   - the unsigned transactions (transaction.go);
//   - the answers and rows that reconcile a write.
//
// Every artifact is read by one strict JSON reader (json.go). The EVM
// encoding they need is evm.go and tx.go. What the checks take as given is
// trust.go: the pinned contracts, tokens and decimals, and the bounds on
// gas.
//
// It is internal on purpose. The root package exposes the checks once, as
// PaymentsService.VerifyPayload and VerifyTransaction, for callers who
// sign elsewhere. They sit beside the flows that run them. A public
// package would be a second way to do the same thing, with a second set of
// types. Its refusals are its own: *Mismatch, *Untrusted, *Invalid. The
// root turns each into its exported error: *rail0.ArtifactError,
// *rail0.UntrustedError, *rail0.ValidationError. So those keep their
// documentation in the package users read.
package verify
