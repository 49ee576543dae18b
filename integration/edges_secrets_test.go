package integration_test

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"testing"

	"github.com/rail0/rail0-go"
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
	verbs := []string{"%v", "%+v", "%#v", "%s", "%q", "%d", "%x", "%X", "%o", "%O", "%b", "%c", "%U", "%e", "%t",
		"% x", "%#x", "%-40s", "%.80s", "%+q", "%#q", "%08d"}
	for name, v := range values {
		for _, verb := range verbs {
			out := fmt.Sprintf(verb, v)
			for _, s := range forms {
				if strings.Contains(out, s) {
					t.Errorf("%s formatted with %s shows the key: %s", name, verb, out)
					break
				}
			}
		}
		var buf bytes.Buffer
		slog.New(slog.NewJSONHandler(&buf, nil)).Info("value", "v", v)
		slog.New(slog.NewTextHandler(&buf, nil)).Info("value", "v", v)
		for _, s := range forms {
			if strings.Contains(buf.String(), s) {
				t.Errorf("%s logged with slog shows the key: %s", name, buf.String())
				break
			}
		}
	}
}
