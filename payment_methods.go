package rail0

import (
	"context"
	"net/url"

	"github.com/rail0/rail0-go/internal/ops"
)

// PaymentMethodListParams selects whose payment methods to list: set
// exactly one of AccountID and Address.
type PaymentMethodListParams struct {
	// AccountID lists every active wallet of a merchant account.
	AccountID string
	// Address lists one merchant wallet.
	Address string
}

var listPaymentMethods = declare(ops.ListPaymentMethods)

// List returns where a merchant can be paid: each active wallet with its
// active holdings under Tokens. A wallet without an active holding is not
// listed and cannot be a payee. An unknown account or address gives an
// empty list. The list is not paginated.
//
// Exactly one of params.AccountID and params.Address must be set.
// Otherwise List returns a *ValidationError (Field "account_id|address")
// without sending anything.
//
// GET /payment_methods — public.
func (s *PaymentMethodsService) List(ctx context.Context, params PaymentMethodListParams) (*List[WalletWithTokens], error) {
	q := url.Values{}
	switch {
	case params.AccountID != "" && params.Address != "":
		return nil, &ValidationError{Field: "account_id|address", Reason: "set exactly one, not both"}
	case params.AccountID != "":
		q.Set("account_id", params.AccountID)
	case params.Address != "":
		q.Set("address", params.Address)
	default:
		return nil, &ValidationError{Field: "account_id|address", Reason: "set exactly one"}
	}
	return listWhole[WalletWithTokens](ctx, s.client, &request{op: listPaymentMethods, query: q, anonymous: true})
}
