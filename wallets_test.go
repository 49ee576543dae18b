package rail0

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"testing"
)

const (
	fixtureAccountID  = "0190c7d1-aa01-7b02-8c03-d4e5f6a7b8c9"
	fixtureWalletID   = "0192a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b"
	fixtureTokenID    = "0192b2c3-d4e5-7f60-8a7b-8c9d0e1f2a3b"
	fixtureWalletJSON = `{"id": "0192a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b", "address": "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2", "label": null, "active": true}`
	// fixtureWalletTokenJSON is a WalletToken linking the wallet, USDC and Base Sepolia.
	fixtureWalletTokenJSON = `{"default": true, "active": true, "wallet": ` + fixtureWalletJSON + `, "token": ` + fixtureUSDCJSON + `, "blockchain": ` + fixtureBaseSepoliaJSON + `}`
	fixtureBalancesJSON    = `{"wallet_id": "0192a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b", "address": "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2", "balances": [` +
		`{"chain_id": 84532, "network_type": "testnet", "native": {"symbol": "ETH", "address": null, "decimals": 18, "raw": "1000000000000000", "amount": "0.001"}, "tokens": [{"symbol": "USDC", "address": "0x036CbD53842c5426634e7929541eC2318f3dCF7e", "decimals": 6, "raw": "25000000", "amount": "25.0"}], "error": null}, ` +
		`{"chain_id": 11155111, "network_type": "testnet", "native": null, "tokens": null, "error": {"code": "rpc_unavailable", "message": "No node answered."}}, ` +
		`{"chain_id": 1, "network_type": "mainnet", "native": null, "tokens": null, "error": {"code": "node_on_fire", "message": "New failure kind."}}]}`
)

func walletsBase() string { return "/accounts/" + fixtureAccountID + "/wallets" }

func checkWalletToken(t *testing.T, got any) {
	t.Helper()
	wt := got.(*WalletToken)
	if !wt.Default || !wt.Active || wt.Wallet.ID != fixtureWalletID || wt.Wallet.Label != "" ||
		wt.Token.Address != fixtureToken || wt.Blockchain.ChainID != 84532 || wt.Blockchain.NetworkType != NetworkTestnet {
		t.Errorf("wallet token = %+v", wt)
	}
}

