package rail0

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"

	"github.com/rail0/rail0-go/internal/ops"
)

// Wallet is a payee wallet registered to a merchant account. Addresses are
// globally unique: one address belongs to at most one account.
type Wallet struct {
	ID      string `json:"id"`
	Address string `json:"address"`
	// Label is the merchant's name for the wallet; empty when unset.
	Label string `json:"label"`
	// Active is false once the wallet was deactivated.
	Active bool `json:"active"`
	// Response is the metadata of the call that returned this value. It is
	// nil on a value nested in another call's result.
	Response *Response `json:"-"`
}

// WalletTokenHolding is one token a wallet accepts, as listed under a
// wallet.
type WalletTokenHolding struct {
	// TokenID is the token's UUID: the {token_id} of the wallet token
	// routes (StopAcceptingToken, EnableToken, DisableToken).
	TokenID string `json:"token_id"`
	Token   Token  `json:"token"`
	Active  bool   `json:"active"`
	// Default marks the wallet's default holding (at most one).
	Default bool `json:"default"`
}

// WalletWithTokens is a wallet with the tokens it accepts.
type WalletWithTokens struct {
	Wallet
	Tokens []WalletTokenHolding `json:"tokens"`
}

// WalletToken is a wallet's holding of one token, with the wallet, token and
// chain it links.
type WalletToken struct {
	Default    bool       `json:"default"`
	Active     bool       `json:"active"`
	Wallet     Wallet     `json:"wallet"`
	Token      Token      `json:"token"`
	Blockchain Blockchain `json:"blockchain"`
	// Response is the metadata of the call that returned this value. It is
	// nil on a value nested in another call's result.
	Response *Response `json:"-"`
}

// WalletBalances are a wallet's live on-chain balances, one entry per chain.
type WalletBalances struct {
	WalletID string         `json:"wallet_id"`
	Address  string         `json:"address"`
	Balances []ChainBalance `json:"balances"`
	// Response is the metadata of the call that returned this value. It is
	// nil on a value nested in another call's result.
	Response *Response `json:"-"`
}

// ChainBalance is a wallet's balances on one chain. When the chain's node
// could not be read, Error is set and Native and Tokens are nil. One
// unreachable chain does not fail the whole call.
type ChainBalance struct {
	ChainID     int64          `json:"chain_id"`
	NetworkType NetworkType    `json:"network_type"`
	Native      *AssetBalance  `json:"native"`
	Tokens      []AssetBalance `json:"tokens"`
	Error       *BalanceError  `json:"error"`
}

// AssetBalance is the balance of the native coin or of one token.
type AssetBalance struct {
	Symbol string `json:"symbol"`
	// Address is the token contract; empty for the native coin.
	Address  string `json:"address"`
	Decimals int64  `json:"decimals"`
	// Raw is the balance in base units (integer string).
	Raw string `json:"raw"`
	// Amount is the same balance as a human decimal string.
	Amount string `json:"amount"`
}

// BalanceErrorCode says why a chain's balances could not be read. The
// gateway may add values, which decode unchanged.
type BalanceErrorCode string

// Known balance error codes.
const (
	// BalanceErrRPCUnavailable means no configured node answered.
	BalanceErrRPCUnavailable BalanceErrorCode = "rpc_unavailable"
	// BalanceErrRPCError means the node answered with an error.
	BalanceErrRPCError BalanceErrorCode = "rpc_error"
	// BalanceErrTimeout means the node did not answer in time.
	BalanceErrTimeout BalanceErrorCode = "timeout"
	// BalanceErrOther is any other failure.
	BalanceErrOther BalanceErrorCode = "error"
)

// BalanceError reports, in-band, a chain whose balances could not be read.
// It is data, not a Go error returned by the call.
type BalanceError struct {
	Code    BalanceErrorCode `json:"code"`
	Message string           `json:"message"`
}

// WalletListParams filters and pages GET /accounts/{account_id}/wallets.
// Zero values are not sent.
type WalletListParams struct {
	ListOptions
	// Active keeps only active (true) or only deactivated (false) wallets.
	Active *bool
	// ChainID, TokenSymbol, Default and TokenActive filter the holdings
	// listed under each wallet; they never hide a wallet.
	ChainID     int64
	TokenSymbol string
	Default     *bool
	TokenActive *bool
}

func (p WalletListParams) values() url.Values {
	q := url.Values{}
	p.ListOptions.encode(q)
	setBool(q, "active", p.Active)
	if p.ChainID != 0 {
		q.Set("chain_id", strconv.FormatInt(p.ChainID, 10))
	}
	if p.TokenSymbol != "" {
		q.Set("token_symbol", p.TokenSymbol)
	}
	setBool(q, "default", p.Default)
	setBool(q, "token_active", p.TokenActive)
	return q
}

// setBool sets key when b is not nil.
func setBool(q url.Values, key string, b *bool) {
	if b != nil {
		q.Set(key, strconv.FormatBool(*b))
	}
}

