package rail0

import (
	"errors"
	"strings"

	"github.com/rail0/rail0-go/internal/verify"
)

// This file checks that a 2xx answer to a write is the resource the
// operation promises. When it is not, it proves nothing, like the answers
// provesNotRun refuses as proof. A proxy's or a load balancer's JSON
// (null, {}, {"message":"Accepted"}) decodes into a zero value without an
// error, and taking it for a success would hand the caller a transaction
// with no id (its next step, waiting for it, fails; the caller who then
// submits again runs the write twice) or a payment with no id (and loses
// the Idempotency-Key that would have found it). So the answers of those
// writes must carry the resource's identifying fields, or the call ends as
// it does for an undecodable 2xx: an *OutcomeUnknownError carrying the
// key, over a *DecodeError that says what is missing. The checks below say
// what; the send path applies them (request.identify).

// preparedRow is what the SDK knows of the prepared transaction a submit
// sends: its id and its payment's UUID, each "" when unknown (a low-level
// Submit not tied to a Prepare, a payment named by its rail0_id). typed
// says the caller wrote them (a low-level Submit's params and path), who
// may write a UUID in capitals; a flow's are the gateway's own answers'
// (Prepare's id, the payment read's), which its later answers must repeat
// exactly: a flow's wait then finds the row the submit's answer names.
type preparedRow struct {
	id, paymentID string
	typed         bool
}

// sameUUID reports whether typed, a UUID the caller gave, names the
// gateway's id: UUIDs compare ignoring case (RFC 9562), so a caller who
// writes one in capitals is not refused the gateway's own answer. Ids
// that come from the gateway are compared with its answer to the submit
// exactly; a payment's rows are matched to an id with sameUUID, by the
// wait and by the check that a prepared row was not sent already, so that
// no row passes one and is found by the other.
func sameUUID(typed, id string) bool { return strings.EqualFold(typed, id) }

// notTheTransaction reports why tx, the decoded 2xx answer to a submit of
// op (or a report of it by hash) whose transaction hash is hash, is not the
// Transaction the operation promises; "" when it is one (the rows of
// verify.ArtSubmitAnswer). The gateway's answer carries the transaction's
// id and its operation, and its hash once known: a hash that is there must
// be the hash of what was signed or reported, since the answer is about
// that transaction.
//
// The contract answers a submit with the Transaction "as it stands": the
// row that prepare recorded (prepare again while it is pending returns that
// same row). So where the SDK knows that row (prepared), an answer naming
// another id, or another payment, is about another transaction, even of
// the same operation and without a hash yet: taken for the submit's answer,
// it would have the caller wait for that other transaction (one confirmed
// long ago, say) and believe this step done. Ids the caller typed compare
// ignoring case, the gateway's own exactly.
func notTheTransaction(tx *Transaction, op Operation, hash verify.Word, prepared preparedRow) string {
	return reasonFor(verify.CheckSubmitAnswer(rowOf(tx), string(op), hash,
		verify.Prepared{ID: prepared.id, PaymentID: prepared.paymentID, Typed: prepared.typed}))
}

// notThePayment reports why p, the decoded 2xx answer to a payment's
// creation, is not the PaymentDetail promised; "" when it is one (the rows
// of verify.ArtPaymentAnswer). It must carry the payment's id and its
// rail0_id (0x + 64 hex), which the gateway assigns at creation.
func notThePayment(p *PaymentDetail) string { return notThePaymentNamed(p, "") }

// notThePaymentNamed is notThePayment for a write to the payment named
// (its UUID or its rail0_id), such as PUT .../sign: the answer carries an
// id and is that payment.
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
