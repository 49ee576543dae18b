package rail0

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"reflect"
	"testing"
	"time"
)

const (
	fixtureSummaryJSON = `{"orders": 42, "disputed": 2, "refund_rate": 0.095, "dispute_rate": 0.0476, ` +
		`"by_status": {"captured": 30, "refunded": 4, "authorized": 8, "teleported": 1}, ` +
		`"volume": [{"chain_id": 84532, "chain_name": "Base Sepolia", "token": "0x036CbD53842c5426634e7929541eC2318f3dCF7e", "symbol": "USDC", "decimals": 6, "orders": 41, ` +
		`"gross": "1050000000", "settled": "900000000", "escrowed": "100000000", "captured": "900000000", "refunded": "50000000"}, ` +
		`{"chain_id": null, "chain_name": null, "token": "0x2222222222222222222222222222222222222222", "symbol": null, "decimals": null, "orders": 1, ` +
		`"gross": "5", "settled": "0", "escrowed": "5", "captured": "0", "refunded": "0"}]}`
	fixtureBucketsJSON   = `[{"bucket": "2026-09-14T00:00:00Z", "orders": 3, "volume": "75000000"}, {"bucket": "2026-09-15", "orders": 0, "volume": null}]`
	fixtureBreakdownJSON = `[{"key": "0x036CbD53842c5426634e7929541eC2318f3dCF7e", "orders": 41, "token": "0x036CbD53842c5426634e7929541eC2318f3dCF7e", "chain_id": 84532, "decimals": 6, "volume": "1050000000"}, ` +
		`{"key": 84532, "orders": 41, "token": null, "chain_id": 84532, "decimals": null, "volume": null}, ` +
		`{"key": "captured", "orders": 30, "token": null, "chain_id": null, "decimals": null, "volume": null}]`
)

