package rail0

import (
	"context"
	"net/url"
	"testing"
)

const (
	fixtureUSDCJSON    = `{"chain_id": 84532, "symbol": "USDC", "address": "0x036CbD53842c5426634e7929541eC2318f3dCF7e", "decimals": 6, "active": true}`
	fixtureRetiredJSON = `{"chain_id": 84532, "symbol": "OLD", "address": "0x1111111111111111111111111111111111111111", "decimals": 18, "active": false}`
)

func TestTokensRequests(t *testing.T) {
	t.Parallel()
	active, inactive := true, false
	runMuxCases(t, []muxCase{
		{
			name: "List active on a chain",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Tokens.List(ctx, TokenListParams{ChainID: 84532, Symbol: "USDC", Active: &active})
			},
			method: "GET", path: "/tokens", public: true,
			query: url.Values{"chain_id": {"84532"}, "symbol": {"USDC"}, "active": {"true"}},
			reply: muxOK("[" + fixtureUSDCJSON + "]"),
			check: func(t *testing.T, got any) {
				want := Token{ChainID: 84532, Symbol: "USDC", Address: fixtureToken, Decimals: 6, Active: true}
				if tokens := got.(*List[Token]).Items; len(tokens) != 1 || tokens[0] != want {
					t.Errorf("tokens = %+v, want [%+v]", tokens, want)
				}
			},
		},
		{
			name: "List retired only",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Tokens.List(ctx, TokenListParams{Active: &inactive})
			},
			method: "GET", path: "/tokens", public: true,
			query: url.Values{"active": {"false"}},
			reply: muxOK("[" + fixtureRetiredJSON + "]"),
			check: func(t *testing.T, got any) {
				if tokens := got.(*List[Token]).Items; len(tokens) != 1 || tokens[0].Active || tokens[0].Decimals != 18 {
					t.Errorf("tokens = %+v", tokens)
				}
			},
		},
		{
			name:   "List all with nil params",
			call:   func(ctx context.Context, c *Client) (any, error) { return c.Tokens.List(ctx, TokenListParams{}) },
			method: "GET", path: "/tokens", public: true,
			reply: muxOK("[" + fixtureUSDCJSON + ", " + fixtureRetiredJSON + "]"),
			check: func(t *testing.T, got any) {
				if tokens := got.(*List[Token]).Items; len(tokens) != 2 {
					t.Errorf("tokens = %+v", tokens)
				}
			},
		},
	})
}
