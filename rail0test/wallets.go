package rail0test

import (
	"math/big"
	"net/http"
	"strings"

	"github.com/ethereum/go-ethereum/common"
)

func walletView(wl *wallet) map[string]any {
	return map[string]any{"id": wl.ID, "address": wl.Address.Hex(), "label": wl.Label, "active": wl.Active}
}

// walletWithTokensView renders a wallet with the holdings keep accepts.
func (s *Server) walletWithTokensView(wl *wallet, keep func(*holding, *token) bool) map[string]any {
	v := walletView(wl)
	toks := []map[string]any{}
	for _, h := range wl.Holdings {
		t := s.st.tokenByID(h.TokenID)
		if t == nil || !keep(h, t) {
			continue
		}
		toks = append(toks, map[string]any{"token_id": t.ID, "token": tokenView(t), "active": h.Active, "default": h.Default})
	}
	v["tokens"] = toks
	return v
}

func (s *Server) walletTokenView(wl *wallet, h *holding) map[string]any {
	t := s.st.tokenByID(h.TokenID)
	return map[string]any{
		"default":    h.Default,
		"active":     h.Active,
		"wallet":     walletView(wl),
		"token":      tokenView(t),
		"blockchain": blockchainView(s.st.chainByID(t.ChainID)),
	}
}

// accountWallet checks that the session belongs to the path's account.
// When the route has a wallet id, it finds that wallet by UUID or address.
// Call with s.mu held.
func (s *Server) accountWallet(r *http.Request, sess *session, needWallet bool) (*wallet, *apiError) {
	accountID := r.PathValue("account_id")
	if sess.accountID == "" {
		return nil, errForbidden("account_required", "This endpoint needs a session of a merchant account.")
	}
	if sess.accountID != accountID {
		return nil, errForbidden("forbidden", "This session does not belong to that account.")
	}
	if !needWallet {
		return nil, nil
	}
	id := r.PathValue("id")
	for _, wl := range s.st.wallets {
		if wl.AccountID != accountID {
			continue
		}
		if wl.ID == id || common.IsHexAddress(id) && common.HexToAddress(id) == wl.Address {
			return wl, nil
		}
	}
	return nil, errNotFound("wallet")
}

func (s *Server) handleListWallets(w http.ResponseWriter, r *http.Request, sess *session) {
	q := r.URL.Query()
	active, e1 := boolParam(q, "active")
	def, e2 := boolParam(q, "default")
	tokActive, e3 := boolParam(q, "token_active")
	chainID, e4 := intParam(q, "chain_id")
	for _, e := range []*apiError{e1, e2, e3, e4} {
		if e != nil {
			writeError(w, e)
			return
		}
	}
	symbol := q.Get("token_symbol")
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, e := s.accountWallet(r, sess, false); e != nil {
		writeError(w, e)
		return
	}
	var list []*wallet
	for _, wl := range s.st.wallets {
		if wl.AccountID == sess.accountID && (active == nil || wl.Active == *active) {
			list = append(list, wl)
		}
	}
	// Holding filters narrow each wallet's tokens; they never hide a wallet.
	keep := func(h *holding, t *token) bool {
		return (chainID == nil || t.ChainID == *chainID) &&
			(symbol == "" || strings.EqualFold(symbol, t.Symbol)) &&
			(def == nil || h.Default == *def) &&
			(tokActive == nil || h.Active == *tokActive)
	}
	writePage(w, r, list, "", sortKeys[*wallet]{
		"address": byString(func(w *wallet) string { return strings.ToLower(w.Address.Hex()) }),
		"label": byString(func(w *wallet) string {
			if w.Label == nil {
				return ""
			}
			return *w.Label
		}),
	}, func(wl *wallet) map[string]any { return s.walletWithTokensView(wl, keep) })
}

func (s *Server) handleCreateWallet(w http.ResponseWriter, r *http.Request, sess *session) {
	var body struct {
		Address   string  `json:"address"`
		Message   string  `json:"message"`
		Signature string  `json:"signature"`
		Label     *string `json:"label"`
	}
	if e := decodeBody(r, &body); e != nil {
		writeError(w, e)
		return
	}
	s.mu.Lock()
	_, e := s.accountWallet(r, sess, false)
	s.mu.Unlock()
	if e != nil {
		writeError(w, e)
		return
	}
	// The gateway answers wallet-registration refusals without a body.
	if !common.IsHexAddress(body.Address) || body.Message == "" || body.Signature == "" {
		writeError(w, &apiError{status: http.StatusUnprocessableEntity, empty: true})
		return
	}
	proven, e := s.verifySIWE(body.Message, body.Signature, walletStatement)
	if e != nil || proven != common.HexToAddress(body.Address) {
		writeError(w, &apiError{status: http.StatusUnprocessableEntity, empty: true})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.walletByAddress(proven) != nil {
		writeError(w, &apiError{status: http.StatusConflict, empty: true})
		return
	}
	wl := &wallet{ID: s.ent.uuid(), AccountID: sess.accountID, Address: proven, Label: body.Label, Active: true}
	s.st.wallets = append(s.st.wallets, wl)
	writeJSON(w, http.StatusCreated, walletView(wl))
}

func (s *Server) handleGetWallet(w http.ResponseWriter, r *http.Request, sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	wl, e := s.accountWallet(r, sess, true)
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, walletView(wl))
}

