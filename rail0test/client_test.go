package rail0test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	rail0 "github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/signing"
)

func TestClientHelperTalksToTheServer(t *testing.T) {
	clock := NewManualClock(epoch)
	srv := NewServer(WithClock(clock), WithRateLimits(Limit{Requests: 100}, Limit{Requests: 2}))
	defer srv.Close()
	ctx := context.Background()
	tok, err := srv.Login(ctx, srv.Buyer.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := srv.Client(rail0.WithToken(tok))
	if err != nil {
		t.Fatal(err)
	}
	params := rail0.PaymentCreateParams{ChainID: srv.ChainID, Mode: "authorize", Amount: "25.00", Token: srv.Token,
		Payer: srv.Buyer.Address, Payee: srv.Merchant.Address, IdempotencyKey: "sdk-1"}
	p, err := c.Payments.Create(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != "unsigned" || p.Amount != "25000000" || len(p.SigningPayload) == 0 || p.Replayed {
		t.Fatalf("created = %+v", p)
	}
	again, err := c.Payments.Create(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Replayed || again.ID != p.ID {
		t.Fatalf("replay = %+v", again)
	}
	// The third session request in the window is throttled: the SDK sees a typed
	// 429 carrying the whole period.
	_, err = c.Payments.Get(ctx, p.ID)
	var apiErr *rail0.APIError
	if !errors.Is(err, rail0.ErrRateLimited) || !errors.As(err, &apiErr) || apiErr.RetryAfter != 60*time.Second || apiErr.RequestID == "" {
		t.Fatalf("third request: %v", err)
	}
	if n := srv.Ledger.Count(routeCreatePayment, "sdk-1"); n != 2 {
		t.Fatalf("create ran %d times, want 2", n)
	}
	// The client now knows the session's window is closed for a minute of
	// its own clock, and answers its next call itself, not sent.
	_, err = c.Payments.Get(ctx, p.ID)
	if !errors.As(err, &apiErr) || !apiErr.NotSent {
		t.Fatalf("fourth request: %v, want a 429 not sent", err)
	}
	// The manual clock moves the server's clock only: a client that has
	// not heard the 429 finds the next window open.
	clock.Advance(time.Minute)
	fresh, err := srv.Client(rail0.WithToken(tok))
	if err != nil {
		t.Fatal(err)
	}
	got, err := fresh.Payments.Get(ctx, p.ID)
	if err != nil || got.ID != p.ID {
		t.Fatalf("Get after the window: %+v, %v", got, err)
	}
}

// TestSDKLoginAgainstServer signs in through the SDK's own SIWE code: its
// message layout, domain and URI defaults must be the ones this server accepts.
func TestSDKLoginAgainstServer(t *testing.T) {
	srv := NewServer(WithoutRateLimits())
	defer srv.Close()
	ctx := context.Background()
	for _, party := range []Party{srv.Merchant, srv.Buyer} {
		acc, err := signing.NewPrivateKeySigner(party.PrivateKey)
		if err != nil {
			t.Fatal(err)
		}
		c, err := srv.Client(rail0.WithSigner(acc))
		if err != nil {
			t.Fatal(err)
		}
		sess, err := c.Session(ctx)
		if err != nil {
			t.Fatalf("%s: sign-in: %v", party.Name, err)
		}
		if sess.Address != party.Address || (sess.AccountID != nil) != (party.AccountID != "") {
			t.Fatalf("%s: session = %+v", party.Name, sess)
		}
	}
}

// A gateway whose operator chose another sign-in chain refuses the SDK's
// default messages; rail0.WithSignIn places them on that chain, for the
// client's own sign-in and for its wallet proofs.
func TestSDKSignInOnAnotherChain(t *testing.T) {
	srv := NewServer(WithoutRateLimits(), WithSignInChainID(TestChainID))
	defer srv.Close()
	ctx := context.Background()
	acc, err := signing.NewPrivateKeySigner(srv.Merchant.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := srv.Client(rail0.WithSigner(acc))
	if err != nil {
		t.Fatal(err)
	}
	var apiErr *rail0.APIError
	if _, err := plain.Session(ctx); !errors.As(err, &apiErr) || apiErr.Code != rail0.CodeInvalidSIWE {
		t.Fatalf("sign-in on chain 1 against a chain-%d gateway: %v, want invalid_siwe", TestChainID, err)
	}
	c, err := srv.Client(rail0.WithSigner(acc), rail0.WithSignIn(rail0.SignIn{ChainID: TestChainID}))
	if err != nil {
		t.Fatal(err)
	}
	sess, err := c.Session(ctx)
	if err != nil {
		t.Fatalf("sign-in with WithSignIn: %v", err)
	}
	wallet, err := signing.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	proof, err := c.Auth.WalletProof(ctx, rail0.AuthWalletProofParams{Wallet: wallet})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Wallets.Create(ctx, *sess.AccountID, rail0.WalletCreateParams{WalletProof: *proof}); err != nil {
		t.Fatalf("registering a wallet proven on chain %d: %v", TestChainID, err)
	}
}

// A client that does not trust the server's contract refuses its payments
// with an *UntrustedError that names srv.Pins(), the option that trusts it,
// rather than WithTrustedContracts with an address to copy. The root knows
// rail0test's contract only as a copy of ContractAddress: this holds the
// two together.
func TestUntrustedErrorNamesPins(t *testing.T) {
	srv := NewServer(WithoutRateLimits())
	defer srv.Close()
	ctx := context.Background()
	key, err := signing.NewPrivateKeySigner(srv.Buyer.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rail0.NewClient(srv.URL, rail0.WithHTTPClient(srv.HTTPClient()), rail0.WithSigner(key))
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Payments.Create(ctx, rail0.PaymentCreateParams{ChainID: srv.ChainID, Mode: rail0.ModeAuthorize,
		Amount: "5.00", Token: srv.Token, Payer: srv.Buyer.Address, Payee: srv.Merchant.Address})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Payments.PayerSign(ctx, p.ID, rail0.PaymentPayerSignParams{})
	var ue *rail0.UntrustedError
	if !errors.As(err, &ue) || !strings.EqualFold(ue.Got, ContractAddress) {
		t.Fatalf("PayerSign without Pins: %v, want an *UntrustedError on rail0test's contract", err)
	}
	if !strings.Contains(err.Error(), "srv.Pins()") {
		t.Errorf("the error does not name srv.Pins(): %v", err)
	}
}

// Create on a client without WithSigner (nor a token) is the gateway's 401,
// and its error names WithSigner.
func TestCreateWithoutCredentialsNamesWithSigner(t *testing.T) {
	srv := NewServer(WithoutRateLimits())
	defer srv.Close()
	c, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Payments.Create(context.Background(), rail0.PaymentCreateParams{ChainID: srv.ChainID, Mode: rail0.ModeAuthorize,
		Amount: "5.00", Token: srv.Token, Payer: srv.Buyer.Address, Payee: srv.Merchant.Address})
	var apiErr *rail0.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
		t.Fatalf("Create without credentials: %v, want the gateway's 401", err)
	}
	if !strings.Contains(err.Error(), "WithSigner") || !strings.Contains(apiErr.Hint(), "WithSigner") {
		t.Errorf("the 401 does not name WithSigner: %v (hint %q)", err, apiErr.Hint())
	}
}
