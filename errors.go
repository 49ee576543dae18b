package rail0

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Sentinel errors, matched with errors.Is. Callers branch on them without a
// type assertion:
//
//	if errors.Is(err, rail0.ErrRateLimited) { ... }
//
// The first five match an *APIError by status, or an *OutcomeUnknownError.
var (
	// ErrRateLimited matches a 429 answer.
	ErrRateLimited = errors.New("rail0: rate limited")
	// ErrUnauthorized matches a 401 answer. The token is absent, malformed,
	// expired or revoked.
	ErrUnauthorized = errors.New("rail0: unauthorized")
	// ErrForbidden matches a 403 answer: signed in, but not allowed to do
	// this.
	ErrForbidden = errors.New("rail0: forbidden")
	// ErrNotFound matches a 404 answer.
	ErrNotFound = errors.New("rail0: not found")
	// ErrOutcomeUnknown matches an *OutcomeUnknownError. The gateway may or
	// may not have executed a write.
	ErrOutcomeUnknown = errors.New("rail0: outcome unknown")

	// ErrArtifactMismatch matches an *ArtifactError with errors.Is.
	ErrArtifactMismatch = errors.New("rail0: gateway artifact does not match the request")
	// ErrUntrusted matches an *UntrustedError with errors.Is.
	ErrUntrusted = errors.New("rail0: neither the registry nor the client's pins trust it")
	// ErrUnbound is returned when nothing binds a flow to the payment the
	// caller meant. It comes inside a *FlowError at StepVerify. Acting on the
	// gateway's word alone could then pay someone else. PayerSign needs its
	// Create's record or the order's terms in Expect. Refund needs
	// Expect.Payer or a rail0_id from the caller's own order record, stored
	// at checkout. VerifyPayload and VerifyTransaction bind likewise. Nothing
	// was read or signed. The message says how to bind the flow.
	ErrUnbound = errors.New("rail0: nothing binds the flow to the payment you meant")
	// ErrBadSignature is returned when a Signer's answer is not a valid
	// signature by its own address over the digest it was given.
	ErrBadSignature = errors.New("rail0: signer returned an invalid signature")
	// ErrNoSigner is returned by a flow on a client created without
	// WithSigner.
	ErrNoSigner = errors.New("rail0: the client has no signer (WithSigner)")
	// ErrNoSession is returned by Client.Session for a client that does not
	// sign in by itself: no WithSigner, or a WithToken or WithTokenSource
	// given.
	ErrNoSession = errors.New("rail0: the client does not sign in by itself (WithSigner)")
	// ErrNoUnsignedTransaction is returned (inside a *FlowError) when a
	// prepare answer carries no unsigned_transaction to sign.
	ErrNoUnsignedTransaction = errors.New("rail0: prepared transaction has no unsigned_transaction")
	// ErrNotSignable is returned (inside a *FlowError) by PayerSign when the
	// payment is neither waiting for the payer's signature nor signed.
	ErrNotSignable = errors.New("rail0: payment is not waiting for the payer signature")
	// ErrSigningPayloadUnavailable is returned (inside a *FlowError) by
	// PayerSign when the payment stays unsigned but its signing_payload is
	// still null after the re-reads. The gateway could not reach a node to
	// build it.
	ErrSigningPayloadUnavailable = errors.New("rail0: signing_payload is still unavailable")

	// ErrTransactionFailed matches a *TransactionFailedError with errors.Is.
	ErrTransactionFailed = errors.New("rail0: transaction failed")
	// ErrUnknownTransaction is returned by WaitForTransaction when the
	// payment has no transaction with the awaited id.
	ErrUnknownTransaction = errors.New("rail0: payment has no such transaction")
)

// ErrorCode is the gateway's machine-readable error code. The gateway adds
// codes over time, so unknown values decode and surface unchanged. Base
// program logic on the constants below and treat others generically.
type ErrorCode string

