package signing_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/ethereum/go-ethereum/common"

	"github.com/rail0/rail0-go/signing"
)

// A well-known test key (the first Hardhat/Anvil account). Never use it for
// real funds.
const testKey = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"

func ExampleNewPrivateKeySigner() {
	s, err := signing.NewPrivateKeySigner(testKey)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.Address().Hex())
	// Printing a signer never shows the key.
	fmt.Printf("%v\n%#v\n", s, s)
	// Output:
	// 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266
	// PrivateKeySigner(0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266)
	// &signing.PrivateKeySigner{Address: "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"}
}

func ExampleSignMessage() {
	s, err := signing.NewPrivateKeySigner(testKey)
	if err != nil {
		log.Fatal(err)
	}
	// In a real login the message comes from rail0.SIWEMessage.
	sig, err := signing.SignMessage(context.Background(), s, "Sign in to RAIL0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sig)
	signer, err := signing.RecoverMessageSigner("Sign in to RAIL0", sig)
	fmt.Println(signer.Hex(), err)
	// Output:
	// 0x3c678d192169057115a5ce2a195a1b3314eed13d16b5cdd005e6543ae61dadba20ab38657da84023b20ccf3fb1503c62c7c3682048f678bca41f5112715f88ab1b
	// 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266 <nil>
}

// paymentPayload is the shape of PaymentDetail.signing_payload: the payer
// authorizes 25 USDC (6 decimals) on Base Sepolia.
const paymentPayload = `{
	"types": {
		"EIP712Domain": [
			{"name": "name", "type": "string"},
			{"name": "version", "type": "string"},
			{"name": "chainId", "type": "uint256"},
			{"name": "verifyingContract", "type": "address"}
		],
		"TransferWithAuthorization": [
			{"name": "from", "type": "address"},
			{"name": "to", "type": "address"},
			{"name": "value", "type": "uint256"},
			{"name": "validAfter", "type": "uint256"},
			{"name": "validBefore", "type": "uint256"},
			{"name": "nonce", "type": "bytes32"}
		]
	},
	"primaryType": "TransferWithAuthorization",
	"domain": {
		"name": "USDC",
		"version": "2",
		"chainId": 84532,
		"verifyingContract": "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
	},
	"message": {
		"from": "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
		"to": "0x7c1E3b52fA9d4C26e0a1F83b5D9e6A4c2B0f8E31",
		"value": "25000000",
		"validAfter": 0,
		"validBefore": 1789985700,
		"nonce": "0x9f2c4e1a7b3d5c8e0f6a2b4d6c8e0a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e2f"
	}
}`

func ExampleSignPayloadForChain() {
	s, err := signing.NewPrivateKeySigner(testKey)
	if err != nil {
		log.Fatal(err)
	}
	// The payment was created on Base Sepolia; refuse a payload for any other chain.
	sig, err := signing.SignPayloadForChain(context.Background(), s, json.RawMessage(paymentPayload), 84532)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(sig) // send with PUT /payments/{id}/sign
	// Output:
	// 0x8035514534828961f61e3ce120d1ff5316a484f590643af6c4ec62ed7d5568ec3f2ddf79e35c7384f378c64ffa8bfdb3d7941e108caec2048a5cd41f3b42266a1c
}

func ExampleSignPayload_refused() {
	s, err := signing.NewPrivateKeySigner(testKey)
	if err != nil {
		log.Fatal(err)
	}
	// A payload whose primaryType this SDK does not know is refused before
	// anything is signed.
	var doc map[string]any
	if err := json.Unmarshal([]byte(paymentPayload), &doc); err != nil {
		log.Fatal(err)
	}
	doc["primaryType"] = "Permit"
	payload, _ := json.Marshal(doc)

	_, err = signing.SignPayload(context.Background(), s, payload)
	var pe *signing.PayloadError
	fmt.Println(errors.Is(err, signing.ErrUnknownPrimaryType), errors.As(err, &pe))
	fmt.Println(err)
	// Output:
	// true true
	// signing: signing payload refused: primaryType "Permit" is not TransferWithAuthorization or ReceiveWithAuthorization
}

func ExampleParsePayload() {
	p, err := signing.ParsePayload(json.RawMessage(paymentPayload))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.PrimaryType, p.Domain.ChainID, p.Value)
	fmt.Println(p.Digest.Hex())
	// Output:
	// TransferWithAuthorization 84532 25000000
	// 0x19f8804ee95c88fd5cf9dda200ed6c2c0f04e1c0643a350e4ad3fd4a18651df2
}

