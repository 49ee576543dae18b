// Command authorize-capture runs an escrow payment end to end.
// The buyer opens it and signs the EIP-3009 payload. The merchant
// authorizes it, which moves the funds into escrow. Then the merchant
// captures part of it and refunds part of what it captured.
//
// It runs against the embedded rail0test gateway by default, offline.
// To run it against a real gateway, set RAIL0_BASE_URL and the keys
// described in examples/internal/demo.
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
		fmt.Fprintln(os.Stderr, "authorize-capture:", err)
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

	buyer, session, err := env.Client(ctx, env.Buyer)
	if err != nil {
		return fmt.Errorf("buyer sign-in: %w", err)
	}
	merchant, _, err := env.Client(ctx, env.Merchant)
	if err != nil {
		return fmt.Errorf("merchant sign-in: %w", err)
	}
	fmt.Fprintf(w, "buyer %s signed in (merchant account: %v)\n", session.Address, session.HasAccount())

	// The buyer opens the payment: 25.00 held in escrow until captured.
	p, err := buyer.Payments.Create(ctx, rail0.PaymentCreateParams{
		ChainID: env.ChainID, Mode: rail0.ModeAuthorize, Amount: "25.00", Token: env.Token,
		Payer: env.Buyer.Address(), Payee: env.Merchant.Address(),
		Description: "Order 1042", Metadata: map[string]any{"order_id": "1042"},
	})
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	fmt.Fprintf(w, "created payment %s: %s\n", p.ID, p.Status)

	// The buyer signs the EIP-3009 authorization the gateway prepared.
	if p, err = buyer.Payments.PayerSign(ctx, p.ID, rail0.PaymentPayerSignParams{}); err != nil {
		return fmt.Errorf("payer signature: %w", err)
	}
	fmt.Fprintln(w, "payer signed:", p.Status)

	step := func(name string, tx *rail0.Transaction, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		tx, err = merchant.Payments.WaitForTransaction(ctx, p.ID, tx.ID, rail0.PaymentWaitForTransactionParams{
			TransactionHash: *tx.TransactionHash, // the hash sent: only that row counts
			PollInterval:    demo.PollInterval,
			MaxPollInterval: demo.MaxPollInterval,
		})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		cur, err := merchant.Payments.Get(ctx, p.ID)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s %s: payment %s, capturable %s, refundable %s\n", name, tx.Status, cur.Status,
			env.Amount(cur.CapturableAmount), env.Amount(cur.RefundableAmount))
		return nil
	}

	// The merchant states what it knows of the order on every step. A
	// gateway or a proxy may answer with another payment (another payer,
	// say). Such an answer is refused before anything is signed.
	order := rail0.Expectation{ChainID: env.ChainID, Token: env.Token, Amount: "25.00",
		Payer: env.Buyer.Address(), Payee: env.Merchant.Address()}

	// The merchant moves the funds into escrow, then captures 10.00 of them.
	tx, err := merchant.Payments.Authorize(ctx, p.ID, rail0.PaymentAuthorizeParams{Expect: order})
	if err := step("authorize", tx, err); err != nil {
		return err
	}
	tx, err = merchant.Payments.Capture(ctx, p.ID, rail0.PaymentCaptureParams{Amount: "10.00", Expect: order})
	if err := step("capture 10.00", tx, err); err != nil {
		return err
	}
	// A partial refund of what was captured: two-phase, signed by the merchant.
	tx, err = merchant.Payments.Refund(ctx, p.ID, rail0.PaymentRefundParams{Amount: "4.00", Expect: order})
	if err := step("refund 4.00", tx, err); err != nil {
		return err
	}
	fmt.Fprintln(w, "done")
	return nil
}
