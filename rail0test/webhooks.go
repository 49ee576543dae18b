package rail0test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
)

var webhookTopics = []string{"payments.created", "payments.signed", "payments.authorized", "payments.charged",
	"payments.captured", "payments.voided", "payments.released", "payments.refunded", "payments.failed",
	"payments.disputed", "payments.dispute_closed"}

func webhookView(wh *webhook) map[string]any {
	circuit := "closed"
	if wh.CircuitOpen {
		circuit = "open"
	}
	return map[string]any{
		"id":                    wh.ID,
		"name":                  wh.Name,
		"callback_url":          wh.CallbackURL,
		"topic":                 wh.Topic,
		"active":                wh.Active,
		"circuit_state":         circuit,
		"circuit_failure_count": wh.Failures,
		"created_at":            ts(wh.CreatedAt),
		"updated_at":            ts(wh.UpdatedAt),
	}
}

func webhookWithSecretView(wh *webhook) map[string]any {
	v := webhookView(wh)
	v["shared_secret"] = wh.Secret
	return v
}

func callbackView(cb *eventCallback) map[string]any {
	return map[string]any{
		"id":               cb.ID,
		"webhook_id":       cb.WebhookID,
		"payment_id":       cb.PaymentID,
		"topic":            cb.Topic,
		"callback_url":     cb.CallbackURL,
		"response_code":    cb.ResponseCode,
		"response_message": cb.ResponseMessage,
		"error_reason":     cb.ErrorReason,
		"status":           cb.Status,
		"created_at":       ts(cb.CreatedAt),
		"payload":          cb.Payload,
	}
}

// validCallbackURL accepts https URLs, and http URLs on the loopback
// interface. So tests can receive deliveries. It is a deliberate relaxation
// of the contract.
func validCallbackURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		switch u.Hostname() {
		case "127.0.0.1", "::1", "localhost":
			return true
		}
	}
	return false
}

func invalidParam(param, detail string) *apiError {
	return &apiError{status: http.StatusUnprocessableEntity, code: "invalid_param", title: "Invalid parameter",
		detail: detail, extra: map[string]any{"param": param}}
}

// ownWebhook finds the path's webhook and checks the session's account
// owns it. Call with s.mu held.
func (s *Server) ownWebhook(r *http.Request, sess *session) (*webhook, *apiError) {
	id := r.PathValue("id")
	for _, wh := range s.st.webhooks {
		if wh.ID == id {
			if wh.AccountID != sess.accountID {
				return nil, errForbidden("forbidden", "This webhook belongs to another account.")
			}
			return wh, nil
		}
	}
	return nil, errNotFound("webhook")
}

type webhookBody struct {
	Name        *string `json:"name"`
	CallbackURL *string `json:"callback_url"`
	Topic       *string `json:"topic"`
}

func (b *webhookBody) validate(create bool) *apiError {
	if create {
		switch {
		case b.Name == nil || *b.Name == "":
			return errMissing("name", http.StatusUnprocessableEntity)
		case b.CallbackURL == nil:
			return errMissing("callback_url", http.StatusUnprocessableEntity)
		case b.Topic == nil:
			return errMissing("topic", http.StatusUnprocessableEntity)
		}
	}
	if b.CallbackURL != nil && !validCallbackURL(*b.CallbackURL) {
		return invalidParam("callback_url", "callback_url must be an https URL.")
	}
	if b.Topic != nil && !slices.Contains(webhookTopics, *b.Topic) {
		return invalidParam("topic", "topic is not a known webhook topic.")
	}
	if b.Name != nil && *b.Name == "" {
		return invalidParam("name", "name must not be empty.")
	}
	return nil
}