// Known error codes (README section 9 of the gateway contract).
const (
	CodeUnauthorized               ErrorCode = "unauthorized"
	CodeForbidden                  ErrorCode = "forbidden"
	CodePayerMustBeCaller          ErrorCode = "payer_must_be_caller"
	CodeAccountRequired            ErrorCode = "account_required"
	CodeNotThePayee                ErrorCode = "not_the_payee"
	CodeNotThePayer                ErrorCode = "not_the_payer"
	CodeNotAParticipant            ErrorCode = "not_a_participant"
	CodeNotFound                   ErrorCode = "not_found"
	CodeInvalidSIWE                ErrorCode = "invalid_siwe"
	CodeInvalidNonce               ErrorCode = "invalid_nonce"
	CodeNonceUsed                  ErrorCode = "nonce_used"
	CodeSignerMismatch             ErrorCode = "signer_mismatch"
	CodeSIWEPurposeMismatch        ErrorCode = "siwe_purpose_mismatch"
	CodeMissingParam               ErrorCode = "missing_param"
	CodeInvalidAmount              ErrorCode = "invalid_amount"
	CodeUnknownChain               ErrorCode = "unknown_chain"
	CodeUnknownToken               ErrorCode = "unknown_token"
	CodeNoActiveContract           ErrorCode = "no_active_contract"
	CodeUnsupportedPaymentMethod   ErrorCode = "unsupported_payment_method"
	CodeForeignTransactionHash     ErrorCode = "foreign_transaction_hash"
	CodeInvalidEventType           ErrorCode = "invalid_event_type"
	CodeInvalidState               ErrorCode = "invalid_state"
	CodeNotSignable                ErrorCode = "not_signable"
	CodeAlreadySigned              ErrorCode = "already_signed"
	CodeNoSignature                ErrorCode = "no_signature"
	CodeWrongMode                  ErrorCode = "wrong_mode"
	CodeNotCapturable              ErrorCode = "not_capturable"
	CodeAmountExceedsCapturable    ErrorCode = "amount_exceeds_capturable"
	CodeNotVoidable                ErrorCode = "not_voidable"
	CodeNotReleasable              ErrorCode = "not_releasable"
	CodeAuthorizationExpired       ErrorCode = "authorization_expired"
	CodeAuthorizationNotExpired    ErrorCode = "authorization_not_expired"
	CodeNotRefundable              ErrorCode = "not_refundable"
	CodeAmountExceedsRefundable    ErrorCode = "amount_exceeds_refundable"
	CodeRefundExpired              ErrorCode = "refund_expired"
	CodeAlreadyDisputed            ErrorCode = "already_disputed"
	CodeNotDisputed                ErrorCode = "not_disputed"
	CodeNothingToDispute           ErrorCode = "nothing_to_dispute"
	CodeTransactionNotOverwritable ErrorCode = "transaction_not_overwritable"
	CodeConfigHashMismatch         ErrorCode = "config_hash_mismatch"
	CodePaymentNotOnChain          ErrorCode = "payment_not_on_chain"
	CodeUnsupportedContractVersion ErrorCode = "unsupported_contract_version"
	CodeContractRevert             ErrorCode = "contract_revert"
	CodeNotPayee                   ErrorCode = "not_payee"
	CodeNotPayer                   ErrorCode = "not_payer"
	CodeNotPayerOrPayee            ErrorCode = "not_payer_or_payee"
	CodeAlreadyCaptured            ErrorCode = "already_captured"
	CodeTokenNotAccepted           ErrorCode = "token_not_accepted"
	CodePaymentAlreadyExists       ErrorCode = "payment_already_exists"
	CodeRevert                     ErrorCode = "revert"
	CodeInsufficientTokenBalance   ErrorCode = "insufficient_token_balance"
	CodeInvalidTokenSignature      ErrorCode = "invalid_token_signature"
	CodeAuthorizationAlreadyUsed   ErrorCode = "authorization_already_used"
	CodeAuthorizationNotYetValid   ErrorCode = "authorization_not_yet_valid"
	CodeTokenAccountBlocked        ErrorCode = "token_account_blocked"
	CodeTokenPaused                ErrorCode = "token_paused"
	CodeInsufficientGasFunds       ErrorCode = "insufficient_gas_funds"
	CodeNonceTooLow                ErrorCode = "nonce_too_low"
	CodeReplacementUnderpriced     ErrorCode = "replacement_underpriced"
	CodeGasPriceTooLow             ErrorCode = "gas_price_too_low"
	CodeAlreadyKnown               ErrorCode = "already_known"
	CodeRPCUnavailable             ErrorCode = "rpc_unavailable"
	CodeRateLimited                ErrorCode = "rate_limited"
)

