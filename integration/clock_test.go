package integration_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0test"
	"github.com/rail0/rail0-go/signing"
)

// Issue 22 item 4, end to end: against the in-process gateway with its
// clock ten minutes ahead of (or behind) the client's, a client created
// WithSigner signs in and works, because it dates the SIWE Issued At by the
// gateway's clock, learned from the Date of the nonce's answer. It failed
// with 422 invalid_siwe ("Issued At is too far from the current time").
func TestSignInWithTheGatewayClockTenMinutesOff(t *testing.T) {
	for _, offset := range []time.Duration{10 * time.Minute, -10 * time.Minute} {
		t.Run(fmt.Sprint("gateway ", offset), func(t *testing.T) {
			clock := rail0test.NewManualClock(time.Now().Add(offset))
			gw := rail0test.NewServer(rail0test.WithoutRateLimits(), rail0test.WithClock(clock))
			defer gw.Close()
			key, err := signing.NewPrivateKeySigner(gw.Buyer.PrivateKey)
			if err != nil {
				t.Fatal(err)
			}
			c, err := gw.Client(rail0.WithSigner(key))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			sess, err := c.Session(ctx)
			if err != nil {
				t.Fatalf("sign-in with the gateway %v away: %v", offset, err)
			}
			if !sess.ExpiresAt.After(clock.Now()) {
				t.Errorf("session expires at %v, the gateway's time is %v", sess.ExpiresAt, clock.Now())
			}
			if got := c.ClockOffset(); (got - offset).Abs() > 5*time.Second {
				t.Errorf("ClockOffset = %v, want about %v", got, offset)
			}
			if _, err := c.Payments.Create(ctx, rail0.PaymentCreateParams{ChainID: gw.ChainID, Mode: rail0.ModeAuthorize,
				Amount: "1.00", Token: gw.Token, Payer: gw.Buyer.Address, Payee: gw.Merchant.Address}); err != nil {
				t.Fatalf("a call after the sign-in: %v", err)
			}
		})
	}
}
