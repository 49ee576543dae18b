// Command refund settles a charge and refunds it in full.
// Payments.Refund runs both refund phases. The first is an EIP-3009
// ReceiveWithAuthorization the merchant signs. The second is the
// transaction that carries it. Each artifact is checked against the
// request before signing. A second refund is refused with a typed code
// before any gas is spent.
//
// It runs against the embedded rail0test gateway by default. Set
// RAIL0_BASE_URL to use a real one (see examples/internal/demo).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/examples/internal/demo"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "refund:", err)
		os.Exit(1)
	}
}

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

	// A settled charge to refund.
	p, err := buyer.Payments.Create(ctx, rail0.PaymentCreateParams{
		ChainID: env.ChainID, Mode: rail0.ModeCharge, Amount: "20.00", Token: env.Token,
		Payer: env.Buyer.Address(), Payee: env.Merchant.Address(),
	})
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if _, err := buyer.Payments.PayerSign(ctx, p.ID, rail0.PaymentPayerSignParams{}); err != nil {
		return fmt.Errorf("payer signature: %w", err)
	}
	if _, err := merchant.Payments.Charge(ctx, p.ID, rail0.PaymentChargeParams{}); err != nil {
		return fmt.Errorf("charge: %w", err)
	}
	if p, err = merchant.Payments.WaitForStatus(ctx, p.ID, rail0.PaymentWaitForStatusParams{
		Statuses: []rail0.PaymentStatus{rail0.StatusCharged}, PollInterval: demo.PollInterval, MaxPollInterval: demo.MaxPollInterval}); err != nil {
		return err
	}
	fmt.Fprintf(w, "charged %s, refundable %s\n", env.Amount(p.Amount), env.Amount(p.RefundableAmount))

	// Both refund phases in one call. First the merchant's
	// ReceiveWithAuthorization is checked and signed: exactly 20.00, back to
	// the contract, on this chain and token. Then the refund transaction is
	// checked to carry that amount and that signature, signed and submitted.
	// The refund is bound to the payer the merchant's own order record names
	// (Expect.Payer). It is never bound to what a read of the gateway says.
	// A payment of another payer is refused before anything is signed.
	tx, err := merchant.Payments.Refund(ctx, p.ID, rail0.PaymentRefundParams{Amount: "20.00",
		Expect: rail0.Expectation{Payer: env.Buyer.Address()}})
	if err != nil {
		return fmt.Errorf("refund: %w", err)
	}
	fmt.Fprintln(w, "refund transaction", tx.Status)
	if _, err := merchant.Payments.WaitForTransaction(ctx, p.ID, tx.ID, rail0.PaymentWaitForTransactionParams{
		TransactionHash: *tx.TransactionHash, // the hash sent: only that row counts
		PollInterval:    demo.PollInterval,
		MaxPollInterval: demo.MaxPollInterval,
	}); err != nil {
		return err
	}
	if p, err = merchant.Payments.Get(ctx, p.ID); err != nil {
		return err
	}
	fmt.Fprintf(w, "payment %s, refundable %s\n", p.Status, env.Amount(p.RefundableAmount))

	// Refunding again is refused before any gas is spent, with a typed code.
	_, err = merchant.Payments.PrepareRefund(ctx, p.ID, rail0.PaymentPrepareRefundParams{Amount: "1.00"})
	var apiErr *rail0.APIError
	if errors.As(err, &apiErr) {
		fmt.Fprintf(w, "a second refund is refused: %d %s (%s)\n", apiErr.StatusCode, apiErr.Code, apiErr.Hint())
	}
	return nil
}
