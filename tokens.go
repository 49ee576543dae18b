package rail0

import (
	"context"
	"net/url"
	"strconv"

	"github.com/rail0/rail0-go/internal/ops"
)

// Token is a token of the gateway's catalog on one chain. It is also the
// form of a WithTrustedTokens pin. A listed Decimals is the gateway's
// word: the SDK's checks never use it. Convert an amount you will sign
// (ToBaseUnits, FormatAmount) with the decimals of package registry or of
// your own pin.
type Token struct {
	ChainID  int64  `json:"chain_id"`
	Symbol   string `json:"symbol"`
	Address  string `json:"address"`
	Decimals int64  `json:"decimals"`
	// Active is false for a retired token. Old payments may still
	// reference it, but new ones cannot use it.
	Active bool `json:"active"`
}

// TokenListParams filters GET /tokens. Zero values are not sent.
type TokenListParams struct {
	ChainID int64
	Symbol  string
	// Active, when set, keeps only active (true) or only retired (false)
	// tokens. Unset lists both.
	Active *bool
}

func (p TokenListParams) values() url.Values {
	q := url.Values{}
	if p.ChainID != 0 {
		q.Set("chain_id", strconv.FormatInt(p.ChainID, 10))
	}
	if p.Symbol != "" {
		q.Set("symbol", p.Symbol)
	}
	if p.Active != nil {
		q.Set("active", strconv.FormatBool(*p.Active))
	}
	return q
}

var listTokens = declare(ops.ListTokens)

// List returns the catalog's tokens, retired ones included unless
// params.Active is true. The list is not paginated.
//
// GET /tokens — public.
func (s *TokensService) List(ctx context.Context, params TokenListParams) (*List[Token], error) {
	return listWhole[Token](ctx, s.client, &request{op: listTokens, query: params.values(), anonymous: true})
}
