package rail0

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/rail0/rail0-go/internal/ops"
)

// PaymentStatus is a payment's lifecycle status. The gateway may add
// values; unknown ones decode unchanged.
type PaymentStatus string

// Payment statuses (README section 5).
const (
	StatusUnsigned          PaymentStatus = "unsigned"
	StatusSigned            PaymentStatus = "signed"
	StatusAuthorized        PaymentStatus = "authorized"
	StatusPartiallyCaptured PaymentStatus = "partially_captured"
	StatusCaptured          PaymentStatus = "captured"
	StatusCharged           PaymentStatus = "charged"
	StatusVoided            PaymentStatus = "voided"
	StatusReleased          PaymentStatus = "released"
	StatusRefunded          PaymentStatus = "refunded"
	// StatusPartiallyRefunded is legacy: no longer produced, but it may
	// appear on old records.
	StatusPartiallyRefunded PaymentStatus = "partially_refunded"
)

// PaymentMode says whether a payment escrows funds or settles in one step.
type PaymentMode string

// Payment modes.
const (
	// ModeAuthorize escrows the funds; capture them later.
	ModeAuthorize PaymentMode = "authorize"
	// ModeCharge settles to the payee in one step.
	ModeCharge PaymentMode = "charge"
)

// Operation is an on-chain step of a payment.
type Operation string

// Operations. The first six are valid in the generic prepare/submit
// routes. Dispute and close_dispute have their own.
const (
	OpAuthorize    Operation = "authorize"
	OpCharge       Operation = "charge"
	OpCapture      Operation = "capture"
	OpVoid         Operation = "void"
	OpRelease      Operation = "release"
	OpRefund       Operation = "refund"
	OpDispute      Operation = "dispute"
	OpCloseDispute Operation = "close_dispute"
)

// TransactionStatus is an on-chain transaction's status.
type TransactionStatus string

// Transaction statuses.
const (
	TxPending    TransactionStatus = "pending"
	TxSubmitting TransactionStatus = "submitting"
	TxSubmitted  TransactionStatus = "submitted"
	TxConfirmed  TransactionStatus = "confirmed"
	TxFailed     TransactionStatus = "failed"
)

// UnixTime is a time in Unix seconds, as the gateway sends
// authorization_expiry and refund_expiry.
type UnixTime int64

// Time returns t as a time.Time in UTC.
func (t UnixTime) Time() time.Time { return time.Unix(int64(t), 0).UTC() }

// Payment is a payment record. Amounts are base units, as integer strings.
// Use FormatAmount with the token's decimals to show them.
type Payment struct {
	ID                  string         `json:"id"`
	ContractID          string         `json:"contract_id"`
	Rail0ID             string         `json:"rail0_id"`
	Status              PaymentStatus  `json:"status"`
	Mode                PaymentMode    `json:"mode"`
	Amount              string         `json:"amount"`
	CapturableAmount    string         `json:"capturable_amount"`
	RefundableAmount    string         `json:"refundable_amount"`
	ConfigHash          string         `json:"config_hash"`
	Payer               string         `json:"payer"`
	Payee               string         `json:"payee"`
	Token               string         `json:"token"`
	AuthorizationExpiry UnixTime       `json:"authorization_expiry"`
	RefundExpiry        UnixTime       `json:"refund_expiry"`
	Disputed            bool           `json:"disputed"`
	LastErrorCode       *ErrorCode     `json:"last_error_code"`
	LastErrorMessage    *string        `json:"last_error_message"`
	Description         *string        `json:"description"`
	Metadata            map[string]any `json:"metadata"`
	SignedAt            *time.Time     `json:"signed_at"`
	CreatedAt           time.Time      `json:"created_at"`
	UpdatedAt           time.Time      `json:"updated_at"`
}

// PaymentDetail is a payment with its chain, contract and transactions.
// While it is unsigned, it also carries the payload the payer must sign.
type PaymentDetail struct {
	Payment
	ChainID       int64         `json:"chain_id"`
	Rail0Contract string        `json:"rail0_contract"`
	Transactions  []Transaction `json:"transactions"`
	// SigningPayload is the EIP-712 typed data the payer signs, kept
	// exactly as received. It is null once signed. It may be null after a
	// transient node failure too: read the payment again.
	SigningPayload json.RawMessage `json:"signing_payload"`
	// Replayed is true when Create returned the payment of an earlier call
	// with the same Idempotency-Key: HTTP 200 instead of 201.
	Replayed bool `json:"-"`
	// Response is the metadata of the call that returned this value. It is
	// nil on a value nested in another call's result.
	Response *Response `json:"-"`
}

