package rail0

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/rail0/rail0-go/internal/ops"
)

// AnalyticsFilter narrows the payments an analytics call covers. Only
// payments where the merchant's account is the payee count. Zero values
// are not sent. The params of the three analytics calls embed it, as list
// params embed ListOptions. So one filter serves a dashboard's summary,
// series and breakdown alike.
type AnalyticsFilter struct {
	Mode   PaymentMode
	Status PaymentStatus
	// Token is a token address. With ChainID it makes the calls report
	// volume, which is only ever summed within one token.
	Token   string
	ChainID int64
	// From and To bound the payments' creation time.
	From time.Time
	To   time.Time
}

func (f AnalyticsFilter) encode(q url.Values) {
	if f.Mode != "" {
		q.Set("mode", string(f.Mode))
	}
	if f.Status != "" {
		q.Set("status", string(f.Status))
	}
	if f.Token != "" {
		q.Set("token", f.Token)
	}
	if f.ChainID != 0 {
		q.Set("chain_id", strconv.FormatInt(f.ChainID, 10))
	}
	if !f.From.IsZero() {
		q.Set("from", f.From.UTC().Format(time.RFC3339))
	}
	if !f.To.IsZero() {
		q.Set("to", f.To.UTC().Format(time.RFC3339))
	}
}

// AnalyticsSummary sums up a merchant's payments.
type AnalyticsSummary struct {
	// Orders counts payments across every token.
	Orders int64 `json:"orders"`
	// Disputed counts payments with a dispute.
	Disputed int64 `json:"disputed"`
	// RefundRate and DisputeRate are fractions of Orders.
	RefundRate  float64 `json:"refund_rate"`
	DisputeRate float64 `json:"dispute_rate"`
	// ByStatus counts payments per status.
	ByStatus map[PaymentStatus]int64 `json:"by_status"`
	// Volume has one row per token and chain.
	Volume []AnalyticsVolume `json:"volume"`
	// Response is the metadata of the call that returned this value. It is
	// nil on a value nested in another call's result.
	Response *Response `json:"-"`
}

// AnalyticsVolume is the volume of one token on one chain. Amounts are base
// units (integer strings); format them with Decimals.
type AnalyticsVolume struct {
	// ChainID is zero when the chain is not in the catalog any more.
	ChainID   int64  `json:"chain_id"`
	ChainName string `json:"chain_name"`
	Token     string `json:"token"`
	Symbol    string `json:"symbol"`
	// Decimals is nil when the token is unknown to the catalog. Amounts
	// then cannot be formatted; a real 0 is not nil.
	Decimals *int64 `json:"decimals"`
	Orders   int64  `json:"orders"`
	Gross    string `json:"gross"`
	Settled  string `json:"settled"`
	Escrowed string `json:"escrowed"`
	Captured string `json:"captured"`
	Refunded string `json:"refunded"`
}

// AnalyticsSummaryParams selects the payments of a summary; the zero value
// sums up all of them.
type AnalyticsSummaryParams struct {
	AnalyticsFilter
}

var analyticsSummary = declare(ops.AnalyticsSummary)

// Summary sums up the merchant's payments: counts, rates, counts per status
// and volume per token.
//
// GET /analytics/summary — a session with an account (403
// account_required otherwise).
func (s *AnalyticsService) Summary(ctx context.Context, params AnalyticsSummaryParams) (*AnalyticsSummary, error) {
	q := url.Values{}
	params.encode(q)
	var out AnalyticsSummary
	resp, err := s.client.do(ctx, &request{op: analyticsSummary, query: q}, &out)
	if err != nil {
		return nil, err
	}
	out.Response = resp
	return &out, nil
}

// AnalyticsInterval is the width of a time-series bucket. The gateway may
// add values, which decode unchanged.
type AnalyticsInterval string

// Known intervals.
const (
	IntervalDay   AnalyticsInterval = "day"
	IntervalWeek  AnalyticsInterval = "week"
	IntervalMonth AnalyticsInterval = "month"
)

// AnalyticsTimeseriesParams selects the payments and bucket width of a time series.
type AnalyticsTimeseriesParams struct {
	AnalyticsFilter
	// Interval defaults to IntervalDay on the gateway.
	Interval AnalyticsInterval
}

