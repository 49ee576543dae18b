// Command dispute shows a buyer opening and closing a dispute on a captured
// payment. The merchant sees it in its dispute list. Disputes move no
// funds. They are an on-chain signal the merchant answers off chain.
//
// It runs against the embedded rail0test gateway by default. Set
// RAIL0_BASE_URL to use a real one (see examples/internal/demo).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/examples/internal/demo"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "dispute:", err)
		os.Exit(1)
	}
}

// reason is a bytes32 dispute reason: the buyer's own code for "item not
// received".
const reason = "0x6974656d5f6e6f745f7265636569766564000000000000000000000000000000"

func run(ctx context.Context, w io.Writer) error {
	env, err := demo.Setup()
	if err != nil {
		return err
	}
	defer env.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	fmt.Fprintln(w, "gateway:", env.Where())

	buyer, merchant, err := env.SignIn(ctx)
	if err != nil {
		return err
	}

	// A captured escrow payment.
	p, err := buyer.Payments.Create(ctx, rail0.PaymentCreateParams{
		ChainID: env.ChainID, Mode: rail0.ModeAuthorize, Amount: "30.00", Token: env.Token,
		Payer: env.Buyer.Address(), Payee: env.Merchant.Address(),
	})
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if _, err := buyer.Payments.PayerSign(ctx, p.ID, rail0.PaymentPayerSignParams{}); err != nil {
		return err
	}
	confirm := func(c *rail0.Client, what string, tx *rail0.Transaction, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if _, err := c.Payments.WaitForTransaction(ctx, p.ID, tx.ID, rail0.PaymentWaitForTransactionParams{
			TransactionHash: *tx.TransactionHash, // the hash sent: only that row counts
			PollInterval:    demo.PollInterval,
			MaxPollInterval: demo.MaxPollInterval,
		}); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		cur, err := c.Payments.Get(ctx, p.ID)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s confirmed: payment %s, disputed %v\n", what, cur.Status, cur.Disputed)
		return nil
	}
	tx, err := merchant.Payments.Authorize(ctx, p.ID, rail0.PaymentAuthorizeParams{})
	if err := confirm(merchant, "authorize", tx, err); err != nil {
		return err
	}
	tx, err = merchant.Payments.Capture(ctx, p.ID, rail0.PaymentCaptureParams{Amount: "30.00"})
	if err := confirm(merchant, "capture", tx, err); err != nil {
		return err
	}

	// The buyer (payer) opens a dispute; the transaction is theirs to sign.
	tx, err = buyer.Payments.Dispute(ctx, p.ID, rail0.PaymentDisputeParams{Reason: reason})
	if err := confirm(buyer, "dispute", tx, err); err != nil {
		return err
	}
	// The merchant sees it among its open disputes, with the payment.
	for d, err := range merchant.Disputes.All(ctx, rail0.DisputeListParams{Status: rail0.DisputeOpen}) {
		if err != nil {
			return fmt.Errorf("listing disputes: %w", err)
		}
		fmt.Fprintf(w, "merchant sees an open dispute on a %s payment of %s\n", d.Payment.Status, env.Amount(d.Payment.Amount))
	}
	// Settled off chain: the buyer closes it.
	tx, err = buyer.Payments.CloseDispute(ctx, p.ID, rail0.PaymentCloseDisputeParams{})
	if err := confirm(buyer, "close dispute", tx, err); err != nil {
		return err
	}
	page, err := merchant.Payments.ListDisputes(ctx, p.ID, rail0.PaymentListDisputesParams{})
	if err != nil {
		return err
	}
	for _, d := range page.Items {
		fmt.Fprintf(w, "dispute %s, closed by %s\n", d.Status, d.ClosedBy)
	}
	return nil
}