// Transaction is one on-chain attempt of a payment's step.
type Transaction struct {
	ID           string            `json:"id"`
	PaymentID    string            `json:"payment_id"`
	Operation    Operation         `json:"operation"`
	Status       TransactionStatus `json:"status"`
	ErrorCode    *ErrorCode        `json:"error_code"`
	ErrorTitle   *string           `json:"error_title"`
	ErrorDetail  *string           `json:"error_detail"`
	ErrorMessage *string           `json:"error_message"`
	// UnsignedTransaction is a JSON document of EIP-1559 fields to sign.
	// It is present while the transaction is pending.
	UnsignedTransaction *string    `json:"unsigned_transaction"`
	TransactionHash     *string    `json:"transaction_hash"`
	Amount              *string    `json:"amount"`
	BlockNumber         *int64     `json:"block_number"`
	GasUsed             *string    `json:"gas_used"`
	GasLimit            *string    `json:"gas_limit"`
	EffectiveGasPrice   *string    `json:"effective_gas_price"`
	BaseFeePerGas       *string    `json:"base_fee_per_gas"`
	GasCost             *string    `json:"gas_cost"`
	PendingAt           *time.Time `json:"pending_at"`
	SubmittedAt         *time.Time `json:"submitted_at"`
	ConfirmedAt         *time.Time `json:"confirmed_at"`
	CreatedAt           time.Time  `json:"created_at"`
	UpdatedAt           time.Time  `json:"updated_at"`
	// Response is the metadata of the call that returned this value. It is
	// nil on a value nested in another call's result.
	Response *Response `json:"-"`
}

// PaymentCreateParams opens a payment.
type PaymentCreateParams struct {
	ChainID int64       `json:"chain_id"`
	Mode    PaymentMode `json:"mode"`
	// Amount is a human decimal string, e.g. "10.50" (see ToBaseUnits).
	Amount string `json:"amount"`
	// Token is the token's contract address.
	Token string `json:"token"`
	// Payer must be the address of the signed-in session.
	Payer       string         `json:"payer"`
	Payee       string         `json:"payee"`
	Description string         `json:"description,omitempty"`
	Metadata    map[string]any `json:"metadata,omitempty"`
	// IdempotencyKey makes the creation replay-safe: the same key and payer
	// return the same payment. When empty, Create generates one per call
	// and sends it on every attempt. Set your own, stored with your order,
	// to be safe across process restarts too.
	IdempotencyKey string `json:"-"`
}

var createPayment = declare(ops.CreatePayment)

// Create opens a payment in status unsigned, carrying the signing payload
// the payer must sign.
//
// POST /payments — any session whose address equals Payer.
//
// It always sends an Idempotency-Key. So a 5xx or a broken connection is
// retried safely, and a replay returns the original payment (Replayed
// true). It refuses with a *ValidationError before any request:
//   - a missing field;
//   - a chain id below 1;
//   - an amount that is not a positive decimal such as "25.00".
//
// The client remembers what was asked for: the last 1024 payments, in
// memory. PayerSign of the payment on this client accepts those terms and
// no others, whatever the gateway answers. So does VerifyPayload of its
// payer's signature, for a wallet elsewhere. A replay of an
// Idempotency-Key first used with other params is refused there. Calling
// Create again with the order's IdempotencyKey restores that record (after
// a restart, say). Create returns what the gateway answered, unchecked.
func (s *PaymentsService) Create(ctx context.Context, params PaymentCreateParams) (*PaymentDetail, error) {
	for _, f := range []struct{ name, value string }{
		{"amount", params.Amount}, {"token", params.Token}, {"payer", params.Payer},
		{"payee", params.Payee}, {"mode", string(params.Mode)},
	} {
		if f.value == "" {
			return nil, &ValidationError{Field: f.name, Reason: "is required"}
		}
	}
	if params.ChainID <= 0 {
		return nil, &ValidationError{Field: "chain_id", Reason: "is required"}
	}
	if err := checkHumanAmount("amount", params.Amount); err != nil {
		return nil, err
	}
	key := params.IdempotencyKey
	if key == "" {
		key = newIdempotencyKey()
	}
	var p PaymentDetail
	identify := func() string { return notThePayment(&p) }
	resp, err := s.client.do(ctx, &request{op: createPayment, body: params, idempotencyKey: key, identify: identify}, &p)
	if err != nil {
		return nil, err
	}
	p.Replayed = resp.StatusCode == http.StatusOK
	p.Response = resp
	// PayerSign and the low-level path (VerifyPayload, VerifyTransaction)
	// bind the payment to this record.
	s.client.created.remember(p.ID, askedOf(params, &p))
	s.client.learnPayment(p.ID, &p)
	return &p, nil
}

var getPayment = declare(ops.GetPayment)

// Get reads a payment by its UUID or its rail0_id.
//
// GET /payments/{id} — the payer or the payee.
func (s *PaymentsService) Get(ctx context.Context, id string) (*PaymentDetail, error) {
	return s.get(ctx, id, false)
}

// get is Get. poll marks a read of a loop that waits out 429s itself
// (request.poll).
func (s *PaymentsService) get(ctx context.Context, id string, poll bool) (*PaymentDetail, error) {
	var p PaymentDetail
	resp, err := s.client.do(ctx, &request{op: getPayment, args: pathArgs{id}, poll: poll}, &p)
	if err != nil {
		return nil, err
	}
	p.Response = resp
	return &p, nil
}

