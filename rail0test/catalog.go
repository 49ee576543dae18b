package rail0test

import (
	"net/http"
	"strings"

	"github.com/ethereum/go-ethereum/common"
)

func blockchainView(c *chain) map[string]any {
	return map[string]any{
		"chain_id":      c.ChainID,
		"name":          c.Name,
		"native_symbol": c.NativeSymbol,
		"network_type":  c.NetworkType,
		"explorer_url":  c.ExplorerURL,
	}
}

func tokenView(t *token) map[string]any {
	return map[string]any{
		"chain_id": t.ChainID,
		"symbol":   t.Symbol,
		"address":  t.Address.Hex(),
		"decimals": t.Decimals,
		"active":   t.Active,
	}
}

func (s *Server) handleRoot(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"name":        "RAIL0 gateway (rail0test)",
		"api_version": apiVersion,
		"openapi":     "/openapi.json",
		"health":      "/health",
	})
}

func (s *Server) handleOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(contractDocument)
}

const (
	apiVersion      = "1.0.0"
	contractVersion = "1"
)

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	status := s.health
	s.mu.Unlock()
	if status == "" {
		status = "ok"
	}
	db, workers, code := "ok", "ok", http.StatusOK
	switch status {
	case "degraded":
		workers = "down"
	case "error":
		db, workers, code = "error", "down", http.StatusServiceUnavailable
	}
	body := map[string]any{"status": status, "db": db, "timestamp": ts(s.now())}
	if _, ok := bearer(r); ok {
		// An invalid token is treated as no token, never a 401.
		if _, e := s.authenticate(r); e == nil {
			s.mu.Lock()
			chains, contracts := 0, 0
			for _, c := range s.st.chains {
				if c.Active {
					chains++
				}
				if c.Contract != nil && c.Contract.Active {
					contracts++
				}
			}
			s.mu.Unlock()
			body["api_version"] = apiVersion
			body["contract_version"] = contractVersion
			body["sidekiq"] = map[string]any{"status": workers, "redis": "ok", "processes": 1, "enqueued": 0}
			body["active_chains"] = chains
			body["active_contracts"] = contracts
		}
	}
	writeJSON(w, code, body)
}

func (s *Server) handleBlockchains(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	network, e := enumParam(q, "network_type", "testnet", "mainnet")
	if e != nil {
		writeError(w, e)
		return
	}
	symbol := q.Get("symbol")
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, c := range s.st.chains {
		if !c.Active || network != "" && c.NetworkType != network {
			continue
		}
		// symbol matches the native coin or an active token of the chain.
		hasToken, hasSymbol := false, symbol == "" || strings.EqualFold(symbol, c.NativeSymbol)
		for _, t := range s.st.tokens {
			if t.ChainID == c.ChainID && t.Active {
				hasToken = true
				hasSymbol = hasSymbol || strings.EqualFold(symbol, t.Symbol)
			}
		}
		if hasToken && hasSymbol {
			out = append(out, blockchainView(c))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handleTokens(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	chainID, e := intParam(q, "chain_id")
	if e != nil {
		writeError(w, e)
		return
	}
	active, e := boolParam(q, "active")
	if e != nil {
		writeError(w, e)
		return
	}
	symbol := q.Get("symbol")
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, t := range s.st.tokens {
		if chainID != nil && t.ChainID != *chainID || symbol != "" && !strings.EqualFold(symbol, t.Symbol) {
			continue
		}
		if active != nil && t.Active != *active {
			continue
		}
		out = append(out, tokenView(t))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) handlePaymentMethods(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	accountID, address := q.Get("account_id"), q.Get("address")
	if (accountID == "") == (address == "") {
		writeError(w, errBadRequest("invalid_param", "account_id", "Pass exactly one of account_id and address."))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, wl := range s.st.wallets {
		if !wl.Active {
			continue
		}
		if accountID != "" && wl.AccountID != accountID {
			continue
		}
		if address != "" && (!common.IsHexAddress(address) || common.HexToAddress(address) != wl.Address) {
			continue
		}
		v := s.walletWithTokensView(wl, func(h *holding, t *token) bool { return h.Active && t.Active })
		if len(v["tokens"].([]map[string]any)) > 0 {
			out = append(out, v)
		}
	}
	writeJSON(w, http.StatusOK, out)
}
