package rail0

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"

	"github.com/rail0/rail0-go/internal/verify"
)

// This file is what the client trusts. It holds the pins (the registry's
// and its options') and the token domains it has learned. It also holds
// UntrustedError, for a payment that names neither. docs/security.md
// ("What is trusted, and from where") tells it for users.

// UntrustedError reports a payment the SDK does not trust. Its chain,
// RAIL0 contract or token is vouched for neither by the published registry
// (package registry) nor by the client's pins. So the SDK cannot tell
// which contract a signature would serve, or how many decimals an amount
// has. Nothing was prepared or signed.
//
// Option names the option that would trust it. Trusting more is the
// caller's decision, never the gateway's. It also matches
// ErrArtifactMismatch: like a mismatch, it is something the gateway handed
// over that the SDK refuses to sign.
type UntrustedError struct {
	// PaymentID is the payment that named it.
	PaymentID string
	// ChainID is the payment's chain.
	ChainID int64
	// Field is the payment's field that is not trusted:
	//   - "chain_id": no RAIL0 contract is trusted on that chain;
	//   - "rail0_contract": another contract than the one trusted there
	//     (Trusted);
	//   - "token": not a token trusted on that chain.
	Field string
	// Got is the payment's value of Field.
	Got string
	// Trusted is the contract trusted on the chain, for Field
	// "rail0_contract".
	Trusted string
	// Option is the client option that trusts it: "WithTrustedContracts"
	// or "WithTrustedTokens".
	Option string
}

// rail0testContract is the RAIL0 contract of package rail0test's gateway
// (rail0test.ContractAddress), which the root cannot import.
// rail0test's TestUntrustedErrorNamesPins holds the two together.
const rail0testContract = "0x7C1E3b52fa9d4C26E0a1F83B5D9E6a4c2b0f8e31"

// Error returns one readable line. For rail0test's contract it names
// srv.Pins(), the option that trusts it.
func (e *UntrustedError) Error() string {
	var msg string
	switch {
	case e.Field == "rail0_contract" && strings.EqualFold(strings.TrimSpace(e.Got), rail0testContract):
		msg = fmt.Sprintf("contract %s is rail0test's, not the RAIL0 contract published for chain %d: against rail0test, give the client srv.Pins() (it trusts the contract with %s)", oneLine(e.Got), e.ChainID, e.Option)
	case e.Field == "chain_id":
		msg = fmt.Sprintf("chain %d has no trusted RAIL0 contract: none is published for it and %s pins none", e.ChainID, e.Option)
	case e.Field == "rail0_contract":
		msg = fmt.Sprintf("contract %s is not the RAIL0 contract trusted on chain %d (%s); trust it with %s", oneLine(e.Got), e.ChainID, oneLine(e.Trusted), e.Option)
	default:
		msg = fmt.Sprintf("token %s is not trusted on chain %d: it is not a published stablecoin of that chain's contract and %s does not pin it", oneLine(e.Got), e.ChainID, e.Option)
	}
	return "rail0: " + msg + "; nothing was signed"
}

// Is matches ErrUntrusted and ErrArtifactMismatch.
func (e *UntrustedError) Is(target error) bool {
	return target == ErrUntrusted || target == ErrArtifactMismatch
}

// domainCache remembers the EIP-712 name and version of tokens. With them,
// the payer's signature inside a later authorize or charge call can be
// recovered.
//
// The checks of a payload cannot prove a domain's name and version, only
// its chain and contract. So a domain is learned only from a payload whose
// signature the gateway then accepted (PayerSign's PUT .../sign). It is
// forgotten when a payer's signature does not recover under it. So one lie
// about a domain never refuses every later honest flow.
type domainCache struct {
	mu sync.Mutex
	m  map[verify.TokenKey][2]string // replaced, never modified, once stored
}

// trust returns the client's trust with the token domains it has learned.
// The snapshot is safe to read without the lock. It sends nothing. The
// pins are the client's own (the registry's and its options'), never a
// listing of the gateway's.
func (c *Client) trust() *verify.Trust {
	c.domains.mu.Lock()
	defer c.domains.mu.Unlock()
	t := c.trustBase
	t.TokenDomains = c.domains.m
	return &t
}

// learnTokenDomain keeps the EIP-712 domain of a token whose payload passed
// the checks and whose signature the gateway accepted.
func (c *Client) learnTokenDomain(t *verify.Terms, pc *verify.Payload) {
	c.domains.mu.Lock()
	defer c.domains.mu.Unlock()
	k, v := verify.TokenKey{ChainID: t.ChainID.Int64(), Token: t.Token}, [2]string{pc.Name, pc.Version}
	if known, ok := c.domains.m[k]; ok && known == v {
		return
	}
	// Copy on write: trust snapshots share the stored map without a lock.
	domains := make(map[verify.TokenKey][2]string, len(c.domains.m)+1)
	maps.Copy(domains, c.domains.m)
	domains[k] = v
	c.domains.m = domains
}

// forgetTokenDomain drops the domain of t's token that tr held, when the
// payer's signature does not recover under it. err is the refusal of a
// transaction of in against tr. Either the signature or the domain learned
// is a lie. Keeping the domain would refuse every later honest authorize
// and charge of the token. The refusal stands. The next check recovers
// nothing until a signature is accepted again.
func (c *Client) forgetTokenDomain(t *verify.Terms, in Intent, tr *verify.Trust, err error) {
	var ae *ArtifactError
	if (in.Operation != OpAuthorize && in.Operation != OpCharge) || !errors.As(err, &ae) || ae.Field != "data.r" {
		return
	}
	k := verify.TokenKey{ChainID: t.ChainID.Int64(), Token: t.Token}
	used, ok := tr.TokenDomains[k]
	if !ok {
		return
	}
	c.domains.mu.Lock()
	defer c.domains.mu.Unlock()
	if known, ok := c.domains.m[k]; !ok || known != used {
		return // learned again since: keep the newer one
	}
	domains := maps.Clone(c.domains.m)
	delete(domains, k)
	c.domains.m = domains
}
