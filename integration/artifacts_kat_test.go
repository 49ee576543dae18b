package integration_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"

	"github.com/rail0/rail0-go"
)

// These known-answer tests build every artifact of a payment independently,
// with go-ethereum (its EIP-712 hashing, its ABI packer, keccak of the type
// strings of the contract guide, section 12.1), and check that the SDK's own
// implementation, which uses none of it, accepts them and computes the same
// digests.

// rail0ABI is the RAIL0 contract interface of the guide's table.
const rail0ABI = `[
 {"type":"function","name":"authorize","inputs":[{"name":"paymentId","type":"bytes32"},{"name":"p","type":"tuple","components":[{"name":"payer","type":"address"},{"name":"payee","type":"address"},{"name":"token","type":"address"},{"name":"amount","type":"uint120"},{"name":"authorizationExpiry","type":"uint48"},{"name":"refundExpiry","type":"uint48"}]},{"name":"v","type":"uint8"},{"name":"r","type":"bytes32"},{"name":"s","type":"bytes32"}]},
 {"type":"function","name":"charge","inputs":[{"name":"paymentId","type":"bytes32"},{"name":"p","type":"tuple","components":[{"name":"payer","type":"address"},{"name":"payee","type":"address"},{"name":"token","type":"address"},{"name":"amount","type":"uint120"},{"name":"authorizationExpiry","type":"uint48"},{"name":"refundExpiry","type":"uint48"}]},{"name":"v","type":"uint8"},{"name":"r","type":"bytes32"},{"name":"s","type":"bytes32"}]},
 {"type":"function","name":"capture","inputs":[{"name":"paymentId","type":"bytes32"},{"name":"p","type":"tuple","components":[{"name":"payer","type":"address"},{"name":"payee","type":"address"},{"name":"token","type":"address"},{"name":"amount","type":"uint120"},{"name":"authorizationExpiry","type":"uint48"},{"name":"refundExpiry","type":"uint48"}]},{"name":"amount","type":"uint256"}]},
 {"type":"function","name":"void","inputs":[{"name":"paymentId","type":"bytes32"},{"name":"p","type":"tuple","components":[{"name":"payer","type":"address"},{"name":"payee","type":"address"},{"name":"token","type":"address"},{"name":"amount","type":"uint120"},{"name":"authorizationExpiry","type":"uint48"},{"name":"refundExpiry","type":"uint48"}]}]},
 {"type":"function","name":"release","inputs":[{"name":"paymentId","type":"bytes32"},{"name":"p","type":"tuple","components":[{"name":"payer","type":"address"},{"name":"payee","type":"address"},{"name":"token","type":"address"},{"name":"amount","type":"uint120"},{"name":"authorizationExpiry","type":"uint48"},{"name":"refundExpiry","type":"uint48"}]}]},
 {"type":"function","name":"refund","inputs":[{"name":"paymentId","type":"bytes32"},{"name":"p","type":"tuple","components":[{"name":"payer","type":"address"},{"name":"payee","type":"address"},{"name":"token","type":"address"},{"name":"amount","type":"uint120"},{"name":"authorizationExpiry","type":"uint48"},{"name":"refundExpiry","type":"uint48"}]},{"name":"amount","type":"uint256"},{"name":"v","type":"uint8"},{"name":"r","type":"bytes32"},{"name":"s","type":"bytes32"}]},
 {"type":"function","name":"dispute","inputs":[{"name":"paymentId","type":"bytes32"},{"name":"p","type":"tuple","components":[{"name":"payer","type":"address"},{"name":"payee","type":"address"},{"name":"token","type":"address"},{"name":"amount","type":"uint120"},{"name":"authorizationExpiry","type":"uint48"},{"name":"refundExpiry","type":"uint48"}]},{"name":"reason","type":"bytes32"}]},
 {"type":"function","name":"closeDispute","inputs":[{"name":"paymentId","type":"bytes32"},{"name":"p","type":"tuple","components":[{"name":"payer","type":"address"},{"name":"payee","type":"address"},{"name":"token","type":"address"},{"name":"amount","type":"uint120"},{"name":"authorizationExpiry","type":"uint48"},{"name":"refundExpiry","type":"uint48"}]},{"name":"reason","type":"bytes32"}]}
]`

// paymentTuple mirrors the contract's Payment struct for abi.Pack.
type paymentTuple struct {
	Payer, Payee, Token common.Address
	Amount              *big.Int
	AuthorizationExpiry *big.Int
	RefundExpiry        *big.Int
}

type katPayment struct {
	detail     rail0.PaymentDetail
	tuple      paymentTuple
	rail0ID    common.Hash
	configHash common.Hash
	contract   common.Address
	chainID    int64
}

