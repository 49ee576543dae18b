package rail0

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/url"
	"time"

	"github.com/rail0/rail0-go/internal/ops"
	"github.com/rail0/rail0-go/internal/secret"
)

// WebhookTopic is the event a webhook subscribes to, and the topic of a
// delivery. Package webhook decodes deliveries into this package's types.
// The gateway may add topics. An unknown one decodes unchanged and
// compares unequal to every constant below.
type WebhookTopic string

// Topics known when this package was written.
const (
	TopicPaymentsCreated       WebhookTopic = "payments.created"
	TopicPaymentsSigned        WebhookTopic = "payments.signed"
	TopicPaymentsAuthorized    WebhookTopic = "payments.authorized"
	TopicPaymentsCharged       WebhookTopic = "payments.charged"
	TopicPaymentsCaptured      WebhookTopic = "payments.captured"
	TopicPaymentsVoided        WebhookTopic = "payments.voided"
	TopicPaymentsReleased      WebhookTopic = "payments.released"
	TopicPaymentsRefunded      WebhookTopic = "payments.refunded"
	TopicPaymentsFailed        WebhookTopic = "payments.failed"
	TopicPaymentsDisputed      WebhookTopic = "payments.disputed"
	TopicPaymentsDisputeClosed WebhookTopic = "payments.dispute_closed"
)

// CircuitState is the state of a webhook's delivery circuit breaker. The
// gateway may add values, which decode unchanged.
type CircuitState string

// Known circuit states.
const (
	// CircuitClosed means deliveries flow.
	CircuitClosed CircuitState = "closed"
	// CircuitOpen means deliveries are paused after repeated failures;
	// ResetCircuit closes it.
	CircuitOpen CircuitState = "open"
)

// Webhook is a subscription: the gateway POSTs events of Topic to
// CallbackURL.
type Webhook struct {
	ID          string       `json:"id"`
	Name        string       `json:"name"`
	CallbackURL string       `json:"callback_url"`
	Topic       WebhookTopic `json:"topic"`
	// Active is false when deliveries are switched off (Disable).
	Active       bool         `json:"active"`
	CircuitState CircuitState `json:"circuit_state"`
	// CircuitFailureCount counts consecutive failed deliveries.
	CircuitFailureCount int64     `json:"circuit_failure_count"`
	CreatedAt           time.Time `json:"created_at"`
	UpdatedAt           time.Time `json:"updated_at"`
	// Response is the metadata of the call that returned this value. It is
	// nil on a value nested in another call's result.
	Response *Response `json:"-"`
}

// WebhookWithSecret is a webhook with its shared secret. The gateway
// returns the secret only on creation and rotation. Store it (read it with
// SharedSecret): it verifies every delivery.
//
// The secret is never printed. String, Format (every fmt verb) and
// LogValue omit it. It is held where no reflection-based printer or
// encoder reaches it (see Session). So no secret shows in two more cases:
//   - a WebhookWithSecret in an unexported field of the application's own
//     struct;
//   - a WebhookWithSecret encoded with encoding/json, encoding/xml or gob.
type WebhookWithSecret struct {
	Webhook
	sharedSecret *secret.Value
	// Response is the metadata of the call that returned this value. It is
	// nil on a value nested in another call's result.
	Response *Response `json:"-"`
}

// SharedSecret returns the webhook's shared_secret, the key of every
// delivery's signature (webhook.NewVerifier takes it).
func (w WebhookWithSecret) SharedSecret() string { return w.sharedSecret.Reveal() }