// hints holds the next step for every code the contract names (README
// section 9 of the gateway guide). It uses the guide's words where the
// guide gives one. TestEveryContractCodeHasAHint fails for a code added to
// the contract without a hint.
var hints = map[ErrorCode]string{
	CodeRateLimited:                "wait RetryAfter before sending again; background jobs can enable WithRetryOn429",
	CodeUnauthorized:               "sign in again (nonce, SIWE, POST /auth): the token is missing, expired or revoked",
	CodeForbidden:                  "use a session of the party or account that owns this resource",
	CodePayerMustBeCaller:          "set payer to the address of the signed-in session",
	CodeAccountRequired:            "sign in with an address that belongs to a merchant account",
	CodeNotThePayee:                "call this with the payee's session",
	CodeNotThePayer:                "call this with the payer's session",
	CodeNotAParticipant:            "call this with the payer's or the payee's session",
	CodeNotFound:                   "check the id; payment routes take the UUID or the rail0_id",
	CodeInvalidSIWE:                "build the sign-in message in the exact EIP-4361 layout, blank lines included",
	CodeInvalidNonce:               "request a fresh nonce (POST /auth/nonces) and sign again",
	CodeNonceUsed:                  "request a fresh nonce: each nonce signs in once",
	CodeSignerMismatch:             "sign with the key of the address the gateway expects",
	CodeSIWEPurposeMismatch:        "use the login statement for POST /auth and the wallet statement for wallet registration",
	CodeMissingParam:               "send the parameter named in the error detail",
	CodeInvalidAmount:              "send a positive human decimal with no more digits than the token's decimals",
	CodeUnknownChain:               "pick a chain id listed by GET /blockchains",
	CodeUnknownToken:               "pick a token listed by GET /tokens for that chain",
	CodeNoActiveContract:           "choose a chain with a live RAIL0 deployment",
	CodeUnsupportedPaymentMethod:   "the payee must accept this token on this chain (see GET /payment_methods)",
	CodeForeignTransactionHash:     "report the hash of the transaction prepared for this payment",
	CodeNotSignable:                "only an unsigned payment takes the payer signature",
	CodeAlreadySigned:              "the payer signature is on file; go on with authorize or charge",
	CodeNoSignature:                "have the payer sign the signing_payload first (PUT /payments/{id}/sign)",
	CodeWrongMode:                  "use authorize for escrow payments and charge for one-step payments",
	CodeNotCapturable:              "capture needs an authorized or partially captured payment",
	CodeAmountExceedsCapturable:    "lower the amount to at most capturable_amount",
	CodeNotVoidable:                "void only works before any capture; refund instead",
	CodeNotReleasable:              "release works after authorization_expiry while escrow remains",
	CodeAuthorizationExpired:       "the capture window closed; release the escrow instead",
	CodeAuthorizationNotExpired:    "wait until authorization_expiry, or void as the payee",
	CodeNotRefundable:              "nothing is refundable, or the refund window is over",
	CodeAmountExceedsRefundable:    "lower the amount to at most refundable_amount",
	CodeRefundExpired:              "refund_expiry has passed; refunds and disputes are closed",
	CodeAlreadyDisputed:            "a dispute is already open on this payment",
	CodeNotDisputed:                "no dispute is open, so there is nothing to close",
	CodeNothingToDispute:           "disputes need a refundable balance held by the payee",
	CodeTransactionNotOverwritable: "wait for the step under way to confirm or fail",
	CodeInsufficientGasFunds:       "fund the sending wallet with the chain's native coin for gas",
	CodeNonceTooLow:                "prepare the step again to get a fresh account nonce",
	CodeGasPriceTooLow:             "prepare the step again to get current fees",
	CodeReplacementUnderpriced:     "wait for the pending transaction or prepare again",
	CodeRPCUnavailable:             "nothing was sent; retry later",
	CodeInvalidEventType:           "only the chain indexer calls /sync: send an event_type it recognises",
	CodeInvalidState:               "the payment's state forbids this step: read the payment (status, capturable_amount, refundable_amount) and act on the specific code",
	CodeConfigHashMismatch:         "the gateway's record and the payment's on-chain configuration disagree: sign nothing for it and report the request id to the gateway's operator",
	CodePaymentNotOnChain:          "the contract does not know this payment yet: wait for its authorize or charge to confirm before the next step",
	CodeUnsupportedContractVersion: "this gateway does not serve the payment's contract version: act on it through a gateway that does",
	CodeContractRevert:             "the contract refused the call: act on the specific code; the payment is unchanged",
	CodeNotPayee:                   "the contract takes this step only from the payee: sign the transaction with the payee's key",
	CodeNotPayer:                   "the contract takes this step only from the payer: sign the transaction with the payer's key",
	CodeNotPayerOrPayee:            "the contract takes a release only from the payer or the payee: sign it with one of their keys",
	CodeAlreadyCaptured:            "something was captured, so void is impossible: refund what was captured, or release the rest after authorization_expiry",
	CodeTokenNotAccepted:           "this chain's RAIL0 deployment does not accept the token (its allowlist is fixed): pay with a token it accepts",
	CodePaymentAlreadyExists:       "the payment is already on chain: read it before sending its authorize or charge again",
	CodeRevert:                     "the contract refused the call for a reason the gateway could not decode: read the payment and check the step is allowed before preparing again",
	CodeInsufficientTokenBalance:   "the paying wallet holds too little of the token: fund it, then prepare the step again",
	CodeInvalidTokenSignature:      "the token authorization does not recover to the paying wallet: sign the signing_payload with its key (the payer's; the payee's for a refund)",
	CodeAuthorizationAlreadyUsed:   "that token authorization was spent or cancelled: read the payment, the step it paid for may have run already",
	CodeAuthorizationNotYetValid:   "the token authorization's validAfter has not come yet: wait for it, then prepare the step again",
	CodeTokenAccountBlocked:        "the token's issuer blocks the payer's or the payee's wallet: no step can move this token for it",
	CodeTokenPaused:                "the token's issuer paused transfers: prepare the step again once they resume",
	CodeAlreadyKnown:               "the identical transaction is already pending: wait for it (WaitForTransaction) instead of sending it again",
}