func (s *Server) handleCreateWebhook(w http.ResponseWriter, r *http.Request, sess *session) {
	var body webhookBody
	if e := decodeBody(r, &body); e != nil {
		writeError(w, e)
		return
	}
	if e := body.validate(true); e != nil {
		writeError(w, e)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	wh := &webhook{ID: s.ent.uuid(), AccountID: sess.accountID, Name: *body.Name, CallbackURL: *body.CallbackURL,
		Topic: *body.Topic, Active: true, Secret: s.ent.hex(32), CreatedAt: now, UpdatedAt: now, seq: s.st.next()}
	s.st.webhooks = append(s.st.webhooks, wh)
	writeJSON(w, http.StatusCreated, webhookWithSecretView(wh))
}

func (s *Server) handleListWebhooks(w http.ResponseWriter, r *http.Request, sess *session) {
	q := r.URL.Query()
	topic, e := enumParam(q, "topic", webhookTopics...)
	if e != nil {
		writeError(w, e)
		return
	}
	circuit, e := enumParam(q, "circuit_state", "closed", "open")
	if e != nil {
		writeError(w, e)
		return
	}
	active, e := boolParam(q, "active")
	if e != nil {
		writeError(w, e)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var list []*webhook
	for _, wh := range s.st.webhooks {
		if wh.AccountID != sess.accountID || topic != "" && wh.Topic != topic ||
			active != nil && wh.Active != *active || circuit != "" && (circuit == "open") != wh.CircuitOpen {
			continue
		}
		list = append(list, wh)
	}
	writePage(w, r, list, "created_at", sortKeys[*webhook]{
		"created_at": func(a, b *webhook) int { return int(a.seq - b.seq) },
		"updated_at": byTime(func(w *webhook) time.Time { return w.UpdatedAt }),
		"name":       byString(func(w *webhook) string { return w.Name }),
		"topic":      byString(func(w *webhook) string { return w.Topic }),
	}, webhookView)
}

func (s *Server) handleGetWebhook(w http.ResponseWriter, r *http.Request, sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	wh, e := s.ownWebhook(r, sess)
	if e != nil {
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, webhookView(wh))
}

func (s *Server) handleUpdateWebhook(w http.ResponseWriter, r *http.Request, sess *session) {
	var body webhookBody
	if e := decodeBody(r, &body); e != nil {
		writeError(w, e)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	wh, e := s.ownWebhook(r, sess)
	if e != nil {
		writeError(w, e)
		return
	}
	if e := body.validate(false); e != nil {
		writeError(w, e)
		return
	}
	if body.Name != nil {
		wh.Name = *body.Name
	}
	if body.CallbackURL != nil {
		wh.CallbackURL = *body.CallbackURL
	}
	if body.Topic != nil {
		wh.Topic = *body.Topic
	}
	wh.UpdatedAt = s.now()
	writeJSON(w, http.StatusOK, webhookView(wh))
}

func (s *Server) handleDeleteWebhook(w http.ResponseWriter, r *http.Request, sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	wh, e := s.ownWebhook(r, sess)
	if e != nil {
		writeError(w, e)
		return
	}
	s.st.webhooks = slices.DeleteFunc(s.st.webhooks, func(x *webhook) bool { return x == wh })
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleWebhookSwitch(action string) func(http.ResponseWriter, *http.Request, *session) {
	return func(w http.ResponseWriter, r *http.Request, sess *session) {
		s.mu.Lock()
		defer s.mu.Unlock()
		wh, e := s.ownWebhook(r, sess)
		if e != nil {
			writeError(w, e)
			return
		}
		wh.UpdatedAt = s.now()
		switch action {
		case "enable":
			wh.Active = true
		case "disable":
			wh.Active = false
		case "reset_circuit":
			wh.CircuitOpen, wh.Failures, wh.Active = false, 0, true
		case "rotate_secret":
			wh.Secret = s.ent.hex(32)
			writeJSON(w, http.StatusOK, webhookWithSecretView(wh))
			return
		}
		writeJSON(w, http.StatusOK, webhookView(wh))
	}
}

func (s *Server) handleEventCallbacks(w http.ResponseWriter, r *http.Request, sess *session) {
	q := r.URL.Query()
	status, e := enumParam(q, "status", "delivered", "failed")
	if e != nil {
		writeError(w, e)
		return
	}
	topic, e := enumParam(q, "topic", webhookTopics...)
	if e != nil {
		writeError(w, e)
		return
	}
	since, e := timeParam(q, "since")
	if e != nil {
		writeError(w, e)
		return
	}
	until, e := timeParam(q, "until")
	if e != nil {
		writeError(w, e)
		return
	}
	paymentID := q.Get("payment_id")
	s.mu.Lock()
	defer s.mu.Unlock()
	wh, e := s.ownWebhook(r, sess)
	if e != nil {
		writeError(w, e)
		return
	}
	var list []*eventCallback
	for _, cb := range s.st.callbacks {
		if cb.WebhookID != wh.ID || status != "" && cb.Status != status || topic != "" && cb.Topic != topic ||
			paymentID != "" && cb.PaymentID != paymentID ||
			since != nil && cb.CreatedAt.Before(*since) || until != nil && cb.CreatedAt.After(*until) {
			continue
		}
		list = append(list, cb)
	}
	writePage(w, r, list, "-created_at", sortKeys[*eventCallback]{
		"created_at": func(a, b *eventCallback) int { return int(a.seq - b.seq) },
		"status":     byString(func(c *eventCallback) string { return c.Status }),
		"topic":      byString(func(c *eventCallback) string { return c.Topic }),
	}, callbackView)
}

func (s *Server) handleRedeliver(w http.ResponseWriter, r *http.Request, sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	wh, e := s.ownWebhook(r, sess)
	if e != nil {
		writeError(w, e)
		return
	}
	id := r.PathValue("callback_id")
	i := slices.IndexFunc(s.st.callbacks, func(cb *eventCallback) bool { return cb.ID == id && cb.WebhookID == wh.ID })
	if i < 0 {
		writeError(w, errNotFound("event callback"))
		return
	}
	cb := s.st.callbacks[i]
	s.startDelivery(delivery{webhookID: wh.ID, paymentID: cb.PaymentID, topic: cb.Topic, body: []byte(cb.Payload)})
	writeJSON(w, http.StatusAccepted, map[string]any{"status": "queued"})
}

// delivery is one event to POST to one webhook.
type delivery struct {
	webhookID string
	paymentID string
	topic     string
	body      []byte
	st        *state // the state it belongs to; a Reset orphans it
}

// emit builds the event for topic. It queues a delivery to every active
// webhook subscribed to topic. The webhooks are the payment's merchant's,
// and the payer's when it has an account. Call with s.mu held.
func (s *Server) emit(topic string, p *payment, tx *transaction) {
	accounts := map[string]bool{}
	for _, a := range []*account{s.st.accountOf(p.Payee), s.st.accountOf(p.Payer)} {
		if a != nil {
			accounts[a.ID] = true
		}
	}
	if w := s.st.walletByAddress(p.Payee); w != nil {
		accounts[w.AccountID] = true
	}
	var targets []*webhook
	for _, wh := range s.st.webhooks {
		if accounts[wh.AccountID] && wh.Topic == topic && wh.Active && !wh.CircuitOpen {
			targets = append(targets, wh)
		}
	}
	if len(targets) == 0 {
		return
	}
	var txv any
	if tx != nil {
		v := transactionView(tx)
		txv = map[string]any{"id": v["id"], "operation": v["operation"], "status": v["status"],
			"transaction_hash": v["transaction_hash"], "amount": v["amount"], "block_number": v["block_number"]}
	}
	event := map[string]any{
		"id":         s.ent.uuid(),
		"emitted_at": ts(s.now()),
		"topic":      topic,
		"payment": map[string]any{
			"id": p.ID, "rail0_id": p.Rail0ID.Hex(), "status": p.Status, "mode": p.Mode, "amount": p.Amount.String(),
			"payer": p.Payer.Hex(), "payee": p.Payee.Hex(), "token": p.Token.Address.Hex(), "chain_id": p.Chain.ChainID,
			"capturable_amount": p.Capturable.String(), "refundable_amount": p.Refundable.String(),
			"authorization_expiry": p.AuthExpiry, "disputed": p.Disputed,
			"last_error_code": p.LastErrCode, "last_error_message": p.LastErrMsg, "metadata": p.Metadata,
		},
		"transaction": txv,
	}
	body, _ := json.Marshal(event)
	for _, wh := range targets {
		s.startDelivery(delivery{webhookID: wh.ID, paymentID: p.ID, topic: topic, body: body})
	}
}

// startDelivery runs a delivery in a goroutine that Close waits for.
// Call with s.mu held.
func (s *Server) startDelivery(d delivery) {
	if s.ctx.Err() != nil {
		return
	}
	d.st = s.st
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.deliver(d)
	}()
}

// sign returns the X-Rail0-Signature of body at timestamp.
func sign(secret string, timestamp int64, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strconv.FormatInt(timestamp, 10)))
	m.Write([]byte("."))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// deliver POSTs d, retrying with a doubling real-time backoff.
// It logs every attempt as an event callback. It trips the circuit after
// repeated failures.
func (s *Server) deliver(d delivery) {
	backoff := s.cfg.webhookBackoff
	for attempt := 1; attempt <= s.cfg.webhookAttempts; attempt++ {
		s.mu.Lock()
		i := slices.IndexFunc(s.st.webhooks, func(w *webhook) bool { return w.ID == d.webhookID })
		if s.st != d.st || i < 0 || !s.st.webhooks[i].Active || s.st.webhooks[i].CircuitOpen {
			s.mu.Unlock()
			return // a disabled or open-circuit webhook drops deliveries silently
		}
		wh := s.st.webhooks[i]
		secret, target := wh.Secret, wh.CallbackURL
		stamp := s.Clock.Now().Unix()
		s.mu.Unlock()

		code, message, reason := s.post(target, d, stamp, sign(secret, stamp, d.body))
		ok := code >= 200 && code < 300

		s.mu.Lock()
		if s.st != d.st { // reset while the request was out
			s.mu.Unlock()
			return
		}
		cb := &eventCallback{ID: s.ent.uuid(), WebhookID: d.webhookID, PaymentID: d.paymentID, Topic: d.topic,
			CallbackURL: target, Status: "failed", CreatedAt: s.now(), Payload: string(d.body), seq: s.st.next()}
		if code != 0 {
			c := strconv.Itoa(code)
			cb.ResponseCode, cb.ResponseMessage = &c, &message
		}
		if reason != "" {
			cb.ErrorReason = &reason
		}
		if ok {
			cb.Status = "delivered"
			wh.Failures = 0
		} else {
			wh.Failures++
			if wh.Failures >= s.cfg.circuitThreshold {
				wh.CircuitOpen = true
			}
		}
		s.st.callbacks = append(s.st.callbacks, cb)
		s.mu.Unlock()
		s.log.Debug("rail0test: webhook delivery", "topic", d.topic, "attempt", attempt, "status", code, "delivered", ok)
		if ok || attempt == s.cfg.webhookAttempts {
			return
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-s.ctx.Done():
			t.Stop()
			return
		}
		backoff *= 2
	}
}

// post sends one delivery attempt and describes its outcome.
func (s *Server) post(target string, d delivery, stamp int64, signature string) (code int, message, reason string) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.webhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(d.body))
	if err != nil {
		return 0, "", err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "rail0test-webhooks")
	req.Header.Set("X-Rail0-Topic", d.topic)
	req.Header.Set("X-Rail0-Timestamp", strconv.FormatInt(stamp, 10))
	req.Header.Set("X-Rail0-Signature", signature)
	resp, err := s.hookClient.Do(req)
	if err != nil {
		return 0, "", "connection failed: " + err.Error()
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	message = http.StatusText(resp.StatusCode)
	if len(snippet) > 0 {
		message = string(snippet)
	}
	return resp.StatusCode, message, ""
}
