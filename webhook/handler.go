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
// is zero. Deliveries are a few kilobytes. The bound keeps an
// unauthenticated sender from making the receiver buffer arbitrary data.
// The signature cannot be checked before the body is read.
const DefaultMaxBodyBytes int64 = 1 << 20

// ErrNoHandleFunc is reported when a [Handler] has no Handle function.
// It goes to OnError, and the answer is a 500.
var ErrNoHandleFunc = errors.New("webhook: Handler.Handle is nil")

// Handler is an http.Handler for a webhook's callback_url.
// It reads the raw body, bounded by MaxBodyBytes. It verifies and decodes
// the body with [Verifier.VerifyEvent] and passes the event to Handle.
//
// One Handler can serve several subscriptions that share a callback URL.
// Its Verifier then holds each one's secrets ([Verifier.WithSubscription]).
// Event.Subscription says which one a delivery came for. Event.Topic is
// the signed body's.
//
// Answers:
//   - 204 when Handle returns nil. With a Deduplicator, also for a
//     redelivery of an event already handled, without running Handle.
//   - 400 for a malformed signature header or an undecodable envelope.
//   - 401 for a bad signature or a stale timestamp. Also for a topic that
//     the subscription whose secret signed the delivery is not subscribed
//     to.
//   - 405 for a method other than POST.
//   - 409 (with a Deduplicator) while another delivery of the event is
//     being handled. The gateway retries, and finds it handled or free.
//   - 413 for a body over MaxBodyBytes.
//   - 500 when Handle fails; the gateway then redelivers. Also when the
//     Handler is misconfigured (no secret, no Handle).
//   - 503 when the Deduplicator fails.
//
// The gateway counts slow or failed answers toward opening the webhook's
// circuit. So Handle should record the event and return; do slow work
// elsewhere. Record it deduplicating on Event.ID, or with a Deduplicator.
type Handler struct {
	// Verifier holds the subscriptions' secrets, tolerance and clock.
	Verifier Verifier

	// Handle receives every verified event, with the request's context.
	Handle func(ctx context.Context, event Event) error

	// MaxBodyBytes bounds the body; zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64

	// Deduplicator, when set, claims each verified event's ID before
	// Handle runs. So a redelivery does not reach Handle again (see
	// [Claim]). A failed or panicking Handle releases the claim, so the
	// gateway's redelivery runs. Nil runs Handle for every delivery.
	Deduplicator Deduplicator

	// OnError, when set, is called with the reason for every delivery not
	// answered 204. It is also called when a Deduplicator fails to record
	// a handled event. Use it for logging or metrics. The error never
	// contains the secret.
	OnError func(r *http.Request, err error)
}

// NewHandler returns a Handler that passes each event to handle.
// It verifies deliveries with secret and the default tolerance.
func NewHandler(secret string, handle func(ctx context.Context, event Event) error) *Handler {
	return &Handler{Verifier: NewVerifier(secret), Handle: handle}
}

// String describes the handler without revealing any secret.
func (h *Handler) String() string {
	return fmt.Sprintf("webhook.Handler{verifier: %s, max_body_bytes: %d}", h.Verifier, h.MaxBodyBytes)
}

// Format implements fmt.Formatter.
// Every verb prints String and never the secret.
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
	if h.Deduplicator == nil {
		if err := h.Handle(r.Context(), event); err != nil {
			h.fail(w, r, http.StatusInternalServerError, fmt.Errorf("webhook: handling event %s: %w", event.ID, err))
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	h.serveOnce(w, r, event)
}

// serveOnce runs Handle for event under a claim on its topic and ID. The
// claim is taken only after the signature verified, so a forger cannot
// claim ids. It names the topic too: a secret vouches for its topic only,
// so one subscription's secret cannot claim another topic's event.
func (h *Handler) serveOnce(w http.ResponseWriter, r *http.Request, event Event) {
	key := claimKey(event)
	claim, err := h.Deduplicator.Claim(r.Context(), key)
	switch {
	case err != nil:
		h.fail(w, r, http.StatusServiceUnavailable, fmt.Errorf("webhook: claiming event %s: %w", event.ID, err))
		return
	case claim == Handled:
		w.WriteHeader(http.StatusNoContent)
		return
	case claim == InFlight:
		h.fail(w, r, http.StatusConflict, fmt.Errorf("%w: event %s", ErrEventInFlight, event.ID))
		return
	case claim != Claimed:
		h.fail(w, r, http.StatusInternalServerError, fmt.Errorf("webhook: claiming event %s: the Deduplicator answered %v", event.ID, claim))
		return
	}
	// The claim is settled even if the request's context ends or Handle
	// panics. A claim left in flight would refuse every redelivery. It is
	// settled before the answer, which may bring the redelivery.
	settle := context.WithoutCancel(r.Context())
	settled := false
	defer func() {
		if !settled { // Handle panicked
			h.release(settle, r, key)
		}
	}()
	err = h.Handle(r.Context(), event)
	settled = true
	if err != nil {
		h.release(settle, r, key)
		h.fail(w, r, http.StatusInternalServerError, fmt.Errorf("webhook: handling event %s: %w", event.ID, err))
		return
	}
	if err := h.Deduplicator.Done(settle, key); err != nil && h.OnError != nil {
		// Handled all the same: asking for a redelivery would run it again.
		h.OnError(r, fmt.Errorf("webhook: recording event %s as handled: %w", event.ID, err))
	}
	w.WriteHeader(http.StatusNoContent)
}

// release drops the claim on key after Handle failed.
func (h *Handler) release(ctx context.Context, r *http.Request, key string) {
	if err := h.Deduplicator.Release(ctx, key); err != nil && h.OnError != nil {
		h.OnError(r, fmt.Errorf("webhook: releasing event %s: %w", key, err))
	}
}

// claimKey is what a Handler claims for event: "<topic> <id>". A
// redelivery carries the same topic and id.
func claimKey(event Event) string { return string(event.Topic) + " " + event.ID }

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

// fail answers with a short generic text for status.
// The detailed reason goes only to OnError. So a prober learns nothing
// beyond the status.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, status int, err error) {
	if h.OnError != nil {
		h.OnError(r, err)
	}
	http.Error(w, http.StatusText(status), status)
}
