package verify

import (
	"errors"
	"fmt"
)

// This file is the registry of every check that guards a signature. It
// has one row per artifact and field, in the order the rows run. A check
// is a function of the artifact's case: the artifact as read, and what it
// must agree with. Its row names the artifact and the field it reads.
// Adding a check is one function, one row here, and one row in
// TestEveryCheckRefuses (checks_test.go). A field no check reads has a row
// too, saying why. TestEveryFieldHasARow holds the table to the contract's
// fields.
//
// The entry points (DecodeTerms, CheckTerms, CheckPayload,
// CheckTransaction, CheckOrder, CheckPrepared, …) read an artifact, build
// its case and run its rows. The flows and the low-level path
// (VerifyPayload, VerifyTransaction) call the same ones. Reading is not
// checking: a malformed field is the reader's fieldError, which only
// readRefusal here turns into a refusal. A refusal is made only in the
// files checks*.go (TestRefusalsComeFromTheTable). What the caller asks
// for is validated before any request (rail0.ValidationError,
// rail0.ErrUnbound), not here: it is no artifact.

// Artifact names what a group of rows checks: something the gateway handed
// over, compared with one thing the SDK holds. Rows of one artifact run
// together, in table order.
type Artifact string

// The artifacts, in the order a step meets them.
const (
	// Terms is a payment's terms as the contract takes them.
	ArtTerms Artifact = "payment terms"
	// ArtPins is a payment against the client's pins.
	ArtPins Artifact = "payment pins"
	// ArtPayment is a payment against its own config_hash, with the
	// rows of the fields no check reads.
	ArtPayment Artifact = "payment"
	// ArtOrder is a payment against what the caller named and meant.
	ArtOrder Artifact = "payment order"
	// ArtExpiries is a payment's expiries against the local clock: what the
	// payer's signature commits to.
	ArtExpiries Artifact = "payment expiries"
	// ArtPayload is an EIP-3009 authorization to sign.
	ArtPayload Artifact = "signing_payload"
	// ArtPreparedRow is the transaction row a prepare answers with.
	ArtPreparedRow Artifact = "transaction"
	// ArtUnsignedTx is the transaction a prepare built.
	ArtUnsignedTx Artifact = "unsigned_transaction"
	// ArtSignerAnswer is what the client's Signer returned, before it is sent.
	ArtSignerAnswer Artifact = "signature"
	// ArtSubmitAnswer is the 2xx answer to a submit or a report by hash.
	ArtSubmitAnswer Artifact = "submit answer"
	// ArtPaymentAnswer is the 2xx answer that carries a payment (Create,
	// PUT .../sign).
	ArtPaymentAnswer Artifact = "payment answer"
	// ArtSignatureOnFile is a payment read back after PUT .../sign was
	// refused as done already, or its answer lost.
	ArtSignatureOnFile Artifact = "signature on file"
	// ArtSubmittedRow is a payment read back after a submit was refused
	// as done already, or its answer lost. The rows read its row of the
	// transaction sent.
	ArtSubmittedRow Artifact = "submitted row"
	// ArtAwaitedRow is the row a wait for a step's transaction finds.
	ArtAwaitedRow Artifact = "awaited row"
)

// Check is one row of the registry.
type Check struct {
	Artifact Artifact
	// Field is the field the row reads, in the artifact's own names.
	Field string
	// Run is the check, a func(*C) error for the artifact's case C. It is
	// nil for a field no check reads, with Why saying why.
	Run func(any) error
	// Why says why a field is not checked.
	Why string
}

// rule adapts a check of the case C to a row.
func rule[C any](check func(*C) error) func(any) error {
	return func(c any) error { return check(c.(*C)) }
}

