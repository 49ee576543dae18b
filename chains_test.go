package rail0

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"testing"
)

const (
	fixtureBaseSepoliaJSON = `{"chain_id": 84532, "name": "Base Sepolia", "native_symbol": "ETH", "network_type": "testnet", "explorer_url": "https://sepolia.basescan.org"}`
	fixtureNewNetworkJSON  = `{"chain_id": 999999, "name": "Devnet", "native_symbol": "DEV", "network_type": "devnet", "explorer_url": ""}`
)

func TestChainsRequests(t *testing.T) {
	t.Parallel()
	runMuxCases(t, []muxCase{
		{
			name: "List with filters",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Chains.List(ctx, ChainListParams{NetworkType: NetworkTestnet, Symbol: "USDC"})
			},
			method: "GET", path: "/blockchains", public: true,
			query: url.Values{"network_type": {"testnet"}, "symbol": {"USDC"}},
			reply: muxOK("[" + fixtureBaseSepoliaJSON + "]"),
			check: func(t *testing.T, got any) {
				chains := got.(*List[Blockchain]).Items
				want := Blockchain{ChainID: 84532, Name: "Base Sepolia", NativeSymbol: "ETH", NetworkType: NetworkTestnet, ExplorerURL: "https://sepolia.basescan.org"}
				if len(chains) != 1 || chains[0] != want {
					t.Errorf("chains = %+v, want [%+v]", chains, want)
				}
			},
		},
		{
			name:   "List with nil params and an unknown network type",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Chains.List(ctx, ChainListParams{}) },
			method: "GET", path: "/blockchains", public: true,
			reply: muxOK("[" + fixtureBaseSepoliaJSON + ", " + fixtureNewNetworkJSON + "]"),
			check: func(t *testing.T, got any) {
				chains := got.(*List[Blockchain]).Items
				if len(chains) != 2 || chains[1].NetworkType != NetworkType("devnet") || chains[1].ChainID != 999999 {
					t.Errorf("chains = %+v", chains)
				}
			},
		},
		{
			name:   "List empty",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Chains.List(ctx, ChainListParams{}) },
			method: "GET", path: "/blockchains", public: true,
			reply: muxOK("[]"),
			check: func(t *testing.T, got any) {
				if chains := got.(*List[Blockchain]).Items; len(chains) != 0 {
					t.Errorf("chains = %+v", chains)
				}
			},
		},
	})
}

