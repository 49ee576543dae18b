// Package rail0 is the Go client for the RAIL0 gateway, the REST API in
// front of an EVM escrow contract. Stablecoin payments get a card-style
// lifecycle: authorize, capture, void, release, refund, charge, dispute.
//
// # Getting started
//
// A buyer and a merchant on rail0test, from examples/quickstart:
//
//	// Each client signs in with its key; srv.Pins() trusts the test contract.
//	buyer, err := rail0.NewClient(srv.URL, rail0.WithSigner(buyerKey), srv.Pins())
//	check(err)
//	merchant, err := rail0.NewClient(srv.URL, rail0.WithSigner(merchantKey), srv.Pins())
//	check(err)
//	p, err := buyer.Payments.Create(ctx, rail0.PaymentCreateParams{ChainID: srv.ChainID, Mode: rail0.ModeAuthorize,
//		Amount: "25.00", Token: rail0test.TestTokenAddress, Payer: buyerKey.Address(), Payee: merchantKey.Address()})
//	check(err)
//	_, err = buyer.Payments.PayerSign(ctx, p.ID, rail0.PaymentPayerSignParams{}) // checked, then signed
//	check(err)
//	order := rail0.Expectation{Payer: buyerKey.Address(), Amount: "25.00"} // what the merchant knows
//	tx, err := merchant.Payments.Authorize(ctx, p.ID, rail0.PaymentAuthorizeParams{Expect: order})
//	check(err)
//	_, err = merchant.Payments.WaitForTransaction(ctx, p.ID, tx.ID,
//		rail0.PaymentWaitForTransactionParams{TransactionHash: *tx.TransactionHash}) // until mined
//	check(err)
//	tx, err = merchant.Payments.Capture(ctx, p.ID, rail0.PaymentCaptureParams{Amount: "10.00", Expect: order})
//
// The flows (PayerSign, Authorize, Charge, Capture, Void, Release, Refund,
// Dispute, CloseDispute) each read, prepare, check, sign and submit one
// step. Nothing the gateway hands over is signed before it is checked.
// Programs that sign elsewhere use Prepare, VerifyTransaction or
// VerifyPayload, then Submit.
//
// # Errors and retries
//
// A non-2xx answer is an *APIError. A write that may have run is an
// *OutcomeUnknownError, never retried blindly. A 429 is retried only
// WithRetryOn429(true), never before min(RetryAfter, RetryAfterCap). Other
// failures are retried when the request never left or is safe to repeat.
// Client.With gives a kind of caller its own settings. The repository's
// docs/retries.md has the contract in full.
package rail0
