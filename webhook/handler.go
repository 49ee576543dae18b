package webhook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
)

// DefaultMaxBodyBytes bounds the body a [Handler] reads when MaxBodyBytes
// is zero. Deliveries are a few kilobytes; the bound keeps an
// unauthenticated sender from making the receiver buffer arbitrary data
// before the signature can be checked.
const DefaultMaxBodyBytes int64 = 1 << 20

// ErrNoHandleFunc is reported (through OnError, with a 500 answer) when a
// [Handler] has no Handle function.
var ErrNoHandleFunc = errors.New("webhook: Handler.Handle is nil")

// Handler is an http.Handler for a webhook's callback_url. It reads the raw
// body (bounded by MaxBodyBytes), verifies and decodes it with
// [Verifier.VerifyEvent] and passes the event to Handle. One Handler serves
// several subscriptions that share a callback URL when its Verifier holds
// each one's secrets ([Verifier.WithSubscription]); Event.Subscription then
// says which one a delivery came for, and Event.Topic is the signed body's.
//
// Answers:
//   - 204 when Handle returns nil;
//   - 400 for a malformed signature header or an undecodable envelope;
//   - 401 for a bad signature, a stale timestamp, or a topic that the
//     subscription whose secret signed the delivery is not subscribed to;
//   - 405 for a method other than POST;
//   - 413 for a body over MaxBodyBytes;
//   - 500 when Handle fails (the gateway then redelivers), or when the
//     Handler is misconfigured (no secret, no Handle).
//
// The gateway counts slow or failed answers toward opening the webhook's
// circuit, so Handle should record the event (deduplicating on Event.ID)
// and return; do slow work elsewhere.
type Handler struct {
	// Verifier holds the subscriptions' secrets, tolerance and clock.
	Verifier Verifier

	// Handle receives every verified event, with the request's context.
	Handle func(ctx context.Context, event Event) error

	// MaxBodyBytes bounds the body; zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64

	// OnError, when set, is called for every delivery that is not
	// answered 204, with the reason. Use it for logging or metrics; the
	// error never contains the secret.
	OnError func(r *http.Request, err error)
}

// NewHandler returns a Handler that verifies deliveries with secret and the
// default tolerance, and passes each event to handle.
func NewHandler(secret string, handle func(ctx context.Context, event Event) error) *Handler {
	return &Handler{Verifier: NewVerifier(secret), Handle: handle}
}

// String describes the handler without revealing any secret.
func (h *Handler) String() string {
	return fmt.Sprintf("webhook.Handler{verifier: %s, max_body_bytes: %d}", h.Verifier, h.MaxBodyBytes)
}

// Format implements fmt.Formatter so that every verb prints String and
// never the secret.
func (h *Handler) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, h.String()) }

// LogValue implements slog.LogValuer without any secret.
func (h *Handler) LogValue() slog.Value {
	return slog.GroupValue(slog.Any("verifier", h.Verifier), slog.Int64("max_body_bytes", h.MaxBodyBytes))
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.fail(w, r, http.StatusMethodNotAllowed, fmt.Errorf("webhook: method %s not allowed", r.Method))
		return
	}
	limit := h.MaxBodyBytes
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.fail(w, r, http.StatusRequestEntityTooLarge, fmt.Errorf("webhook: body exceeds %d bytes", limit))
			return
		}
		h.fail(w, r, http.StatusBadRequest, fmt.Errorf("webhook: reading body: %w", err))
		return
	}
	event, err := h.Verifier.VerifyEvent(body, r.Header.Get(SignatureHeader), r.Header.Get(TimestampHeader))
	if err != nil {
		h.fail(w, r, statusFor(err), err)
		return
	}
	if h.Handle == nil {
		h.fail(w, r, http.StatusInternalServerError, ErrNoHandleFunc)
		return
	}
	if err := h.Handle(r.Context(), event); err != nil {
		h.fail(w, r, http.StatusInternalServerError, fmt.Errorf("webhook: handling event %s: %w", event.ID, err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func statusFor(err error) int {
	switch {
	case errors.Is(err, ErrMalformedHeader), errors.Is(err, ErrMalformedEvent):
		return http.StatusBadRequest
	case errors.Is(err, ErrBadSignature), errors.Is(err, ErrStale), errors.Is(err, ErrTopicMismatch):
		return http.StatusUnauthorized
	default: // ErrNoSecret: the receiver is misconfigured, not the sender.
		return http.StatusInternalServerError
	}
}

// fail answers with a short generic text for status; the detailed reason
// goes only to OnError, so a prober learns nothing beyond the status.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, status int, err error) {
	if h.OnError != nil {
		h.OnError(r, err)
	}
	http.Error(w, http.StatusText(status), status)
}
