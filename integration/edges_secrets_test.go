package integration_test

import (
	"encoding/hex"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/internal/leaktest"
	"github.com/rail0/rail0-go/signing"
)

// The signing package's key holders print and log as their address only,
// under every fmt verb and flag, as pointers, values and struct fields.
func TestSigningKeyHoldersSafeUnderEveryVerb(t *testing.T) {
	const keyHex = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
	key, err := signing.NewPrivateKeySigner(keyHex)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{
		"*PrivateKeySigner": key, "PrivateKeySigner": *key,
		"struct": struct {
			K *signing.PrivateKeySigner
			S rail0.Signer
		}{key, key},
		"slice": []any{key, *key},
	}
	raw, _ := hex.DecodeString(keyHex)
	forms := []string{keyHex, strings.ToUpper(keyHex), fmt.Sprintf("%o", raw), fmt.Sprintf("%d", raw), fmt.Sprintf("%v", raw), new(big.Int).SetBytes(raw).String()}
	leaktest.NoSecret(t, values, forms)
}
