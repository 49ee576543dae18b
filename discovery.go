package rail0

import (
	"context"
	"encoding/json"
	"net/http"
)

// Describe returns the gateway's service descriptor: a small document whose
// fields the contract leaves open, hence a map.
//
// GET / — public.
func (s *DiscoveryService) Describe(ctx context.Context) (map[string]any, error) {
	var out map[string]any
	if _, err := s.client.do(ctx, &request{method: http.MethodGet, path: "", anonymous: true}, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// OpenAPI returns the gateway's own contract (OpenAPI 3.1 JSON), exactly as
// served: a deployment can check which version of the contract it speaks,
// or load it with an OpenAPI library.
//
// GET /openapi.json — public.
func (s *DiscoveryService) OpenAPI(ctx context.Context) (json.RawMessage, error) {
	var out json.RawMessage
	if _, err := s.client.do(ctx, &request{method: http.MethodGet, path: "openapi.json", anonymous: true}, &out); err != nil {
		return nil, err
	}
	return out, nil
}