func typedData(primary string, types apitypes.Types, domain apitypes.TypedDataDomain, msg apitypes.TypedDataMessage) apitypes.TypedData {
	types["EIP712Domain"] = []apitypes.Type{{Name: "name", Type: "string"}, {Name: "version", Type: "string"},
		{Name: "chainId", Type: "uint256"}, {Name: "verifyingContract", Type: "address"}}
	return apitypes.TypedData{Types: types, PrimaryType: primary, Domain: domain, Message: msg}
}

// The KAT payment's expiries are rail0test's windows (7 and 30 days) from
// now: the expiries the payer signs are bounded from the local clock.
var (
	katAuthExpiry   = time.Now().Add(7 * 24 * time.Hour).Unix()
	katRefundExpiry = katAuthExpiry + 23*24*3600
)

func newKATPayment(t *testing.T, mode rail0.PaymentMode, payer, payee common.Address) *katPayment {
	k := &katPayment{chainID: 84532, contract: common.HexToAddress("0x7c1E3b52fA9d4C26e0a1F83b5D9e6A4c2B0f8E31"),
		rail0ID: crypto.Keccak256Hash([]byte("kat payment"))}
	k.tuple = paymentTuple{Payer: payer, Payee: payee, Token: common.HexToAddress("0x036CbD53842c5426634e7929541eC2318f3dCF7e"),
		Amount: big.NewInt(25_000_000), AuthorizationExpiry: big.NewInt(katAuthExpiry), RefundExpiry: big.NewInt(katRefundExpiry)}
	td := typedData("Payment", apitypes.Types{"Payment": {
		{Name: "payer", Type: "address"}, {Name: "payee", Type: "address"}, {Name: "token", Type: "address"},
		{Name: "amount", Type: "uint120"}, {Name: "authorizationExpiry", Type: "uint48"}, {Name: "refundExpiry", Type: "uint48"}}},
		apitypes.TypedDataDomain{Name: "RAIL0", Version: "1.3.0", ChainId: math.NewHexOrDecimal256(k.chainID), VerifyingContract: k.contract.Hex()},
		apitypes.TypedDataMessage{"payer": payer.Hex(), "payee": payee.Hex(), "token": k.tuple.Token.Hex(),
			"amount": "25000000", "authorizationExpiry": strconv.FormatInt(katAuthExpiry, 10), "refundExpiry": strconv.FormatInt(katRefundExpiry, 10)})
	digest, _, err := apitypes.TypedDataAndHash(td)
	if err != nil {
		t.Fatal(err)
	}
	k.configHash = common.BytesToHash(digest)
	k.detail = rail0.PaymentDetail{
		Payment: rail0.Payment{ID: "kat", Rail0ID: k.rail0ID.Hex(), Status: rail0.StatusPartiallyCaptured, Mode: mode,
			Amount: "25000000", CapturableAmount: "15000000", RefundableAmount: "10000000", ConfigHash: k.configHash.Hex(),
			Payer: payer.Hex(), Payee: payee.Hex(), Token: k.tuple.Token.Hex(), AuthorizationExpiry: rail0.UnixTime(katAuthExpiry), RefundExpiry: rail0.UnixTime(katRefundExpiry)},
		ChainID: k.chainID, Rail0Contract: k.contract.Hex(),
	}
	return k
}

// nonce is the EIP-3009 nonce of the guide: keccak256(abi.encode(tag, rail0_id, config_hash[, refundable])).
func (k *katPayment) nonce(tag string, refundable *big.Int) common.Hash {
	words := [][]byte{crypto.Keccak256([]byte(tag)), k.rail0ID.Bytes(), k.configHash.Bytes()}
	if refundable != nil {
		words = append(words, common.LeftPadBytes(refundable.Bytes(), 32))
	}
	return crypto.Keccak256Hash(words...)
}

func (k *katPayment) authorization(primary string, from common.Address, value *big.Int, before int64, nonce common.Hash) apitypes.TypedData {
	fields := []apitypes.Type{{Name: "from", Type: "address"}, {Name: "to", Type: "address"}, {Name: "value", Type: "uint256"},
		{Name: "validAfter", Type: "uint256"}, {Name: "validBefore", Type: "uint256"}, {Name: "nonce", Type: "bytes32"}}
	return typedData(primary, apitypes.Types{primary: fields},
		apitypes.TypedDataDomain{Name: "USDC", Version: "2", ChainId: math.NewHexOrDecimal256(k.chainID), VerifyingContract: k.tuple.Token.Hex()},
		apitypes.TypedDataMessage{"from": from.Hex(), "to": k.contract.Hex(), "value": value.String(), "validAfter": "0",
			"validBefore": fmt.Sprint(before), "nonce": nonce.Hex()})
}

