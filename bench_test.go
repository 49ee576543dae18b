package rail0

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The overhead benchmarks compare the SDK with the same request made with
// plain net/http and encoding/json against the same loopback server, in one
// run (see BENCHMARKS.md):
//
//	go test -run '^$' -bench 'Get|List' -benchmem -count 10 . | tee new.txt
//	benchstat -col /client new.txt

func benchServer(b *testing.B) *httptest.Server {
	b.Helper()
	var list strings.Builder
	list.WriteString("[")
	for i := 0; i < 25; i++ {
		if i > 0 {
			list.WriteString(",")
		}
		fmt.Fprintf(&list, `{"id":"0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a%02d","contract_id":"0190c7d1-aa01-7b02-8c03-d4e5f6a7b8c9","rail0_id":"0x9f2c4e1a7b3d5c8e0f6a2b4d6c8e0a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e2f","status":"partially_captured","mode":"authorize","amount":"25000000","capturable_amount":"15000000","refundable_amount":"10000000","config_hash":"0x51c0d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1","payer":"0x5B38Da6a701c568545dCfcB03FcB875f56beddC4","payee":"0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2","token":"0x036CbD53842c5426634e7929541eC2318f3dCF7e","authorization_expiry":1789985700,"refund_expiry":1791972900,"disputed":false,"last_error_code":null,"last_error_message":null,"description":"Order 1042","metadata":{"order_id":"1042"},"signed_at":"2026-09-14T10:15:31Z","created_at":"2026-09-14T10:15:00Z","updated_at":"2026-09-14T10:22:41Z"}`, i)
	}
	list.WriteString("]")
	listBody := []byte(list.String())
	detail := []byte(benchDetail)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "0191f0a2-req")
		if r.URL.Path == "/payments" {
			w.Header().Set("X-Total-Count", "57")
			w.Header().Set("X-Page", "1")
			w.Header().Set("X-Per-Page", "25")
			w.Write(listBody)
			return
		}
		w.Write(detail)
	}))
	b.Cleanup(srv.Close)
	return srv
}

const benchDetail = `{"id":"0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a4b","contract_id":"0190c7d1-aa01-7b02-8c03-d4e5f6a7b8c9","rail0_id":"0x9f2c4e1a7b3d5c8e0f6a2b4d6c8e0a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e2f","status":"partially_captured","mode":"authorize","amount":"25000000","capturable_amount":"15000000","refundable_amount":"10000000","config_hash":"0x51c0d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1","payer":"0x5B38Da6a701c568545dCfcB03FcB875f56beddC4","payee":"0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2","token":"0x036CbD53842c5426634e7929541eC2318f3dCF7e","authorization_expiry":1789985700,"refund_expiry":1791972900,"disputed":false,"last_error_code":null,"last_error_message":null,"description":"Order 1042","metadata":{"order_id":"1042"},"signed_at":"2026-09-14T10:15:31Z","created_at":"2026-09-14T10:15:00Z","updated_at":"2026-09-14T10:22:41Z","chain_id":84532,"rail0_contract":"0x7c1E3b52fA9d4C26e0a1F83b5D9e6A4c2B0f8E31","transactions":[{"id":"0191f0a9-5e6f-7a80-9b1c-2d3e4f5a6b7c","payment_id":"0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a4b","operation":"capture","status":"confirmed","error_code":null,"error_title":null,"error_detail":null,"error_message":null,"unsigned_transaction":null,"transaction_hash":"0x8d1f3a5c7e9b0d2f4a6c8e0b1d3f5a7c9e1b3d5f7a9c0e2b4d6f8a1c3e5b7d9f","amount":"10000000","block_number":31044931,"gas_used":"71804","gas_limit":"120000","effective_gas_price":"1200000","base_fee_per_gas":"1000000","gas_cost":"86164800000","pending_at":"2026-09-14T10:21:02Z","submitted_at":"2026-09-14T10:21:09Z","confirmed_at":"2026-09-14T10:22:41Z","created_at":"2026-09-14T10:21:02Z","updated_at":"2026-09-14T10:22:41Z"}],"signing_payload":null}`

func benchHTTPClient() *http.Client {
	return &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
}

// rawGet is what a careful user writes without the SDK.
func rawGet(ctx context.Context, hc *http.Client, url, token string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func BenchmarkPaymentsGet(b *testing.B) {
	srv := benchServer(b)
	ctx := context.Background()
	b.Run("client=sdk", func(b *testing.B) {
		c, err := NewClient(srv.URL, WithToken("tok"), WithHTTPClient(benchHTTPClient()))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Payments.Get(ctx, "0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a4b"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("client=net-http", func(b *testing.B) {
		hc := benchHTTPClient()
		b.ReportAllocs()
		for b.Loop() {
			var p PaymentDetail
			if err := rawGet(ctx, hc, srv.URL+"/payments/0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a4b", "tok", &p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkPaymentsList(b *testing.B) {
	srv := benchServer(b)
	ctx := context.Background()
	b.Run("client=sdk", func(b *testing.B) {
		c, err := NewClient(srv.URL, WithToken("tok"), WithHTTPClient(benchHTTPClient()))
		if err != nil {
			b.Fatal(err)
		}
		params := PaymentListParams{ListOptions: ListOptions{PerPage: 25}}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Payments.List(ctx, params); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("client=net-http", func(b *testing.B) {
		hc := benchHTTPClient()
		b.ReportAllocs()
		for b.Loop() {
			var ps []Payment
			if err := rawGet(ctx, hc, srv.URL+"/payments?per_page=25", "tok", &ps); err != nil {
				b.Fatal(err)
			}
		}
	})
}
