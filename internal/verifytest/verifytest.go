// Package verifytest builds what an honest gateway hands over for one test
// payment. It follows the RAIL0 contract guide, section 12.1. The artifacts
// are:
//   - the payment's terms;
//   - the payer's and the refund's EIP-3009 payloads;
//   - the unsigned transaction of each step.
//
// The tests of internal/verify check these artifacts directly. The root
// package's fake gateway serves them. A test may rewrite one field on the
// way out. Nothing here is for a program. It exists so that both test
// suites build artifacts one way.
package verifytest

import (
	"encoding/hex"
	"fmt"
	"math/big"

	"github.com/rail0/rail0-go/internal/verify"
)

// The test payment: 25.00 of Base Sepolia's 6-decimal USDC, partially
// captured. Its RAIL0 contract is not the published one but the README's
// example address.
const (
	ChainID      = 84532
	Token        = "0x036cbd53842c5426634e7929541ec2318f3dcf7e"
	Contract     = "0x7c1e3b52fa9d4c26e0a1f83b5d9e6a4c2b0f8e31"
	Other        = "0x00000000000000000000000000000000000000aa"
	PaymentID    = "p1"
	Amount       = 25_000_000
	Capturable   = 15_000_000
	Refundable   = 10_000_000
	AuthExpiry   = 1789985700
	RefundExpiry = 1791972900
	Decimals     = 6
)

// Rail0ID is the test payment's id on the chain.
var Rail0ID = verify.KeccakString("payment p1")

// Payment is the test payment from payer to payee in mode.
// Its config_hash is computed from its terms.
func Payment(mode, payer, payee string) *verify.Payment {
	p := &verify.Payment{
		ID: PaymentID, Rail0ID: Rail0ID.String(), ConfigHash: verify.Word{}.String(), Mode: mode, ChainID: ChainID,
		Contract: Contract, Payer: payer, Payee: payee, Token: Token,
		Amount: fmt.Sprint(Amount), CapturableAmount: fmt.Sprint(Capturable), RefundableAmount: fmt.Sprint(Refundable),
		AuthorizationExpiry: AuthExpiry, RefundExpiry: RefundExpiry,
	}
	t, err := verify.DecodeTerms(p)
	if err != nil {
		panic("verifytest: " + err.Error())
	}
	p.ConfigHash = t.ComputeConfigHash().String()
	return p
}

// Terms decodes p, with the token's decimals as the pins give them.
func Terms(p *verify.Payment) *verify.Terms {
	t, err := verify.DecodeTerms(p)
	if err != nil {
		panic("verifytest: " + err.Error())
	}
	t.Decimals = Decimals
	return t
}

// TermsAt are terms naming only a chain, a contract and a token.
// They serve the checks of the pins: that is what the anchor decides on.
func TermsAt(chainID int64, contract, token string) *verify.Terms {
	c, err := verify.ParseAddress(contract)
	if err != nil {
		panic("verifytest: " + err.Error())
	}
	k, err := verify.ParseAddress(token)
	if err != nil {
		panic("verifytest: " + err.Error())
	}
	return &verify.Terms{ID: PaymentID, ChainID: big.NewInt(chainID), Contract: c, Token: k}
}

// payerNonceOp is the step whose nonce the payer's authorization carries.
func payerNonceOp(t *verify.Terms) string {
	if t.Mode == verify.ModeCharge {
		return verify.OpCharge
	}
	return verify.OpAuthorize
}

// PayerDigest is the digest of the payer's TransferWithAuthorization of t
// under the token domain name and version.
func PayerDigest(t *verify.Terms, name, version string) verify.Word {
	return verify.AuthorizationDigest(t, "TransferWithAuthorization", name, version, t.Payer, t.Amount, t.AuthExpiry, t.Nonce(payerNonceOp(t)))
}

// PayloadDoc is an EIP-3009 payload of t, as a document a test may change
// before encoding it. With refund nil it is the payer's payload. Otherwise
// it is the payee's authorization of a refund of refund base units. The
// token domain is "USDC", "2".
func PayloadDoc(t *verify.Terms, refund *big.Int) map[string]any {
	primary, from, value, before, nonce := "TransferWithAuthorization", t.Payer, t.Amount, t.AuthExpiry, t.Nonce(payerNonceOp(t))
	if refund != nil {
		primary, from, value, before, nonce = "ReceiveWithAuthorization", t.Payee, refund, t.RefundExpiry, t.Nonce(verify.OpRefund)
	}
	return map[string]any{
		"types": map[string]any{
			"EIP712Domain": []map[string]string{{"name": "name", "type": "string"}, {"name": "version", "type": "string"},
				{"name": "chainId", "type": "uint256"}, {"name": "verifyingContract", "type": "address"}},
			primary: []map[string]string{{"name": "from", "type": "address"}, {"name": "to", "type": "address"},
				{"name": "value", "type": "uint256"}, {"name": "validAfter", "type": "uint256"},
				{"name": "validBefore", "type": "uint256"}, {"name": "nonce", "type": "bytes32"}},
		},
		"primaryType": primary,
		"domain":      map[string]any{"name": "USDC", "version": "2", "chainId": t.ChainID.Int64(), "verifyingContract": t.Token.String()},
		"message": map[string]any{"from": from.String(), "to": t.Contract.String(), "value": value.String(),
			"validAfter": "0", "validBefore": fmt.Sprint(before), "nonce": nonce.String()},
	}
}

// VRS are the v, r, s words of a 65-byte r ‖ s ‖ v signature.
func VRS(sig []byte) []verify.Word {
	return []verify.Word{verify.U64Word(uint64(sig[64])), verify.Word(sig[:32]), verify.Word(sig[32:64])}
}

// TxFields is the unsigned transaction of op on t, sent from from.
// Its data is the call's selector, the payment id and the Payment tuple.
// Then come args, the step's own arguments. Its gas estimate is honest: the
// measured gas and a 25% margin.
func TxFields(t *verify.Terms, op string, args []verify.Word, from string) map[string]any {
	sel := verify.Selector(op)
	data := append([]byte(nil), sel[:]...)
	tuple := t.Words()
	words := append([]verify.Word{t.Rail0ID}, tuple[:]...)
	for _, w := range append(words, args...) {
		data = append(data, w[:]...)
	}
	return map[string]any{
		"chain_id": t.ChainID.Int64(), "nonce": 7, "to": t.Contract.String(), "value": "0", "data": "0x" + hex.EncodeToString(data),
		"gas_limit":                verify.ContractGas(op) * 5 / 4,
		"max_priority_fee_per_gas": "1000000", "max_fee_per_gas": "1500000000", "from": from,
	}
}
