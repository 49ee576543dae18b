package rail0_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"

	rail0 "github.com/rail0/rail0-go"
)

// The examples run against an in-process stand-in for the gateway that
// answers with the contract guide's example records (README section 13).

const examplePayment = `{"id": "0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a4b", "rail0_id": "0x9f2c4e1a7b3d5c8e0f6a2b4d6c8e0a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e2f", "status": "%s", "mode": "authorize", "amount": "25000000", "capturable_amount": "%s", "refundable_amount": "0", "payer": "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4", "payee": "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2", "token": "0x036CbD53842c5426634e7929541eC2318f3dCF7e", "authorization_expiry": 1789985700, "refund_expiry": 1791972900, "disputed": false, "description": "Order %s", "created_at": "2026-09-14T10:15:00Z", "updated_at": "2026-09-14T10:15:00Z"`

func examplePaymentJSON(status, capturable, order string) string {
	return fmt.Sprintf(examplePayment, status, capturable, order) + "}"
}

func examplePaymentDetailJSON(status, capturable string, transactions string) string {
	payload := "null"
	if status == "unsigned" {
		payload = `{"primaryType": "TransferWithAuthorization"}`
	}
	return fmt.Sprintf(examplePayment, status, capturable, "1042") +
		`, "chain_id": 84532, "rail0_contract": "0x7c1E3b52fA9d4C26e0a1F83b5D9e6A4c2B0f8E31", "transactions": [` +
		transactions + `], "signing_payload": ` + payload + `}`
}

// exampleCaptureTx is the capture transaction of the guide's example.
func exampleCaptureTx(status, unsigned string) string {
	return `{"id": "0191f0a9-5e6f-7a80-9b1c-2d3e4f5a6b7c", "payment_id": "0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a4b", "operation": "capture", "status": "` +
		status + `", "unsigned_transaction": ` + unsigned + `, "amount": "10000000", "created_at": "2026-09-14T10:21:02Z", "updated_at": "2026-09-14T10:21:02Z"}`
}

