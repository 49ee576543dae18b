package registry_test

import (
	"fmt"

	"github.com/rail0/rail0-go/registry"
)

func ExampleLookupStablecoin() {
	usdc, ok := registry.LookupStablecoin(84532, "USDC") // Base Sepolia
	fmt.Println(usdc.Address, usdc.Decimals, ok)
	// Celo Sepolia's deployment is published, its tokens are not.
	_, ok = registry.LookupStablecoin(11142220, "USDC")
	fmt.Println(ok)
	// Output:
	// 0x036CbD53842c5426634e7929541eC2318f3dCF7e 6 true
	// false
}

func ExampleLookupChain() {
	arc, _ := registry.LookupChain(5042002)
	usdc, _ := registry.LookupStablecoin(5042002, "USDC")
	fmt.Printf("%s pays gas in %s with %d decimals; its ERC-20 %s has %d\n",
		arc.Name, arc.Native.Symbol, arc.Native.Decimals, usdc.Symbol, usdc.Decimals)
	// Output:
	// Arc Testnet pays gas in USDC with 18 decimals; its ERC-20 USDC has 6
}
