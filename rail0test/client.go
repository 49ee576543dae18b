package rail0test

import rail0 "github.com/rail0/rail0-go"

// Client returns an SDK client pointed at the server, using the server's HTTP
// client (whose connections Close releases). Options are applied after the
// defaults, so rail0.WithHTTPClient can replace it; add rail0.WithToken with a
// token from Login to call session endpoints.
func (s *Server) Client(opts ...rail0.Option) (*rail0.Client, error) {
	all := append([]rail0.Option{rail0.WithHTTPClient(s.HTTPClient())}, opts...)
	return rail0.NewClient(s.URL, all...)
}
