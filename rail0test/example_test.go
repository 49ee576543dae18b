package rail0test_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	rail0 "github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0test"
)

// A buyer signs in with the demo key and opens a payment to the demo merchant,
// all against the in-process gateway.
func Example() {
	srv := rail0test.NewServer()
	defer srv.Close()
	ctx := context.Background()

	token, err := srv.Login(ctx, srv.Buyer.PrivateKey)
	if err != nil {
		fmt.Println(err)
		return
	}
	client, err := srv.Client(rail0.WithToken(token))
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := client.Payments.Create(ctx, rail0.PaymentCreateParams{
		ChainID: srv.ChainID, Mode: "authorize", Amount: "25.00", Token: srv.Token,
		Payer: srv.Buyer.Address, Payee: srv.Merchant.Address,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Status, p.Amount)
	// Output: unsigned 25000000
}

// Faults make the gateway misbehave on purpose; the Ledger tells whether a
// request reached its handler.
func ExampleFaults() {
	srv := rail0test.NewServer()
	defer srv.Close()
	srv.Faults.Add(rail0test.Fault{
		Route: "GET /health", Times: 1,
		Kind: rail0test.FaultStatus, Status: http.StatusBadGateway,
		Body: "<html>upstream down</html>", ContentType: "text/html",
	})
	client, err := srv.Client(rail0.WithMaxRetries(0))
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = client.Health.Get(context.Background())
	var apiErr *rail0.APIError
	fmt.Println(errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusBadGateway)
	fmt.Println("handler ran:", srv.Ledger.Count("GET /health", ""))

	h, err := client.Health.Get(context.Background()) // the fault hit once only
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(h.Status, "handler ran:", srv.Ledger.Count("GET /health", ""))
	// Output:
	// true
	// handler ran: 0
	// ok handler ran: 1
}