// APIError is a non-2xx answer from the gateway. Every such answer becomes
// an *APIError through one path, even when retries ran out and even at zero
// retries. So the status, code, request id and RetryAfter are always there.
//
// It carries what a caller acts on. The story of the call is in its
// transcript, Call: its attempts, the retry decisions, the rate-limit
// state. The fields that moved there:
//   - Attempts is len(Call.Attempts).
//   - NotRetried is Call.NotRetried().
//   - RetryRefused is a limit among those reasons: ReasonAllowance,
//     ReasonDeadline, ReasonMaxRetries or ReasonRetryBudget on the last
//     attempt (which is then Refused), or ReasonLimiter.
//   - RateLimit is the last attempt's RateLimit.
type APIError struct {
	// StatusCode is the HTTP status of the final response.
	StatusCode int
	// Code is the precise condition: the first non-empty of the body's
	// code, error and status fields. It is empty when the body carried
	// none.
	Code ErrorCode
	// Category is the older broad category (the body's status field), such
	// as invalid_state or contract_revert.
	Category string
	// Title is a brief heading.
	Title string
	// Detail is the human text (detail, then message, then "HTTP <status>").
	Detail string
	// RetryAfter is the server's Retry-After instruction on this response,
	// uncapped. It is zero when absent, zero, negative or unparseable.
	RetryAfter time.Duration
	// RequestID is the X-Request-Id of the response, for support requests.
	RequestID string
	// Method and Path identify the call. Path is relative to the base URL,
	// without the query.
	Method string
	Path   string
	// NotSent is true when the SDK answered this 429 itself without sending
	// the request. The rate-limit partition was cooling down, or its pacing
	// budget spent, for longer than the call may wait. Or, for a call with
	// RetryOn429 off, the gateway had said the partition is closed.
	// RetryAfter is then the wait that was left.
	NotSent bool
	// Location is the Location header of a redirect (a 3xx answer). The SDK
	// never follows redirects, since following one would carry the bearer
	// token to wherever it points. The gateway itself never redirects. So
	// one means the base URL is wrong (for example http instead of https),
	// or a proxy is in the way.
	Location string
	// Header holds the response headers.
	Header http.Header
	// Body is the raw response body, at most 1 MiB, kept for diagnosis: for
	// example the HTML page of a proxy.
	Body []byte
	// Call is the transcript of the call that returned this answer.
	Call *Call

	cause error // the context error when the call was cut short
	// clockOffset is the client's learned ClockOffset when the answer came.
	// It is kept for the hint of an invalid_siwe.
	clockOffset time.Duration
	// noCredentials marks a 401 to a client with no signer, token or token
	// source. The gateway cannot know why, so Error and Hint say it.
	noCredentials bool
}