func TestWalletsRequests(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	label := "Treasury"
	proof := WalletProof{Address: fixturePayee, Message: "siwe text", Signature: "0xsig"}
	runMuxCases(t, []muxCase{
		{
			name: "List with filters and paging",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Wallets.List(ctx, fixtureAccountID, WalletListParams{
					ListOptions: ListOptions{Page: 2, PerPage: 10, Sort: []SortKey{SortCreatedAt.Desc()}},
					Active:      &yes, ChainID: 84532, TokenSymbol: "USDC", Default: &no, TokenActive: &yes,
				})
			},
			method: "GET", path: walletsBase(),
			query: url.Values{"page": {"2"}, "per_page": {"10"}, "sort": {"-created_at"}, "active": {"true"},
				"chain_id": {"84532"}, "token_symbol": {"USDC"}, "default": {"false"}, "token_active": {"true"}},
			reply: muxReply{status: 200, header: map[string]string{"X-Total-Count": "11", "X-Page": "2", "X-Per-Page": "10"},
				body: "[" + fixtureWalletWithTokensJSON + "]"},
			check: func(t *testing.T, got any) {
				p := got.(*Page[WalletWithTokens])
				if p.TotalCount != 11 || p.Page != 2 || p.PerPage != 10 || len(p.Items) != 1 || p.HasNext() {
					t.Fatalf("page = %+v", p)
				}
				checkWalletWithTokens(t, p.Items[0])
			},
		},
		{
			name: "Create with proof and label",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Wallets.Create(ctx, fixtureAccountID, WalletCreateParams{WalletProof: proof, Label: "Main"})
			},
			method: "POST", path: walletsBase(),
			body:  `{"address": "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2", "message": "siwe text", "signature": "0xsig", "label": "Main"}`,
			reply: muxReply{status: http.StatusCreated, body: fixtureWalletJSON},
			check: func(t *testing.T, got any) {
				if w := got.(*Wallet); *w != (Wallet{ID: fixtureWalletID, Address: fixturePayee, Active: true, Response: w.Response}) || w.Response == nil {
					t.Errorf("wallet = %+v", w)
				}
			},
		},
		{
			name: "Create without label",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Wallets.Create(ctx, fixtureAccountID, WalletCreateParams{WalletProof: proof})
			},
			method: "POST", path: walletsBase(),
			body:  `{"address": "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2", "message": "siwe text", "signature": "0xsig"}`,
			reply: muxReply{status: http.StatusCreated, body: fixtureWalletJSON},
		},
		{
			name: "Get by address",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Wallets.Get(ctx, fixtureAccountID, fixturePayee)
			},
			method: "GET", path: walletsBase() + "/" + fixturePayee,
			reply: muxOK(fixtureWalletJSON),
			check: func(t *testing.T, got any) {
				if w := got.(*Wallet); w.ID != fixtureWalletID {
					t.Errorf("wallet = %+v", w)
				}
			},
		},
		{
			name:   "Get escapes path segments",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Wallets.Get(ctx, "acct/1", "w?x") },
			method: "GET", path: "/accounts/acct%2F1/wallets/w%3Fx",
			reply: muxOK(fixtureWalletJSON),
		},
		{
			name: "Update label and deactivate",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Wallets.Update(ctx, fixtureAccountID, fixtureWalletID, WalletUpdateParams{Label: &label, Active: &no})
			},
			method: "PATCH", path: walletsBase() + "/" + fixtureWalletID,
			body:  `{"label": "Treasury", "active": false}`,
			reply: muxOK(`{"id": "0192a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b", "address": "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2", "label": "Treasury", "active": false}`),
			check: func(t *testing.T, got any) {
				if w := got.(*Wallet); w.Label != "Treasury" || w.Active {
					t.Errorf("wallet = %+v", w)
				}
			},
		},
		{
			name: "Update active only",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Wallets.Update(ctx, fixtureAccountID, fixtureWalletID, WalletUpdateParams{Active: &yes})
			},
			method: "PATCH", path: walletsBase() + "/" + fixtureWalletID,
			body:  `{"active": true}`,
			reply: muxOK(fixtureWalletJSON),
		},
		{
			name: "Deactivate",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Wallets.Deactivate(ctx, fixtureAccountID, fixtureWalletID)
			},
			method: "DELETE", path: walletsBase() + "/" + fixtureWalletID,
			reply: muxReply{status: http.StatusNoContent},
		},
		{
			name: "Balances with an unreadable chain",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Wallets.Balances(ctx, fixtureAccountID, fixtureWalletID, WalletBalancesParams{ChainID: 84532, TokenSymbol: "USDC"})
			},
			method: "GET", path: walletsBase() + "/" + fixtureWalletID + "/balances",
			query: url.Values{"chain_id": {"84532"}, "token_symbol": {"USDC"}},
			reply: muxOK(fixtureBalancesJSON),
			check: func(t *testing.T, got any) {
				b := got.(*WalletBalances)
				if b.WalletID != fixtureWalletID || b.Address != fixturePayee || len(b.Balances) != 3 {
					t.Fatalf("balances = %+v", b)
				}
				ok := b.Balances[0]
				wantNative := &AssetBalance{Symbol: "ETH", Decimals: 18, Raw: "1000000000000000", Amount: "0.001"}
				wantTokens := []AssetBalance{{Symbol: "USDC", Address: fixtureToken, Decimals: 6, Raw: "25000000", Amount: "25.0"}}
				if ok.Error != nil || !reflect.DeepEqual(ok.Native, wantNative) || !reflect.DeepEqual(ok.Tokens, wantTokens) {
					t.Errorf("readable chain = %+v", ok)
				}
				down := b.Balances[1]
				if down.Error == nil || down.Error.Code != BalanceErrRPCUnavailable || down.Native != nil || down.Tokens != nil {
					t.Errorf("unreadable chain = %+v", down)
				}
				if odd := b.Balances[2]; odd.Error == nil || odd.Error.Code != BalanceErrorCode("node_on_fire") {
					t.Errorf("unknown error kind = %+v", odd)
				}
			},
		},
		{
			name: "Balances with nil params",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Wallets.Balances(ctx, fixtureAccountID, fixturePayee, WalletBalancesParams{})
			},
			method: "GET", path: walletsBase() + "/" + fixturePayee + "/balances",
			reply: muxOK(fixtureBalancesJSON),
		},
		{
			name: "AcceptToken new holding (201)",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Wallets.AcceptToken(ctx, fixtureAccountID, fixtureWalletID, WalletAcceptTokenParams{ChainID: 84532, Token: fixtureToken, Default: &yes})
			},
			method: "POST", path: walletsBase() + "/" + fixtureWalletID + "/tokens",
			body:  `{"chain_id": 84532, "token": "0x036CbD53842c5426634e7929541eC2318f3dCF7e", "default": true}`,
			reply: muxReply{status: http.StatusCreated, body: fixtureWalletTokenJSON},
			check: func(t *testing.T, got any) {
				r := got.(*WalletAcceptTokenResult)
				if !r.Created || r.Response == nil || r.Response.StatusCode != http.StatusCreated {
					t.Errorf("created = false for a 201")
				}
				checkWalletToken(t, &r.Token)
			},
		},
		{
			name: "AcceptToken existing holding (200)",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Wallets.AcceptToken(ctx, fixtureAccountID, fixtureWalletID, WalletAcceptTokenParams{ChainID: 84532, Token: "USDC"})
			},
			method: "POST", path: walletsBase() + "/" + fixtureWalletID + "/tokens",
			body:  `{"chain_id": 84532, "token": "USDC"}`,
			reply: muxOK(fixtureWalletTokenJSON),
			check: func(t *testing.T, got any) {
				r := got.(*WalletAcceptTokenResult)
				if r.Created {
					t.Errorf("created = true for a 200")
				}
				checkWalletToken(t, &r.Token)
			},
		},
		{
			name: "StopAcceptingToken",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Wallets.StopAcceptingToken(ctx, fixtureAccountID, fixtureWalletID, fixtureTokenID)
			},
			method: "DELETE", path: walletsBase() + "/" + fixtureWalletID + "/tokens/" + fixtureTokenID,
			reply: muxReply{status: http.StatusNoContent},
		},
		{
			name: "EnableToken",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Wallets.EnableToken(ctx, fixtureAccountID, fixtureWalletID, fixtureTokenID)
			},
			method: "PATCH", path: walletsBase() + "/" + fixtureWalletID + "/tokens/" + fixtureTokenID + "/enable",
			reply: muxOK(fixtureWalletTokenJSON),
			check: checkWalletToken,
		},
		{
			name: "DisableToken",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Wallets.DisableToken(ctx, fixtureAccountID, fixtureWalletID, fixtureTokenID)
			},
			method: "PATCH", path: walletsBase() + "/" + fixtureWalletID + "/tokens/" + fixtureTokenID + "/disable",
			reply: muxOK(fixtureWalletTokenJSON),
			check: checkWalletToken,
		},
	})
}