// PaymentListParams filters GET /payments. Zero values are not sent.
type PaymentListParams struct {
	ListOptions
	Status  PaymentStatus
	Mode    PaymentMode
	Payer   string
	Payee   string
	Token   string
	Rail0ID string
	ChainID int64
	// Disputed filters on the current dispute state when set.
	Disputed *bool
	// MinAmount and MaxAmount are base units (integer strings), inclusive.
	MinAmount string
	MaxAmount string
	// CreatedFrom and CreatedTo bound the creation time, inclusive.
	CreatedFrom time.Time
	CreatedTo   time.Time
}

func (p PaymentListParams) values() url.Values {
	q := url.Values{}
	p.ListOptions.encode(q)
	set := func(k, v string) {
		if v != "" {
			q.Set(k, v)
		}
	}
	set("status", string(p.Status))
	set("mode", string(p.Mode))
	set("payer", p.Payer)
	set("payee", p.Payee)
	set("token", p.Token)
	set("rail0_id", p.Rail0ID)
	set("min_amount", p.MinAmount)
	set("max_amount", p.MaxAmount)
	if p.ChainID != 0 {
		q.Set("chain_id", strconv.FormatInt(p.ChainID, 10))
	}
	if p.Disputed != nil {
		q.Set("disputed", strconv.FormatBool(*p.Disputed))
	}
	if !p.CreatedFrom.IsZero() {
		q.Set("created_from", p.CreatedFrom.UTC().Format(time.RFC3339))
	}
	if !p.CreatedTo.IsZero() {
		q.Set("created_to", p.CreatedTo.UTC().Format(time.RFC3339))
	}
	return q
}

var listPayments = declare(ops.ListPayments)

// List returns one page of the caller's payments (as payer or payee).
//
// GET /payments — any session.
func (s *PaymentsService) List(ctx context.Context, params PaymentListParams) (*Page[Payment], error) {
	return listPage[Payment](ctx, s.client, listPayments, pathArgs{}, params.values())
}

// All iterates over every page of the caller's payments, from params.Page
// on. It stops at the first error, which it yields. params is not
// modified.
//
// GET /payments — any session.
func (s *PaymentsService) All(ctx context.Context, params PaymentListParams) iter.Seq2[Payment, error] {
	return listAll[Payment](ctx, s.client, listPayments, pathArgs{}, params.values())
}

// PaymentListTransactionsParams filters and pages GET /payments/{id}/transactions.
// Zero values are not sent.
type PaymentListTransactionsParams struct {
	ListOptions
	// Operation keeps one step's transactions.
	Operation Operation
	// Status keeps transactions in one status.
	Status TransactionStatus
}

func (p PaymentListTransactionsParams) values() url.Values {
	q := url.Values{}
	p.ListOptions.encode(q)
	if p.Operation != "" {
		q.Set("operation", string(p.Operation))
	}
	if p.Status != "" {
		q.Set("status", string(p.Status))
	}
	return q
}

var listPaymentTransactions = declare(ops.ListPaymentTransactions)

// ListTransactions returns one page of a payment's transactions. They are
// every attempt of every step, failed ones included.
//
// GET /payments/{id}/transactions — the payer or the payee.
func (s *PaymentsService) ListTransactions(ctx context.Context, id string, params PaymentListTransactionsParams) (*Page[Transaction], error) {
	return listPage[Transaction](ctx, s.client, listPaymentTransactions, pathArgs{id}, params.values())
}

// AllTransactions iterates over every page of a payment's transactions,
// from params.Page on. It stops at the first error, which it yields.
// params is not modified.
//
// GET /payments/{id}/transactions — the payer or the payee.
func (s *PaymentsService) AllTransactions(ctx context.Context, id string, params PaymentListTransactionsParams) iter.Seq2[Transaction, error] {
	return listAll[Transaction](ctx, s.client, listPaymentTransactions, pathArgs{id}, params.values())
}

// PaymentListDisputesParams filters and pages a payment's dispute history.
// The zero value lists every dispute with the server's default paging.
type PaymentListDisputesParams struct {
	ListOptions
	// Status keeps only open or only closed disputes; empty for both.
	Status DisputeStatus
}

func (p PaymentListDisputesParams) values() url.Values {
	return DisputeListParams(p).values()
}

var listDisputes = declare(ops.ListDisputes)

// ListDisputes returns one page of a payment's dispute history, open and
// closed.
//
// GET /payments/{id}/disputes — the payer or the payee.
func (s *PaymentsService) ListDisputes(ctx context.Context, id string, params PaymentListDisputesParams) (*Page[Dispute], error) {
	return listPage[Dispute](ctx, s.client, listDisputes, pathArgs{id}, params.values())
}

// AllDisputes iterates over every page of a payment's dispute history,
// from params.Page on. It stops at the first error, which it yields.
// params is not modified.
//
// GET /payments/{id}/disputes — the payer or the payee.
func (s *PaymentsService) AllDisputes(ctx context.Context, id string, params PaymentListDisputesParams) iter.Seq2[Dispute, error] {
	return listAll[Dispute](ctx, s.client, listDisputes, pathArgs{id}, params.values())
}
