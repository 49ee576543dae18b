package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/internal/strictjson"
)

// maxEventDepth bounds the nesting of a delivery body at encoding/json's
// own bound. So the key check refuses nothing for its depth that decoding
// would have accepted. A payment's metadata nests as its merchant chose.
const maxEventDepth = 10000

// ErrMalformedEvent means a verified body is not a JSON object with a
// non-empty string "id". Or the body can be read two ways: a key is
// repeated, or two keys differ only by case or Unicode folding, at any
// level. Nothing else in the envelope is required.
var ErrMalformedEvent = errors.New("webhook: malformed event")

// Event is one decoded delivery. Only ID is guaranteed.
// Every other field is zero when the gateway omitted it or sent null. It is
// also zero for a shape this version does not understand (see
// [DecodeEvent]). Raw always holds the exact body, so such a field can
// still be read by hand.
//
// ID is stable across redeliveries. Deduplicate on it, because the gateway
// delivers at least once; [Handler.Deduplicator] does.
//
// The payment and transaction are the root package's types. A delivery
// carries a subset of their fields: the gateway's WebhookDelivery schema.
// The fields it does not carry are zero.
type Event struct {
	ID          string               // event id, identical on redelivery
	EmittedAt   time.Time            // when the gateway produced the event; zero if absent
	Topic       rail0.WebhookTopic   // from the signed body only; see Verifier.VerifyEvent for a body without one
	Payment     *rail0.PaymentDetail // the payment as of the event (ChainID set, Transactions empty); nil if absent
	Transaction *rail0.Transaction   // the related transaction; nil if absent or null
	Raw         json.RawMessage
	// Subscription is the subscription whose secret verified the delivery
	// (Verifier.VerifyEvent, Handler). It is zero from DecodeEvent, which
	// verifies nothing.
	Subscription Subscription
}

// DecodeEvent decodes a delivery body leniently.
// Unknown fields are ignored. A part of the envelope whose shape this
// version does not understand is left zero rather than failing the
// delivery. Those parts are emitted_at, topic, payment and transaction.
// Such a part stays readable in Raw. Only two kinds of body are an error
// wrapping [ErrMalformedEvent]: one that is not a JSON object, and one
// with no string "id". Acknowledging such a body would lose the event. Refusing
// it lets the gateway retry.
//
// Leniency stops at the keys. A body may carry one key twice, or two keys
// that differ only by case or Unicode folding ("topic" beside "Topic", at
// any level). It is refused with [ErrMalformedEvent] before anything is
// decoded. encoding/json would take the last of them for Topic. JSON.parse
// and every exact-key reader of Event.Raw take another. The topic a
// subscription's secret vouched for would then not be the topic the rest
// of the application reads. The gateway never sends such a body.
//
// DecodeEvent does not verify anything. Call it on a body that passed
// [Verifier.Verify].
func DecodeEvent(body []byte) (Event, error) {
	var env struct {
		ID          json.RawMessage `json:"id"`
		EmittedAt   json.RawMessage `json:"emitted_at"`
		Topic       json.RawMessage `json:"topic"`
		Payment     json.RawMessage `json:"payment"`
		Transaction json.RawMessage `json:"transaction"`
	}
	if err := strictjson.CheckKeys(body, maxEventDepth); err != nil {
		return Event{}, fmt.Errorf("%w: the body can be read two ways or not at all: %v", ErrMalformedEvent, err)
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
	var p rail0.PaymentDetail
	if lenient(env.Payment, &p) {
		e.Payment = &p
	}
	var t rail0.Transaction
	if lenient(env.Transaction, &t) {
		e.Transaction = &t
	}
	return e, nil
}

// lenient decodes raw into v when raw holds a non-null value of the right
// shape. It reports whether it did.
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
