package rail0test

import (
	"errors"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// This file is the RAIL0 contract's interface, version 1.3.0 (README section
// 12.1). It holds the Payment terms, their EIP-712 config hash, the EIP-3009
// nonces and the calldata of the eight functions. It is written out by hand,
// word by word. So the tests can check it against go-ethereum's independent
// ABI and EIP-712 code.

// The contract's own EIP-712 domain.
const (
	contractDomainName    = "RAIL0"
	contractDomainVersion = "1.3.0"
)

// paymentType is the EIP-712 type string of the terms.
// Its field order is the order of the ABI tuple.
const paymentType = "Payment(address payer,address payee,address token,uint120 amount,uint48 authorizationExpiry,uint48 refundExpiry)"

// paymentTuple is the canonical ABI form of Payment inside function signatures.
const paymentTuple = "(address,address,address,uint120,uint48,uint48)"

// terms is the contract's Payment struct.
type terms struct {
	Payer, Payee, Token common.Address
	Amount              *big.Int // uint120
	AuthExpiry          uint64   // uint48
	RefundExpiry        uint64   // uint48
}

// termsOf returns the terms a payment was created with.
func termsOf(p *payment) terms {
	return terms{Payer: p.Payer, Payee: p.Payee, Token: p.Token.Address, Amount: p.Amount,
		AuthExpiry: uint64(p.AuthExpiry), RefundExpiry: uint64(p.RefundExpiry)}
}

// words is the ABI encoding of the terms.
// That is six words: the static tuple inline.
func (t terms) words() [][]byte {
	return [][]byte{
		word(t.Payer.Bytes()), word(t.Payee.Bytes()), word(t.Token.Bytes()), word(t.Amount.Bytes()),
		uintWord(t.AuthExpiry), uintWord(t.RefundExpiry),
	}
}

func word(b []byte) []byte { return common.LeftPadBytes(b, 32) }

func uintWord(v uint64) []byte { return word(new(big.Int).SetUint64(v).Bytes()) }

var (
	eip712DomainTypeHash = crypto.Keccak256([]byte("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"))
	paymentTypeHash      = crypto.Keccak256([]byte(paymentType))
)

// configHash is the EIP-712 digest of the terms under the contract's domain
// on chainID at contract:
//
//	0x1901 || domainSeparator || hashStruct(Payment)
func configHash(chainID int64, contract common.Address, t terms) common.Hash {
	domain := keccak(eip712DomainTypeHash, crypto.Keccak256([]byte(contractDomainName)),
		crypto.Keccak256([]byte(contractDomainVersion)), word(big.NewInt(chainID).Bytes()), word(contract.Bytes()))
	structHash := keccak(append([][]byte{paymentTypeHash}, t.words()...)...)
	return keccak([]byte{0x19, 0x01}, domain.Bytes(), structHash.Bytes())
}

// paymentConfigHash is configHash for the payment's own terms and deployment.
func paymentConfigHash(p *payment) common.Hash {
	return configHash(p.Chain.ChainID, p.Chain.Contract.Address, termsOf(p))
}

// authorizationNonce is the EIP-3009 nonce of the payer's authorization for
// op, authorize or charge. The tag is "RAIL0.AUTHORIZE" or "RAIL0.CHARGE":
//
//	keccak256(abi.encode(keccak256(tag), paymentId, configHash))
func authorizationNonce(op string, id, config common.Hash) common.Hash {
	tag := "RAIL0.AUTHORIZE"
	if op == opCharge {
		tag = "RAIL0.CHARGE"
	}
	return keccak(crypto.Keccak256([]byte(tag)), id.Bytes(), config.Bytes())
}

// refundNonce is the EIP-3009 nonce of the payee's refund authorization.
// refundable is the balance before this refund:
//
//	keccak256(abi.encode(keccak256("RAIL0.REFUND"), paymentId, configHash, uint120 refundable))
func refundNonce(id, config common.Hash, refundable *big.Int) common.Hash {
	return keccak(crypto.Keccak256([]byte("RAIL0.REFUND")), id.Bytes(), config.Bytes(), word(refundable.Bytes()))
}

// function is one of the contract's eight entry points.
type function struct {
	op       string // the transaction row's operation
	name     string
	extra    string // the argument types after (bytes32 paymentId, Payment p)
	selector [4]byte
}

// signature is the canonical signature the selector is hashed from.
func (f function) signature() string {
	return f.name + "(bytes32," + paymentTuple + f.extra + ")"
}

// functions maps each operation to its entry point.
// Each selector is computed from the canonical signature with the tuple
// expanded.
var functions = func() map[string]function {
	const vrs = ",uint8,bytes32,bytes32"
	m := map[string]function{}
	for _, f := range []function{
		{op: opAuthorize, name: "authorize", extra: vrs},
		{op: opCharge, name: "charge", extra: vrs},
		{op: opCapture, name: "capture", extra: ",uint256"},
		{op: opVoid, name: "void"},
		{op: opRelease, name: "release"},
		{op: opRefund, name: "refund", extra: ",uint256" + vrs},
		{op: opDispute, name: "dispute", extra: ",bytes32"},
		{op: opCloseDispute, name: "closeDispute", extra: ",bytes32"},
	} {
		copy(f.selector[:], crypto.Keccak256([]byte(f.signature()))[:4])
		m[f.op] = f
	}
	return m
}()

// extraWords is how many words follow paymentId and the tuple in op's
// calldata. There is one per extra argument, every one of them static.
func extraWords(op string) int { return strings.Count(functions[op].extra, ",") }

// call is a decoded (or to be encoded) call of the contract.
type call struct {
	op     string
	id     common.Hash
	terms  terms
	amount *big.Int // capture, refund
	sig    []byte   // authorize, charge, refund: r || s || v, 65 bytes
	reason common.Hash
}

// encode is the calldata of c: the selector, then one 32-byte word per
// argument. Every argument is static, so the tuple sits inline.
func (c call) encode() []byte {
	sel := functions[c.op].selector
	out := append(sel[:], c.id.Bytes()...)
	for _, w := range c.terms.words() {
		out = append(out, w...)
	}
	if c.op == opCapture || c.op == opRefund {
		out = append(out, word(c.amount.Bytes())...)
	}
	switch c.op {
	case opAuthorize, opCharge, opRefund:
		var r, s []byte
		var v byte
		if len(c.sig) == 65 {
			r, s, v = c.sig[:32], c.sig[32:64], c.sig[64]
			if v < 27 {
				v += 27 // the tokens' ecrecover takes 27 or 28
			}
		}
		out = append(append(append(out, word([]byte{v})...), word(r)...), word(s)...)
	case opDispute, opCloseDispute:
		out = append(out, c.reason.Bytes()...)
	}
	return out
}

var (
	errUnknownSelector = errors.New("no function of the contract has this selector")
	errBadCalldata     = errors.New("calldata does not decode as the function's arguments")
)

// callTarget reads the selector and paymentId of data.
// That is how the gateway tells which step of which payment a raw
// transaction is for.
func callTarget(data []byte) (op string, id common.Hash, err error) {
	if len(data) < 4+32 {
		return "", common.Hash{}, errBadCalldata
	}
	for _, f := range functions {
		if [4]byte(data[:4]) == f.selector {
			return f.op, common.BytesToHash(data[4:36]), nil
		}
	}
	return "", common.Hash{}, errUnknownSelector
}

// decodeCall decodes calldata as the contract's ABI decoder does.
// It wants a known selector and enough words; trailing bytes are ignored.
// Every word must be in range for its type. An address, uint120, uint48 or
// uint8 with dirty high bits reverts.
func decodeCall(data []byte) (call, error) {
	op, id, err := callTarget(data)
	if err != nil {
		return call{}, err
	}
	args := data[4:]
	n := extraWords(op)
	if len(args) < 32*(7+n) {
		return call{}, errBadCalldata
	}
	w := func(i int) []byte { return args[32*i : 32*i+32] }
	num := func(i int) *big.Int { return new(big.Int).SetBytes(w(i)) }
	for i, bits := range []int{160, 160, 160, 120, 48, 48} {
		if num(1+i).BitLen() > bits {
			return call{}, errBadCalldata
		}
	}
	c := call{op: op, id: id, terms: terms{
		Payer: common.BytesToAddress(w(1)), Payee: common.BytesToAddress(w(2)), Token: common.BytesToAddress(w(3)),
		Amount: num(4), AuthExpiry: num(5).Uint64(), RefundExpiry: num(6).Uint64(),
	}}
	at := 7
	if op == opCapture || op == opRefund {
		c.amount = num(at)
		at++
	}
	switch op {
	case opAuthorize, opCharge, opRefund:
		if num(at).BitLen() > 8 {
			return call{}, errBadCalldata
		}
		// v, r, s as the signature r || s || v.
		c.sig = append(append(append([]byte(nil), w(at+1)...), w(at+2)...), w(at)[31])
	case opDispute, opCloseDispute:
		c.reason = common.BytesToHash(w(at))
	}
	return c, nil
}

// canonicalSignature reports whether sig is one a token accepts.
// sig is r || s || v, 65 bytes. v must be 27 or 28. Off chain (onChain
// false), 0 or 1 is taken as its alias. r and s must be in range. And s
// must be in the lower half of the curve order, since the tokens' ecrecover
// refuses the malleable high-s twin.
func canonicalSignature(sig []byte, onChain bool) bool {
	if len(sig) != 65 {
		return false
	}
	v := sig[64]
	if v >= 27 {
		v -= 27
	} else if onChain {
		return false
	}
	return crypto.ValidateSignatureValues(v, new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:64]), true)
}
