package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0test"
	"github.com/rail0/rail0-go/signing"
)

// signRaw signs an unsigned_transaction with go-ethereum, independently of
// the SDK, as a caller who signs elsewhere would: for tests that drive
// prepare and submit by hand.
func signRaw(hexKey, unsigned string) (string, error) {
	key, err := crypto.HexToECDSA(strings.TrimPrefix(hexKey, "0x"))
	if err != nil {
		return "", err
	}
	var f map[string]json.RawMessage
	if err := json.Unmarshal([]byte(unsigned), &f); err != nil {
		return "", err
	}
	num := func(name string) *big.Int {
		s := strings.Trim(string(f[name]), `"`)
		n, ok := new(big.Int).SetString(s, 0)
		if !ok {
			return new(big.Int)
		}
		return n
	}
	var to, data string
	_ = json.Unmarshal(f["to"], &to)
	_ = json.Unmarshal(f["data"], &data)
	input, err := hexutil.Decode(data)
	if err != nil {
		return "", fmt.Errorf("data: %w", err)
	}
	addr := common.HexToAddress(to)
	tx := types.NewTx(&types.DynamicFeeTx{
		ChainID: num("chain_id"), Nonce: num("nonce").Uint64(), GasTipCap: num("max_priority_fee_per_gas"),
		GasFeeCap: num("max_fee_per_gas"), Gas: num("gas_limit").Uint64(), To: &addr, Value: num("value"), Data: input,
	})
	signed, err := types.SignTx(tx, types.LatestSignerForChainID(num("chain_id")), key)
	if err != nil {
		return "", err
	}
	raw, err := signed.MarshalBinary()
	if err != nil {
		return "", err
	}
	return hexutil.Encode(raw), nil
}

// personalSign signs message with EIP-191 through s, as a wallet would,
// returning 0x hex with v = 27 or 28.
func personalSign(ctx context.Context, s *signing.PrivateKeySigner, message string) (string, error) {
	sig, err := s.SignDigest(ctx, [32]byte(accounts.TextHash([]byte(message))))
	if err != nil {
		return "", err
	}
	sig[64] += 27
	return hexutil.Encode(sig), nil
}

// signingClients returns clients of rail0test's buyer and merchant, each
// signing with its own key, at baseURL (the gateway's, or that of a proxy
// in front of it), with the gateway's pins.
func signingClients(t *testing.T, gw *rail0test.Server, baseURL string) (buyer, merchant *rail0.Client) {
	t.Helper()
	client := func(hexKey string) *rail0.Client {
		key, err := signing.NewPrivateKeySigner(hexKey)
		if err != nil {
			t.Fatal(err)
		}
		c, err := rail0.NewClient(baseURL, gw.Pins(), rail0.WithSigner(key))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	return client(gw.Buyer.PrivateKey), client(gw.Merchant.PrivateKey)
}

// escrow is rail0test and the parties of one payment: payer, at
// payerAddress, pays the gateway's merchant through merchant.
type escrow struct {
	gw           *rail0test.Server
	clock        *rail0test.ManualClock // nil when the gateway confirms at once
	payer        *rail0.Client
	payerAddress string
	merchant     *rail0.Client
}

// authorized has the payer open an escrow of amount to the merchant and
// sign it, and the merchant authorize it, and returns the payment (as
// created) once the authorization is confirmed: the clock, when there is
// one, is moved a minute for it.
func (e escrow) authorized(t *testing.T, amount string) *rail0.PaymentDetail {
	t.Helper()
	ctx := context.Background()
	p, err := e.payer.Payments.Create(ctx, rail0.PaymentCreateParams{ChainID: e.gw.ChainID, Mode: rail0.ModeAuthorize,
		Amount: amount, Token: e.gw.Token, Payer: e.payerAddress, Payee: e.gw.Merchant.Address})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.payer.Payments.PayerSign(ctx, p.ID, rail0.PaymentPayerSignParams{}); err != nil {
		t.Fatal(err)
	}
	tx, err := e.merchant.Payments.Authorize(ctx, p.ID, rail0.PaymentAuthorizeParams{})
	if err != nil {
		t.Fatal(err)
	}
	e.confirmed(t, p.ID, tx)
	return p
}

// confirmed waits for tx of payment id to confirm, moving the clock (when
// there is one) a minute first.
func (e escrow) confirmed(t *testing.T, id string, tx *rail0.Transaction) {
	t.Helper()
	if e.clock != nil {
		e.clock.Advance(time.Minute)
	}
	if tx.TransactionHash == nil || *tx.TransactionHash == "" {
		t.Fatalf("transaction %s came back without the hash sent: a flow's answer carries it", tx.ID)
	}
	poll := rail0.PaymentWaitForTransactionParams{PollInterval: 200 * time.Millisecond, MaxPollInterval: 200 * time.Millisecond,
		TransactionHash: *tx.TransactionHash} // as README waits
	if _, err := e.merchant.Payments.WaitForTransaction(context.Background(), id, tx.ID, poll); err != nil {
		t.Fatal(err)
	}
}
