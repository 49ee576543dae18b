package rail0

import (
	"context"
	"net/url"

	"github.com/rail0/rail0-go/internal/ops"
)

// NetworkType tells test networks from production ones. The gateway may add
// values, which decode unchanged.
type NetworkType string

// Known network types.
const (
	NetworkTestnet NetworkType = "testnet"
	NetworkMainnet NetworkType = "mainnet"
)

// Blockchain is a chain of the gateway's catalog.
type Blockchain struct {
	ChainID      int64       `json:"chain_id"`
	Name         string      `json:"name"`
	NativeSymbol string      `json:"native_symbol"`
	NetworkType  NetworkType `json:"network_type"`
	ExplorerURL  string      `json:"explorer_url"`
}

// ChainListParams filters GET /blockchains. Zero values are not sent.
type ChainListParams struct {
	// NetworkType keeps test or production networks only.
	NetworkType NetworkType
	// Symbol keeps the chains matching a symbol, such as "USDC".
	Symbol string
}

func (p ChainListParams) values() url.Values {
	q := url.Values{}
	if p.NetworkType != "" {
		q.Set("network_type", string(p.NetworkType))
	}
	if p.Symbol != "" {
		q.Set("symbol", p.Symbol)
	}
	return q
}

var listBlockchains = declare(ops.ListBlockchains)

// List returns the active chains that have at least one active token. The
// list is not paginated.
//
// GET /blockchains — public.
func (s *ChainsService) List(ctx context.Context, params ChainListParams) (*List[Blockchain], error) {
	return listWhole[Blockchain](ctx, s.client, &request{op: listBlockchains, query: params.values(), anonymous: true})
}
