package rail0

import (
	"context"
	"iter"
	"net/url"
	"time"

	"github.com/rail0/rail0-go/internal/ops"
)

// DisputeStatus is the state of a dispute. The gateway may add values, which
// decode unchanged.
type DisputeStatus string

// Known dispute statuses.
const (
	// DisputeOpen is a dispute the payer has opened and not yet closed.
	DisputeOpen DisputeStatus = "open"
	// DisputeClosed is a dispute closed by the payer, or by a full refund.
	DisputeClosed DisputeStatus = "closed"
)

// Party names one side of a payment. The gateway may add values, which
// decode unchanged.
type Party string

// Known parties.
const (
	// PartyPayer is the buyer who funds the payment.
	PartyPayer Party = "payer"
	// PartyPayee is the merchant who is paid.
	PartyPayee Party = "payee"
)

// Dispute is the record of one dispute on a payment. Opening and closing a
// dispute are on-chain signals: no funds move. The record reflects what
// the indexer has seen on chain.
type Dispute struct {
	ID        string        `json:"id"`
	PaymentID string        `json:"payment_id"`
	Status    DisputeStatus `json:"status"`
	// Reason is the bytes32 reason given when opening, 0x + 64 hex. It is
	// all zeros when none was given.
	Reason string `json:"reason"`
	// OpenedBlock is the block of the opening event; nil while unknown.
	OpenedBlock *int64    `json:"opened_block"`
	OpenedAt    time.Time `json:"opened_at"`
	// ClosedBy is who closed the dispute; empty while it is open.
	ClosedBy Party `json:"closed_by"`
	// CloseReason is the bytes32 reason given when closing; empty while open.
	CloseReason string `json:"close_reason"`
	// ClosedBlock is the block of the closing event; nil while open.
	ClosedBlock *int64 `json:"closed_block"`
	// ClosedAt is when the dispute was closed; nil while open.
	ClosedAt *time.Time `json:"closed_at"`
}

// DisputeDetail is a dispute with its payment embedded, as listed by
// Disputes.List.
type DisputeDetail struct {
	Dispute
	// Payment is the disputed payment; nil if the gateway omitted it.
	Payment *Payment `json:"payment"`
}

// DisputeListParams filters and pages the disputes on the caller's
// payments. The zero value lists every dispute with the server's default
// paging.
type DisputeListParams struct {
	ListOptions
	// Status keeps only open or only closed disputes; empty for both.
	Status DisputeStatus
}

func (p DisputeListParams) values() url.Values {
	q := url.Values{}
	p.ListOptions.encode(q)
	if p.Status != "" {
		q.Set("status", string(p.Status))
	}
	return q
}

var listAccountDisputes = declare(ops.ListAccountDisputes)

// List returns one page of the disputes on the caller's payments. They are
// the caller's as payer or payee, open or closed, each with its payment
// embedded. Closed disputes stay listed here. The disputed filter of
// Payments.List, by contrast, reflects only current state.
//
// GET /disputes — any session.
func (s *DisputesService) List(ctx context.Context, params DisputeListParams) (*Page[DisputeDetail], error) {
	return listPage[DisputeDetail](ctx, s.client, listAccountDisputes, pathArgs{}, params.values())
}

// All iterates over every dispute on the caller's payments. It fetches
// pages on demand from the page in params (default the first). It stops at
// the first error, which it yields, and never modifies params.
//
// GET /disputes — any session.
func (s *DisputesService) All(ctx context.Context, params DisputeListParams) iter.Seq2[DisputeDetail, error] {
	return listAll[DisputeDetail](ctx, s.client, listAccountDisputes, pathArgs{}, params.values())
}
