package rail0test

import (
	"math/big"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// analyticsPayments returns the payments whose payee is a wallet of the
// session's account. They are filtered by the common analytics parameters.
// Call with s.mu held.
func (s *Server) analyticsPayments(r *http.Request, sess *session) ([]*payment, *apiError) {
	q := r.URL.Query()
	mode, e := enumParam(q, "mode", modeAuthorize, modeCharge)
	if e != nil {
		return nil, e
	}
	status, e := enumParam(q, "status", paymentStatuses...)
	if e != nil {
		return nil, e
	}
	chainID, e := intParam(q, "chain_id")
	if e != nil {
		return nil, e
	}
	from, e := timeParam(q, "from")
	if e != nil {
		return nil, e
	}
	to, e := timeParam(q, "to")
	if e != nil {
		return nil, e
	}
	tok := q.Get("token") // an address or a symbol
	var out []*payment
	for _, p := range s.st.payments {
		wl := s.st.walletByAddress(p.Payee)
		switch {
		case wl == nil || wl.AccountID != sess.accountID,
			mode != "" && p.Mode != mode,
			status != "" && p.Status != status,
			chainID != nil && p.Chain.ChainID != *chainID,
			tok != "" && !tokenMatches(p.Token, tok),
			from != nil && p.CreatedAt.Before(*from),
			to != nil && p.CreatedAt.After(*to):
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

func everDisputed(p *payment) bool { return len(p.Disputes) > 0 }

func (s *Server) handleSummary(w http.ResponseWriter, r *http.Request, sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle()
	list, e := s.analyticsPayments(r, sess)
	if e != nil {
		writeError(w, e)
		return
	}
	type vol struct {
		p                                   *payment
		orders                              int
		gross, escrowed, captured, refunded *big.Int
	}
	byStatus := map[string]int{}
	var vols []*vol
	disputed, refundedOrders := 0, 0
	for _, p := range list {
		byStatus[p.Status]++
		if everDisputed(p) {
			disputed++
		}
		if p.Refunded.Sign() > 0 {
			refundedOrders++
		}
		i := slices.IndexFunc(vols, func(v *vol) bool { return v.p.Token == p.Token })
		if i < 0 {
			vols = append(vols, &vol{p: p, gross: new(big.Int), escrowed: new(big.Int), captured: new(big.Int), refunded: new(big.Int)})
			i = len(vols) - 1
		}
		v := vols[i]
		v.orders++
		v.gross.Add(v.gross, p.Amount)
		v.escrowed.Add(v.escrowed, p.Capturable)
		v.captured.Add(v.captured, p.Captured)
		v.refunded.Add(v.refunded, p.Refunded)
	}
	volume := []map[string]any{}
	for _, v := range vols {
		volume = append(volume, map[string]any{
			"chain_id":   v.p.Chain.ChainID,
			"chain_name": v.p.Chain.Name,
			"token":      v.p.Token.Address.Hex(),
			"symbol":     v.p.Token.Symbol,
			"decimals":   v.p.Token.Decimals,
			"orders":     v.orders,
			"gross":      v.gross.String(),
			"settled":    new(big.Int).Sub(v.captured, v.refunded).String(),
			"escrowed":   v.escrowed.String(),
			"captured":   v.captured.String(),
			"refunded":   v.refunded.String(),
		})
	}
	rate := func(n int) float64 {
		if len(list) == 0 {
			return 0
		}
		return float64(n) / float64(len(list))
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"orders":       len(list),
		"disputed":     disputed,
		"refund_rate":  rate(refundedOrders),
		"dispute_rate": rate(disputed),
		"by_status":    byStatus,
		"volume":       volume,
	})
}

// bucketStart truncates t to the start of its day, ISO week (Monday) or
// month, in UTC.
func bucketStart(t time.Time, interval string) time.Time {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	switch interval {
	case "week":
		return day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7))
	case "month":
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return day
}

func nextBucket(t time.Time, interval string) time.Time {
	switch interval {
	case "week":
		return t.AddDate(0, 0, 7)
	case "month":
		return t.AddDate(0, 1, 0)
	}
	return t.AddDate(0, 0, 1)
}

func (s *Server) handleTimeseries(w http.ResponseWriter, r *http.Request, sess *session) {
	q := r.URL.Query()
	interval, e := enumParam(q, "interval", "day", "week", "month")
	if e != nil {
		writeError(w, e)
		return
	}
	if interval == "" {
		interval = "day"
	}
	withVolume := q.Get("token") != "" && q.Get("chain_id") != ""
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle()
	list, e := s.analyticsPayments(r, sess)
	if e != nil {
		writeError(w, e)
		return
	}
	out := []map[string]any{}
	if len(list) == 0 {
		writeJSON(w, http.StatusOK, out)
		return
	}
	first, last := list[0].CreatedAt, list[0].CreatedAt
	for _, p := range list {
		if p.CreatedAt.Before(first) {
			first = p.CreatedAt
		}
		if p.CreatedAt.After(last) {
			last = p.CreatedAt
		}
	}
	// Buckets run from the oldest to the newest payment, empty ones
	// included. They are capped, so a sparse range cannot produce an
	// unbounded answer.
	for b, n := bucketStart(first, interval), 0; !b.After(last) && n < 1000; b, n = nextBucket(b, interval), n+1 {
		end := nextBucket(b, interval)
		orders, sum := 0, new(big.Int)
		for _, p := range list {
			if !p.CreatedAt.Before(b) && p.CreatedAt.Before(end) {
				orders++
				sum.Add(sum, p.Amount)
			}
		}
		var volume *string
		if withVolume {
			v := sum.String()
			volume = &v
		}
		out = append(out, map[string]any{"bucket": ts(b), "orders": orders, "volume": volume})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleBreakdown(w http.ResponseWriter, r *http.Request, sess *session) {
	q := r.URL.Query()
	if q.Get("by") == "" {
		writeError(w, errMissing("by", http.StatusBadRequest))
		return
	}
	by, e := enumParam(q, "by", "token", "chain", "mode", "status")
	if e != nil {
		writeError(w, e)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle()
	list, e := s.analyticsPayments(r, sess)
	if e != nil {
		writeError(w, e)
		return
	}
	type row struct {
		key    string
		orders int
		tokens map[*token]bool
		chain  *chain
		volume *big.Int
	}
	var rows []*row
	for _, p := range list {
		var key string
		switch by {
		case "token":
			key = strconv.FormatInt(p.Chain.ChainID, 10) + ":" + p.Token.Address.Hex()
		case "chain":
			key = strconv.FormatInt(p.Chain.ChainID, 10)
		case "mode":
			key = p.Mode
		case "status":
			key = p.Status
		}
		i := slices.IndexFunc(rows, func(x *row) bool { return x.key == key })
		if i < 0 {
			rows = append(rows, &row{key: key, tokens: map[*token]bool{}, chain: p.Chain, volume: new(big.Int)})
			i = len(rows) - 1
		}
		rows[i].orders++
		rows[i].tokens[p.Token] = true
		rows[i].volume.Add(rows[i].volume, p.Amount)
	}
	out := []map[string]any{}
	for _, x := range rows {
		m := map[string]any{"key": x.key, "orders": x.orders, "token": nil, "chain_id": nil, "decimals": nil, "volume": nil}
		switch by {
		case "token":
			for t := range x.tokens {
				m["key"] = t.Address.Hex()
				m["token"] = t.Address.Hex()
				m["chain_id"] = t.ChainID
				m["decimals"] = t.Decimals
			}
			m["volume"] = x.volume.String()
		case "chain":
			m["key"] = x.chain.ChainID
			m["chain_id"] = x.chain.ChainID
			if len(x.tokens) == 1 { // money is only summed within one token
				for t := range x.tokens {
					m["token"] = t.Address.Hex()
					m["decimals"] = t.Decimals
				}
				m["volume"] = x.volume.String()
			}
		}
		out = append(out, m)
	}
	writeJSON(w, http.StatusOK, out)
}
