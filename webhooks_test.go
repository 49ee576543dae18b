package rail0

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rail0/rail0-go/internal/secret"
)

const (
	fixtureWebhookID   = "0193c4d5-e6f7-7a80-9b1c-2d3e4f5a6b7c"
	fixtureCallbackID  = "0193d5e6-f7a8-7b90-8c1d-2e3f4a5b6c7d"
	fixtureWebhookJSON = `{"id": "0193c4d5-e6f7-7a80-9b1c-2d3e4f5a6b7c", "name": "orders", "callback_url": "https://shop.example/hooks/rail0", ` +
		`"topic": "payments.captured", "active": true, "circuit_state": "closed", "circuit_failure_count": 0, ` +
		`"created_at": "2026-09-14T09:00:00Z", "updated_at": "2026-09-14T09:30:00Z"}`
	fixtureWebhookSecretJSON = `{"id": "0193c4d5-e6f7-7a80-9b1c-2d3e4f5a6b7c", "name": "orders", "callback_url": "https://shop.example/hooks/rail0", ` +
		`"topic": "payments.captured", "active": true, "circuit_state": "closed", "circuit_failure_count": 0, ` +
		`"created_at": "2026-09-14T09:00:00Z", "updated_at": "2026-09-14T09:00:00Z", "shared_secret": "example-shared-secret"}`
	fixtureCallbackJSON = `{"id": "0193d5e6-f7a8-7b90-8c1d-2e3f4a5b6c7d", "webhook_id": "0193c4d5-e6f7-7a80-9b1c-2d3e4f5a6b7c", ` +
		`"payment_id": "0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a4b", "topic": "payments.captured", "callback_url": "https://shop.example/hooks/rail0", ` +
		`"response_code": null, "response_message": null, "error_reason": "connection refused", "status": "failed", ` +
		`"created_at": "2026-09-14T10:22:51Z", "payload": "{\"id\": \"0191f0aa-7c8d-7e9f-8a0b-1c2d3e4f5a6b\", \"topic\": \"payments.captured\"}"}`
)

func checkWebhook(t *testing.T, got any) {
	t.Helper()
	w := got.(*Webhook)
	want := Webhook{ID: fixtureWebhookID, Name: "orders", CallbackURL: "https://shop.example/hooks/rail0", Topic: TopicPaymentsCaptured,
		Active: true, CircuitState: CircuitClosed, CreatedAt: time.Date(2026, 9, 14, 9, 0, 0, 0, time.UTC), UpdatedAt: time.Date(2026, 9, 14, 9, 30, 0, 0, time.UTC)}
	if w.Response == nil || w.Response.StatusCode != http.StatusOK || w.Response.Call == nil {
		t.Errorf("webhook.Response = %+v, want the call's metadata", w.Response)
	}
	cp := *w
	cp.Response = nil
	if !reflect.DeepEqual(cp, want) {
		t.Errorf("webhook = %+v\nwant %+v", cp, want)
	}
}

func checkWebhookSecret(t *testing.T, got any) {
	t.Helper()
	w := got.(*WebhookWithSecret)
	if w.ID != fixtureWebhookID || w.SharedSecret() != "example-shared-secret" || w.Topic != TopicPaymentsCaptured {
		t.Errorf("webhook = %s (secret ok: %v)", w, w.SharedSecret() == "example-shared-secret")
	}
}