// UnmarshalJSON decodes the gateway's WebhookWithSecret, keeping the
// secret behind a value no printer can open. Encoding one writes no secret.
func (w *WebhookWithSecret) UnmarshalJSON(data []byte) error {
	var v struct {
		Webhook
		SharedSecret string `json:"shared_secret"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*w = WebhookWithSecret{Webhook: v.Webhook, sharedSecret: secret.New(v.SharedSecret)}
	return nil
}

// String describes the webhook without its secret.
func (w WebhookWithSecret) String() string {
	return fmt.Sprintf("rail0.WebhookWithSecret{id: %s, name: %q, topic: %s, callback_url: %s, shared_secret: [redacted]}",
		w.ID, w.Name, w.Topic, w.CallbackURL)
}

// Format implements fmt.Formatter so that every verb prints String.
func (w WebhookWithSecret) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, w.String()) }

// LogValue implements slog.LogValuer without the secret.
func (w WebhookWithSecret) LogValue() slog.Value {
	return slog.GroupValue(slog.String("id", w.ID), slog.String("topic", string(w.Topic)))
}

// CallbackStatus is the outcome of one delivery attempt. The gateway may
// add values, which decode unchanged.
type CallbackStatus string

// Known callback statuses.
const (
	CallbackDelivered CallbackStatus = "delivered"
	CallbackFailed    CallbackStatus = "failed"
)

// EventCallback is one entry of a webhook's delivery log.
type EventCallback struct {
	ID          string         `json:"id"`
	WebhookID   string         `json:"webhook_id"`
	PaymentID   string         `json:"payment_id"`
	Topic       WebhookTopic   `json:"topic"`
	CallbackURL string         `json:"callback_url"`
	Status      CallbackStatus `json:"status"`
	// ResponseCode and ResponseMessage are what the receiver answered;
	// empty when no answer arrived.
	ResponseCode    string `json:"response_code"`
	ResponseMessage string `json:"response_message"`
	// ErrorReason says why a delivery failed.
	ErrorReason string    `json:"error_reason"`
	CreatedAt   time.Time `json:"created_at"`
	// Payload is the exact body that was sent; webhook.DecodeEvent reads
	// it.
	Payload string `json:"payload"`
}

// WebhookCreateParams registers a webhook. Every field is required.
type WebhookCreateParams struct {
	Name string `json:"name"`
	// CallbackURL must be an HTTPS URL.
	CallbackURL string `json:"callback_url"`
	// Topic is the one topic delivered; register several webhooks to
	// cover several topics.
	Topic WebhookTopic `json:"topic"`
}

var createWebhook = declare(ops.CreateWebhook)

// Create registers a webhook and returns it with its shared secret. The
// secret is shown only here and on rotation.
//
// POST /webhooks — a session of an account.
func (s *WebhooksService) Create(ctx context.Context, params WebhookCreateParams) (*WebhookWithSecret, error) {
	for _, f := range []struct{ name, value string }{
		{"name", params.Name}, {"callback_url", params.CallbackURL}, {"topic", string(params.Topic)},
	} {
		if f.value == "" {
			return nil, &ValidationError{Field: f.name, Reason: "is required"}
		}
	}
	var w WebhookWithSecret
	resp, err := s.client.do(ctx, &request{op: createWebhook, body: params, secretAnswer: true}, &w)
	if err != nil {
		return nil, err
	}
	w.Response = resp
	return &w, nil
}

// WebhookListParams filters and pages GET /webhooks. Zero values are not
// sent.
type WebhookListParams struct {
	ListOptions
	Topic WebhookTopic
	// Active keeps only enabled (true) or only disabled (false) webhooks.
	Active       *bool
	CircuitState CircuitState
}

func (p WebhookListParams) values() url.Values {
	q := url.Values{}
	p.ListOptions.encode(q)
	if p.Topic != "" {
		q.Set("topic", string(p.Topic))
	}
	setBool(q, "active", p.Active)
	if p.CircuitState != "" {
		q.Set("circuit_state", string(p.CircuitState))
	}
	return q
}

var listWebhooks = declare(ops.ListWebhooks)

// List returns one page of the account's webhooks.
//
// GET /webhooks — a session of the owning account.
func (s *WebhooksService) List(ctx context.Context, params WebhookListParams) (*Page[Webhook], error) {
	return listPage[Webhook](ctx, s.client, listWebhooks, pathArgs{}, params.values())
}

// All iterates over every page of the account's webhooks, from params.Page
// on. It stops at the first error, which it yields; params is not
// modified.
//
// GET /webhooks — a session of the owning account.
func (s *WebhooksService) All(ctx context.Context, params WebhookListParams) iter.Seq2[Webhook, error] {
	return listAll[Webhook](ctx, s.client, listWebhooks, pathArgs{}, params.values())
}

var getWebhook = declare(ops.GetWebhook)

// Get reads a webhook.
//
// GET /webhooks/{id} — a session of the owning account.
func (s *WebhooksService) Get(ctx context.Context, id string) (*Webhook, error) {
	var w Webhook
	resp, err := s.client.do(ctx, &request{op: getWebhook, args: pathArgs{id}}, &w)
	if err != nil {
		return nil, err
	}
	w.Response = resp
	return &w, nil
}

// WebhookUpdateParams changes a webhook. Empty fields are left unchanged;
// at least one must be set.
type WebhookUpdateParams struct {
	Name        string       `json:"name,omitempty"`
	CallbackURL string       `json:"callback_url,omitempty"`
	Topic       WebhookTopic `json:"topic,omitempty"`
}

var updateWebhook = declare(ops.UpdateWebhook)

// Update changes a webhook's name, callback URL or topic.
//
// PATCH /webhooks/{id} — a session of the owning account.
func (s *WebhooksService) Update(ctx context.Context, id string, params WebhookUpdateParams) (*Webhook, error) {
	if params == (WebhookUpdateParams{}) {
		return nil, &ValidationError{Field: "params", Reason: "set Name, CallbackURL or Topic"}
	}
	var w Webhook
	resp, err := s.client.do(ctx, &request{op: updateWebhook, args: pathArgs{id}, body: params}, &w)
	if err != nil {
		return nil, err
	}
	w.Response = resp
	return &w, nil
}

var deleteWebhook = declare(ops.DeleteWebhook)

// Delete removes a webhook.
//
// DELETE /webhooks/{id} — a session of the owning account.
//
// The answer has no body; the *Response is the call's metadata.
func (s *WebhooksService) Delete(ctx context.Context, id string) (*Response, error) {
	return s.client.do(ctx, &request{op: deleteWebhook, args: pathArgs{id}}, nil)
}

var enableWebhook = declare(ops.EnableWebhook)

// Enable switches deliveries on.
//
// PUT /webhooks/{id}/enable — a session of the owning account.
func (s *WebhooksService) Enable(ctx context.Context, id string) (*Webhook, error) {
	var w Webhook
	resp, err := s.client.do(ctx, &request{op: enableWebhook, args: pathArgs{id}}, &w)
	if err != nil {
		return nil, err
	}
	w.Response = resp
	return &w, nil
}

var disableWebhook = declare(ops.DisableWebhook)

// Disable switches deliveries off.
//
// PUT /webhooks/{id}/disable — a session of the owning account.
func (s *WebhooksService) Disable(ctx context.Context, id string) (*Webhook, error) {
	var w Webhook
	resp, err := s.client.do(ctx, &request{op: disableWebhook, args: pathArgs{id}}, &w)
	if err != nil {
		return nil, err
	}
	w.Response = resp
	return &w, nil
}

var rotateWebhookSecret = declare(ops.RotateWebhookSecret)

// RotateSecret replaces the webhook's shared secret and returns the new
// one, shown only here. Deliveries signed before the rotation may still
// arrive. Keep accepting the old one for a while, as
// webhook.NewVerifier(new, old).
//
// PUT /webhooks/{id}/rotate_secret — a session of the owning account.
func (s *WebhooksService) RotateSecret(ctx context.Context, id string) (*WebhookWithSecret, error) {
	var w WebhookWithSecret
	resp, err := s.client.do(ctx, &request{op: rotateWebhookSecret, args: pathArgs{id}, secretAnswer: true}, &w)
	if err != nil {
		return nil, err
	}
	w.Response = resp
	return &w, nil
}

var resetWebhookCircuit = declare(ops.ResetWebhookCircuit)

// ResetCircuit closes the webhook's circuit breaker, opened after repeated
// delivery failures, and re-enables the webhook.
//
// PUT /webhooks/{id}/reset_circuit — a session of the owning account.
func (s *WebhooksService) ResetCircuit(ctx context.Context, id string) (*Webhook, error) {
	var w Webhook
	resp, err := s.client.do(ctx, &request{op: resetWebhookCircuit, args: pathArgs{id}}, &w)
	if err != nil {
		return nil, err
	}
	w.Response = resp
	return &w, nil
}

// WebhookListEventCallbacksParams filters and pages a webhook's delivery log. Zero
// values are not sent.
type WebhookListEventCallbacksParams struct {
	ListOptions
	Status    CallbackStatus
	Topic     WebhookTopic
	PaymentID string
	// Since and Until bound the delivery time.
	Since time.Time
	Until time.Time
}

func (p WebhookListEventCallbacksParams) values() url.Values {
	q := url.Values{}
	p.ListOptions.encode(q)
	if p.Status != "" {
		q.Set("status", string(p.Status))
	}
	if p.Topic != "" {
		q.Set("topic", string(p.Topic))
	}
	if p.PaymentID != "" {
		q.Set("payment_id", p.PaymentID)
	}
	if !p.Since.IsZero() {
		q.Set("since", p.Since.UTC().Format(time.RFC3339))
	}
	if !p.Until.IsZero() {
		q.Set("until", p.Until.UTC().Format(time.RFC3339))
	}
	return q
}

var listWebhookEventCallbacks = declare(ops.ListWebhookEventCallbacks)

// ListEventCallbacks returns one page of a webhook's delivery log.
//
// GET /webhooks/{id}/event_callbacks — a session of the owning account.
func (s *WebhooksService) ListEventCallbacks(ctx context.Context, id string, params WebhookListEventCallbacksParams) (*Page[EventCallback], error) {
	return listPage[EventCallback](ctx, s.client, listWebhookEventCallbacks, pathArgs{id}, params.values())
}

// AllEventCallbacks iterates over every page of a webhook's delivery log,
// from params.Page on. It stops at the first error, which it yields; params
// is not modified.
//
// GET /webhooks/{id}/event_callbacks — a session of the owning account.
func (s *WebhooksService) AllEventCallbacks(ctx context.Context, id string, params WebhookListEventCallbacksParams) iter.Seq2[EventCallback, error] {
	return listAll[EventCallback](ctx, s.client, listWebhookEventCallbacks, pathArgs{id}, params.values())
}

var redeliverEventCallback = declare(ops.RedeliverEventCallback)

// Redeliver queues a recorded delivery to be sent again. It sends the same
// body (same event id) with a new timestamp and signature. It returns the
// queue status (Status "queued"); queued is not delivered. A disabled or
// open-circuit webhook silently drops it, so call ResetCircuit first.
//
// POST /webhooks/{id}/event_callbacks/{callback_id}/redeliver — a session
// of the owning account.
func (s *WebhooksService) Redeliver(ctx context.Context, id, callbackID string) (*WebhookRedeliverResult, error) {
	var out WebhookRedeliverResult
	resp, err := s.client.do(ctx, &request{op: redeliverEventCallback, args: pathArgs{id, callbackID}}, &out)
	if err != nil {
		return nil, err
	}
	out.Response = resp
	return &out, nil
}

// WebhookRedeliverResult is the answer to Redeliver.
type WebhookRedeliverResult struct {
	// Status is the queue status ("queued").
	Status string `json:"status"`
	// Response is the metadata of the call.
	Response *Response `json:"-"`
}