func TestWalletsAllWalksPagesWithoutMutatingParams(t *testing.T) {
	t.Parallel()
	srv, c := newMuxServer(t)
	page := func(n, id string) muxReply {
		return muxReply{status: 200, header: map[string]string{"X-Total-Count": "2", "X-Page": n, "X-Per-Page": "1"},
			body: `[{"id": "` + id + `", "address": "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2", "active": true, "tokens": []}]`}
	}
	srv.on("GET "+walletsBase(), page("1", "w1"), page("2", "w2"))
	active := true
	params := WalletListParams{ListOptions: ListOptions{PerPage: 1}, Active: &active}
	before := params
	var ids []string
	for w, err := range c.Wallets.All(context.Background(), fixtureAccountID, params) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, w.ID)
	}
	if !reflect.DeepEqual(ids, []string{"w1", "w2"}) {
		t.Errorf("ids = %v", ids)
	}
	if !reflect.DeepEqual(params, before) {
		t.Errorf("params mutated: %+v", params)
	}
	reqs := srv.requests()
	if len(reqs) != 2 || reqs[1].Query.Get("page") != "2" || reqs[1].Query.Get("active") != "true" || reqs[1].Query.Get("per_page") != "1" {
		t.Errorf("requests = %+v", reqs)
	}
}

