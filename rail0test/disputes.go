package rail0test

import (
	"net/http"
	"time"
)

func disputeView(d *dispute) map[string]any {
	var closeReason *string
	if d.CloseReason != nil {
		v := d.CloseReason.Hex()
		closeReason = &v
	}
	return map[string]any{
		"id":           d.ID,
		"payment_id":   d.Payment.ID,
		"status":       d.Status,
		"reason":       d.Reason.Hex(),
		"opened_block": d.OpenedBlock,
		"opened_at":    ts(d.OpenedAt),
		"closed_by":    d.ClosedBy,
		"close_reason": closeReason,
		"closed_block": d.ClosedBlock,
		"closed_at":    tsPtr(d.ClosedAt),
	}
}

var disputeSortKeys = sortKeys[*dispute]{
	"opened_at": func(a, b *dispute) int {
		if c := a.OpenedAt.Compare(b.OpenedAt); c != 0 {
			return c
		}
		return int(a.seq - b.seq)
	},
	"created_at": func(a, b *dispute) int { return int(a.seq - b.seq) },
	"closed_at": byTime(func(d *dispute) time.Time {
		if d.ClosedAt == nil {
			return time.Time{}
		}
		return *d.ClosedAt
	}),
	"status": byString(func(d *dispute) string { return d.Status }),
}

// listDisputes filters, sorts and paginates disputes, rendering each with view.
func listDisputes(w http.ResponseWriter, r *http.Request, all []*dispute, view func(*dispute) map[string]any) {
	q := r.URL.Query()
	status, e := enumParam(q, "status", "open", "closed")
	if e != nil {
		writeError(w, e)
		return
	}
	var list []*dispute
	for _, d := range all {
		if status == "" || d.Status == status {
			list = append(list, d)
		}
	}
	writePage(w, r, list, "-opened_at", disputeSortKeys, view)
}

func (s *Server) handlePaymentDisputes(w http.ResponseWriter, r *http.Request, sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle()
	p, e := s.participantPayment(r, sess)
	if e != nil {
		writeError(w, e)
		return
	}
	listDisputes(w, r, p.Disputes, disputeView)
}

func (s *Server) handleAccountDisputes(w http.ResponseWriter, r *http.Request, sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle()
	var mine []*dispute
	for _, d := range s.st.disputes {
		if isParticipant(d.Payment, sess) {
			mine = append(mine, d)
		}
	}
	listDisputes(w, r, mine, func(d *dispute) map[string]any {
		v := disputeView(d)
		v["payment"] = paymentView(d.Payment)
		return v
	})
}
