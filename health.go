package rail0

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/rail0/rail0-go/internal/ops"
)

// HealthStatus is the gateway's overall health.
type HealthStatus string

// Health statuses.
const (
	// HealthOK: database and background workers are fine.
	HealthOK HealthStatus = "ok"
	// HealthDegraded: the database is fine, background workers are not.
	HealthDegraded HealthStatus = "degraded"
	// HealthError: the database is unreachable (served with HTTP 503).
	HealthError HealthStatus = "error"
)

// Health is the gateway's health report. Anonymous callers get Status, DB
// and Timestamp; with a valid token the gateway adds the rest.
type Health struct {
	Status          HealthStatus   `json:"status"`
	DB              string         `json:"db"`
	Timestamp       time.Time      `json:"timestamp"`
	APIVersion      string         `json:"api_version,omitempty"`
	ContractVersion string         `json:"contract_version,omitempty"`
	Sidekiq         *WorkersHealth `json:"sidekiq,omitempty"`
	// ActiveChains and ActiveContracts are nil for anonymous callers.
	ActiveChains    *int64 `json:"active_chains,omitempty"`
	ActiveContracts *int64 `json:"active_contracts,omitempty"`
	// Response is the metadata of the call that returned this value. It is
	// nil on a value nested in another call's result.
	Response *Response `json:"-"`
}

// WorkersHealth reports the gateway's background workers.
type WorkersHealth struct {
	Status    string `json:"status"`
	Redis     string `json:"redis"`
	Processes int64  `json:"processes"`
	Enqueued  int64  `json:"enqueued"`
}

var getHealth = declare(ops.GetHealth)

// Get reads the gateway's health.
//
// GET /health — public; richer with a token (an invalid token counts as none).
//
// A 503 answer still carries a health report (Status "error"). Get returns
// it without an error: check Status.
func (s *HealthService) Get(ctx context.Context) (*Health, error) {
	var h Health
	resp, err := s.client.do(ctx, &request{op: getHealth}, &h)
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusServiceUnavailable && len(apiErr.Body) > 0 {
		if json.Unmarshal(apiErr.Body, &h) == nil && h.Status != "" {
			h.Response = &Response{
				StatusCode: apiErr.StatusCode, Header: apiErr.Header, RequestID: apiErr.RequestID,
				Attempts: attemptsOf(apiErr.Call), Call: apiErr.Call,
			}
			if n := h.Response.Attempts; n > 0 {
				h.Response.RateLimit = apiErr.Call.Attempts[n-1].RateLimit
			}
			return &h, nil
		}
	}
	if err != nil {
		return nil, err
	}
	h.Response = resp
	return &h, nil
}
