package integration_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0test"
)

// A payer whose key lives in a browser wallet: the server checks the
// gateway's payload, hands the wallet the typed data VerifyPayload returns
// (never the gateway's bytes), and stores the signature that comes back.
func ExamplePaymentsService_VerifyPayload() {
	srv := rail0test.NewServer()
	defer srv.Close()
	ctx := context.Background()
	buyer := signedIn(ctx, srv, srv.Buyer) // no signer: the key is in the browser
	order := rail0.PaymentCreateParams{ChainID: srv.ChainID, Mode: rail0.ModeAuthorize,
		Amount: "25.00", Token: srv.Token, Payer: srv.Buyer.Address, Payee: srv.Merchant.Address}
	payment, err := buyer.Payments.Create(ctx, order)
	if err != nil {
		fmt.Println(err)
		return
	}

	// State the order you took, from your own records: the payment is the
	// gateway's word, and another amount or payee is refused.
	intent := rail0.Intent{Expect: rail0.Expectation{ChainID: order.ChainID, Mode: order.Mode,
		Token: order.Token, Payee: order.Payee, Amount: order.Amount}}
	verified, err := buyer.Payments.VerifyPayload(ctx, payment, intent, payment.SigningPayload)
	if err != nil {
		fmt.Println(err) // an *ArtifactError: nothing to sign
		return
	}
	// Send verified.TypedData to the browser, which signs exactly that:
	// ethereum.request({method: "eth_signTypedData_v4", params: [payer, typedData]})
	signature := browserWallet(srv, verified.TypedData)

	payment, err = buyer.Payments.SubmitSignature(ctx, payment.ID, rail0.PaymentSubmitSignatureParams{Signature: signature})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(payment.Status)
	// Output: signed
}

// browserWallet stands in for eth_signTypedData_v4 in the example: it
// hashes the typed data it is given with go-ethereum, as a wallet does,
// and signs that with the payer's key.
func browserWallet(srv *rail0test.Server, typedData json.RawMessage) string {
	var td apitypes.TypedData
	if err := json.Unmarshal(typedData, &td); err != nil {
		panic(err)
	}
	digest, _, err := apitypes.TypedDataAndHash(td)
	if err != nil {
		panic(err)
	}
	sig, err := crypto.Sign(digest, srv.Buyer.Key())
	if err != nil {
		panic(err)
	}
	sig[64] += 27
	return hexutil.Encode(sig)
}