// unsignedCapture is Transaction.unsigned_transaction of a prepared capture.
const unsignedCapture = `{"chain_id":84532,"nonce":7,"to":"0x7c1E3b52fA9d4C26e0a1F83b5D9e6A4c2B0f8E31","value":"0","data":"0xa0e7c9f4","gas_limit":120000,"max_priority_fee_per_gas":"1000000","max_fee_per_gas":"1500000000"}`

func ExampleSignTransaction() {
	s, err := signing.NewPrivateKeySigner(testKey)
	if err != nil {
		log.Fatal(err)
	}
	raw, err := signing.SignTransaction(context.Background(), s, unsignedCapture)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(raw) // send as signed_transaction to POST /payments/{id}/capture
	sender, err := signing.RecoverTransactionSender(raw)
	fmt.Println(sender.Hex(), err)
	// Output:
	// 0x02f87183014a3407830f42408459682f008301d4c0947c1e3b52fa9d4c26e0a1f83b5d9e6a4c2b0f8e318084a0e7c9f4c001a04f58d9618f37251a7f2cafc1a5c4e2abd0d8e8e3b6281c5b12904b20cc546400a021e139348b892af114b71648fb57bc30daa0626c2a1b6d90a2236ef7b5c0e8d6
	// 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266 <nil>
}

func ExampleParseUnsignedTransaction() {
	u, err := signing.ParseUnsignedTransaction(unsignedCapture)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(u.ChainID, u.Nonce, u.To.Hex(), u.GasLimit, u.MaxFeePerGas)

	_, err = signing.ParseUnsignedTransaction(strings.Replace(unsignedCapture, `"nonce":7`, `"nonce":-7`, 1))
	var te *signing.TransactionError
	if errors.As(err, &te) {
		fmt.Println(te.Field, errors.Is(err, signing.ErrNegative))
		fmt.Println(err)
	}
	// Output:
	// 84532 7 0x7C1E3b52fa9d4C26E0a1F83B5D9E6a4c2b0f8e31 120000 1500000000
	// nonce true
	// signing: invalid transaction: field "nonce": negative number (got -7)
}

func ExampleAccountFromPrivateKey() {
	acct, err := signing.AccountFromPrivateKey(testKey)
	if err != nil {
		log.Fatal(err)
	}
	// acct satisfies rail0.Signer: pass it to the client's login and payment
	// helpers.
	fmt.Println(acct.Address())
	fmt.Println(acct)
	// Output:
	// 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266
	// Account(0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266)
}

// remoteSigner stands for an HSM or KMS adapter: it knows its address and asks
// the device to sign digests. Here the "device" is a PrivateKeySigner.
type remoteSigner struct {
	addr   common.Address
	device *signing.PrivateKeySigner
}

func (r remoteSigner) Address() common.Address { return r.addr }

func (r remoteSigner) SignDigest(ctx context.Context, digest [32]byte) ([]byte, error) {
	// A real adapter would call the KMS with ctx, convert its DER answer to
	// r ‖ s, and work out v in {0, 1}.
	return r.device.SignDigest(ctx, digest)
}

func ExampleSigner() {
	device, err := signing.NewPrivateKeySigner(testKey)
	if err != nil {
		log.Fatal(err)
	}
	acct := signing.NewAccount(remoteSigner{addr: device.Address(), device: device})
	sig, err := acct.SignTransaction(context.Background(), unsignedCapture)
	fmt.Println(sig[:4], len(sig), err)

	// An adapter configured with the wrong key is caught before anything is sent.
	wrong := signing.NewAccount(remoteSigner{addr: common.HexToAddress("0x0000000000000000000000000000000000000001"), device: device})
	_, err = wrong.SignMessage(context.Background(), "hello")
	fmt.Println(errors.Is(err, signing.ErrInvalidSignature))
	// Output:
	// 0x02 234 <nil>
	// true
}
