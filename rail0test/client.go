package rail0test

import rail0 "github.com/rail0/rail0-go"

// Client returns an SDK client pointed at the server.
// It uses the server's HTTP client, whose connections Close releases. It
// trusts the server's RAIL0 contract (Pins). Options are applied after the
// defaults, so rail0.WithHTTPClient can replace the HTTP client. To call
// session endpoints, add rail0.WithToken with a token from Login.
func (s *Server) Client(opts ...rail0.Option) (*rail0.Client, error) {
	all := append([]rail0.Option{rail0.WithHTTPClient(s.HTTPClient()), s.Pins()}, opts...)
	return rail0.NewClient(s.URL, all...)
}

// Pins returns the option that makes an SDK client trust this server's
// RAIL0 contract on its test chain.
//
// The contract is deliberately not the one published for Base Sepolia. It
// is ContractAddress, not the registry's. So a signature made against this
// test double is never valid on the real testnet. An SDK client trusts only
// published deployments by default. Without this option it refuses every
// payment of this server (rail0.ErrUntrusted). The server's USDC is the
// published Base Sepolia USDC, whose decimals the SDK's registry already
// pins.
//
// Client includes Pins. Give it to clients made otherwise, for example in
// front of a proxy:
//
//	rail0.NewClient(proxyURL, srv.Pins(), rail0.WithSigner(key))
func (s *Server) Pins() rail0.Option {
	return rail0.WithTrustedContracts(map[int64]string{s.ChainID: s.Contract})
}
