package rail0test

import (
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// The records below are the server's state.
// All of them are guarded by Server.mu.

type chain struct {
	ChainID      int64
	Name         string
	NativeSymbol string
	NetworkType  string
	ExplorerURL  string
	Active       bool
	Contract     *contract // nil when RAIL0 is not deployed there
	nextBlock    int64
}

type contract struct {
	ID      string
	Address common.Address
	Active  bool
	paid    bool // a payment has been authorized or charged: the first one costs more gas
}

type token struct {
	ID       string
	ChainID  int64
	Symbol   string
	Name     string // EIP-712 domain name
	Version  string // EIP-712 domain version
	Address  common.Address
	Decimals int
	Active   bool
}

type account struct {
	ID      string
	Name    string
	Members map[common.Address]bool
}

type holding struct {
	TokenID string
	Active  bool
	Default bool
}

type wallet struct {
	ID        string
	AccountID string
	Address   common.Address
	Label     *string
	Active    bool
	Holdings  []*holding
}

type payment struct {
	ID           string
	ContractID   string
	Rail0ID      common.Hash
	ConfigHash   common.Hash
	Status       string
	Mode         string
	Amount       *big.Int
	Capturable   *big.Int
	Refundable   *big.Int
	Captured     *big.Int // ever captured or charged
	Refunded     *big.Int
	Payer        common.Address
	Payee        common.Address
	Token        *token
	Chain        *chain
	AuthExpiry   int64
	RefundExpiry int64
	Disputed     bool
	LastErrCode  *string
	LastErrMsg   *string
	Description  *string
	Metadata     map[string]any
	Signature    []byte
	SignedAt     *time.Time
	CreatedAt    time.Time
	UpdatedAt    time.Time
	Txs          []*transaction
	Disputes     []*dispute
	seq          int64
}

type transaction struct {
	ID          string
	Payment     *payment
	Operation   string
	Status      string
	ErrCode     *string
	ErrTitle    *string
	ErrDetail   *string
	Unsigned    *string
	Hash        *common.Hash
	Amount      *big.Int
	BlockNumber *int64
	GasUsed     *big.Int
	GasLimit    uint64 // as prepared, then as submitted
	GasPrice    *big.Int
	BaseFee     *big.Int
	From        common.Address // the party expected to send it
	Data        []byte         // the calldata: as prepared, then as submitted
	Value       *big.Int       // the value sent with the call: 0 as prepared, then as submitted
	Reason      common.Hash    // dispute reason
	PendingAt   *time.Time
	SubmittedAt *time.Time
	ConfirmedAt *time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
	submitClock time.Time // unrounded server time of the last submit
	seq         int64
}

type dispute struct {
	ID          string
	Payment     *payment
	Status      string
	Reason      common.Hash
	OpenedBlock *int64
	OpenedAt    time.Time
	ClosedBy    *string
	CloseReason *common.Hash
	ClosedBlock *int64
	ClosedAt    *time.Time
	seq         int64
}

type webhook struct {
	ID          string
	AccountID   string
	Name        string
	CallbackURL string
	Topic       string
	Active      bool
	CircuitOpen bool
	Failures    int
	Secret      string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	seq         int64
}

type eventCallback struct {
	ID              string
	WebhookID       string
	PaymentID       string
	Topic           string
	CallbackURL     string
	ResponseCode    *string
	ResponseMessage *string
	ErrorReason     *string
	Status          string
	CreatedAt       time.Time
	Payload         string
	seq             int64
}

type nonceRecord struct {
	ExpiresAt time.Time
	Used      bool
}

type idempotencyRecord struct {
	Payer     common.Address
	PaymentID string
}

// state is everything the gateway stores.
type state struct {
	chains    []*chain
	tokens    []*token
	accounts  map[string]*account
	wallets   []*wallet
	payments  []*payment
	byID      map[string]*payment
	disputes  []*dispute
	webhooks  []*webhook
	callbacks []*eventCallback
	nonces    map[string]*nonceRecord
	revoked   map[string]bool // JWT ids
	idem      map[string]idempotencyRecord
	inflight  []*transaction // submitted, not yet settled
	balances  map[common.Address]map[common.Address]*big.Int
	nonceOf   map[common.Address]uint64
	seq       int64
}

func (st *state) next() int64 {
	st.seq++
	return st.seq
}

func (st *state) chainByID(id int64) *chain {
	for _, c := range st.chains {
		if c.ChainID == id {
			return c
		}
	}
	return nil
}

func (st *state) tokenByID(id string) *token {
	for _, t := range st.tokens {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// tokenOn finds a token on a chain by address or symbol.
func (st *state) tokenOn(chainID int64, ref string) *token {
	for _, t := range st.tokens {
		if t.ChainID != chainID {
			continue
		}
		if common.IsHexAddress(ref) && common.HexToAddress(ref) == t.Address {
			return t
		}
		if strings.EqualFold(ref, t.Symbol) {
			return t
		}
	}
	return nil
}

func (st *state) walletByAddress(a common.Address) *wallet {
	for _, w := range st.wallets {
		if w.Address == a {
			return w
		}
	}
	return nil
}

// accountOf returns the account an address signs in to.
// A member address comes first, then the owner of a wallet with that
// address.
func (st *state) accountOf(a common.Address) *account {
	for _, acc := range st.accounts {
		if acc.Members[a] {
			return acc
		}
	}
	if w := st.walletByAddress(a); w != nil {
		return st.accounts[w.AccountID]
	}
	return nil
}
