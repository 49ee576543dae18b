// Command charge runs a one-step payment.
// The buyer opens it in charge mode and signs. The merchant submits the
// charge. The funds go straight to the merchant, with no escrow.
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
		fmt.Fprintln(os.Stderr, "charge:", err)
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

	// Your own key makes the creation safe to replay, even across restarts.
	params := rail0.PaymentCreateParams{
		ChainID: env.ChainID, Mode: rail0.ModeCharge, Amount: "12.34", Token: env.Token,
		Payer: env.Buyer.Address(), Payee: env.Merchant.Address(), IdempotencyKey: "order-2001",
	}
	p, err := buyer.Payments.Create(ctx, params)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	fmt.Fprintf(w, "created %s payment of %s: %s\n", p.Mode, env.Amount(p.Amount), p.Status)
	again, err := buyer.Payments.Create(ctx, params)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	fmt.Fprintf(w, "replaying the same Idempotency-Key returns the same payment: %v (replayed %v)\n", again.ID == p.ID, again.Replayed)

	if _, err := buyer.Payments.PayerSign(ctx, p.ID, rail0.PaymentPayerSignParams{}); err != nil {
		return fmt.Errorf("payer signature: %w", err)
	}
	tx, err := merchant.Payments.Charge(ctx, p.ID, rail0.PaymentChargeParams{})
	if err != nil {
		return fmt.Errorf("charge: %w", err)
	}
	fmt.Fprintln(w, "charge submitted:", tx.Status)
	p, err = merchant.Payments.WaitForStatus(ctx, p.ID, rail0.PaymentWaitForStatusParams{
		Statuses: []rail0.PaymentStatus{rail0.StatusCharged}, PollInterval: demo.PollInterval, MaxPollInterval: demo.MaxPollInterval})
	if err != nil {
		return fmt.Errorf("waiting for the charge: %w", err)
	}
	fmt.Fprintf(w, "payment %s; refundable %s\n", p.Status, env.Amount(p.RefundableAmount))
	return nil
}