// Checks is the registry: every check that guards a signature.
var Checks = []Check{
	// A payment's terms as the contract takes them (DecodeTerms, after
	// each field is read as the type the contract gives it).
	{Artifact: ArtTerms, Field: "payee", Run: rule(termsPayee)},
	{Artifact: ArtTerms, Field: "amount", Run: rule(termsAmount)},
	{Artifact: ArtTerms, Field: "authorization_expiry", Run: rule(termsAuthExpiry)},
	{Artifact: ArtTerms, Field: "capturable_amount", Run: rule(termsCapturable)},
	{Artifact: ArtTerms, Field: "refundable_amount", Run: rule(termsRefundable)},

	// A payment against the client's pins (Pins.Anchor).
	{Artifact: ArtPins, Field: "chain_id", Run: rule(pinsChain)},
	{Artifact: ArtPins, Field: "rail0_contract", Run: rule(pinsContract)},
	{Artifact: ArtPins, Field: "token", Run: rule(pinsToken)},

	// A payment against its config_hash (CheckTerms), and the fields of a
	// payment no check reads.
	{Artifact: ArtPayment, Field: "config_hash", Run: rule(paymentConfigHash)},
	{Artifact: ArtPayment, Field: "payer", Why: "bound by config_hash; compared with the order's payer (payment order)"},
	{Artifact: ArtPayment, Field: "mode", Why: "a payer signs only authorize or charge (signing_payload mode); compared with the order's (payment order)"},
	{Artifact: ArtPayment, Field: "contract_id", Why: "the gateway's record of the contract; rail0_contract is the address signed for"},
	{Artifact: ArtPayment, Field: "status", Why: "decides which step may run, which the contract enforces on chain; a payment signed is checked when reconciling (signature on file)"},
	{Artifact: ArtPayment, Field: "disputed", Why: "a signal; no artifact depends on it"},
	{Artifact: ArtPayment, Field: "last_error_code", Why: "describes a failure; no artifact depends on it"},
	{Artifact: ArtPayment, Field: "last_error_message", Why: "describes a failure; no artifact depends on it"},
	{Artifact: ArtPayment, Field: "description", Why: "the merchant's text; no artifact depends on it"},
	{Artifact: ArtPayment, Field: "metadata", Why: "the merchant's data; no artifact depends on it"},
	{Artifact: ArtPayment, Field: "signed_at", Why: "read when reconciling a signature on file (signature on file status)"},
	{Artifact: ArtPayment, Field: "created_at", Why: "a timestamp; no artifact depends on it"},
	{Artifact: ArtPayment, Field: "updated_at", Why: "a timestamp; no artifact depends on it"},
	{Artifact: ArtPayment, Field: "transactions", Why: "each row a prepare hands back is checked as a transaction (its id not sent already)"},
	{Artifact: ArtPayment, Field: "signing_payload", Why: "an artifact of its own (signing_payload)"},

	// A payment against what the caller named and meant (CheckOrder): the
	// name it was asked by, Expectation and this client's Create.
	{Artifact: ArtOrder, Field: "id", Run: rule(orderNamed)},
	{Artifact: ArtOrder, Field: "rail0_id", Run: rule(orderRail0ID)},
	{Artifact: ArtOrder, Field: "chain_id", Run: rule(orderChain)},
	{Artifact: ArtOrder, Field: "mode", Run: rule(orderMode)},
	{Artifact: ArtOrder, Field: "token", Run: rule(orderToken)},
	{Artifact: ArtOrder, Field: "payer", Run: rule(orderPayer)},
	{Artifact: ArtOrder, Field: "payee", Run: rule(orderPayee)},
	{Artifact: ArtOrder, Field: "authorization_expiry", Run: rule(orderAuthExpiry)},
	{Artifact: ArtOrder, Field: "refund_expiry", Run: rule(orderRefundExpiry)},
	{Artifact: ArtOrder, Field: "amount", Run: rule(orderAmount)},

	// The expiries the payer's signature commits to (CheckExpiries).
	{Artifact: ArtExpiries, Field: "authorization_expiry", Run: rule(expiriesAuth)},
	{Artifact: ArtExpiries, Field: "refund_expiry", Run: rule(expiriesRefund)},

	// An EIP-3009 authorization (CheckPayload), once read strictly.
	{Artifact: ArtPayload, Field: "mode", Run: rule(payloadMode)},
	{Artifact: ArtPayload, Field: "primaryType", Run: rule(payloadPrimaryType)},
	{Artifact: ArtPayload, Field: "types.EIP712Domain", Run: rule(payloadDomainType)},
	{Artifact: ArtPayload, Field: "types.<primaryType>", Run: rule(payloadPrimaryFields)},
	{Artifact: ArtPayload, Field: "domain", Run: rule(payloadDomain)},
	{Artifact: ArtPayload, Field: "domain.name", Run: rule(payloadDomainName)},
	{Artifact: ArtPayload, Field: "domain.version", Run: rule(payloadDomainVersion)},
	{Artifact: ArtPayload, Field: "domain.chainId", Run: rule(payloadDomainChain)},
	{Artifact: ArtPayload, Field: "domain.verifyingContract", Run: rule(payloadDomainContract)},
	{Artifact: ArtPayload, Field: "message", Run: rule(payloadMessage)},
	{Artifact: ArtPayload, Field: "message.from", Run: rule(payloadFrom)},
	{Artifact: ArtPayload, Field: "message.to", Run: rule(payloadTo)},
	{Artifact: ArtPayload, Field: "message.value", Run: rule(payloadValue)},
	{Artifact: ArtPayload, Field: "message.validAfter", Run: rule(payloadValidAfter)},
	{Artifact: ArtPayload, Field: "message.validBefore", Run: rule(payloadValidBefore)},
	{Artifact: ArtPayload, Field: "message.nonce", Run: rule(payloadNonce)},

	// The row a prepare answers with (CheckPrepared).
	{Artifact: ArtPreparedRow, Field: "id", Run: rule(preparedID)},
	{Artifact: ArtPreparedRow, Field: "operation", Run: rule(preparedOperation)},
	{Artifact: ArtPreparedRow, Field: "payment_id", Run: rule(preparedPayment)},
	{Artifact: ArtPreparedRow, Field: "amount", Run: rule(preparedAmount)},
	{Artifact: ArtPreparedRow, Field: "unsigned_transaction", Why: "an artifact of its own (unsigned_transaction); a row without one is the prepare's failure, ErrNoUnsignedTransaction"},
	{Artifact: ArtPreparedRow, Field: "status", Why: "a row sent already is refused by id, with its status and hash"},
	{Artifact: ArtPreparedRow, Field: "transaction_hash", Why: "a row sent already is refused by id, with its status and hash"},
	{Artifact: ArtPreparedRow, Field: "error_code", Why: "describes a failure; nothing is signed from it"},
	{Artifact: ArtPreparedRow, Field: "error_title", Why: "describes a failure; nothing is signed from it"},
	{Artifact: ArtPreparedRow, Field: "error_detail", Why: "describes a failure; nothing is signed from it"},
	{Artifact: ArtPreparedRow, Field: "error_message", Why: "describes a failure; nothing is signed from it"},
	{Artifact: ArtPreparedRow, Field: "block_number", Why: "set once mined; nothing is signed from it"},
	{Artifact: ArtPreparedRow, Field: "gas_used", Why: "set once mined; the gas signed for is the unsigned_transaction's, bounded there"},
	{Artifact: ArtPreparedRow, Field: "gas_limit", Why: "set once mined; the gas signed for is the unsigned_transaction's, bounded there"},
	{Artifact: ArtPreparedRow, Field: "effective_gas_price", Why: "set once mined; the fee signed for is the unsigned_transaction's, bounded there"},
	{Artifact: ArtPreparedRow, Field: "base_fee_per_gas", Why: "set once mined; the fee signed for is the unsigned_transaction's, bounded there"},
	{Artifact: ArtPreparedRow, Field: "gas_cost", Why: "set once mined; the fee signed for is the unsigned_transaction's, bounded there"},
	{Artifact: ArtPreparedRow, Field: "pending_at", Why: "a timestamp; nothing is signed from it"},
	{Artifact: ArtPreparedRow, Field: "submitted_at", Why: "a timestamp; nothing is signed from it"},
	{Artifact: ArtPreparedRow, Field: "confirmed_at", Why: "a timestamp; nothing is signed from it"},
	{Artifact: ArtPreparedRow, Field: "created_at", Why: "a timestamp; nothing is signed from it"},
	{Artifact: ArtPreparedRow, Field: "updated_at", Why: "a timestamp; nothing is signed from it"},

	// The transaction a prepare built (CheckTransaction), once read
	// strictly: its fields, then its call of the RAIL0 contract.
	{Artifact: ArtUnsignedTx, Field: "nonce", Run: rule(txNonce)},
	{Artifact: ArtUnsignedTx, Field: "chain_id", Run: rule(txChain)},
	{Artifact: ArtUnsignedTx, Field: "to", Run: rule(txTo)},
	{Artifact: ArtUnsignedTx, Field: "value", Run: rule(txValue)},
	{Artifact: ArtUnsignedTx, Field: "from", Run: rule(txFrom)},
	{Artifact: ArtUnsignedTx, Field: "gas_limit", Run: rule(txGasLimit)},
	{Artifact: ArtUnsignedTx, Field: "max_priority_fee_per_gas", Run: rule(txPriorityFee)},
	{Artifact: ArtUnsignedTx, Field: "max_fee_per_gas", Run: rule(txMaxFee)},
	{Artifact: ArtUnsignedTx, Field: "data.selector", Run: rule(txSelector)},
	{Artifact: ArtUnsignedTx, Field: "data", Run: rule(txDataLength)},
	{Artifact: ArtUnsignedTx, Field: "data.paymentId", Run: rule(txPaymentID)},
	{Artifact: ArtUnsignedTx, Field: "data.p.payer", Run: rule(txTerm(0))},
	{Artifact: ArtUnsignedTx, Field: "data.p.payee", Run: rule(txTerm(1))},
	{Artifact: ArtUnsignedTx, Field: "data.p.token", Run: rule(txTerm(2))},
	{Artifact: ArtUnsignedTx, Field: "data.p.amount", Run: rule(txTerm(3))},
	{Artifact: ArtUnsignedTx, Field: "data.p.authorizationExpiry", Run: rule(txTerm(4))},
	{Artifact: ArtUnsignedTx, Field: "data.p.refundExpiry", Run: rule(txTerm(5))},
	{Artifact: ArtUnsignedTx, Field: "data.amount", Run: rule(txAmount)},
	{Artifact: ArtUnsignedTx, Field: "data.reason", Run: rule(txReason)},
	{Artifact: ArtUnsignedTx, Field: "data.v", Run: rule(txV)},
	{Artifact: ArtUnsignedTx, Field: "data.s", Run: rule(txS)},
	{Artifact: ArtUnsignedTx, Field: "data.r", Run: rule(txR)},

	// What the client's Signer returned, before anything is sent with it.
	{Artifact: ArtSignerAnswer, Field: "length", Run: rule(signatureLength)},
	{Artifact: ArtSignerAnswer, Field: "s", Run: rule(signatureLowS)},
	{Artifact: ArtSignerAnswer, Field: "signer", Run: rule(signatureSigner)},

	// The 2xx answer to a submit or a report by hash (CheckSubmitAnswer).
	{Artifact: ArtSubmitAnswer, Field: "id", Run: rule(answerID)},
	{Artifact: ArtSubmitAnswer, Field: "operation", Run: rule(answerOperation)},
	{Artifact: ArtSubmitAnswer, Field: "payment_id", Run: rule(answerPayment)},
	{Artifact: ArtSubmitAnswer, Field: "transaction_hash", Run: rule(answerHash)},
	{Artifact: ArtSubmitAnswer, Field: "status", Why: "the transaction as it stands; its wait reads it (awaited row)"},

	// The 2xx answer that carries a payment (CheckPaymentAnswer).
	{Artifact: ArtPaymentAnswer, Field: "id", Run: rule(paymentAnswerID)},
	{Artifact: ArtPaymentAnswer, Field: "rail0_id", Run: rule(paymentAnswerRail0ID)},
	{Artifact: ArtPaymentAnswer, Field: "status", Why: "the payment as it stands; a flow reads and checks it before signing anything for it"},

	// A payment read back after PUT .../sign was refused as done already,
	// or its answer lost (CheckSignatureOnFile). It is what was signed. It
	// holds a signature the one sent is worth.
	{Artifact: ArtSignatureOnFile, Field: "id", Run: rule(onFileNamed)},
	{Artifact: ArtSignatureOnFile, Field: "rail0_id", Run: rule(onFileRail0ID)},
	{Artifact: ArtSignatureOnFile, Field: "config_hash", Run: rule(onFileConfigHash)},
	{Artifact: ArtSignatureOnFile, Field: "mode", Run: rule(onFileMode)},
	{Artifact: ArtSignatureOnFile, Field: "status", Run: rule(onFileSigned)},
	{Artifact: ArtSignatureOnFile, Field: "signature", Run: rule(onFileSignature)},

	// A payment read back after a submit was refused as done already or
	// its answer lost (FindSubmitted): the row of the transaction sent.
	{Artifact: ArtSubmittedRow, Field: "id", Run: rule(submittedNamed)},
	{Artifact: ArtSubmittedRow, Field: "transactions", Run: rule(submittedRow)},

	// The row a wait for a step finds (CheckAwaitedRow).
	{Artifact: ArtAwaitedRow, Field: "transaction_hash", Run: rule(awaitedHash)},
}

