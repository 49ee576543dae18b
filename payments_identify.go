package rail0

import (
	"errors"
	"strings"

	"github.com/rail0/rail0-go/internal/verify"
)

// This file checks that a 2xx answer to a write is the resource the
// operation promises. An answer that is not proves nothing, like the
// answers provesNotRun refuses as proof.
//
// A proxy's or a load balancer's JSON (null, {}, {"message":"Accepted"})
// decodes into a zero value without an error. Taken for a success, it
// would hand the caller one of two things:
//   - a transaction with no id: waiting for it fails, and a caller who
//     then submits again runs the write twice;
//   - a payment with no id: the caller loses the Idempotency-Key that
//     would have found it.
//
// So the answers of those writes must carry the resource's identifying
// fields. Otherwise the call ends as it does for an undecodable 2xx: an
// *OutcomeUnknownError carrying the key, over a *DecodeError that says
// what is missing. The checks below say what; the send path applies them
// (request.identify).

// preparedRow is what the SDK knows of the prepared transaction a submit
// sends. It holds the row's id and its payment's UUID. Each is "" when
// unknown: a low-level Submit not tied to a Prepare, or a payment named by
// its rail0_id.
//
// typed says the caller wrote them, in a low-level Submit's params and
// path; a caller may write a UUID in capitals. A flow's ids are the
// gateway's own answers (Prepare's id, the payment read's). Its later
// answers must repeat them exactly, so that a flow's wait finds the row
// the submit's answer names.
type preparedRow struct {
	id, paymentID string
	typed         bool
}

// sameUUID reports whether typed, a UUID the caller gave, names the
// gateway's id. UUIDs compare ignoring case (RFC 9562). So a caller who
// writes one in capitals is not refused the gateway's own answer.
//
// Ids that come from the gateway are compared with its answer to the
// submit exactly. A payment's rows are matched to an id with sameUUID in
// two places. One is the wait. The other is the check that a prepared row
// was not sent already. So no row passes one and is found by the other.
func sameUUID(typed, id string) bool { return strings.EqualFold(typed, id) }

// notTheTransaction reports why tx is not the Transaction op promises; ""
// when it is one. tx is the decoded 2xx answer to a submit of op, or to a
// report of it by hash. hash is the transaction's hash. The checks are the
// rows of verify.ArtSubmitAnswer.
//
// The gateway's answer carries the transaction's id and its operation, and
// its hash once known. A hash that is there must be the hash of what was
// signed or reported, since the answer is about that transaction.
//
// The contract answers a submit with the Transaction "as it stands": the
// row that prepare recorded. (Prepare again while it is pending returns
// that same row.) So where the SDK knows that row (prepared), an answer
// naming another id or another payment is about another transaction. That
// holds even of the same operation and without a hash yet. Taken for the
// submit's answer, it would have the caller wait for that other
// transaction; one confirmed long ago, say. The caller would believe this
// step done.
// Ids the caller typed compare ignoring case, the gateway's own exactly.
func notTheTransaction(tx *Transaction, op Operation, hash verify.Word, prepared preparedRow) string {
	return reasonFor(verify.CheckSubmitAnswer(rowOf(tx), string(op), hash,
		verify.Prepared{ID: prepared.id, PaymentID: prepared.paymentID, Typed: prepared.typed}))
}

// notThePayment reports why p is not the PaymentDetail promised; "" when
// it is one. p is the decoded 2xx answer to a payment's creation; the
// checks are the rows of verify.ArtPaymentAnswer. It must carry the
// payment's id and its rail0_id (0x + 64 hex). The gateway assigns the
// rail0_id at creation.
func notThePayment(p *PaymentDetail) string { return notThePaymentNamed(p, "") }

// notThePaymentNamed is notThePayment for a write to the payment named,
// such as PUT .../sign. named is its UUID or its rail0_id. The answer must
// carry an id and be that payment.
func notThePaymentNamed(p *PaymentDetail, named string) string {
	return reasonFor(verify.CheckPaymentAnswer(verify.PaymentAnswer{ID: p.ID, Rail0ID: p.Rail0ID}, named))
}

// reasonFor is a refusal of an answer, as identify reports it: why it is
// not the resource, on one line.
func reasonFor(err error) string {
	var m *verify.Mismatch
	if errors.As(err, &m) {
		return oneLine(m.Reason)
	}
	if err != nil {
		return oneLine(err.Error())
	}
	return ""
}