// Every method of the catalog, wallet, analytics, webhook and auth
// resources turns a gateway refusal into the typed *APIError and returns no
// result.
func TestResourceMethodsReturnAPIErrors(t *testing.T) {
	t.Parallel()
	notFound := muxReply{status: http.StatusNotFound, body: `{"code": "not_found", "title": "Not found", "detail": "No such record.", "status": "not_found"}`}
	const acct, wallet, tok, hook = "acct", "w1", "t1", "h1"
	yes := true
	calls := map[string]func(ctx context.Context, c *Client) (any, error){
		"Chains.List": func(ctx context.Context, c *Client) (any, error) { return c.Chains.List(ctx, ChainListParams{}) },
		"Tokens.List": func(ctx context.Context, c *Client) (any, error) { return c.Tokens.List(ctx, TokenListParams{}) },
		"PaymentMethods.List": func(ctx context.Context, c *Client) (any, error) {
			return c.PaymentMethods.List(ctx, PaymentMethodListParams{Address: "a"})
		},
		"Auth.CreateNonce": func(ctx context.Context, c *Client) (any, error) { return c.Auth.CreateNonce(ctx) },
		"Auth.Verify": func(ctx context.Context, c *Client) (any, error) {
			return c.Auth.Verify(ctx, AuthVerifyParams{Message: "m", Signature: "s"})
		},
		"Auth.Logout": func(ctx context.Context, c *Client) (any, error) { return c.Auth.Logout(ctx) },
		"Auth.WalletProof": func(ctx context.Context, c *Client) (any, error) {
			return c.Auth.WalletProof(ctx, AuthWalletProofParams{Wallet: newSIWESigner()})
		},
		"Wallets.List": func(ctx context.Context, c *Client) (any, error) {
			return c.Wallets.List(ctx, acct, WalletListParams{})
		},
		"Wallets.Create": func(ctx context.Context, c *Client) (any, error) {
			return c.Wallets.Create(ctx, acct, WalletCreateParams{WalletProof: WalletProof{Address: "a", Message: "m", Signature: "s"}})
		},
		"Wallets.Get": func(ctx context.Context, c *Client) (any, error) { return c.Wallets.Get(ctx, acct, wallet) },
		"Wallets.Update": func(ctx context.Context, c *Client) (any, error) {
			return c.Wallets.Update(ctx, acct, wallet, WalletUpdateParams{Active: &yes})
		},
		"Wallets.Deactivate": func(ctx context.Context, c *Client) (any, error) { return c.Wallets.Deactivate(ctx, acct, wallet) },
		"Wallets.Balances": func(ctx context.Context, c *Client) (any, error) {
			return c.Wallets.Balances(ctx, acct, wallet, WalletBalancesParams{})
		},
		"Wallets.AcceptToken": func(ctx context.Context, c *Client) (any, error) {
			return c.Wallets.AcceptToken(ctx, acct, wallet, WalletAcceptTokenParams{ChainID: 1, Token: "USDC"})
		},
		"Wallets.StopAcceptingToken": func(ctx context.Context, c *Client) (any, error) {
			return c.Wallets.StopAcceptingToken(ctx, acct, wallet, tok)
		},
		"Wallets.EnableToken": func(ctx context.Context, c *Client) (any, error) {
			return c.Wallets.EnableToken(ctx, acct, wallet, tok)
		},
		"Wallets.DisableToken": func(ctx context.Context, c *Client) (any, error) {
			return c.Wallets.DisableToken(ctx, acct, wallet, tok)
		},
		"Analytics.Summary": func(ctx context.Context, c *Client) (any, error) {
			return c.Analytics.Summary(ctx, AnalyticsSummaryParams{})
		},
		"Analytics.Timeseries": func(ctx context.Context, c *Client) (any, error) {
			return c.Analytics.Timeseries(ctx, AnalyticsTimeseriesParams{})
		},
		"Analytics.Breakdown": func(ctx context.Context, c *Client) (any, error) {
			return c.Analytics.Breakdown(ctx, AnalyticsBreakdownParams{By: BreakdownByMode})
		},
		"Webhooks.Create": func(ctx context.Context, c *Client) (any, error) {
			return c.Webhooks.Create(ctx, WebhookCreateParams{Name: "n", CallbackURL: "https://x.example", Topic: TopicPaymentsFailed})
		},
		"Webhooks.List": func(ctx context.Context, c *Client) (any, error) { return c.Webhooks.List(ctx, WebhookListParams{}) },
		"Webhooks.Get":  func(ctx context.Context, c *Client) (any, error) { return c.Webhooks.Get(ctx, hook) },
		"Webhooks.Update": func(ctx context.Context, c *Client) (any, error) {
			return c.Webhooks.Update(ctx, hook, WebhookUpdateParams{Name: "n"})
		},
		"Webhooks.Delete":       func(ctx context.Context, c *Client) (any, error) { return c.Webhooks.Delete(ctx, hook) },
		"Webhooks.Enable":       func(ctx context.Context, c *Client) (any, error) { return c.Webhooks.Enable(ctx, hook) },
		"Webhooks.Disable":      func(ctx context.Context, c *Client) (any, error) { return c.Webhooks.Disable(ctx, hook) },
		"Webhooks.RotateSecret": func(ctx context.Context, c *Client) (any, error) { return c.Webhooks.RotateSecret(ctx, hook) },
		"Webhooks.ResetCircuit": func(ctx context.Context, c *Client) (any, error) { return c.Webhooks.ResetCircuit(ctx, hook) },
		"Webhooks.ListEventCallbacks": func(ctx context.Context, c *Client) (any, error) {
			return c.Webhooks.ListEventCallbacks(ctx, hook, WebhookListEventCallbacksParams{})
		},
		"Webhooks.Redeliver": func(ctx context.Context, c *Client) (any, error) { return c.Webhooks.Redeliver(ctx, hook, "cb") },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(notFound.status)
				io.WriteString(w, notFound.body)
			}))
			defer srv.Close()
			c, err := NewClient(srv.URL+muxBasePath, WithToken("t"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := call(context.Background(), c)
			var ae *APIError
			if !errors.As(err, &ae) || !errors.Is(err, ErrNotFound) || ae.Code != CodeNotFound {
				t.Fatalf("err = %v, want the 404 *APIError", err)
			}
			if v := reflect.ValueOf(got); got != nil && !(v.Kind() == reflect.Pointer && v.IsNil()) && !(v.Kind() == reflect.Slice && v.IsNil()) &&
				got != false && got != "" {
				t.Errorf("result = %#v on error, want none", got)
			}
		})
	}
}
