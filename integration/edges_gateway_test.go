package integration_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0test"
	"github.com/rail0/rail0-go/signing"
)

// countingSigner counts sign-ins: each signs one SIWE message, and the
// client signs nothing else here.
type countingSigner struct {
	*signing.PrivateKeySigner
	messages atomic.Int32
}

func (s *countingSigner) SignDigest(ctx context.Context, digest [32]byte) ([]byte, error) {
	s.messages.Add(1)
	return s.PrivateKeySigner.SignDigest(ctx, digest)
}

// Against the in-process gateway: after the session of a client created
// WithSigner is revoked (logged out elsewhere), 40 concurrent calls all
// succeed and cost one sign-in between them.
func TestGatewayRevokedSessionCostsOneSignIn(t *testing.T) {
	gw := rail0test.NewServer()
	defer gw.Close()
	ctx := context.Background()
	acct, err := signing.NewPrivateKeySigner(gw.Merchant.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	signer := &countingSigner{PrivateKeySigner: acct}
	c, err := gw.Client(rail0.WithSigner(signer))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Payments.List(ctx, rail0.PaymentListParams{}); err != nil {
		t.Fatal(err)
	}
	session, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	elsewhere, err := gw.Client(rail0.WithToken(session.Token()))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := elsewhere.Auth.Logout(ctx); err != nil || !out.Revoked {
		t.Fatalf("Logout = %+v, %v", out, err)
	}

	const workers = 40
	errs := make(chan error, workers)
	for range workers {
		go func() {
			_, err := c.Payments.List(ctx, rail0.PaymentListParams{})
			errs <- err
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if n := signer.messages.Load(); n != 2 {
		t.Errorf("signed in %d times, want 2 (the first sign-in and one after the revocation)", n)
	}
}

// Against the in-process gateway, which would route GET /payments/.. to
// GET / and answer 200: dot-segment ids are refused before sending.
func TestGatewayDotSegmentIdsRefused(t *testing.T) {
	gw := rail0test.NewServer()
	defer gw.Close()
	ctx := context.Background()
	tok, err := gw.Login(ctx, gw.Buyer.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := gw.Client(rail0.WithToken(tok))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{".", ".."} {
		p, err := c.Payments.Get(ctx, id)
		var ve *rail0.ValidationError
		if !errors.As(err, &ve) || p != nil {
			t.Errorf("Payments.Get(%q) = %v, %v; want a *ValidationError", id, p, err)
		}
		if _, err := c.Webhooks.Delete(ctx, id); !errors.As(err, &ve) {
			t.Errorf("Webhooks.Delete(%q) = %v; want a *ValidationError", id, err)
		}
	}
}