func TestWebhooksRequests(t *testing.T) {
	t.Parallel()
	inactive := false
	since := time.Date(2026, 9, 14, 12, 0, 0, 0, time.FixedZone("CEST", 2*3600))
	until := time.Date(2026, 9, 15, 0, 0, 0, 0, time.UTC)
	base := "/webhooks/" + fixtureWebhookID
	runMuxCases(t, []muxCase{
		{
			name: "Create",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Webhooks.Create(ctx, WebhookCreateParams{Name: "orders", CallbackURL: "https://shop.example/hooks/rail0", Topic: TopicPaymentsCaptured})
			},
			method: "POST", path: "/webhooks",
			body:  `{"name": "orders", "callback_url": "https://shop.example/hooks/rail0", "topic": "payments.captured"}`,
			reply: muxReply{status: http.StatusCreated, body: fixtureWebhookSecretJSON},
			check: checkWebhookSecret,
		},
		{
			name: "List with filters",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Webhooks.List(ctx, WebhookListParams{ListOptions: ListOptions{Page: 1, PerPage: 50},
					Topic: TopicPaymentsRefunded, Active: &inactive, CircuitState: CircuitOpen})
			},
			method: "GET", path: "/webhooks",
			query: url.Values{"page": {"1"}, "per_page": {"50"}, "topic": {"payments.refunded"}, "active": {"false"}, "circuit_state": {"open"}},
			reply: muxReply{status: 200, header: map[string]string{"X-Total-Count": "1", "X-Page": "1", "X-Per-Page": "50"},
				body: "[" + fixtureWebhookJSON + "]"},
			check: func(t *testing.T, got any) {
				p := got.(*Page[Webhook])
				if len(p.Items) != 1 || p.TotalCount != 1 || p.HasNext() {
					t.Fatalf("page = %+v", p)
				}
				if p.Response == nil || p.Items[0].Response != nil {
					t.Errorf("page.Response = %v, item.Response = %v: the page carries the call's metadata, its items none", p.Response, p.Items[0].Response)
				}
				item := p.Items[0]
				item.Response = &Response{StatusCode: http.StatusOK, Call: &Call{}}
				checkWebhook(t, &item)
			},
		},
		{
			name:   "Get",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Webhooks.Get(ctx, fixtureWebhookID) },
			method: "GET", path: base,
			reply: muxOK(fixtureWebhookJSON),
			check: checkWebhook,
		},
		{
			name: "Update",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Webhooks.Update(ctx, fixtureWebhookID, WebhookUpdateParams{CallbackURL: "https://shop.example/v2/hooks", Topic: TopicPaymentsVoided})
			},
			method: "PATCH", path: base,
			body:  `{"callback_url": "https://shop.example/v2/hooks", "topic": "payments.voided"}`,
			reply: muxOK(fixtureWebhookJSON),
			check: checkWebhook,
		},
		{
			name: "Delete",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Webhooks.Delete(ctx, fixtureWebhookID)
			},
			method: "DELETE", path: base,
			reply: muxReply{status: http.StatusNoContent},
		},
		{
			name:   "Enable",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Webhooks.Enable(ctx, fixtureWebhookID) },
			method: "PUT", path: base + "/enable",
			reply: muxOK(fixtureWebhookJSON),
			check: checkWebhook,
		},
		{
			name:   "Disable",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Webhooks.Disable(ctx, fixtureWebhookID) },
			method: "PUT", path: base + "/disable",
			reply: muxOK(strings.Replace(fixtureWebhookJSON, `"active": true`, `"active": false`, 1)),
			check: func(t *testing.T, got any) {
				if got.(*Webhook).Active {
					t.Errorf("webhook still active")
				}
			},
		},
		{
			name: "RotateSecret",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Webhooks.RotateSecret(ctx, fixtureWebhookID)
			},
			method: "PUT", path: base + "/rotate_secret",
			reply: muxOK(fixtureWebhookSecretJSON),
			check: checkWebhookSecret,
		},
		{
			name: "ResetCircuit",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Webhooks.ResetCircuit(ctx, fixtureWebhookID)
			},
			method: "PUT", path: base + "/reset_circuit",
			reply: muxOK(fixtureWebhookJSON),
			check: checkWebhook,
		},
		{
			name: "ListEventCallbacks with filters",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Webhooks.ListEventCallbacks(ctx, fixtureWebhookID, WebhookListEventCallbacksParams{
					ListOptions: ListOptions{Sort: []SortKey{SortCreatedAt.Desc()}},
					Status:      CallbackFailed, Topic: TopicPaymentsCaptured, PaymentID: fixturePaymentID, Since: since, Until: until,
				})
			},
			method: "GET", path: base + "/event_callbacks",
			query: url.Values{"sort": {"-created_at"}, "status": {"failed"}, "topic": {"payments.captured"}, "payment_id": {fixturePaymentID},
				"since": {"2026-09-14T10:00:00Z"}, "until": {"2026-09-15T00:00:00Z"}},
			reply: muxOK("[" + fixtureCallbackJSON + "]"),
			check: func(t *testing.T, got any) {
				p := got.(*Page[EventCallback])
				if len(p.Items) != 1 || p.TotalCount != 1 {
					t.Fatalf("page = %+v", p)
				}
				cb := p.Items[0]
				if cb.ID != fixtureCallbackID || cb.WebhookID != fixtureWebhookID || cb.PaymentID != fixturePaymentID || cb.Status != CallbackFailed ||
					cb.ResponseCode != "" || cb.ErrorReason != "connection refused" || !cb.CreatedAt.Equal(time.Date(2026, 9, 14, 10, 22, 51, 0, time.UTC)) {
					t.Errorf("callback = %+v", cb)
				}
				// The stored payload is the delivery as sent.
				if !strings.Contains(cb.Payload, `"0191f0aa-7c8d-7e9f-8a0b-1c2d3e4f5a6b"`) {
					t.Errorf("payload = %s", cb.Payload)
				}
			},
		},
		{
			name: "Redeliver",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Webhooks.Redeliver(ctx, fixtureWebhookID, fixtureCallbackID)
			},
			method: "POST", path: base + "/event_callbacks/" + fixtureCallbackID + "/redeliver",
			reply: muxReply{status: http.StatusAccepted, body: `{"status": "queued"}`},
			check: func(t *testing.T, got any) {
				if r := got.(*WebhookRedeliverResult); r.Status != "queued" || r.Response.StatusCode != http.StatusAccepted {
					t.Errorf("status = %v", got)
				}
			},
		},
		{
			name:   "Get escapes the id",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Webhooks.Get(ctx, "../payments") },
			method: "GET", path: "/webhooks/..%2Fpayments",
			reply: muxOK(fixtureWebhookJSON),
		},
	})
}