func (s *Server) handleUpdateWallet(w http.ResponseWriter, r *http.Request, sess *session) {
	var body struct {
		Label  *string `json:"label"`
		Active *bool   `json:"active"`
	}
	if e := decodeBody(r, &body); e != nil {
		writeError(w, e)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	wl, e := s.accountWallet(r, sess, true)
	if e != nil {
		writeError(w, e)
		return
	}
	if body.Label == nil && body.Active == nil {
		writeError(w, errMissing("label", http.StatusUnprocessableEntity))
		return
	}
	if body.Label != nil {
		wl.Label = body.Label
	}
	if body.Active != nil {
		wl.Active = *body.Active
	}
	writeJSON(w, http.StatusOK, walletView(wl))
}

func (s *Server) handleDeactivateWallet(w http.ResponseWriter, r *http.Request, sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	wl, e := s.accountWallet(r, sess, true)
	if e != nil {
		writeError(w, e)
		return
	}
	wl.Active = false
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleBalances(w http.ResponseWriter, r *http.Request, sess *session) {
	q := r.URL.Query()
	chainID, e := intParam(q, "chain_id")
	if e != nil {
		writeError(w, e)
		return
	}
	symbol := q.Get("token_symbol")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle()
	wl, e := s.accountWallet(r, sess, true)
	if e != nil {
		writeError(w, e)
		return
	}
	balances := []map[string]any{}
	for _, c := range s.st.chains {
		if !c.Active || chainID != nil && c.ChainID != *chainID {
			continue
		}
		native := big.NewInt(50_000_000_000_000_000) // 0.05 of the native coin, for gas
		toks := []map[string]any{}
		for _, t := range s.st.tokens {
			if t.ChainID != c.ChainID || !t.Active || symbol != "" && !strings.EqualFold(symbol, t.Symbol) {
				continue
			}
			bal := s.balance(wl.Address, t)
			toks = append(toks, map[string]any{"symbol": t.Symbol, "address": t.Address.Hex(), "decimals": t.Decimals,
				"raw": bal.String(), "amount": formatUnits(bal, t.Decimals)})
		}
		balances = append(balances, map[string]any{
			"chain_id":     c.ChainID,
			"network_type": c.NetworkType,
			"native": map[string]any{"symbol": c.NativeSymbol, "address": nil, "decimals": 18,
				"raw": native.String(), "amount": formatUnits(native, 18)},
			"tokens": toks,
			"error":  nil,
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"wallet_id": wl.ID, "address": wl.Address.Hex(), "balances": balances})
}

func (s *Server) handleAddWalletToken(w http.ResponseWriter, r *http.Request, sess *session) {
	var body struct {
		ChainID *int64 `json:"chain_id"`
		Token   string `json:"token"`
		Default *bool  `json:"default"`
	}
	if e := decodeBody(r, &body); e != nil {
		writeError(w, e)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	wl, e := s.accountWallet(r, sess, true)
	if e != nil {
		writeError(w, e)
		return
	}
	if body.ChainID == nil {
		writeError(w, errMissing("chain_id", http.StatusUnprocessableEntity))
		return
	}
	if body.Token == "" {
		writeError(w, errMissing("token", http.StatusUnprocessableEntity))
		return
	}
	if c := s.st.chainByID(*body.ChainID); c == nil || !c.Active {
		writeError(w, errUnprocessable("unknown_chain", "Unknown chain", "This gateway does not serve that chain."))
		return
	}
	t := s.st.tokenOn(*body.ChainID, body.Token)
	if t == nil {
		writeError(w, errUnprocessable("unknown_token", "Unknown token", "That token is not configured on this chain."))
		return
	}
	status := http.StatusOK
	var h *holding
	for _, x := range wl.Holdings {
		if x.TokenID == t.ID {
			h = x
		}
	}
	if h == nil {
		h = &holding{TokenID: t.ID}
		wl.Holdings = append(wl.Holdings, h)
		status = http.StatusCreated
	}
	h.Active = true
	if body.Default != nil && *body.Default {
		for _, x := range wl.Holdings {
			x.Default = false
		}
		h.Default = true
	} else if body.Default != nil {
		h.Default = false
	}
	writeJSON(w, status, s.walletTokenView(wl, h))
}

func (s *Server) holdingFor(wl *wallet, tokenID string) *holding {
	for _, h := range wl.Holdings {
		if h.TokenID == tokenID {
			return h
		}
	}
	return nil
}

func (s *Server) handleDeleteWalletToken(w http.ResponseWriter, r *http.Request, sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	wl, e := s.accountWallet(r, sess, true)
	if e != nil {
		writeError(w, e)
		return
	}
	h := s.holdingFor(wl, r.PathValue("token_id"))
	if h == nil {
		writeError(w, errNotFound("wallet token"))
		return
	}
	h.Active, h.Default = false, false
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleToggleWalletToken(enable bool) func(http.ResponseWriter, *http.Request, *session) {
	return func(w http.ResponseWriter, r *http.Request, sess *session) {
		s.mu.Lock()
		defer s.mu.Unlock()
		wl, e := s.accountWallet(r, sess, true)
		if e != nil {
			writeError(w, e)
			return
		}
		h := s.holdingFor(wl, r.PathValue("token_id"))
		if h == nil {
			writeError(w, errNotFound("wallet token"))
			return
		}
		h.Active = enable
		if !enable {
			h.Default = false
		}
		writeJSON(w, http.StatusOK, s.walletTokenView(wl, h))
	}
}