// RetryAfterHeader returns RetryAfter as the value of an HTTP Retry-After
// header. It gives whole seconds, at least 1, rounded up so that the caller
// comes back no sooner than the gateway said. It is for a handler that
// passes a 429 on to its own caller:
//
//	w.Header().Set("Retry-After", apiErr.RetryAfterHeader())
func (e *APIError) RetryAfterHeader() string {
	secs := int64(e.RetryAfter / time.Second)
	if e.RetryAfter%time.Second > 0 {
		secs++
	}
	return strconv.FormatInt(max(secs, 1), 10)
}

// noCredentialsHint is the next step after a 401 to a client that sent no
// token because it has none. The gateway's answer names no option.
const noCredentialsHint = "the client has no credentials: create it WithSigner (or WithToken, WithTokenSource)"

// Error returns one readable line.
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("rail0: ")
	b.WriteString(e.Method)
	b.WriteByte(' ')
	b.WriteString(e.Path)
	b.WriteString(": ")
	b.WriteString(strconv.Itoa(e.StatusCode))
	if e.Code != "" {
		b.WriteByte(' ')
		b.WriteString(oneLine(string(e.Code)))
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(oneLine(e.Detail))
	}
	if e.RetryAfter > 0 {
		b.WriteString(" (retry after ")
		b.WriteString(e.RetryAfter.String())
		b.WriteByte(')')
	}
	if n := attemptsOf(e.Call); n > 1 {
		fmt.Fprintf(&b, " after %d attempts", n)
	}
	if e.RequestID != "" {
		b.WriteString(" [request_id ")
		b.WriteString(oneLine(e.RequestID))
		b.WriteByte(']')
	}
	if e.noCredentials {
		b.WriteString(" (" + noCredentialsHint + ")")
	}
	if e.cause != nil {
		b.WriteString(": ")
		b.WriteString(e.cause.Error())
	}
	return b.String()
}

// Is reports whether target is the sentinel for e's status. So
// errors.Is(err, ErrRateLimited) holds for any 429.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrRateLimited:
		return e.StatusCode == http.StatusTooManyRequests
	case ErrUnauthorized:
		return e.StatusCode == http.StatusUnauthorized
	case ErrForbidden:
		return e.StatusCode == http.StatusForbidden
	case ErrNotFound:
		return e.StatusCode == http.StatusNotFound
	}
	return false
}

// Unwrap returns the context error of a call cut short while it waited to
// retry, and nil otherwise. So errors.Is(err, context.Canceled) holds next
// to errors.As(err, &apiErr).
func (e *APIError) Unwrap() error { return e.cause }

