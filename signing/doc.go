// Package signing produces the three signatures a RAIL0 client needs, locally,
// so that keys never leave the caller:
//
//   - SignPayload signs the EIP-712 signing_payload of a payment (the payer's
//     EIP-3009 TransferWithAuthorization) or of a refund (the payee's
//     ReceiveWithAuthorization);
//   - SignTransaction signs the unsigned_transaction that every prepare call
//     returns, as an EIP-1559 (type 2) transaction;
//   - SignMessage signs a SIWE (EIP-4361) login or wallet proof with EIP-191
//     personal_sign.
//
// All three take a Signer, a two-method interface (address, sign a 32-byte
// digest) so that keys can live in an HSM or a cloud KMS; PrivateKeySigner is
// the in-memory implementation. Account adapts a Signer to the root package's
// rail0.Signer interface.
//
// # Refusing rather than guessing
//
// A signature over the wrong data still looks valid and fails only when the
// gateway or the token contract checks it, after a round trip or a paid
// transaction. So these functions validate before they sign: the payload's
// primaryType, EIP-3009 type definitions, domain and message fields, that the
// party that must sign is the signer (ErrSignerMismatch), and, on request, the
// chain (ErrChainMismatch); every field of an unsigned transaction. They also
// check that what a Signer returns recovers to its address. Refusals are typed
// (*PayloadError, *TransactionError) and match sentinels with errors.Is.
//
// # Signature encoding
//
// Signer.SignDigest returns r ‖ s ‖ v with the recovery id v in {0, 1}, the
// form go-ethereum's crypto.Sign uses. The functions that return a hex
// signature for the gateway (SignPayload, SignMessage) add 27, giving the
// r ‖ s ‖ v with v in {27, 28} that Solidity's ecrecover and personal_sign
// verifiers expect. Signed transactions carry v in {0, 1} as EIP-1559 defines.
//
// This is the only package of the module that imports go-ethereum, so programs
// that only read data from the gateway do not compile it.
package signing