var listAccountWallets = declare(ops.ListAccountWallets)

// List returns one page of an account's wallets with their holdings.
//
// GET /accounts/{account_id}/wallets — a session of that account.
func (s *WalletsService) List(ctx context.Context, accountID string, params WalletListParams) (*Page[WalletWithTokens], error) {
	return listPage[WalletWithTokens](ctx, s.client, listAccountWallets, pathArgs{accountID}, params.values())
}

// All iterates over every page of an account's wallets, from params.Page
// on. It stops at the first error, which it yields. params is not
// modified.
//
// GET /accounts/{account_id}/wallets — a session of that account.
func (s *WalletsService) All(ctx context.Context, accountID string, params WalletListParams) iter.Seq2[WalletWithTokens, error] {
	return listAll[WalletWithTokens](ctx, s.client, listAccountWallets, pathArgs{accountID}, params.values())
}

// WalletCreateParams registers a wallet. It carries the wallet's ownership
// proof and an optional label. The proof comes from Auth.WalletProof,
// signed by the wallet being added.
type WalletCreateParams struct {
	WalletProof
	Label string `json:"label,omitempty"`
}

var createWallet = declare(ops.CreateWallet)

// Create registers a wallet to the account. The proof's address may differ
// from the session's: one account can own several payee wallets. The wallet
// accepts no token until AcceptToken.
//
// POST /accounts/{account_id}/wallets — a session of that account. It
// answers 409 when the address is registered to any account. It answers
// 422 when the proof is refused; a login proof is refused with
// siwe_purpose_mismatch.
func (s *WalletsService) Create(ctx context.Context, accountID string, params WalletCreateParams) (*Wallet, error) {
	for _, f := range []struct{ name, value string }{
		{"address", params.Address}, {"message", params.Message}, {"signature", params.Signature},
	} {
		if f.value == "" {
			return nil, &ValidationError{Field: f.name, Reason: "is required (use Auth.WalletProof)"}
		}
	}
	var w Wallet
	resp, err := s.client.do(ctx, &request{op: createWallet, args: pathArgs{accountID}, body: params}, &w)
	if err != nil {
		return nil, err
	}
	w.Response = resp
	return &w, nil
}

var getWallet = declare(ops.GetWallet)

// Get reads a wallet by its UUID or its address.
//
// GET /accounts/{account_id}/wallets/{id} — a session of that account.
func (s *WalletsService) Get(ctx context.Context, accountID, id string) (*Wallet, error) {
	var w Wallet
	resp, err := s.client.do(ctx, &request{op: getWallet, args: pathArgs{accountID, id}}, &w)
	if err != nil {
		return nil, err
	}
	w.Response = resp
	return &w, nil
}

// WalletUpdateParams changes a wallet. Nil fields are left unchanged; at
// least one must be set.
type WalletUpdateParams struct {
	Label  *string `json:"label,omitempty"`
	Active *bool   `json:"active,omitempty"`
}

var updateWallet = declare(ops.UpdateWallet)

// Update changes a wallet's label or active flag. id is the wallet's UUID
// or address.
//
// PATCH /accounts/{account_id}/wallets/{id} — a session of that account.
func (s *WalletsService) Update(ctx context.Context, accountID, id string, params WalletUpdateParams) (*Wallet, error) {
	if params.Label == nil && params.Active == nil {
		return nil, &ValidationError{Field: "params", Reason: "set Label or Active"}
	}
	var w Wallet
	resp, err := s.client.do(ctx, &request{op: updateWallet, args: pathArgs{accountID, id}, body: params}, &w)
	if err != nil {
		return nil, err
	}
	w.Response = resp
	return &w, nil
}

var deactivateWallet = declare(ops.DeactivateWallet)

// Deactivate retires a wallet (a soft delete: it stays readable, inactive).
// id is the wallet's UUID or address.
//
// DELETE /accounts/{account_id}/wallets/{id} — a session of that account.
//
// The answer has no body; the *Response is the call's metadata.
func (s *WalletsService) Deactivate(ctx context.Context, accountID, id string) (*Response, error) {
	return s.client.do(ctx, &request{op: deactivateWallet, args: pathArgs{accountID, id}}, nil)
}

// WalletBalancesParams filters GET .../wallets/{id}/balances. Zero values are not
// sent.
type WalletBalancesParams struct {
	ChainID     int64
	TokenSymbol string
}

func (p WalletBalancesParams) values() url.Values {
	q := url.Values{}
	if p.ChainID != 0 {
		q.Set("chain_id", strconv.FormatInt(p.ChainID, 10))
	}
	if p.TokenSymbol != "" {
		q.Set("token_symbol", p.TokenSymbol)
	}
	return q
}

var getWalletBalances = declare(ops.GetWalletBalances)

