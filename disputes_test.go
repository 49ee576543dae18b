package rail0

import (
	"context"
	"net/url"
	"strings"
	"testing"
)

// disputeDetailJSON embeds the example payment into a dispute.
func disputeDetailJSON(dispute string) string {
	return strings.TrimSuffix(dispute, "}") + `, "payment": ` + fixturePaymentJSON + `}`
}

func TestDisputesRequests(t *testing.T) {
	t.Parallel()
	runMuxCases(t, []muxCase{
		{
			name: "List with status and paging",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Disputes.List(ctx, DisputeListParams{
					ListOptions: ListOptions{Page: 3, PerPage: 5, Sort: []SortKey{SortOpenedAt.Desc()}},
					Status:      DisputeOpen,
				})
			},
			method: "GET", path: "/disputes",
			query: url.Values{"page": {"3"}, "per_page": {"5"}, "sort": {"-opened_at"}, "status": {"open"}},
			reply: muxReply{status: 200, header: map[string]string{"X-Total-Count": "11", "X-Page": "3", "X-Per-Page": "5"},
				body: "[" + disputeDetailJSON(fixtureOpenDisputeJSON) + "]"},
			check: func(t *testing.T, got any) {
				p := got.(*Page[DisputeDetail])
				if p.TotalCount != 11 || p.Page != 3 || p.PerPage != 5 || len(p.Items) != 1 {
					t.Fatalf("page = %+v", p)
				}
				d := p.Items[0]
				if d.Status != DisputeOpen || d.ClosedBy != "" || d.ClosedAt != nil || d.OpenedBlock != nil || d.CloseReason != "" {
					t.Errorf("open dispute = %+v", d.Dispute)
				}
				if d.Payment == nil || d.Payment.ID != fixturePaymentID || d.Payment.Amount != "25000000" {
					t.Errorf("embedded payment = %+v", d.Payment)
				}
			},
		},
		{
			name: "List with nil params",
			call: func(ctx context.Context, c *Client) (any, error) {
				return c.Disputes.List(ctx, DisputeListParams{})
			},
			method: "GET", path: "/disputes",
			reply: muxOK("[" + disputeDetailJSON(fixtureDisputeJSON) + "]"),
			check: func(t *testing.T, got any) {
				p := got.(*Page[DisputeDetail])
				if len(p.Items) != 1 || p.TotalCount != 1 {
					t.Fatalf("page = %+v", p)
				}
				d := p.Items[0]
				if d.Status != DisputeClosed || d.ClosedBy != PartyPayer || d.ClosedBlock == nil || *d.ClosedBlock != 31046000 ||
					d.ClosedAt == nil || !d.ClosedAt.After(d.OpenedAt) || d.Reason != fixtureReason {
					t.Errorf("closed dispute = %+v", d.Dispute)
				}
			},
		},
	})
}

func TestDisputesAllWalksPagesWithoutMutatingParams(t *testing.T) {
	t.Parallel()
	srv, c := newMuxServer(t)
	page := func(n string) muxReply {
		return muxReply{status: 200, header: map[string]string{"X-Total-Count": "2", "X-Page": n, "X-Per-Page": "1"},
			body: "[" + disputeDetailJSON(fixtureDisputeJSON) + "]"}
	}
	srv.on("GET /disputes", page("1"), page("2"))
	params := DisputeListParams{ListOptions: ListOptions{PerPage: 1}, Status: DisputeClosed}
	n := 0
	for d, err := range c.Disputes.All(context.Background(), params) {
		if err != nil {
			t.Fatal(err)
		}
		if d.Payment == nil {
			t.Error("payment not embedded")
		}
		n++
	}
	if n != 2 {
		t.Errorf("iterated %d disputes, want 2", n)
	}
	reqs := srv.requests()
	if len(reqs) != 2 || reqs[0].Query.Get("page") != "1" || reqs[1].Query.Get("page") != "2" ||
		reqs[1].Query.Get("status") != "closed" || reqs[1].Query.Get("per_page") != "1" {
		t.Errorf("requests = %+v", reqs)
	}
	if params.Page != 0 || params.Status != DisputeClosed {
		t.Errorf("params modified: %+v", params)
	}
}

func TestDisputesAllStopsWhenTheCallerBreaks(t *testing.T) {
	t.Parallel()
	srv, c := newMuxServer(t)
	srv.on("GET /disputes", muxReply{status: 200, header: map[string]string{"X-Total-Count": "9", "X-Page": "1", "X-Per-Page": "2"},
		body: "[" + disputeDetailJSON(fixtureDisputeJSON) + "," + disputeDetailJSON(fixtureOpenDisputeJSON) + "]"})
	for _, err := range c.Disputes.All(context.Background(), DisputeListParams{}) {
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("sent %d requests after break, want 1", n)
	}
}
