// Package rail0test runs an in-process RAIL0 gateway for tests, examples and
// local development. Think net/http/httptest, but behind it sits a faithful
// implementation of the gateway contract (openapi.json and its README). Only
// the chain is simulated.
//
// NewServer starts the gateway on a loopback port and seeds it with:
//   - a catalog: Base Sepolia (chain 84532) with a 6-decimal USDC and a
//     RAIL0 contract, and Base mainnet with USDC but no RAIL0 deployment;
//   - a demo merchant account whose payee wallet accepts that USDC;
//   - two demo key pairs, Server.Merchant and Server.Buyer.
//
// The keys are derived from fixed public seeds. They are test keys: never
// use them for real funds.
//
// # What is real
//
//   - SIWE sign-in with single-use expiring nonces, and EIP-191 recovery.
//   - HS256 JWTs with revocation.
//   - EIP-712 payloads whose payer signature is verified.
//   - EIP-1559 transactions: their signed RLP form is decoded and their
//     sender recovered.
//   - The payment state machine, with the README's state-guard error codes.
//   - Webhook deliveries signed with HMAC-SHA256, retried and logged, with a
//     circuit breaker.
//   - Analytics computed from stored payments.
//   - Rack::Attack-style rate limiting.
//
// # What is simulated: the chain
//
// A submitted transaction is "submitted" at once. It is "confirmed" when
// the server's Clock has moved past the confirmation delay
// (WithConfirmationDelay, zero by default). The effect (escrow, capture,
// refund, ...) is applied when a request next reads state. So no background
// goroutine is needed. Every address gets a faucet balance of each active
// token on first use.
//
// As on the contract, a refund that brings refundable_amount to 0 closes an
// open dispute. It does so whatever the status, even with escrow still
// capturable. The dispute is then closed_by payee, with close_reason
// keccak256("rail0.dispute.full_refund").
//
// # Artifacts
//
// Artifacts follow the RAIL0 contract interface, version 1.3.0, of the
// contract guide's section 12.1. config_hash is the EIP-712 digest of the
// payment's terms under the domain {RAIL0, 1.3.0, chain, rail0_contract}.
// The terms' EIP-712 type is:
//
//	Payment(address payer,address payee,address token,uint120 amount,uint48 authorizationExpiry,uint48 refundExpiry)
//
// The EIP-3009 payloads carry the nonces the contract derives from rail0_id
// and config_hash. A refund's nonce also derives from the refundable balance
// before it.
//
// unsigned_transaction calls one of the contract's functions: authorize,
// charge, capture, void, release, refund, dispute or closeDispute. It passes
// the Payment tuple inline. It passes the payer's or payee's v, r, s where
// the function takes them. Its value is 0. Its gas limit is the one a
// gateway estimating on the chain sets. That is what the call uses in the
// state it meets, and 60% more. The state matters (the contract guide's
// section 12.2). A deployment's first payment costs more. So does a refund
// while the contract holds none of the token. The simulated chain charges
// what the call uses. A gas limit below that runs out of gas.
//
// # Refusals
//
// A raw transaction is refused at submit, as the gateway does, in three
// cases:
//   - It cannot be decoded: 400, no body.
//   - It comes from the wrong sender: 403, the role codes.
//   - It is not a call of this step on this payment: 400 invalid_param.
//     That is another contract, an unknown selector, another operation's
//     function or another payment's id.
//
// Everything else is for the simulated chain. It decodes the calldata by the
// contract's ABI when it mines the transaction. What the EVM, the contract
// or the token would refuse, it records as a failed transaction row. The
// payment does not move, and last_error_code says why:
//   - revert: out of gas, a non-zero value, or calldata the ABI decoder
//     refuses.
//   - config_hash_mismatch: a Payment tuple other than the payment's terms.
//     It is the contract's PaymentMismatch.
//   - invalid_amount: an amount of 0.
//   - amount_exceeds_capturable and amount_exceeds_refundable.
//   - authorization_expired and refund_expired.
//   - invalid_token_signature: a v, r, s that does not recover to the paying
//     wallet. Also one whose s is in the upper half of the curve order, or
//     whose v is not 27 or 28.
//   - insufficient_token_balance.
//
// The high-s twin of a signature is refused earlier too. PUT
// /payments/{id}/sign and refund phase 2 answer 422 signer_mismatch. An
// amount beyond uint120 is refused at creation with invalid_amount.
//
// # Handles for tests
//
// Tests drive the server through handles:
//   - Clock: a ManualClock from WithClock makes time deterministic.
//   - Faults: status codes, stalls, dropped connections, truncated bodies,
//     probabilistic storms.
//   - Ledger: how many times each handler really ran, per route and
//     Idempotency-Key. That is how a client proves it never executed a write
//     twice.
//
// Close stops every goroutine the server started. Reset returns the server
// to its initial state without a new port.
//
// Clients in other languages reach the same handles over HTTP. WithControl
// mounts a control surface for them under /_rail0test/. It serves loopback
// clients only, and never a browser's request for a page of another origin:
//
//	GET    /_rail0test/clock                 {"now": RFC 3339 time}
//	POST   /_rail0test/clock/advance?by=2h   moves the clock forward ({"by": "2h"} works too)
//	POST   /_rail0test/reset                 Reset
//	GET    /_rail0test/ledger                executions as JSON; filter with route, method,
//	                                         path, idempotency_key, payment_id, operation, status
//	DELETE /_rail0test/ledger                Ledger.Reset
//	POST   /_rail0test/faults                body: a ParseFault line; answers {"id": n}
//	GET    /_rail0test/faults/{id}           {"id": n, "hits": n, "installed": bool}
//	DELETE /_rail0test/faults[/{id}]         Faults.Clear, Faults.Remove
//
// Control requests are never faulted, throttled or recorded in the Ledger.
//
// # Webhooks
//
// Webhook deliveries are sent at once, in goroutines. They are retried with
// a short real-time backoff. But X-Rail0-Timestamp comes from the server
// Clock. A receiver checking the timestamp tolerance must read the same
// clock.
//
// One deliberate deviation from the contract: webhook callback_url must be
// https, except on loopback. http URLs on 127.0.0.1, ::1 and localhost are
// accepted, so tests can receive deliveries on an httptest server.
//
// # Codes the contract leaves unnamed
//
// Where the contract leaves a refusal unnamed, the server answers with these
// codes. Clients must surface unknown codes anyway.
//   - invalid_param: a malformed or unknown filter, sort key or body field.
//   - bad_request: a body that is not JSON.
//   - invalid_payee: payee equal to payer.
//   - idempotency_key_reused: the 409 of POST /payments.
//   - transaction_not_prepared: a submit with nothing prepared.
//   - injected_fault: the default body of a Fault.
package rail0test