func TestAnalyticsRequests(t *testing.T) {
	t.Parallel()
	from := time.Date(2026, 9, 1, 2, 0, 0, 0, time.FixedZone("CEST", 2*3600))
	to := time.Date(2026, 9, 30, 23, 59, 59, 0, time.UTC)
	filter := AnalyticsFilter{Mode: ModeAuthorize, Status: StatusCaptured, Token: fixtureToken, ChainID: 84532, From: from, To: to}
	filterQuery := func(extra ...string) url.Values {
		q := url.Values{"mode": {"authorize"}, "status": {"captured"}, "token": {fixtureToken}, "chain_id": {"84532"},
			"from": {"2026-09-01T00:00:00Z"}, "to": {"2026-09-30T23:59:59Z"}}
		for i := 0; i < len(extra); i += 2 {
			q.Set(extra[i], extra[i+1])
		}
		return q
	}
	six := int64(6)
	runMuxCases(t, []muxCase{
		{
			name: "Summary with every filter",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Analytics.Summary(ctx, AnalyticsSummaryParams{filter})
			},
			method: "GET", path: "/analytics/summary",
			query: filterQuery(),
			reply: muxOK(fixtureSummaryJSON),
			check: func(t *testing.T, got any) {
				s := got.(*AnalyticsSummary)
				if s.Orders != 42 || s.Disputed != 2 || s.RefundRate != 0.095 || s.DisputeRate != 0.0476 {
					t.Errorf("summary = %+v", s)
				}
				wantByStatus := map[PaymentStatus]int64{StatusCaptured: 30, StatusRefunded: 4, StatusAuthorized: 8, "teleported": 1}
				if !reflect.DeepEqual(s.ByStatus, wantByStatus) {
					t.Errorf("by_status = %v", s.ByStatus)
				}
				if len(s.Volume) != 2 {
					t.Fatalf("volume = %+v", s.Volume)
				}
				want := AnalyticsVolume{ChainID: 84532, ChainName: "Base Sepolia", Token: fixtureToken, Symbol: "USDC", Decimals: &six, Orders: 41,
					Gross: "1050000000", Settled: "900000000", Escrowed: "100000000", Captured: "900000000", Refunded: "50000000"}
				if !reflect.DeepEqual(s.Volume[0], want) {
					t.Errorf("volume[0] = %+v", s.Volume[0])
				}
				if v := s.Volume[1]; v.ChainID != 0 || v.Decimals != nil || v.Symbol != "" || v.Gross != "5" {
					t.Errorf("uncatalogued volume = %+v", v)
				}
			},
		},
		{
			name: "Summary unfiltered",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Analytics.Summary(ctx, AnalyticsSummaryParams{})
			},
			method: "GET", path: "/analytics/summary",
			reply: muxOK(`{"orders": 0, "disputed": 0, "refund_rate": 0, "dispute_rate": 0, "by_status": {}, "volume": []}`),
		},
		{
			name: "Timeseries weekly",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Analytics.Timeseries(ctx, AnalyticsTimeseriesParams{AnalyticsFilter: filter, Interval: IntervalWeek})
			},
			method: "GET", path: "/analytics/timeseries",
			query: filterQuery("interval", "week"),
			reply: muxOK(fixtureBucketsJSON),
			check: func(t *testing.T, got any) {
				b := got.(*List[AnalyticsBucket]).Items
				if len(b) != 2 {
					t.Fatalf("buckets = %+v", b)
				}
				if !b[0].Bucket.Equal(time.Date(2026, 9, 14, 0, 0, 0, 0, time.UTC)) || b[0].Orders != 3 || b[0].Volume == nil || *b[0].Volume != "75000000" {
					t.Errorf("bucket 0 = %+v", b[0])
				}
				if !b[1].Bucket.Equal(time.Date(2026, 9, 15, 0, 0, 0, 0, time.UTC)) || b[1].Orders != 0 || b[1].Volume != nil {
					t.Errorf("bucket 1 (date only, null volume) = %+v", b[1])
				}
			},
		},
		{
			name: "Timeseries with defaults",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Analytics.Timeseries(ctx, AnalyticsTimeseriesParams{})
			},
			method: "GET", path: "/analytics/timeseries",
			reply: muxOK(`[]`),
		},
		{
			name: "Breakdown by chain",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Analytics.Breakdown(ctx, AnalyticsBreakdownParams{AnalyticsFilter: AnalyticsFilter{Mode: ModeCharge}, By: BreakdownByChain})
			},
			method: "GET", path: "/analytics/breakdown",
			query: url.Values{"mode": {"charge"}, "by": {"chain"}},
			reply: muxOK(fixtureBreakdownJSON),
			check: func(t *testing.T, got any) {
				rows := got.(*List[AnalyticsRow]).Items
				if len(rows) != 3 {
					t.Fatalf("rows = %+v", rows)
				}
				vol := "1050000000"
				want0 := AnalyticsRow{Key: fixtureToken, Orders: 41, Token: fixtureToken, ChainID: 84532, Decimals: &six, Volume: &vol}
				if !reflect.DeepEqual(rows[0], want0) {
					t.Errorf("token row = %+v", rows[0])
				}
				if rows[1].Key != "84532" || rows[1].Token != "" || rows[1].Volume != nil {
					t.Errorf("chain row (numeric key) = %+v", rows[1])
				}
				if rows[2].Key != "captured" || rows[2].ChainID != 0 || rows[2].Orders != 30 {
					t.Errorf("status row = %+v", rows[2])
				}
			},
		},
	})
}

func TestAnalyticsBreakdownNeedsBy(t *testing.T) {
	t.Parallel()
	srv, c := newMuxServer(t)
	rows, err := c.Analytics.Breakdown(context.Background(), AnalyticsBreakdownParams{AnalyticsFilter: AnalyticsFilter{ChainID: 1}})
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Field != "by" || rows != nil {
		t.Fatalf("Breakdown without By = %v, %v; want a *ValidationError", rows, err)
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d requests sent, want none", n)
	}
}

func TestAnalyticsDecodeRejectsNonsense(t *testing.T) {
	t.Parallel()
	var b AnalyticsBucket
	if err := json.Unmarshal([]byte(`{"bucket": "last tuesday", "orders": 1}`), &b); err == nil {
		t.Errorf("bucket %q decoded without error", "last tuesday")
	}
	var r AnalyticsRow
	if err := json.Unmarshal([]byte(`{"key": {"nested": true}, "orders": 1}`), &r); err == nil {
		t.Errorf("object key decoded without error: %+v", r)
	}
	if err := json.Unmarshal([]byte(`{"key": null, "orders": 2}`), &r); err != nil || r.Key != "" || r.Orders != 2 {
		t.Errorf("null key: %+v, %v", r, err)
	}
}
