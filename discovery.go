package rail0

import (
	"context"
	"encoding/json"

	"github.com/rail0/rail0-go/internal/ops"
)

// ServiceDescriptor is the gateway's service descriptor (GET /). The
// contract leaves its fields open. The known ones are decoded. Every other
// field is kept in Extra as it was sent.
type ServiceDescriptor struct {
	// Name names the deployment.
	Name string `json:"name"`
	// APIVersion is the version of the API the gateway serves.
	APIVersion string `json:"api_version"`
	// OpenAPI and Health are the paths of the contract and health routes.
	OpenAPI string `json:"openapi"`
	Health  string `json:"health"`
	// Extra holds the fields not named above, undecoded.
	Extra map[string]json.RawMessage `json:"-"`
	// Response is the metadata of the call.
	Response *Response `json:"-"`
}

// UnmarshalJSON decodes the known fields and keeps the others in Extra.
func (d *ServiceDescriptor) UnmarshalJSON(data []byte) error {
	type known ServiceDescriptor
	var k known
	if err := json.Unmarshal(data, &k); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return err
	}
	for _, name := range []string{"name", "api_version", "openapi", "health"} {
		delete(all, name)
	}
	if len(all) > 0 {
		k.Extra = all
	}
	*d = ServiceDescriptor(k)
	return nil
}

var getRoot = declare(ops.GetRoot)

// Describe returns the gateway's service descriptor.
//
// GET / — public.
func (s *DiscoveryService) Describe(ctx context.Context) (*ServiceDescriptor, error) {
	var out ServiceDescriptor
	resp, err := s.client.do(ctx, &request{op: getRoot, anonymous: true}, &out)
	if err != nil {
		return nil, err
	}
	out.Response = resp
	return &out, nil
}

// OpenAPIDocument is the gateway's own contract, exactly as served.
type OpenAPIDocument struct {
	// JSON is the OpenAPI 3.1 document.
	JSON json.RawMessage
	// Response is the metadata of the call.
	Response *Response `json:"-"`
}

var getOpenapiSpec = declare(ops.GetOpenapiSpec)

// OpenAPI returns the gateway's own contract (OpenAPI 3.1 JSON), exactly
// as served. A deployment can check which version of the contract it
// speaks, or load it with an OpenAPI library.
//
// GET /openapi.json — public.
func (s *DiscoveryService) OpenAPI(ctx context.Context) (*OpenAPIDocument, error) {
	var out OpenAPIDocument
	resp, err := s.client.do(ctx, &request{op: getOpenapiSpec, anonymous: true}, &out.JSON)
	if err != nil {
		return nil, err
	}
	out.Response = resp
	return &out, nil
}
