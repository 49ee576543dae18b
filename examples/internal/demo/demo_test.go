package demo

import (
	"strings"
	"testing"
)

// TestFromEnvironment: against a real gateway the registry is the trust. A
// token is named by symbol or address and must be one the registry
// publishes for the chain, whose decimals it gives; a token it does not
// publish is trusted only when RAIL0_TOKEN_DECIMALS pins it.
func TestFromEnvironment(t *testing.T) {
	t.Setenv("RAIL0_BUYER_KEY", "0x"+strings.Repeat("11", 32))
	t.Setenv("RAIL0_MERCHANT_KEY", "0x"+strings.Repeat("22", 32))
	t.Setenv("RAIL0_CHAIN_ID", "84532")
	for _, token := range []string{"USDC", "0x036cbd53842c5426634e7929541ec2318f3dcf7e"} {
		t.Setenv("RAIL0_TOKEN", token)
		env, err := fromEnvironment("https://gateway.example")
		if err != nil || env.Token != "0x036CbD53842c5426634e7929541eC2318f3dCF7e" || env.Decimals != 6 || len(env.trust) != 0 {
			t.Fatalf("RAIL0_TOKEN=%s: %+v, %v; want the registry's USDC, 6 decimals, no pin", token, env, err)
		}
	}
	t.Setenv("RAIL0_CHAIN_ID", "11142220") // Celo Sepolia: its tokens are not published
	t.Setenv("RAIL0_TOKEN", "0x00000000000000000000000000000000000000bb")
	if _, err := fromEnvironment("https://gateway.example"); err == nil || !strings.Contains(err.Error(), "RAIL0_TOKEN_DECIMALS") {
		t.Fatalf("an unpublished token without RAIL0_TOKEN_DECIMALS: %v", err)
	}
	t.Setenv("RAIL0_TOKEN_DECIMALS", "6")
	env, err := fromEnvironment("https://gateway.example")
	if err != nil || env.Decimals != 6 || len(env.trust) != 1 {
		t.Fatalf("an unpublished token pinned with 6 decimals: %+v, %v", env, err)
	}
}