// Missing ids and empty bodies are refused before anything is sent.
func TestWalletsValidation(t *testing.T) {
	t.Parallel()
	srv, c := newMuxServer(t)
	ctx := context.Background()
	yes := true
	proof := WalletProof{Address: fixturePayee, Message: "m", Signature: "0xs"}
	tests := []struct {
		name  string
		field string
		call  func() error
	}{
		{"List without account", "account_id", func() error { _, err := c.Wallets.List(ctx, "", WalletListParams{}); return err }},
		{"All without account", "account_id", func() error {
			for _, err := range c.Wallets.All(ctx, "", WalletListParams{}) {
				return err
			}
			return nil
		}},
		{"Create without proof", "address", func() error {
			_, err := c.Wallets.Create(ctx, fixtureAccountID, WalletCreateParams{Label: "x"})
			return err
		}},
		{"Create without signature", "signature", func() error {
			p := proof
			p.Signature = ""
			_, err := c.Wallets.Create(ctx, fixtureAccountID, WalletCreateParams{WalletProof: p})
			return err
		}},
		{"Get without wallet", "id", func() error { _, err := c.Wallets.Get(ctx, fixtureAccountID, ""); return err }},
		{"Update with nothing", "params", func() error {
			_, err := c.Wallets.Update(ctx, fixtureAccountID, fixtureWalletID, WalletUpdateParams{})
			return err
		}},
		{"Update without account", "account_id", func() error {
			_, err := c.Wallets.Update(ctx, "", fixtureWalletID, WalletUpdateParams{Active: &yes})
			return err
		}},
		{"Deactivate without wallet", "id", func() error { _, err := c.Wallets.Deactivate(ctx, fixtureAccountID, ""); return err }},
		{"Balances without wallet", "id", func() error {
			_, err := c.Wallets.Balances(ctx, fixtureAccountID, "", WalletBalancesParams{})
			return err
		}},
		{"AcceptToken without chain", "chain_id", func() error {
			_, err := c.Wallets.AcceptToken(ctx, fixtureAccountID, fixtureWalletID, WalletAcceptTokenParams{Token: "USDC"})
			return err
		}},
		{"AcceptToken without token", "token", func() error {
			_, err := c.Wallets.AcceptToken(ctx, fixtureAccountID, fixtureWalletID, WalletAcceptTokenParams{ChainID: 1})
			return err
		}},
		{"StopAcceptingToken without token id", "token_id", func() error {
			_, err := c.Wallets.StopAcceptingToken(ctx, fixtureAccountID, fixtureWalletID, "")
			return err
		}},
		{"EnableToken without wallet", "id", func() error {
			_, err := c.Wallets.EnableToken(ctx, fixtureAccountID, "", fixtureTokenID)
			return err
		}},
		{"DisableToken without token id", "token_id", func() error {
			_, err := c.Wallets.DisableToken(ctx, fixtureAccountID, fixtureWalletID, "")
			return err
		}},
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

// A wallet-registration refusal surfaces as a typed *APIError, even with
// the empty body the gateway sends for 409.
func TestWalletsCreateConflict(t *testing.T) {
	t.Parallel()
	srv, c := newMuxServer(t)
	srv.on("POST "+walletsBase(), muxReply{status: http.StatusConflict})
	_, err := c.Wallets.Create(context.Background(), fixtureAccountID, WalletCreateParams{
		WalletProof: WalletProof{Address: fixturePayee, Message: "m", Signature: "0xs"}})
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusConflict {
		t.Fatalf("err = %v, want a 409 *APIError", err)
	}
}
