package integration_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0stats"
	"github.com/rail0/rail0-go/rail0test"
	"github.com/rail0/rail0-go/signing"
)

// These examples run against the in-process gateway of package rail0test,
// so their output is checked by go test. The README quotes them.

// signedIn returns a client signed in as party on srv.
func signedIn(ctx context.Context, srv *rail0test.Server, party rail0test.Party, opts ...rail0.Option) *rail0.Client {
	acct, err := signing.NewPrivateKeySigner(party.PrivateKey)
	if err != nil {
		panic(err)
	}
	signer, err := srv.Client(rail0.WithSigner(acct))
	if err != nil {
		panic(err)
	}
	session, err := signer.Session(ctx)
	if err != nil {
		panic(err)
	}
	c, err := srv.Client(append([]rail0.Option{rail0.WithToken(session.Token())}, opts...)...)
	if err != nil {
		panic(err)
	}
	return c
}

func ExampleHealthService_Get() {
	srv := rail0test.NewServer()
	defer srv.Close()
	client, _ := rail0.NewClient(srv.URL)

	h, err := client.Health.Get(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(h.Status, h.DB, h.ActiveChains == nil)
	// Output: ok ok true
}

func ExampleChainsService_List() {
	srv := rail0test.NewServer()
	defer srv.Close()
	client, _ := rail0.NewClient(srv.URL)

	chains, err := client.Chains.List(context.Background(), rail0.ChainListParams{NetworkType: rail0.NetworkTestnet})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range chains.Items {
		fmt.Println(c.ChainID, c.Name, c.NetworkType)
	}
	// Output: 84532 Base Sepolia testnet
}

func ExampleTokensService_List() {
	srv := rail0test.NewServer()
	defer srv.Close()
	client, _ := rail0.NewClient(srv.URL)

	active := true
	tokens, err := client.Tokens.List(context.Background(), rail0.TokenListParams{ChainID: 84532, Active: &active})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range tokens.Items {
		fmt.Println(t.Symbol, t.Decimals)
	}
	// Output: USDC 6
}

func ExamplePaymentMethodsService_List() {
	srv := rail0test.NewServer()
	defer srv.Close()
	client, _ := rail0.NewClient(srv.URL)

	wallets, err := client.PaymentMethods.List(context.Background(), rail0.PaymentMethodListParams{Address: srv.Merchant.Address})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, w := range wallets.Items {
		for _, h := range w.Tokens {
			fmt.Println(w.Address == srv.Merchant.Address, h.Token.Symbol, h.Token.ChainID)
		}
	}
	// Neither or both selectors is refused before any request.
	_, err = client.PaymentMethods.List(context.Background(), rail0.PaymentMethodListParams{})
	var ve *rail0.ValidationError
	fmt.Println(errors.As(err, &ve))
	// Output:
	// true USDC 84532
	// true USDC 8453
	// true
}

func ExampleWalletsService_List() {
	srv := rail0test.NewServer()
	defer srv.Close()
	ctx := context.Background()
	merchant := signedIn(ctx, srv, srv.Merchant)

	page, err := merchant.Wallets.List(ctx, srv.Merchant.AccountID, rail0.WalletListParams{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(page.TotalCount, page.Items[0].Address == srv.Merchant.Address, len(page.Items[0].Tokens))
	// Output: 1 true 2
}

func ExampleDisputesService_All() {
	srv := rail0test.NewServer()
	defer srv.Close()
	ctx := context.Background()
	merchant := signedIn(ctx, srv, srv.Merchant)

	n := 0
	for d, err := range merchant.Disputes.All(ctx, rail0.DisputeListParams{Status: rail0.DisputeOpen}) {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(d.Payment.ID, d.Reason)
		n++
	}
	fmt.Println(n, "open disputes")
	// Output: 0 open disputes
}

func ExampleAnalyticsService_Summary() {
	srv := rail0test.NewServer()
	defer srv.Close()
	ctx := context.Background()
	buyer := signedIn(ctx, srv, srv.Buyer)
	merchant := signedIn(ctx, srv, srv.Merchant)
	for _, amount := range []string{"10.00", "2.50"} {
		if _, err := buyer.Payments.Create(ctx, rail0.PaymentCreateParams{
			ChainID: srv.ChainID, Mode: rail0.ModeAuthorize, Amount: amount, Token: srv.Token,
			Payer: srv.Buyer.Address, Payee: srv.Merchant.Address,
		}); err != nil {
			fmt.Println(err)
			return
		}
	}

	s, err := merchant.Analytics.Summary(ctx, rail0.AnalyticsSummaryParams{AnalyticsFilter: rail0.AnalyticsFilter{ChainID: srv.ChainID}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Orders, "orders;", "gross", s.Volume[0].Gross)
	// A session without a merchant account may not read analytics.
	_, err = buyer.Analytics.Summary(ctx, rail0.AnalyticsSummaryParams{})
	var apiErr *rail0.APIError
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, apiErr.Code)
	}
	// Output:
	// 2 orders; gross 12500000
	// 403 account_required
}

func ExampleWebhooksService_Create() {
	srv := rail0test.NewServer()
	defer srv.Close()
	ctx := context.Background()
	merchant := signedIn(ctx, srv, srv.Merchant)

	hook, err := merchant.Webhooks.Create(ctx, rail0.WebhookCreateParams{
		Name: "captures", CallbackURL: "https://shop.example/rail0/events", Topic: rail0.TopicPaymentsCaptured,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The shared secret is returned only here and on rotation: store it, and
	// verify deliveries with webhook.NewVerifier(hook.SharedSecret()) (package webhook).
	fmt.Println(hook.Topic, hook.SharedSecret() != "", hook.CircuitState)
	// Output: payments.captured true closed
}

// A request/response app passes the gateway's Retry-After on instead of
// sleeping: retries are off by default.
func ExampleAPIError_retryAfter() {
	srv := rail0test.NewServer(rail0test.WithRateLimits(rail0test.Limit{Requests: 1}, rail0test.Limit{Requests: 300}),
		rail0test.WithClock(rail0test.NewManualClock(time.Now())))
	defer srv.Close()
	client, _ := rail0.NewClient(srv.URL)
	ctx := context.Background()

	_, _ = client.Health.Get(ctx) // the public budget of 1 is spent
	_, err := client.Health.Get(ctx)

	var apiErr *rail0.APIError
	if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusTooManyRequests {
		fmt.Println(apiErr.Code, "retry after", apiErr.RetryAfter)
	}
	fmt.Println(errors.Is(err, rail0.ErrRateLimited))
	// Output:
	// rate_limited retry after 1m0s
	// true
}

// A background job lets the client wait out 429s: each wait is at least the
// server's Retry-After (capped by RetryAfterCap), plus jitter, within a
// per-call allowance (MaxRetryWait). It sleeps the calling goroutine. The
// transcript tells each call's story; a rail0stats.Counters counts for the
// whole client.
func ExampleWithRetryOn429() {
	srv := rail0test.NewServer()
	defer srv.Close()
	srv.Faults.Add(rail0test.Fault{Method: http.MethodGet, Path: "/health", Times: 1, // one 429 for the first read
		Kind: rail0test.FaultStatus, Status: http.StatusTooManyRequests, RetryAfter: "1"})
	counts := new(rail0stats.Counters)

	client, _ := rail0.NewClient(srv.URL,
		rail0.WithRetryOn429(true),             // retry 429s, sleeping the calling goroutine
		rail0.WithMaxRetryWait(30*time.Second), // at most 30 s of waiting per call
		rail0.WithObserver(counts))             // count retries and refusals (or WithLogger)

	h, err := client.Health.Get(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	first := h.Response.Call.Attempts[0] // every attempt, with the decision taken on it
	fmt.Printf("%d: waited %v or a little more: %v\n", first.StatusCode, first.RetryAfter, first.Wait >= first.RetryAfter)
	fmt.Println("done after", counts.Snapshot().Retries, "retry")
	// Output:
	// 429: waited 1s or a little more: true
	// done after 1 retry
}

// One client serves a request/response handler and a background job: each
// holds a view with its own retry settings, and they share one cooldown and
// one learned budget. The handler's 429 comes back at once, for it to pass
// on; the job's next call waits for the partition that 429 closed to
// reopen, instead of being refused too.
func ExampleClient_With() {
	clock := rail0test.NewManualClock(time.Now())
	srv := rail0test.NewServer(
		rail0test.WithRateLimits(rail0test.Limit{Requests: 1}, rail0test.Limit{Requests: 300}),
		rail0test.WithRateLimitPeriod(time.Second), rail0test.WithClock(clock))
	defer srv.Close()

	client, _ := rail0.NewClient(srv.URL) // one client: one cooldown, one learned budget
	// The handler answers its own caller now; the job may sleep through
	// 429s, a minute per call at most.
	handler := client.With(rail0.WithRetryOn429(false))
	job := client.With(rail0.WithRetryOn429(true), rail0.WithMaxRetryWait(time.Minute))
	ctx := context.Background()

	_, _ = job.Health.Get(ctx) // the public budget of 1 is spent
	_, err := handler.Health.Get(ctx)
	var apiErr *rail0.APIError
	if errors.As(err, &apiErr) {
		fmt.Println("handler:", apiErr.StatusCode, "retry after", apiErr.RetryAfter)
	}

	clock.Advance(time.Second) // the test gateway's window moves on meanwhile
	h, err := job.Health.Get(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	waits := h.Response.Call.Limiter
	fmt.Println("job:", h.Response.StatusCode, "after waiting out the handler's cooldown:", len(waits) > 0 && waits[0].Cooldown)
	// Output:
	// handler: 429 retry after 1s
	// job: 200 after waiting out the handler's cooldown: true
}

// The gateway serves its own contract: a deployment can check which version
// it speaks.
func ExampleDiscoveryService_OpenAPI() {
	srv := rail0test.NewServer()
	defer srv.Close()
	client, _ := rail0.NewClient(srv.URL)

	contract, err := client.Discovery.OpenAPI(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	var doc struct {
		OpenAPI string `json:"openapi"`
		Paths   map[string]json.RawMessage
	}
	if err := json.Unmarshal(contract.JSON, &doc); err != nil {
		fmt.Println(err)
		return
	}
	desc, err := client.Discovery.Describe(context.Background())
	fmt.Println(doc.OpenAPI[:3], len(doc.Paths), "paths;", "descriptor:", desc.Name, desc.APIVersion != "", err)
	// Output: 3.1 45 paths; descriptor: RAIL0 gateway (rail0test) true <nil>
}
