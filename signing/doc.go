// Package signing holds keys for the RAIL0 SDK.
// PrivateKeySigner implements rail0.Signer with a secp256k1 key in memory.
// Keys thus never leave the caller's process:
//
//	key, err := signing.NewPrivateKeySigner(os.Getenv("MERCHANT_KEY"))
//	client, err := rail0.NewClient(baseURL, rail0.WithSigner(key))
//
// The root package builds every digest: EIP-191 sign-in messages, EIP-712
// authorizations and EIP-1559 transactions. It builds them from artifacts
// it has checked against the caller's request. It also checks every
// signature it gets back. So a signer only ever signs 32-byte digests. A
// key in an HSM or a cloud KMS needs no code from this package: implement
// rail0.Signer's two methods.
//
// Keys, signatures and addresses rest on two libraries. One is decred's
// secp256k1, the pure-Go implementation go-ethereum itself uses without
// cgo. The other is golang.org/x/crypto's Keccak. So a program using this
// package does not download go-ethereum. Its signatures are the ones
// go-ethereum's crypto.Sign makes (RFC 6979 nonces, low s). The integration
// tests check that byte for byte.
package signing
