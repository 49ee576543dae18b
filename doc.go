// Package rail0 is the Go client for the RAIL0 gateway, the REST API in
// front of an EVM escrow contract. Stablecoin payments get a card-style
// lifecycle: authorize, capture, void, release, refund, charge, dispute.
//
// # Getting started
//
// A buyer and a merchant on rail0test, with its demo keys as
// signing.PrivateKeySigner values (examples/quickstart in the repository):
//
//	// Each client signs in with its key; srv.Pins() trusts the test contract.
//	buyer, err := rail0.NewClient(srv.URL, rail0.WithSigner(buyerKey), srv.Pins())
//	check(err)
//	merchant, err := rail0.NewClient(srv.URL, rail0.WithSigner(merchantKey), srv.Pins())
//	check(err)
//
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
// The flows serve most programs: on a client WithSigner, PayerSign,
// Authorize, Charge, Capture, Void, Release, Refund, Dispute and
// CloseDispute each read, prepare, check, sign and submit one step. Nothing
// the gateway hands over is signed before it is checked. Programs that sign
// elsewhere use Prepare, VerifyTransaction or VerifyPayload, then Submit.
//
// # Errors and retries
//
// A non-2xx answer is an *APIError; a write that may have run is an
// *OutcomeUnknownError. The retry contract, in short:
//
//   - APIError.RetryAfter is always the server's instruction, uncapped.
//   - 429s are retried only WithRetryOn429(true), on any operation.
//   - A server-given wait is min(RetryAfter, RetryAfterCap) plus U[0, 10%)
//     of it. Pacing may delay a retry, never advance it.
//   - A wait without an instruction is a full-jitter guess; an earlier
//     answer's header does not pace it.
//   - A wait that does not fit WithMaxRetryWait or the deadline is not
//     started: the answer comes back at once.
//   - Other failures get up to WithMaxRetries retries in a client-wide
//     budget, when the request never left or is safe to repeat.
//
// Client.With gives a kind of caller its own retry settings. The repository's
// docs/retries.md has the contract in full; docs/ has the rest.
package rail0