// Hint returns an actionable next step, or "" when there is none. Every
// code the contract names has one. A 401 to a client with no credentials
// names WithSigner.
func (e *APIError) Hint() string {
	if e.StatusCode == http.StatusTooManyRequests {
		return hints[CodeRateLimited]
	}
	if e.noCredentials {
		return noCredentialsHint
	}
	if e.Code == CodeInvalidSIWE && e.clockOffset.Abs() >= clockHintOffset {
		return clockHint(e.clockOffset)
	}
	return hints[e.Code]
}

// clockHint is the hint of an invalid_siwe when the local clock is off by
// offset. The gateway refuses an Issued At too far from its own time. A
// local clock that far off produces one.
func clockHint(offset time.Duration) string {
	side := "behind"
	if offset < 0 {
		side = "ahead of"
	}
	return "the local clock is about " + offset.Abs().Round(time.Second).String() + " " + side +
		" the gateway's (by the Date of its answers): date Issued At by the gateway's clock (Login does; add Client.ClockOffset to a message built by hand) and fix the system clock (NTP); " +
		hints[CodeInvalidSIWE]
}

// OutcomeUnknownError is returned when a write that must not run twice may
// or may not have been executed. Read the resource, or replay with the same
// IdempotencyKey, to learn what happened.
//
// Either the connection failed after the request was written, or the
// answer does not prove that the write did not run. Only a 429 and a 4xx in
// the gateway's own error envelope prove it. A proxy may have written any
// other answer after the gateway ran the request:
//   - any 5xx, 520, 524 and 507 included;
//   - a 3xx or a 408;
//   - a 4xx without the envelope (a proxy's 401, say);
//   - a 2xx whose body is not the promised JSON (an HTML page, an empty
//     body).
//
// Which writes must not run twice is decided per operation. They are:
// submitting a signed transaction, rotating a webhook secret, creating a
// webhook or a wallet, and creating a payment. The SDK repeats a payment's
// creation only with the same Idempotency-Key.
type OutcomeUnknownError struct {
	Method string
	Path   string
	// IdempotencyKey is the key the request carried, if any. Replaying the
	// call with it is safe.
	IdempotencyKey string
	// Err is the last failure: the *APIError of the last answer, the
	// *DecodeError of a 2xx that could not be read, or the transport error.
	Err error
	// Call is the transcript of the call. len(Call.Attempts) is how many
	// attempts it sent.
	Call *Call
}

// Error returns one readable line.
func (e *OutcomeUnknownError) Error() string {
	s := fmt.Sprintf("rail0: %s %s: outcome unknown after %d attempt(s)", e.Method, e.Path, attemptsOf(e.Call))
	if e.Err != nil {
		s += ": " + errorText(e.Err)
	}
	return s
}

// Is makes errors.Is(err, ErrOutcomeUnknown) hold.
func (e *OutcomeUnknownError) Is(target error) bool { return target == ErrOutcomeUnknown }

// Unwrap returns the last failure, so errors.As can reach an *APIError.
func (e *OutcomeUnknownError) Unwrap() error { return e.Err }

// ReconcileError reports a write whose work the payment read back does not
// show. The gateway called the write done already, or its outcome was
// unknown. The claims are:
//   - a payer signature on file (already_signed, not_signable);
//   - a transaction known (already_known, nonce_too_low,
//     transaction_not_overwritable, a report by hash refused 422).
//
// The claim is false (a proxy's, say), or the work on file is another's. It
// is no success: nothing shows that what this call sent is on file. Read
// the payment before sending anything again. It unwraps to the write's
// failure (errors.As finds its *APIError). It also unwraps to the read's,
// if the read failed.
type ReconcileError struct {
	// PaymentID is the payment as the caller named it.
	PaymentID string
	// Operation is the step; empty for the payer's signature.
	Operation Operation
	// Reason says what the payment read back showed (`status is "unsigned"
	// …`), or that the read failed.
	Reason string
	// Err is the write's failure.
	Err error
	// ReadErr is the read's failure, when the payment could not be read.
	ReadErr error
}

