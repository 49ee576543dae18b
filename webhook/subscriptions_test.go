package webhook

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/rail0/rail0-go"
)

// One receiver, three subscriptions: payments.created (one secret),
// payments.refunded (rotated: the new and the previous secret) and a
// catch-all of any topic.
func TestVerifyEventRoutesEachDeliveryToItsSubscription(t *testing.T) {
	const ts = int64(1789381370)
	created := Subscription{ID: "wh-created", Topic: rail0.TopicPaymentsCreated}
	refunded := Subscription{ID: "wh-refunded", Topic: rail0.TopicPaymentsRefunded}
	catchAll := Subscription{ID: "wh-any"}
	v := Verifier{Now: clockAt(ts)}.
		WithSubscription(created, "created-secret").
		WithSubscription(refunded, "refunded-secret-new", "refunded-secret-old").
		WithSubscription(catchAll, "any-secret")

	body := func(topic string) []byte {
		if topic == "" {
			return []byte(`{"id":"e1"}`)
		}
		return []byte(`{"id":"e1","topic":"` + topic + `"}`)
	}
	tests := []struct {
		name      string
		topic     string // in the signed body
		secret    string
		wantSub   Subscription
		wantTopic rail0.WebhookTopic
		wantErr   error
	}{
		{"created, its own secret", "payments.created", "created-secret", created, rail0.TopicPaymentsCreated, nil},
		{"refunded, the new secret", "payments.refunded", "refunded-secret-new", refunded, rail0.TopicPaymentsRefunded, nil},
		{"refunded, the previous secret during a rotation", "payments.refunded", "refunded-secret-old", refunded, rail0.TopicPaymentsRefunded, nil},
		{"a refund signed with the created subscription's secret", "payments.refunded", "created-secret", Subscription{}, "", ErrTopicMismatch},
		{"a creation signed with the refund subscription's secret", "payments.created", "refunded-secret-old", Subscription{}, "", ErrTopicMismatch},
		{"any topic for the catch-all", "payments.voided", "any-secret", catchAll, rail0.TopicPaymentsVoided, nil},
		{"a body without a topic takes the subscription's", "", "refunded-secret-new", refunded, rail0.TopicPaymentsRefunded, nil},
		{"an unknown secret", "payments.created", "guess", Subscription{}, "", ErrBadSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := body(tt.topic)
			e, err := v.VerifyEvent(b, Sign(b, ts, tt.secret), strconv.FormatInt(ts, 10))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || e.ID != "" {
					t.Fatalf("VerifyEvent = %+v, %v; want %v", e, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e.Subscription != tt.wantSub || e.Topic != tt.wantTopic || e.ID != "e1" {
				t.Errorf("event %s %q for %+v; want %q for %+v", e.ID, e.Topic, e.Subscription, tt.wantTopic, tt.wantSub)
			}
			// Verify alone, which reads no body, accepts every authentic
			// delivery, whatever its topic.
			if err := v.Verify(b, Sign(b, ts, tt.secret), strconv.FormatInt(ts, 10)); err != nil {
				t.Errorf("Verify = %v", err)
			}
		})
	}
}

// The same secret configured for two subscriptions (a configuration slip)
// vouches for each one's topic: the one the body names is chosen.
func TestVerifyEventPrefersTheSubscriptionOfTheBodysTopic(t *testing.T) {
	const ts = int64(1789381370)
	v := Verifier{Now: clockAt(ts)}.
		WithSubscription(Subscription{ID: "a", Topic: rail0.TopicPaymentsCreated}, "shared").
		WithSubscription(Subscription{ID: "b", Topic: rail0.TopicPaymentsSigned}, "shared")
	b := []byte(`{"id":"e1","topic":"payments.signed"}`)
	e, err := v.VerifyEvent(b, Sign(b, ts, "shared"), strconv.FormatInt(ts, 10))
	if err != nil || e.Subscription.ID != "b" {
		t.Fatalf("VerifyEvent = %+v, %v; want subscription b", e.Subscription, err)
	}
}

// WithSubscription never changes the Verifier it is called on, nor another
// Verifier built from the same one, even when their keys share an array
// with room to spare.
func TestWithSubscriptionCopies(t *testing.T) {
	const ts = int64(1789381370)
	base := withClock(NewVerifier("a", "b", "c"), clockAt(ts)) // 3 keys in an array of 4
	x := base.WithSubscription(Subscription{ID: "x"}, "x-secret")
	y := base.WithSubscription(Subscription{ID: "y"}, "y-secret")
	b := []byte(`{"id":"e1"}`)
	stamp := strconv.FormatInt(ts, 10)
	if e, err := x.VerifyEvent(b, Sign(b, ts, "x-secret"), stamp); err != nil || e.Subscription.ID != "x" {
		t.Errorf("x: %+v, %v", e.Subscription, err)
	}
	if err := x.Verify(b, Sign(b, ts, "y-secret"), stamp); !errors.Is(err, ErrBadSignature) {
		t.Errorf("x accepts y's secret: %v", err)
	}
	if err := base.Verify(b, Sign(b, ts, "x-secret"), stamp); !errors.Is(err, ErrBadSignature) {
		t.Errorf("base accepts x's secret: %v", err)
	}
	if e, err := y.VerifyEvent(b, Sign(b, ts, "y-secret"), stamp); err != nil || e.Subscription.ID != "y" {
		t.Errorf("y: %+v, %v", e.Subscription, err)
	}
}

// Through the Handler: a delivery signed by a subscription's secret for
// another topic is answered 401 and never reaches Handle.
func TestHandlerRefusesATopicItsSecretDoesNotVouchFor(t *testing.T) {
	const ts = int64(1789381370)
	var handled []Event
	var reported []error
	h := &Handler{
		Verifier: Verifier{Now: clockAt(ts)}.
			WithSubscription(Subscription{ID: "wh-created", Topic: rail0.TopicPaymentsCreated}, "created-secret").
			WithSubscription(Subscription{ID: "wh-refunded", Topic: rail0.TopicPaymentsRefunded}, "refunded-secret"),
		Handle:  func(_ context.Context, e Event) error { handled = append(handled, e); return nil },
		OnError: func(_ *http.Request, err error) { reported = append(reported, err) },
	}
	send := func(body, secret string) int {
		req := httptest.NewRequest(http.MethodPost, "/hooks", bytes.NewReader([]byte(body)))
		req.Header.Set(TimestampHeader, strconv.FormatInt(ts, 10))
		req.Header.Set(SignatureHeader, Sign([]byte(body), ts, secret))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	if code := send(`{"id":"e1","topic":"payments.refunded"}`, "created-secret"); code != http.StatusUnauthorized {
		t.Errorf("forged refund answered %d, want 401", code)
	}
	if code := send(`{"id":"e2","topic":"payments.refunded"}`, "refunded-secret"); code != http.StatusNoContent {
		t.Errorf("refund answered %d, want 204", code)
	}
	if len(handled) != 1 || handled[0].ID != "e2" || handled[0].Subscription.ID != "wh-refunded" {
		t.Errorf("handled %+v", handled)
	}
	if len(reported) != 1 || !errors.Is(reported[0], ErrTopicMismatch) {
		t.Errorf("OnError got %v", reported)
	}
}
