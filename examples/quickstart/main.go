// Command quickstart runs one escrow payment against rail0test.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0test"
	"github.com/rail0/rail0-go/signing"
)

func main() {
	ctx := context.Background()
	srv := rail0test.NewServer() // an in-process gateway on a simulated chain
	defer srv.Close()
	buyerKey, err := signing.NewPrivateKeySigner(srv.Buyer.PrivateKey)
	check(err)
	merchantKey, err := signing.NewPrivateKeySigner(srv.Merchant.PrivateKey)
	check(err)
	// Each client signs in with its key; srv.Pins() trusts the test contract.
	buyer, err := rail0.NewClient(srv.URL, rail0.WithSigner(buyerKey), srv.Pins())
	check(err)
	merchant, err := rail0.NewClient(srv.URL, rail0.WithSigner(merchantKey), srv.Pins())
	check(err)

	p, err := buyer.Payments.Create(ctx, rail0.PaymentCreateParams{ChainID: srv.ChainID, Mode: rail0.ModeAuthorize,
		Amount: "25.00", Token: rail0test.TestTokenAddress, Payer: buyerKey.Address(), Payee: merchantKey.Address()})
	check(err)
	_, err = buyer.Payments.PayerSign(ctx, p.ID, rail0.PaymentPayerSignParams{}) // checked, then signed
	check(err)
	order := rail0.Expectation{Payer: buyerKey.Address(), Amount: "25.00"} // what the merchant knows
	tx, err := merchant.Payments.Authorize(ctx, p.ID, rail0.PaymentAuthorizeParams{Expect: order})
	check(err)
	_, err = merchant.Payments.WaitForTransaction(ctx, p.ID, tx.ID,
		rail0.PaymentWaitForTransactionParams{TransactionHash: *tx.TransactionHash}) // until mined
	check(err)
	tx, err = merchant.Payments.Capture(ctx, p.ID, rail0.PaymentCaptureParams{Amount: "10.00", Expect: order})
	check(err)
	fmt.Println("authorized 25.00, capture of 10.00:", tx.Status)
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
