// rail0-gateway is a command users install with
// `go install github.com/rail0/rail0-go/cmd/rail0-gateway@latest`, which refuses
// a go.mod with replace directives: the SDK and rail0test come from the
// go.work at the root of the repository instead (.ci/run gives them to the
// module's own checks through a temporary -modfile), and from the versions
// required here everywhere else.
module github.com/rail0/rail0-go/cmd/rail0-gateway

go 1.25.0

require (
	github.com/rail0/rail0-go v0.1.0
	github.com/rail0/rail0-go/rail0test v0.1.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/ProjectZKM/Ziren/crates/go-runtime/zkvm_runtime v0.0.0-20251001021608-1fe7b43fc4d6 // indirect
	github.com/bits-and-blooms/bitset v1.20.0 // indirect
	github.com/consensys/gnark-crypto v0.18.1 // indirect
	github.com/crate-crypto/go-eth-kzg v1.5.0 // indirect
	github.com/decred/dcrd/dcrec/secp256k1/v4 v4.4.1 // indirect
	github.com/ethereum/c-kzg-4844/v2 v2.1.8 // indirect
	github.com/ethereum/go-ethereum v1.17.10 // indirect
	github.com/golang-jwt/jwt/v5 v5.3.1 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/hashicorp/go-retryablehttp v0.7.8 // indirect
	github.com/holiman/uint256 v1.3.2 // indirect
	github.com/supranational/blst v0.3.16 // indirect
	golang.org/x/crypto v0.55.0 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
