package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rail0/rail0-go"
)

func TestDecodeEventReadme(t *testing.T) {
	body := readmeBody(t)
	e, err := DecodeEvent(body)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(body, e.Raw) {
		t.Errorf("Raw differs from the body")
	}
	if e.ID != "0191f0aa-7c8d-7e9f-8a0b-1c2d3e4f5a6b" || e.Topic != rail0.TopicPaymentsCaptured ||
		!e.EmittedAt.Equal(time.Date(2026, 9, 14, 10, 22, 50, 0, time.UTC)) {
		t.Errorf("envelope = %q %q %v", e.ID, e.Topic, e.EmittedAt)
	}
	if e.Payment == nil || e.Transaction == nil {
		t.Fatalf("payment %v, transaction %v: want both", e.Payment, e.Transaction)
	}
	wantP := rail0.PaymentDetail{Payment: rail0.Payment{
		ID:                  "0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a4b",
		Rail0ID:             "0x9f2c4e1a7b3d5c8e0f6a2b4d6c8e0a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e2f",
		Status:              rail0.StatusPartiallyCaptured,
		Mode:                rail0.ModeAuthorize,
		Amount:              "25000000",
		CapturableAmount:    "15000000",
		Payer:               "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
		Payee:               "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2",
		Token:               "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
		AuthorizationExpiry: 1789985700,
	}, ChainID: 84532}
	gotP := *e.Payment
	if fmt.Sprint(gotP.Metadata) != "map[order_id:1042]" {
		t.Errorf("Metadata = %v", gotP.Metadata)
	}
	gotP.Metadata = nil
	if gotP.LastErrorCode != nil || gotP.LastErrorMessage != nil {
		t.Errorf("null last_error_* decoded as non-nil")
	}
	if !equalJSON(t, gotP, wantP) {
		t.Errorf("Payment = %+v\nwant %+v", gotP, wantP)
	}
	tx := e.Transaction
	if tx.ID != "0191f0a9-5e6f-7a80-9b1c-2d3e4f5a6b7c" || tx.Operation != "capture" || tx.Status != "confirmed" {
		t.Errorf("Transaction = %+v", tx)
	}
	if tx.TransactionHash == nil || *tx.TransactionHash != "0x8d1f3a5c7e9b0d2f4a6c8e0b1d3f5a7c9e1b3d5f7a9c0e2b4d6f8a1c3e5b7d9f" {
		t.Errorf("TransactionHash = %v", tx.TransactionHash)
	}
	if tx.Amount == nil || *tx.Amount != "10000000" || tx.BlockNumber == nil || *tx.BlockNumber != 31044931 {
		t.Errorf("Amount, BlockNumber = %v, %v", tx.Amount, tx.BlockNumber)
	}
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	return bytes.Equal(x, y)
}

func TestDecodeEventLenient(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		check   func(t *testing.T, e Event)
		wantErr bool
	}{
		{name: "only id", body: `{"id":"e1"}`, check: func(t *testing.T, e Event) {
			if e.ID != "e1" || !e.EmittedAt.IsZero() || e.Topic != "" || e.Payment != nil || e.Transaction != nil {
				t.Errorf("Event = %+v", e)
			}
		}},
		{name: "null transaction", body: `{"id":"e1","transaction":null,"payment":{"id":"p1"}}`, check: func(t *testing.T, e Event) {
			if e.Transaction != nil || e.Payment == nil || e.Payment.ID != "p1" {
				t.Errorf("Event = %+v", e)
			}
		}},
		{name: "unknown topic and fields", body: `{"id":"e1","topic":"payments.teleported","new_field":{"a":1}}`, check: func(t *testing.T, e Event) {
			if e.Topic != rail0.WebhookTopic("payments.teleported") {
				t.Errorf("Topic = %q", e.Topic)
			}
		}},
		{name: "odd shapes are dropped, not fatal", body: `{"id":"e1","emitted_at":"yesterday","topic":7,"payment":"p1","transaction":[1]}`, check: func(t *testing.T, e Event) {
			if e.ID != "e1" || !e.EmittedAt.IsZero() || e.Topic != "" || e.Payment != nil || e.Transaction != nil {
				t.Errorf("Event = %+v", e)
			}
			if !strings.Contains(string(e.Raw), `"emitted_at":"yesterday"`) {
				t.Errorf("Raw = %s", e.Raw)
			}
		}},
		{name: "payment with a surprising field type is dropped whole", body: `{"id":"e1","payment":{"id":"p1","chain_id":"84532"}}`, check: func(t *testing.T, e Event) {
			if e.Payment != nil {
				t.Errorf("Payment = %+v, want nil", e.Payment)
			}
		}},
		{name: "missing id", body: `{"topic":"payments.created"}`, wantErr: true},
		{name: "empty id", body: `{"id":""}`, wantErr: true},
		{name: "numeric id", body: `{"id":12}`, wantErr: true},
		{name: "array body", body: `[{"id":"e1"}]`, wantErr: true},
		{name: "not json", body: `id=e1`, wantErr: true},
		{name: "empty body", body: ``, wantErr: true},
		// One reading only: a key twice, or keys that differ only by case
		// or folding, at any level.
		{name: "topic twice", body: `{"id":"e1","topic":"payments.refunded","topic":"payments.created"}`, wantErr: true},
		{name: "topic and Topic", body: `{"id":"e1","topic":"payments.refunded","Topic":"payments.created"}`, wantErr: true},
		{name: "id and ID", body: `{"id":"e1","ID":"e2"}`, wantErr: true},
		{name: "a folded payment key", body: `{"id":"e1","payment":{"id":"p1","ſtatus":"captured","status":"refunded"}}`, wantErr: true},
		{name: "nested in a transaction", body: `{"id":"e1","transaction":{"id":"t1","amount":"1","Amount":"1000"}}`, wantErr: true},
		{name: "invalid UTF-8", body: "{\"id\":\"e1\",\"topic\":\"payments.created\xff\"}", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := DecodeEvent([]byte(tt.body))
			if tt.wantErr {
				if !errors.Is(err, ErrMalformedEvent) || e.ID != "" {
					t.Fatalf("DecodeEvent = %+v, %v; want ErrMalformedEvent", e, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, e)
		})
	}
}

// Event.Raw must not alias the caller's buffer, which a server may reuse.
func TestDecodeEventCopiesBody(t *testing.T) {
	body := []byte(`{"id":"e1"}`)
	e, err := DecodeEvent(body)
	if err != nil {
		t.Fatal(err)
	}
	body[7] = 'X'
	if string(e.Raw) != `{"id":"e1"}` {
		t.Fatalf("Raw = %s: aliases the input", e.Raw)
	}
}