// AnalyticsBucket is one bucket of a time series.
type AnalyticsBucket struct {
	// Bucket is the start of the bucket.
	Bucket time.Time `json:"bucket"`
	// Orders counts the payments created in the bucket.
	Orders int64 `json:"orders"`
	// Volume is base units. It is set only when the filter names both a
	// token and a chain, and nil otherwise. Money is never summed across
	// tokens.
	Volume *string `json:"volume"`
}

// UnmarshalJSON accepts the bucket start as an RFC 3339 time or a bare
// date ("2026-09-14"). Date-truncated buckets may use the latter.
func (b *AnalyticsBucket) UnmarshalJSON(data []byte) error {
	type plain AnalyticsBucket
	var raw struct {
		plain
		Bucket string `json:"bucket"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*b = AnalyticsBucket(raw.plain)
	if raw.Bucket == "" {
		return nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", time.DateOnly} {
		if t, err := time.Parse(layout, raw.Bucket); err == nil {
			b.Bucket = t
			return nil
		}
	}
	return fmt.Errorf("rail0: analytics bucket %q is not a date or time", raw.Bucket)
}

var analyticsTimeseries = declare(ops.AnalyticsTimeseries)

// Timeseries counts the merchant's payments per bucket, oldest first.
//
// GET /analytics/timeseries — a session with an account (403
// account_required otherwise).
func (s *AnalyticsService) Timeseries(ctx context.Context, params AnalyticsTimeseriesParams) (*List[AnalyticsBucket], error) {
	q := url.Values{}
	params.encode(q)
	if params.Interval != "" {
		q.Set("interval", string(params.Interval))
	}
	return listWhole[AnalyticsBucket](ctx, s.client, &request{op: analyticsTimeseries, query: q})
}

// BreakdownBy is the dimension a breakdown splits payments by. The gateway
// may add values, which decode unchanged.
type BreakdownBy string

// Known breakdown dimensions.
const (
	BreakdownByToken  BreakdownBy = "token"
	BreakdownByChain  BreakdownBy = "chain"
	BreakdownByMode   BreakdownBy = "mode"
	BreakdownByStatus BreakdownBy = "status"
)

// AnalyticsBreakdownParams selects the payments and the dimension of a breakdown.
type AnalyticsBreakdownParams struct {
	AnalyticsFilter
	// By is required.
	By BreakdownBy
}

// AnalyticsRow is one group of a breakdown.
type AnalyticsRow struct {
	// Key is the group's value, depending on AnalyticsBreakdownParams.By.
	// It is a token address, a chain id (in decimal), a mode or a status.
	Key    string `json:"key"`
	Orders int64  `json:"orders"`
	// Token, ChainID, Decimals and Volume are set on token and chain rows
	// only; Volume is base units.
	Token    string  `json:"token"`
	ChainID  int64   `json:"chain_id"`
	Decimals *int64  `json:"decimals"`
	Volume   *string `json:"volume"`
}

// UnmarshalJSON accepts Key as a JSON string or integer (chain rows carry
// the chain id as a number).
func (r *AnalyticsRow) UnmarshalJSON(data []byte) error {
	type plain AnalyticsRow
	var raw struct {
		plain
		Key json.RawMessage `json:"key"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*r = AnalyticsRow(raw.plain)
	switch k := bytes.TrimSpace(raw.Key); {
	case len(k) == 0 || string(k) == "null":
	case k[0] == '"':
		return json.Unmarshal(k, &r.Key)
	default:
		var n json.Number
		if err := json.Unmarshal(k, &n); err != nil {
			return fmt.Errorf("rail0: analytics row key %s is neither a string nor a number", k)
		}
		r.Key = n.String()
	}
	return nil
}

var analyticsBreakdown = declare(ops.AnalyticsBreakdown)

// Breakdown counts the merchant's payments per token, chain, mode or
// status. params.By is required: without it Breakdown returns a
// *ValidationError and sends nothing.
//
// GET /analytics/breakdown — a session with an account (403
// account_required otherwise).
func (s *AnalyticsService) Breakdown(ctx context.Context, params AnalyticsBreakdownParams) (*List[AnalyticsRow], error) {
	if params.By == "" {
		return nil, &ValidationError{Field: "by", Reason: "is required (token, chain, mode or status)"}
	}
	q := url.Values{}
	params.encode(q)
	q.Set("by", string(params.By))
	return listWhole[AnalyticsRow](ctx, s.client, &request{op: analyticsBreakdown, query: q})
}
