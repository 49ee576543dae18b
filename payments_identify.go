package rail0

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/rail0/rail0-go/internal/verify"
)

// provesNotRun reports whether an answer proves that the request it
// answers was not run, so that a write that must not run twice (opOnce, or
// opKeyed: see backoff.go) may come back as a refusal, an *APIError, rather
// than as an *OutcomeUnknownError. Two answers prove it:
//
//   - a 429: the gateway's throttle refuses in middleware, before the
//     application runs (the contract guide, section 10);
//   - a 4xx other than 408 whose body is the gateway's own error envelope,
//     a JSON object with the four fields the contract's Error schema
//     requires (code, title, detail, status) as strings, code not empty
//     (section 9): the application read the request and refused it.
//
// Nothing else does, because a proxy or load balancer in front of the
// gateway may have written it after passing the request on: a 2xx whose
// body is not the promised JSON (an HTML page, an empty body), a 3xx, a 408
// (a timeout: whoever writes it may have forwarded the request), every 5xx
// and every status outside 100-599, and a 4xx without the envelope (an
// authenticating proxy's 401, a firewall's 403). The gateway's own bodiless
// answers (a 400 to a raw transaction it cannot decode, 409 or 422 to a
// wallet registration) cannot be told from those, so they prove nothing
// either: reading the resource tells what happened.
//
// The envelope is what marks the gateway's answer, not its code being one
// the guide lists: the list grows (and the gateway's 409 to a reused
// Idempotency-Key has a code it does not list), while a proxy's JSON, where
// there is any, is not shaped like it. A proxy that forges the envelope is
// outside what any client can tell from the wire.
func provesNotRun(status int, body []byte) bool {
	switch {
	case status == http.StatusTooManyRequests:
		return true
	case status < 400 || status > 499 || status == http.StatusRequestTimeout:
		return false
	}
	var fields map[string]json.RawMessage // exact keys: "Code" is not "code"
	if json.Unmarshal(body, &fields) != nil {
		return false
	}
	for _, name := range [...]string{"code", "title", "detail", "status"} {
		if raw := fields[name]; len(raw) == 0 || raw[0] != '"' {
			return false // absent, null, or not a string
		}
	}
	var code string
	return json.Unmarshal(fields["code"], &code) == nil && code != ""
}

// A 2xx answer to a write that must not run twice proves nothing either
// when it is not the resource the operation promises: a proxy's or a load
// balancer's JSON (null, {}, {"message":"Accepted"}) decodes into a zero
// value without an error, and taking it for a success would hand the
// caller a transaction with no id (its next step, waiting for it, fails;
// the caller who then submits again runs the write twice) or a payment
// with no id (and loses the Idempotency-Key that would have found it). So
// the answers of those writes must carry the resource's identifying fields,
// or the call ends as it does for an undecodable 2xx: an
// *OutcomeUnknownError carrying the key, over a *DecodeError that says what
// is missing. The checks below say what; do applies them (request.identify).

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

// same reports whether got, an id in the gateway's answer, is want, an id
// of the prepared row: ignoring case where the caller typed it.
func (r preparedRow) same(want, got string) bool {
	if r.typed {
		return sameUUID(want, got)
	}
	return want == got
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
// Transaction the operation promises; "" when it is one. The gateway's
// answer carries the transaction's id and its operation, and its hash once
// known: a hash that is there must be the hash of what was signed or
// reported, since the answer is about that transaction.
//
// The contract answers a submit with the Transaction "as it stands": the
// row that prepare recorded (prepare again while it is pending returns that
// same row). So where the SDK knows that row (prepared), an answer naming
// another id, or another payment, is about another transaction, even of
// the same operation and without a hash yet: taken for the submit's answer,
// it would have the caller wait for that other transaction (one confirmed
// long ago, say) and believe this step done. Ids the caller typed compare
// ignoring case, the gateway's own exactly (preparedRow.same).
func notTheTransaction(tx *Transaction, op Operation, hash verify.Word, prepared preparedRow) string {
	switch {
	case tx.ID == "":
		return "carries no transaction id"
	case tx.Operation != op:
		return fmt.Sprintf("is a transaction of operation %q, not %s", clip(oneLine(string(tx.Operation))), op)
	case prepared.id != "" && !prepared.same(prepared.id, tx.ID):
		return fmt.Sprintf("is transaction %q, not %s, the one prepared", clip(oneLine(tx.ID)), clip(oneLine(prepared.id)))
	case prepared.paymentID != "" && tx.PaymentID != "" && !prepared.same(prepared.paymentID, tx.PaymentID):
		return fmt.Sprintf("is a transaction of payment %q, not %s", clip(oneLine(tx.PaymentID)), clip(oneLine(prepared.paymentID)))
	}
	return wrongHash(tx, hash)
}

// wrongHash reports why tx does not carry hash, the hash of the
// transaction sent; "" when it carries it or no hash yet. A hash that is
// there must be that one: the answer or the row is about that transaction.
func wrongHash(tx *Transaction, hash verify.Word) string {
	if tx.TransactionHash == nil || *tx.TransactionHash == "" {
		return ""
	}
	if got, err := verify.ParseWord(*tx.TransactionHash); err != nil || got != hash {
		return fmt.Sprintf("carries transaction_hash %q, not %s, the hash of the transaction sent", clip(oneLine(*tx.TransactionHash)), hash)
	}
	return ""
}

// notASession is the identify check of POST /auth: a 2xx without a token
// or an expiry (a proxy's {} or message) is no session. Taken as one, the
// token source would find it never fresh and have the signer sign a new
// SIWE message on every later call, each call going out without a token.
func notASession(s *Session) string {
	if s.Token() == "" {
		return "carries no token"
	}
	if s.ExpiresAt.IsZero() {
		return "carries no expires_at"
	}
	return ""
}

// notThePayment reports why p, the decoded 2xx answer to a payment's
// creation, is not the PaymentDetail the operation promises; "" when it is
// one: it must carry the payment's id and its rail0_id (0x + 64 hex), which
// the gateway assigns when it creates the payment.
func notThePayment(p *PaymentDetail) string {
	if p.ID == "" {
		return "carries no payment id"
	}
	if _, err := verify.ParseWord(p.Rail0ID); err != nil {
		return fmt.Sprintf("carries rail0_id %q, not 0x and 64 hex digits", clip(oneLine(p.Rail0ID)))
	}
	return ""
}