// katClient verifies, trusting the known-answer payments' contract (the
// README's example address, not the published one). Verifying sends no
// request.
func katClient(t *testing.T) *rail0.Client {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a check sent %s %s", r.Method, r.URL.Path)
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	c, err := rail0.NewClient(srv.URL, rail0.WithToken("t"),
		rail0.WithTrustedContracts(map[int64]string{84532: "0x7c1E3b52fA9d4C26e0a1F83b5D9e6A4c2B0f8E31"}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPayloadDigestsMatchGoEthereum(t *testing.T) {
	ctx := context.Background()
	payer, payee := common.HexToAddress("0x5B38Da6a701c568545dCfcB03FcB875f56beddC4"), common.HexToAddress("0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2")
	c := katClient(t)
	// The order, as its payer and its payee know it (VerifyPayload binds
	// the payment to it).
	order := func(mode rail0.PaymentMode) rail0.Expectation {
		return rail0.Expectation{ChainID: 84532, Mode: mode, Token: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", Payee: payee.Hex(), Amount: "25.00"}
	}
	for _, tc := range []struct {
		name   string
		mode   rail0.PaymentMode
		intent rail0.Intent
		td     func(k *katPayment) apitypes.TypedData
	}{
		{"payer, authorize", rail0.ModeAuthorize, rail0.Intent{Expect: order(rail0.ModeAuthorize)}, func(k *katPayment) apitypes.TypedData {
			return k.authorization("TransferWithAuthorization", payer, big.NewInt(25_000_000), katAuthExpiry, k.nonce("RAIL0.AUTHORIZE", nil))
		}},
		{"payer, charge", rail0.ModeCharge, rail0.Intent{Expect: order(rail0.ModeCharge)}, func(k *katPayment) apitypes.TypedData {
			return k.authorization("TransferWithAuthorization", payer, big.NewInt(25_000_000), katAuthExpiry, k.nonce("RAIL0.CHARGE", nil))
		}},
		{"refund", rail0.ModeAuthorize, rail0.Intent{Operation: rail0.OpRefund, Amount: "4.00", Expect: rail0.Expectation{Payer: payer.Hex()}}, func(k *katPayment) apitypes.TypedData {
			return k.authorization("ReceiveWithAuthorization", payee, big.NewInt(4_000_000), katRefundExpiry, k.nonce("RAIL0.REFUND", big.NewInt(10_000_000)))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := newKATPayment(t, tc.mode, payer, payee)
			td := tc.td(k)
			want, _, err := apitypes.TypedDataAndHash(td)
			if err != nil {
				t.Fatal(err)
			}
			doc, _ := json.Marshal(map[string]any{"types": td.Types, "primaryType": td.PrimaryType, "domain": map[string]any{
				"name": td.Domain.Name, "version": td.Domain.Version, "chainId": k.chainID, "verifyingContract": td.Domain.VerifyingContract},
				"message": td.Message})
			got, err := c.Payments.VerifyPayload(ctx, &k.detail, tc.intent, doc)
			if err != nil {
				t.Fatalf("VerifyPayload refused go-ethereum's payload: %v", err)
			}
			if common.Hash(got.Digest) != common.BytesToHash(want) {
				t.Fatalf("digest %x, go-ethereum %x", got.Digest, want)
			}
			// The typed data handed back is what a wallet signs: go-ethereum
			// reads it and hashes it to the same digest.
			var back apitypes.TypedData
			if err := json.Unmarshal(got.TypedData, &back); err != nil {
				t.Fatalf("go-ethereum cannot read the returned typed data: %v\n%s", err, got.TypedData)
			}
			if again, _, err := apitypes.TypedDataAndHash(back); err != nil || common.BytesToHash(again) != common.Hash(got.Digest) {
				t.Fatalf("the returned typed data hashes to %x (%v), not to the digest %x", again, err, got.Digest)
			}
		})
	}
}

func TestTransactionsPackedByGoEthereumVerify(t *testing.T) {
	ctx := context.Background()
	parsed, err := abi.JSON(strings.NewReader(rail0ABI))
	if err != nil {
		t.Fatal(err)
	}
	payerKey, _ := crypto.GenerateKey()
	payer := crypto.PubkeyToAddress(payerKey.PublicKey)
	payee := common.HexToAddress("0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2")
	reason := common.HexToHash("0x1111111111111111111111111111111111111111111111111111111111111111")
	c := katClient(t)
	for _, tc := range []struct {
		op     rail0.Operation
		fn     string
		mode   rail0.PaymentMode
		intent rail0.Intent
		args   func(k *katPayment) []any
	}{
		{rail0.OpAuthorize, "authorize", rail0.ModeAuthorize, rail0.Intent{}, nil},
		{rail0.OpCharge, "charge", rail0.ModeCharge, rail0.Intent{}, nil},
		{rail0.OpCapture, "capture", rail0.ModeAuthorize, rail0.Intent{Amount: "1.5"}, func(_ *katPayment) []any { return []any{big.NewInt(1_500_000)} }},
		{rail0.OpVoid, "void", rail0.ModeAuthorize, rail0.Intent{}, func(*katPayment) []any { return nil }},
		{rail0.OpRelease, "release", rail0.ModeAuthorize, rail0.Intent{Signer: payer.Hex()}, func(*katPayment) []any { return nil }},
		{rail0.OpDispute, "dispute", rail0.ModeAuthorize, rail0.Intent{Reason: reason.Hex()}, func(*katPayment) []any { return []any{reason} }},
		{rail0.OpCloseDispute, "closeDispute", rail0.ModeAuthorize, rail0.Intent{}, func(*katPayment) []any { return []any{common.Hash{}} }},
	} {
		t.Run(string(tc.op), func(t *testing.T) {
			k := newKATPayment(t, tc.mode, payer, payee)
			var extra []any
			if tc.args != nil {
				extra = tc.args(k)
			} else {
				tag := "RAIL0.AUTHORIZE"
				if tc.mode == rail0.ModeCharge {
					tag = "RAIL0.CHARGE"
				}
				digest, _, err := apitypes.TypedDataAndHash(k.authorization("TransferWithAuthorization", payer, big.NewInt(25_000_000), katAuthExpiry, k.nonce(tag, nil)))
				if err != nil {
					t.Fatal(err)
				}
				sig, _ := crypto.Sign(digest, payerKey)
				extra = []any{sig[64] + 27, [32]byte(sig[:32]), [32]byte(sig[32:64])}
			}
			data, err := parsed.Pack(tc.fn, append([]any{[32]byte(k.rail0ID), k.tuple}, extra...)...)
			if err != nil {
				t.Fatal(err)
			}
			// The selector is keccak256 of the signature with the tuple
			// written out, as the guide says.
			sigText := parsed.Methods[tc.fn].Sig
			if want := crypto.Keccak256([]byte(sigText))[:4]; !strings.HasPrefix(hex.EncodeToString(data), hex.EncodeToString(want)) {
				t.Fatalf("%s: selector mismatch", sigText)
			}
			// 80,000 gas: within the default bound of every operation.
			unsigned, _ := json.Marshal(map[string]any{"chain_id": k.chainID, "nonce": 3, "to": k.contract.Hex(), "value": "0",
				"data": hexutil.Encode(data), "gas_limit": 80000, "max_priority_fee_per_gas": "1000000", "max_fee_per_gas": "1500000000"})
			in := tc.intent
			in.Operation = tc.op
			got, err := c.Payments.VerifyTransaction(ctx, &k.detail, in, string(unsigned))
			if err != nil {
				t.Fatalf("VerifyTransaction refused go-ethereum's %s call: %v", sigText, err)
			}
			// The digest is go-ethereum's EIP-1559 signing hash of the
			// transaction handed back, which carries what was prepared.
			var back map[string]string // every number a decimal string
			if err := json.Unmarshal(got.Transaction, &back); err != nil {
				t.Fatal(err)
			}
			dec := func(key string) *big.Int {
				n, ok := new(big.Int).SetString(back[key], 10)
				if !ok {
					t.Fatalf("%s in %s is not a decimal string", key, got.Transaction)
				}
				return n
			}
			to := common.HexToAddress(back["to"])
			tx := types.NewTx(&types.DynamicFeeTx{ChainID: dec("chain_id"), Nonce: dec("nonce").Uint64(), GasTipCap: dec("max_priority_fee_per_gas"),
				GasFeeCap: dec("max_fee_per_gas"), Gas: dec("gas_limit").Uint64(), To: &to, Value: dec("value"), Data: common.FromHex(back["data"])})
			if h := types.LatestSignerForChainID(big.NewInt(k.chainID)).Hash(tx); h != common.Hash(got.Digest) {
				t.Fatalf("digest %x, go-ethereum's signing hash of the returned transaction %x", got.Digest, h)
			}
			if tx.Nonce() != 3 || tx.Gas() != 80000 || !bytes.Equal(tx.Data(), data) || to != k.contract {
				t.Fatalf("the returned transaction differs from the prepared one: %s", got.Transaction)
			}
		})
	}
}