// Error returns one readable line.
func (e *ReconcileError) Error() string {
	what := "payer signature"
	if e.Operation != "" {
		what = string(e.Operation)
	}
	s := fmt.Sprintf("rail0: %s of payment %s is not known to be done: %s; read back: %s",
		what, oneLine(e.PaymentID), errorText(e.Err), oneLine(e.Reason))
	if e.ReadErr != nil {
		s += ": " + errorText(e.ReadErr)
	}
	return s
}

// Unwrap returns the write's failure and the read's.
func (e *ReconcileError) Unwrap() []error {
	if e.ReadErr == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.ReadErr}
}

// TransportError is a failure that left no answer from the gateway. It
// comes on a call whose outcome does not matter or is known: a read, or a
// request that was provably never sent (the connection could not be
// opened).
type TransportError struct {
	Method string
	Path   string
	// Sent is false when the request provably never left the client (dial
	// or DNS failure), so nothing was executed.
	Sent bool
	Err  error
	// Call is the transcript of the call: its attempts, and why the failure
	// was not retried. Call.NotRetried is empty when the context ended.
	Call *Call
}

// Error returns one readable line.
func (e *TransportError) Error() string {
	state := "request failed"
	if !e.Sent {
		state = "request not sent"
	}
	return fmt.Sprintf("rail0: %s %s: %s after %d attempt(s): %s", e.Method, e.Path, state, attemptsOf(e.Call), errorText(e.Err))
}

// attemptsOf is the number of requests a call sent, or zero without a
// transcript.
func attemptsOf(call *Call) int {
	if call == nil {
		return 0
	}
	return len(call.Attempts)
}

// Unwrap returns the underlying error (a *url.Error, a net error or a
// context error).
func (e *TransportError) Unwrap() error { return e.Err }

// DecodeError is a 2xx answer whose body is not the JSON the contract
// promises. It may be an HTML page from a proxy, or truncated JSON. The
// request was executed, and StatusCode says how.
type DecodeError struct {
	Method      string
	Path        string
	StatusCode  int
	RequestID   string
	ContentType string
	// Body is the start of the body (at most 1 KiB), for diagnosis. It is
	// nil for the operations whose answer carries a credential: sign-in,
	// webhook creation and secret rotation. It is nil for Client.Raw too,
	// which cannot tell whether it does. So the error cannot leak it.
	Body []byte
	Err  error
	// Call is the transcript of the call.
	Call *Call
}

// Error returns one readable line.
func (e *DecodeError) Error() string {
	return fmt.Sprintf("rail0: %s %s: %d response with an undecodable %q body: %s",
		e.Method, e.Path, e.StatusCode, e.ContentType, errorText(e.Err))
}

// Unwrap returns the decoding error.
func (e *DecodeError) Unwrap() error { return e.Err }

// ValidationError is a request refused by the SDK before anything was sent.
// A required field is missing or malformed.
type ValidationError struct {
	Field  string
	Reason string
}

// Error returns one readable line.
func (e *ValidationError) Error() string {
	return "rail0: invalid " + e.Field + ": " + e.Reason
}

// errorBody is the gateway's error envelope, with its older fields.
type errorBody struct {
	Code    string `json:"code"`
	Title   string `json:"title"`
	Detail  string `json:"detail"`
	Status  string `json:"status"`
	Message string `json:"message"`
	Error   string `json:"error"`
}

