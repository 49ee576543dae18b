package integration_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"

	"github.com/ethereum/go-ethereum/accounts"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

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