// newExampleGateway starts the stand-in gateway under /api, like a
// self-hosted gateway behind a path prefix.
func newExampleGateway() *httptest.Server {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, status int, body string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
	mux.HandleFunc("POST /api/payments", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusCreated, examplePaymentDetailJSON("unsigned", "0", ""))
	})
	mux.HandleFunc("GET /api/payments/{id}", func(w http.ResponseWriter, r *http.Request) {
		tx := `{"id": "0191f0a9-5e6f-7a80-9b1c-2d3e4f5a6b7c", "operation": "capture", "status": "confirmed", "transaction_hash": "0x8d1f3a5c7e9b0d2f4a6c8e0b1d3f5a7c9e1b3d5f7a9c0e2b4d6f8a1c3e5b7d9f", "amount": "10000000", "block_number": 31044931, "created_at": "2026-09-14T10:21:02Z", "updated_at": "2026-09-14T10:22:41Z"}`
		reply(w, http.StatusOK, examplePaymentDetailJSON("partially_captured", "15000000", tx))
	})
	mux.HandleFunc("POST /api/payments/{id}/capture/prepare", func(w http.ResponseWriter, r *http.Request) {
		reply(w, http.StatusCreated, exampleCaptureTx("pending", `"{\"chain_id\":84532,\"nonce\":7,\"to\":\"0x7c1E3b52fA9d4C26e0a1F83b5D9e6A4c2B0f8E31\",\"value\":\"0\",\"data\":\"0xa0e7c9f49f2c4e1a7b3d5c8e0f6a2b4d6c8e0a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e2f0000000000000000000000000000000000000000000000000000000000e4e1c0\",\"gas_limit\":120000,\"max_priority_fee_per_gas\":\"1000000\",\"max_fee_per_gas\":\"1500000000\"}"`))
	})
	mux.HandleFunc("POST /api/payments/{id}/capture", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			SignedTransaction string `json:"signed_transaction"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || !strings.HasPrefix(body.SignedTransaction, "0x02") {
			reply(w, http.StatusBadRequest, `{"code": "invalid_transaction", "title": "Bad transaction", "detail": "Not a signed EIP-1559 transaction.", "status": "invalid_transaction"}`)
			return
		}
		reply(w, http.StatusAccepted, exampleCaptureTx("submitted", "null"))
	})
	mux.HandleFunc("GET /api/payments", func(w http.ResponseWriter, r *http.Request) {
		// Five payments, two per page.
		page := r.URL.Query().Get("page")
		var items []string
		switch page {
		case "", "1":
			items = []string{examplePaymentJSON("captured", "0", "1001"), examplePaymentJSON("captured", "0", "1002")}
		case "2":
			items = []string{examplePaymentJSON("captured", "0", "1003"), examplePaymentJSON("captured", "0", "1004")}
		case "3":
			items = []string{examplePaymentJSON("captured", "0", "1005")}
		}
		w.Header().Set("X-Total-Count", "5")
		w.Header().Set("X-Page", page)
		w.Header().Set("X-Per-Page", "2")
		reply(w, http.StatusOK, "["+strings.Join(items, ",")+"]")
	})
	return httptest.NewServer(mux)
}

// Open a payment as the buyer, then read it back.
func ExamplePaymentsService_Create() {
	gw := newExampleGateway()
	defer gw.Close()
	client, err := rail0.NewClient(gw.URL+"/api", rail0.WithToken("session-jwt"))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()

	payment, err := client.Payments.Create(ctx, rail0.PaymentCreateParams{
		ChainID: 84532, // Base Sepolia
		Mode:    rail0.ModeAuthorize,
		Amount:  "25.00", // human decimal; the gateway scales it by the token's decimals
		Token:   "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
		Payer:   "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
		Payee:   "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2",
		// Store the key with the order so that a retry after a crash
		// returns the same payment instead of opening a second one.
		IdempotencyKey: "order-1042",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(payment.Status, "payment, payer must sign:", len(payment.SigningPayload) > 0)

	payment, err = client.Payments.Get(ctx, payment.ID)
	if err != nil {
		log.Fatal(err)
	}
	captured := payment.Transactions[0]
	amount, _ := rail0.FormatAmount(*captured.Amount, 6)
	left, _ := rail0.FormatAmount(payment.CapturableAmount, 6)
	fmt.Printf("%s: %s %s USDC, %s USDC still in escrow\n", payment.Status, captured.Operation, amount, left)
	// Output:
	// unsigned payment, payer must sign: true
	// partially_captured: capture 10 USDC, 15 USDC still in escrow
}

// Walk every payment, page after page, with the iterator.
func ExamplePaymentsService_All() {
	gw := newExampleGateway()
	defer gw.Close()
	client, err := rail0.NewClient(gw.URL+"/api", rail0.WithToken("session-jwt"))
	if err != nil {
		log.Fatal(err)
	}

	params := rail0.PaymentListParams{
		ListOptions: rail0.ListOptions{PerPage: 2, Sort: []rail0.SortKey{rail0.SortCreatedAt.Desc()}},
		Status:      rail0.StatusCaptured,
	}
	for payment, err := range client.Payments.All(context.Background(), params) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(*payment.Description)
	}
	// Output:
	// Order 1001
	// Order 1002
	// Order 1003
	// Order 1004
	// Order 1005
}

// Fetch a single page when you need the totals.
func ExamplePaymentsService_List() {
	gw := newExampleGateway()
	defer gw.Close()
	client, err := rail0.NewClient(gw.URL+"/api", rail0.WithToken("session-jwt"))
	if err != nil {
		log.Fatal(err)
	}

	page, err := client.Payments.List(context.Background(), rail0.PaymentListParams{ListOptions: rail0.ListOptions{Page: 2, PerPage: 2}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("page %d: %d of %d payments, more: %v\n", page.Page, len(page.Items), page.TotalCount, page.HasNext())
	// Output:
	// page 2: 2 of 5 payments, more: true
}

// Wait until a submitted step is confirmed on chain.
func ExamplePaymentsService_WaitForTransaction() {
	gw := newExampleGateway()
	defer gw.Close()
	client, err := rail0.NewClient(gw.URL+"/api", rail0.WithToken("session-jwt"))
	if err != nil {
		log.Fatal(err)
	}

	// The id and the hash come from the Transaction that a flow such as
	// Capture (or Submit) returned: only the row carrying the hash sent
	// counts.
	tx, err := client.Payments.WaitForTransaction(context.Background(),
		"0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a4b", "0191f0a9-5e6f-7a80-9b1c-2d3e4f5a6b7c", rail0.PaymentWaitForTransactionParams{
			TransactionHash: "0x8d1f3a5c7e9b0d2f4a6c8e0b1d3f5a7c9e1b3d5f7a9c0e2b4d6f8a1c3e5b7d9f",
		})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(tx.Operation, tx.Status, "in block", *tx.BlockNumber)
	// Output:
	// capture confirmed in block 31044931
}

// Convert between the human amounts the gateway takes and the base units it
// returns, exactly.
func ExampleToBaseUnits() {
	base, err := rail0.ToBaseUnits("1.50", 6) // USDC has 6 decimals
	fmt.Println(base, err)

	// Filters such as PaymentListParams.MinAmount take base units.
	params := rail0.PaymentListParams{}
	params.MinAmount, _ = rail0.ToBaseUnits("10", 6)
	fmt.Println(params.MinAmount)

	// Money is never rounded: extra precision is an error.
	_, err = rail0.ToBaseUnits("1.0000005", 6)
	fmt.Println(err)
	// Output:
	// 1500000 <nil>
	// 10000000
	// rail0: ToBaseUnits("1.0000005", 6): amount has more precision than the token's decimals
}

func ExampleFormatAmount() {
	for _, base := range []string{"1500000", "25000000", "1"} {
		human, err := rail0.FormatAmount(base, 6)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(human)
	}
	// Output:
	// 1.5
	// 25
	// 0.000001
}

// Every result carries its call's metadata (Response) and transcript
// (Response.Call); every error carries the transcript too (CallOf). The
// request id is the one to log and to quote to support.
func ExampleResponse() {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", fmt.Sprintf("req-%d", n))
		if strings.HasSuffix(r.URL.Path, "/missing") {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"code": "not_found", "detail": "Payment not found."}`)
			return
		}
		io.WriteString(w, examplePaymentDetailJSON("authorized", "25000000", ""))
	}))
	defer srv.Close()
	client, err := rail0.NewClient(srv.URL, rail0.WithToken("token"))
	if err != nil {
		log.Fatal(err)
	}

	p, err := client.Payments.Get(context.Background(), "0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a4b")
	if err != nil {
		log.Fatal(err)
	}
	call := p.Response.Call
	fmt.Println(p.Response.StatusCode, p.Response.RequestID, call.Operation, call.Route, len(call.Attempts), call.Outcome)

	_, err = client.Payments.Get(context.Background(), "missing")
	call = rail0.CallOf(err)
	fmt.Println(call.StatusCode(), call.RequestID(), call.Operation, call.PaymentID, call.Outcome)
	// Output:
	// 200 req-1 getPayment /payments/{id} 1 ok
	// 404 req-2 getPayment missing api_error
}

// An endpoint the SDK has no method for yet: Raw sends it with the client's
// token, retries, limiter and transcript, under the retry class the caller
// gives (here a read, safe to repeat), and decodes the answer.
func ExampleClient_Raw() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"url": "https://receipts.example/1042.pdf"}`)
	}))
	defer srv.Close()
	client, err := rail0.NewClient(srv.URL, rail0.WithToken("token"))
	if err != nil {
		log.Fatal(err)
	}

	var receipt struct {
		URL string `json:"url"`
	}
	resp, err := client.Raw(context.Background(), rail0.RawRequest{
		Method: http.MethodGet,
		Path:   []string{"payments", "0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a4b", "receipt"}, // one segment each, escaped
		Class:  rail0.Idempotent,
	}, &receipt)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.StatusCode, resp.Call.Route, receipt.URL)
	// Output:
	// 200 /payments/0191f0a2-3c4d-7e5f-8a6b-9c0d1e2f3a4b/receipt https://receipts.example/1042.pdf
}