// newAPIError builds the error for a non-2xx response from its status,
// headers and body. The body may be empty, not JSON, or truncated. It never
// fails.
func newAPIError(st *callState, status int, header http.Header, body []byte, now time.Time) *APIError {
	e := &APIError{
		StatusCode: status,
		RequestID:  requestID(header),
		Method:     st.method,
		Path:       st.path,
		Header:     header,
		Body:       body,
	}
	if ra, ok := retryAfterOf(header, now); ok {
		e.RetryAfter = ra
	}
	if st.c != nil {
		e.clockOffset = st.c.clock.offset()
	}
	var eb errorBody
	if len(body) > 0 && json.Unmarshal(body, &eb) == nil {
		e.Code = ErrorCode(firstNonEmpty(eb.Code, eb.Error, eb.Status))
		e.Category = eb.Status
		e.Title = eb.Title
		e.Detail = firstNonEmpty(eb.Detail, eb.Message)
	}
	if status >= 300 && status <= 399 {
		e.Location = header.Get("Location")
		if e.Detail == "" {
			e.Detail = "HTTP " + strconv.Itoa(status) + " redirect, not followed"
		}
	}
	if e.Detail == "" {
		e.Detail = "HTTP " + strconv.Itoa(status)
	}
	return e
}

// withCause returns a copy of e that unwraps to the context error cause.
func (e *APIError) withCause(cause error) *APIError {
	c := *e
	c.cause = cause
	return &c
}

func firstNonEmpty(v ...string) string {
	for _, s := range v {
		if strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
}

// oneLine returns s as one line that is safe to print on a terminal and in
// a log line. It is applied to every piece of gateway text that an Error(),
// a transcript or a log line quotes. Whatever sits between the SDK and the
// gateway decides that text:
//   - an ANSI escape in a detail could recolour, erase or retitle the
//     terminal that prints the error;
//   - a U+2028 or a newline could forge a second log record;
//   - a U+202E could display a reversed reading of a value.
//
// Runs of white space become one space, and the ends are trimmed. Line and
// paragraph separators count as white space (CR, LF, TAB, NEL, U+2028,
// U+2029). Every other rune a terminal or a log viewer would act on,
// instead of showing it, is written as a Go escape (\x1b, \u202e). Those
// are C0 and C1 controls, DEL, ESC and bytes that are not UTF-8. So are
// format characters: bidi overrides and isolates, zero-width characters.
// An ANSI sequence thus shows as inert text. The reader still sees that
// something was sent, and nothing is interpreted. Printable ASCII, the
// common case, is returned as is.
//
// The typed fields (APIError.Detail, TransactionFailedError.Code, ...) keep
// the raw text for programs.
func oneLine(s string) string {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	var b strings.Builder
	space := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			writeSpace(&b, &space)
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsSpace(r):
			space = true
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
			writeSpace(&b, &space)
			switch {
			case r < 0x100:
				fmt.Fprintf(&b, `\x%02x`, r)
			case r <= 0xffff:
				fmt.Fprintf(&b, `\u%04x`, r)
			default:
				fmt.Fprintf(&b, `\U%08x`, r)
			}
		default:
			writeSpace(&b, &space)
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

// writeSpace writes the one space that stands for a run of white space
// before the next visible text, except at the start.
func writeSpace(b *strings.Builder, pending *bool) {
	if *pending && b.Len() > 0 {
		b.WriteByte(' ')
	}
	*pending = false
}

func errorText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return oneLine(err.Error())
}

// isContextErr reports whether err is (or wraps) a context cancellation or
// deadline.
func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// maxRequestID bounds the request id the SDK keeps. It comes from the
// answer, which may come from anything. It ends up in errors, logs,
// transcripts and spans.
const maxRequestID = 128

// requestID returns the answer's X-Request-Id, cut to maxRequestID bytes.
func requestID(h http.Header) string {
	id := h.Get("X-Request-Id")
	if len(id) > maxRequestID {
		id = id[:maxRequestID]
	}
	return id
}

// ResponseTooLargeError is a 2xx answer whose body is larger than the
// client reads (WithMaxResponseSize). It comes inside a *DecodeError, or an
// *OutcomeUnknownError on a write that must not run twice. The call is not
// repeated, since the same request would get the same answer.
type ResponseTooLargeError struct {
	// Limit is the most the client reads of a body, in bytes.
	Limit int64
	// ContentLength is the size the answer announced, or -1 when it did not.
	ContentLength int64
}

// Error returns one readable line.
func (e *ResponseTooLargeError) Error() string {
	return fmt.Sprintf("response body larger than %d bytes (WithMaxResponseSize)", e.Limit)
}
