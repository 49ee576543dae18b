// Command request-response shows how a web handler should treat the
// gateway's rate limit. It does not sleep the request; retries are off by
// default. It tells its own caller when to come back. For that it uses the
// gateway's Retry-After, which the SDK hands over as APIError.RetryAfter.
//
// It runs against the embedded rail0test gateway by default. That gateway
// throttles sessions after 3 requests per 60 s, so the 429 shows. Set
// RAIL0_BASE_URL to use a real gateway (see examples/internal/demo).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/examples/internal/demo"
	"github.com/rail0/rail0-go/rail0test"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "request-response:", err)
		os.Exit(1)
	}
}

// paymentStatus is the shop's handler for GET /orders/{payment}/status.
func paymentStatus(client *rail0.Client) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := client.Payments.Get(r.Context(), r.PathValue("payment"))
		var apiErr *rail0.APIError
		switch {
		case errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusTooManyRequests:
			// Pass the gateway's instruction on instead of holding the request.
			w.Header().Set("Retry-After", apiErr.RetryAfterHeader())
			http.Error(w, "payment service busy; retry later", http.StatusServiceUnavailable)
		case errors.Is(err, rail0.ErrNotFound):
			http.Error(w, "no such payment", http.StatusNotFound)
		case err != nil:
			http.Error(w, "payment service unavailable", http.StatusBadGateway)
		default:
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]string{"status": string(p.Status)})
		}
	}
}

func run(ctx context.Context, w io.Writer) error {
	// A gateway clock that stands still keeps all requests in one throttle
	// window. So the demonstration does not depend on when it runs.
	env, err := demo.Setup(
		rail0test.WithSessionRateLimit(rail0test.Limit{Requests: 3}),
		rail0test.WithClock(rail0test.NewManualClock(time.Now())))
	if err != nil {
		return err
	}
	defer env.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	fmt.Fprintln(w, "gateway:", env.Where())

	buyer, _, err := env.Client(ctx, env.Buyer)
	if err != nil {
		return err
	}
	p, err := buyer.Payments.Create(ctx, rail0.PaymentCreateParams{
		ChainID: env.ChainID, Mode: rail0.ModeAuthorize, Amount: "5.00", Token: env.Token,
		Payer: env.Buyer.Address(), Payee: env.Merchant.Address(),
	})
	if err != nil {
		return err
	}

	mux := http.NewServeMux()
	mux.Handle("GET /orders/{payment}/status", paymentStatus(buyer))
	shop := httptest.NewServer(mux)
	defer shop.Close()
	for i := 1; i <= 4; i++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, shop.URL+"/orders/"+p.ID+"/status", nil)
		if err != nil {
			return err
		}
		resp, err := shop.Client().Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Fprintf(w, "request %d: %d %s", i, resp.StatusCode, body)
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			fmt.Fprintf(w, "  (Retry-After: %s)\n", ra)
		}
	}
	return nil
}