// Balances reads a wallet's live on-chain balances. A chain whose node
// cannot be read is reported in its ChainBalance.Error rather than failing
// the call.
//
// GET /accounts/{account_id}/wallets/{id}/balances — a session of that
// account.
func (s *WalletsService) Balances(ctx context.Context, accountID, id string, params WalletBalancesParams) (*WalletBalances, error) {
	var b WalletBalances
	resp, err := s.client.do(ctx, &request{op: getWalletBalances, args: pathArgs{accountID, id}, query: params.values()}, &b)
	if err != nil {
		return nil, err
	}
	b.Response = resp
	return &b, nil
}

// WalletAcceptTokenParams names the token a wallet is to accept.
type WalletAcceptTokenParams struct {
	ChainID int64 `json:"chain_id"`
	// Token identifies the token on that chain: its contract address (or
	// its symbol).
	Token string `json:"token"`
	// Default, when set, makes (or unmakes) this the wallet's default
	// holding; a wallet has at most one.
	Default *bool `json:"default,omitempty"`
}

var enableWalletToken = declare(ops.EnableWalletToken)

// AcceptToken makes a wallet accept a token. It creates the holding, or
// reactivates and updates an existing one (an upsert). Both return the
// holding. Created is true when the holding is new (201). It is false when
// an existing one was reactivated or updated (200). StopAcceptingToken
// undoes it.
//
// POST /accounts/{account_id}/wallets/{id}/tokens — a session of that
// account. 422 unknown_chain or unknown_token for a token not in the
// catalog.
func (s *WalletsService) AcceptToken(ctx context.Context, accountID, id string, params WalletAcceptTokenParams) (*WalletAcceptTokenResult, error) {
	if params.ChainID <= 0 {
		return nil, &ValidationError{Field: "chain_id", Reason: "is required"}
	}
	if params.Token == "" {
		return nil, &ValidationError{Field: "token", Reason: "is required"}
	}
	var out WalletAcceptTokenResult
	resp, err := s.client.do(ctx, &request{op: enableWalletToken, args: pathArgs{accountID, id}, body: params}, &out.Token)
	if err != nil {
		return nil, err
	}
	out.Created = resp.StatusCode == http.StatusCreated
	out.Response = resp
	return &out, nil
}

// WalletAcceptTokenResult is the answer to AcceptToken.
type WalletAcceptTokenResult struct {
	// Token is the holding.
	Token WalletToken
	// Created is true when the holding is new (201). It is false when an
	// existing one was reactivated or updated (200).
	Created bool
	// Response is the metadata of the call.
	Response *Response `json:"-"`
}

var disableWalletToken = declare(ops.DisableWalletToken)

// StopAcceptingToken stops a wallet accepting a token. The holding is not
// removed. It stays listed, inactive and no longer the default. AcceptToken
// or EnableToken turn it back on. DisableToken has the same effect and
// answers with the holding. This is the contract's DELETE, answered
// without a body; the *Response is the call's metadata. tokenID is the
// token's UUID (WalletTokenHolding.TokenID), not its address.
//
// DELETE /accounts/{account_id}/wallets/{id}/tokens/{token_id} — a session
// of that account.
func (s *WalletsService) StopAcceptingToken(ctx context.Context, accountID, id, tokenID string) (*Response, error) {
	return s.client.do(ctx, &request{op: disableWalletToken, args: pathArgs{accountID, id, tokenID}}, nil)
}

var enableExistingWalletToken = declare(ops.EnableExistingWalletToken)

// EnableToken re-enables an existing holding and returns it. tokenID is the
// token's UUID. A wallet with no holding of that token gives 404; use
// AcceptToken.
//
// PATCH /accounts/{account_id}/wallets/{id}/tokens/{token_id}/enable — a
// session of that account.
func (s *WalletsService) EnableToken(ctx context.Context, accountID, id, tokenID string) (*WalletToken, error) {
	return s.toggleToken(ctx, enableExistingWalletToken, accountID, id, tokenID)
}

var disableExistingWalletToken = declare(ops.DisableExistingWalletToken)

// DisableToken switches an existing holding off and returns it. The
// holding stays listed, inactive and no longer the default (see
// StopAcceptingToken). tokenID is the token's UUID.
//
// PATCH /accounts/{account_id}/wallets/{id}/tokens/{token_id}/disable — a
// session of that account.
func (s *WalletsService) DisableToken(ctx context.Context, accountID, id, tokenID string) (*WalletToken, error) {
	return s.toggleToken(ctx, disableExistingWalletToken, accountID, id, tokenID)
}

func (s *WalletsService) toggleToken(ctx context.Context, op *operation, accountID, id, tokenID string) (*WalletToken, error) {
	var wt WalletToken
	resp, err := s.client.do(ctx, &request{op: op, args: pathArgs{accountID, id, tokenID}}, &wt)
	if err != nil {
		return nil, err
	}
	wt.Response = resp
	return &wt, nil
}