// byArtifact indexes Checks by artifact, in table order.
var byArtifact = func() map[Artifact][]func(any) error {
	m := map[Artifact][]func(any) error{}
	for _, c := range Checks {
		if c.Run != nil {
			m[c.Artifact] = append(m[c.Artifact], c.Run)
		}
	}
	return m
}()

// run runs the rows of artifact a on c, in table order, and returns the
// first refusal.
func run[C any](a Artifact, c *C) error {
	for _, check := range byArtifact[a] {
		if err := check(c); err != nil {
			return err
		}
	}
	return nil
}

// readRefusal turns a refusal of the strict reader (a *fieldError) into a
// *Mismatch of artifact naming the key. whole names the document when the
// refusal is of all of it.
func readRefusal(err error, paymentID, op, artifact, whole string) error {
	var fe *fieldError
	if !errors.As(err, &fe) {
		return err
	}
	if fe.field == "" && whole != "" {
		return &Mismatch{PaymentID: paymentID, Operation: op, Artifact: artifact, Reason: fe.reason + whole}
	}
	return &Mismatch{PaymentID: paymentID, Operation: op, Artifact: artifact, Field: fe.field, Got: fe.got, Reason: fe.reason}
}

// paymentMismatch is a refusal of a payment's field.
func paymentMismatch(id, op, field, expected, got, reason string) error {
	return &Mismatch{PaymentID: id, Operation: op, Artifact: "payment", Field: field, Expected: expected, Got: got, Reason: reason}
}

// reasonOnly is a refusal that only says why. It serves an answer or a row
// read back, reported as a reason rather than an artifact error.
func reasonOnly(artifact Artifact, field, format string, args ...any) error {
	return &Mismatch{Artifact: string(artifact), Field: field, Reason: fmt.Sprintf(format, args...)}
}
