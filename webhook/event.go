package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Topic names the kind of event a delivery reports. The gateway may add
// topics; an unknown one decodes without error and compares unequal to
// every constant below.
type Topic string

// Topics known when this package was written.
const (
	TopicPaymentsCreated       Topic = "payments.created"
	TopicPaymentsSigned        Topic = "payments.signed"
	TopicPaymentsAuthorized    Topic = "payments.authorized"
	TopicPaymentsCharged       Topic = "payments.charged"
	TopicPaymentsCaptured      Topic = "payments.captured"
	TopicPaymentsVoided        Topic = "payments.voided"
	TopicPaymentsReleased      Topic = "payments.released"
	TopicPaymentsRefunded      Topic = "payments.refunded"
	TopicPaymentsFailed        Topic = "payments.failed"
	TopicPaymentsDisputed      Topic = "payments.disputed"
	TopicPaymentsDisputeClosed Topic = "payments.dispute_closed"
)

// ErrMalformedEvent means a verified body is not a JSON object with a
// non-empty string "id". Nothing else in the envelope is required.
var ErrMalformedEvent = errors.New("webhook: malformed event")

// Event is one decoded delivery. Only ID is guaranteed; every other field
// is zero when the gateway omitted it, sent null, or sent a shape this
// version does not understand (see [DecodeEvent]). Raw always holds the exact body, so such a
// field can still be read by hand.
//
// ID is stable across redeliveries: deduplicate on it, because the gateway
// delivers at least once.
type Event struct {
	ID          string       // event id, identical on redelivery
	EmittedAt   time.Time    // when the gateway produced the event; zero if absent
	Topic       Topic        // from the body, or the X-Rail0-Topic header when the body has none
	Payment     *Payment     // summary of the payment; nil if absent
	Transaction *Transaction // the related transaction; nil if absent or null
	Raw         json.RawMessage
}

// Payment is the payment summary carried by an event. Amounts are base
// units as decimal strings; Status and Mode hold the values documented for
// rail0.PaymentStatus and rail0.PaymentMode.
type Payment struct {
	ID                  string          `json:"id"`
	Rail0ID             string          `json:"rail0_id"`
	Status              string          `json:"status"`
	Mode                string          `json:"mode"`
	Amount              string          `json:"amount"`
	CapturableAmount    string          `json:"capturable_amount"`
	RefundableAmount    string          `json:"refundable_amount"`
	Payer               string          `json:"payer"`
	Payee               string          `json:"payee"`
	Token               string          `json:"token"`
	ChainID             int64           `json:"chain_id"`
	AuthorizationExpiry int64           `json:"authorization_expiry"` // Unix seconds
	RefundExpiry        int64           `json:"refund_expiry"`        // Unix seconds
	Disputed            bool            `json:"disputed"`
	LastErrorCode       *string         `json:"last_error_code"`
	LastErrorMessage    *string         `json:"last_error_message"`
	Metadata            json.RawMessage `json:"metadata"`
}

// Transaction is the on-chain transaction an event relates to. Status and
// Operation hold the values documented for rail0.TransactionStatus and
// rail0.Operation.
type Transaction struct {
	ID              string  `json:"id"`
	PaymentID       string  `json:"payment_id"`
	Operation       string  `json:"operation"`
	Status          string  `json:"status"`
	TransactionHash *string `json:"transaction_hash"`
	Amount          *string `json:"amount"` // base units
	BlockNumber     *int64  `json:"block_number"`
	ErrorCode       *string `json:"error_code"`
	ErrorDetail     *string `json:"error_detail"`
}

// DecodeEvent decodes a delivery body leniently: unknown fields are
// ignored, and a part of the envelope (emitted_at, topic, payment,
// transaction) whose shape this version does not understand is left zero
// rather than failing the delivery (it stays readable in Raw). Only a body that is not a
// JSON object, or has no string "id", is an error wrapping
// [ErrMalformedEvent]: acknowledging such a body would lose the event,
// refusing it lets the gateway retry.
//
// DecodeEvent does not verify anything; call it on a body that passed
// [Verifier.Verify].
func DecodeEvent(body []byte) (Event, error) {
	var env struct {
		ID          json.RawMessage `json:"id"`
		EmittedAt   json.RawMessage `json:"emitted_at"`
		Topic       json.RawMessage `json:"topic"`
		Payment     json.RawMessage `json:"payment"`
		Transaction json.RawMessage `json:"transaction"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return Event{}, fmt.Errorf("%w: body is not a JSON object", ErrMalformedEvent)
	}
	e := Event{Raw: bytes.Clone(body)}
	if err := json.Unmarshal(env.ID, &e.ID); err != nil || e.ID == "" {
		return Event{}, fmt.Errorf("%w: missing string id", ErrMalformedEvent)
	}
	// Each optional field is decoded on its own so that one surprise does
	// not cost the others. Errors are deliberately dropped (see doc).
	lenient(env.EmittedAt, &e.EmittedAt)
	lenient(env.Topic, &e.Topic)
	var p Payment
	if lenient(env.Payment, &p) {
		e.Payment = &p
	}
	var t Transaction
	if lenient(env.Transaction, &t) {
		e.Transaction = &t
	}
	return e, nil
}

// lenient decodes raw into v when raw holds a non-null value of the right
// shape and reports whether it did.
func lenient[T any](raw json.RawMessage, v *T) bool {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return false
	}
	var tmp T
	if json.Unmarshal(raw, &tmp) != nil {
		return false
	}
	*v = tmp
	return true
}