func TestWebhooksAllEventCallbacksWalksPages(t *testing.T) {
	t.Parallel()
	srv, c := newMuxServer(t)
	path := "/webhooks/" + fixtureWebhookID + "/event_callbacks"
	page := func(n string) muxReply {
		return muxReply{status: 200, header: map[string]string{"X-Total-Count": "3", "X-Page": n, "X-Per-Page": "2"},
			body: "[" + fixtureCallbackJSON + "]"}
	}
	srv.on("GET "+path, page("1"), page("2"))
	params := WebhookListEventCallbacksParams{ListOptions: ListOptions{PerPage: 2}, Status: CallbackFailed}
	n := 0
	for _, err := range c.Webhooks.AllEventCallbacks(context.Background(), fixtureWebhookID, params) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2 || params.Page != 0 {
		t.Errorf("walked %d items, params.Page = %d", n, params.Page)
	}
	if got := srv.routes(); len(got) != 2 {
		t.Errorf("routes = %v", got)
	}
	srv.on("GET /webhooks", muxOK("["+fixtureWebhookJSON+"]"))
	var ids []string
	for w, err := range c.Webhooks.All(context.Background(), WebhookListParams{}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, w.ID)
	}
	if !reflect.DeepEqual(ids, []string{fixtureWebhookID}) {
		t.Errorf("All = %v", ids)
	}
}

func TestWebhooksValidation(t *testing.T) {
	t.Parallel()
	srv, c := newMuxServer(t)
	ctx := context.Background()
	tests := []struct {
		name  string
		field string
		call  func() error
	}{
		{"Create without name", "name", func() error {
			_, err := c.Webhooks.Create(ctx, WebhookCreateParams{CallbackURL: "https://x.example", Topic: TopicPaymentsCreated})
			return err
		}},
		{"Create without topic", "topic", func() error {
			_, err := c.Webhooks.Create(ctx, WebhookCreateParams{Name: "n", CallbackURL: "https://x.example"})
			return err
		}},
		{"Get without id", "id", func() error { _, err := c.Webhooks.Get(ctx, ""); return err }},
		{"Update with nothing", "params", func() error { _, err := c.Webhooks.Update(ctx, fixtureWebhookID, WebhookUpdateParams{}); return err }},
		{"Delete without id", "id", func() error { _, err := c.Webhooks.Delete(ctx, ""); return err }},
		{"RotateSecret without id", "id", func() error { _, err := c.Webhooks.RotateSecret(ctx, ""); return err }},
		{"ListEventCallbacks without id", "id", func() error {
			_, err := c.Webhooks.ListEventCallbacks(ctx, "", WebhookListEventCallbacksParams{})
			return err
		}},
		{"AllEventCallbacks without id", "id", func() error {
			for _, err := range c.Webhooks.AllEventCallbacks(ctx, "", WebhookListEventCallbacksParams{}) {
				return err
			}
			return nil
		}},
		{"Redeliver without callback", "callback_id", func() error { _, err := c.Webhooks.Redeliver(ctx, fixtureWebhookID, ""); return err }},
		{"Redeliver without webhook", "id", func() error { _, err := c.Webhooks.Redeliver(ctx, "", fixtureCallbackID); return err }},
	}
	for _, tt := range tests {
		var ve *ValidationError
		if err := tt.call(); !errors.As(err, &ve) || ve.Field != tt.field {
			t.Errorf("%s: err = %v, want *ValidationError on %s", tt.name, err, tt.field)
		}
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
}

func TestWebhookWithSecretNeverPrintsSecret(t *testing.T) {
	t.Parallel()
	w := WebhookWithSecret{Webhook: Webhook{ID: fixtureWebhookID, Name: "orders", Topic: TopicPaymentsCaptured}, sharedSecret: secret.New("whsec-do-not-print")}
	for _, format := range []string{"%v", "%+v", "%#v", "%s", "%x", "%q"} {
		for _, v := range []any{w, &w, []WebhookWithSecret{w}} {
			if out := fmt.Sprintf(format, v); strings.Contains(out, "whsec-do-not-print") || strings.Contains(out, fmt.Sprintf("%x", "whsec-do-not-print")) {
				t.Errorf("Sprintf(%q, %T) leaks the secret: %s", format, v, out)
			}
		}
	}
	var buf strings.Builder
	slog.New(slog.NewTextHandler(&buf, nil)).Info("created", "webhook", w)
	if strings.Contains(buf.String(), "whsec-do-not-print") || !strings.Contains(buf.String(), fixtureWebhookID) {
		t.Errorf("slog = %s", buf.String())
	}
}
