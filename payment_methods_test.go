package rail0

import (
	"context"
	"errors"
	"net/url"
	"testing"
)

const fixtureWalletWithTokensJSON = `{"id": "0192a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b", "address": "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2", "label": "Main", "active": true, "tokens": [{"token_id": "0192b2c3-d4e5-7f60-8a7b-8c9d0e1f2a3b", "token": ` + fixtureUSDCJSON + `, "active": true, "default": true}]}`

func checkWalletWithTokens(t *testing.T, w WalletWithTokens) {
	t.Helper()
	if w.ID != "0192a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b" || w.Address != fixturePayee || w.Label != "Main" || !w.Active {
		t.Errorf("wallet = %+v", w.Wallet)
	}
	if len(w.Tokens) != 1 {
		t.Fatalf("holdings = %+v", w.Tokens)
	}
	h := w.Tokens[0]
	if h.TokenID != "0192b2c3-d4e5-7f60-8a7b-8c9d0e1f2a3b" || !h.Active || !h.Default || h.Token.Symbol != "USDC" || h.Token.Decimals != 6 {
		t.Errorf("holding = %+v", h)
	}
}

func TestPaymentMethodsRequests(t *testing.T) {
	t.Parallel()
	runMuxCases(t, []muxCase{
		{
			name: "List by account",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.PaymentMethods.List(ctx, PaymentMethodListParams{AccountID: "0190c7d1-aa01-7b02-8c03-d4e5f6a7b8c9"})
			},
			method: "GET", path: "/payment_methods", public: true,
			query: url.Values{"account_id": {"0190c7d1-aa01-7b02-8c03-d4e5f6a7b8c9"}},
			reply: muxOK("[" + fixtureWalletWithTokensJSON + "]"),
			check: func(t *testing.T, got any) {
				methods := got.(*List[WalletWithTokens]).Items
				if len(methods) != 1 {
					t.Fatalf("methods = %+v", methods)
				}
				checkWalletWithTokens(t, methods[0])
			},
		},
		{
			name: "List by address, unknown gives empty",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.PaymentMethods.List(ctx, PaymentMethodListParams{Address: fixturePayee})
			},
			method: "GET", path: "/payment_methods", public: true,
			query: url.Values{"address": {fixturePayee}},
			reply: muxOK("[]"),
			check: func(t *testing.T, got any) {
				if methods := got.(*List[WalletWithTokens]).Items; len(methods) != 0 {
					t.Errorf("methods = %+v", methods)
				}
			},
		},
	})
}

// Exactly one selector: anything else is refused before a request is sent.
func TestPaymentMethodsNeedsExactlyOneSelector(t *testing.T) {
	t.Parallel()
	srv, c := newMuxServer(t)
	for _, p := range []PaymentMethodListParams{{}, {AccountID: "a", Address: fixturePayee}} {
		got, err := c.PaymentMethods.List(context.Background(), p)
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Field != "account_id|address" || got != nil {
			t.Errorf("List(%+v) = %v, %v; want a *ValidationError", p, got, err)
		}
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
}
