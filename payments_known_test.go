package rail0

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"testing"
	"time"

	"github.com/rail0/rail0-go/internal/verify"
)

// setRefundable moves the fake gateway's refundable balance, as the chain
// does when a capture or a refund (this client's or another's) confirms.
func (g *artGateway) setRefundable(amount string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.payment.RefundableAmount = amount
}

// capturedOnce is the payee's client of a fresh fake gateway after one
// capture of 1.00, which read the payment: the client knows its terms.
func capturedOnce(t *testing.T) (*artGateway, *Client) {
	t.Helper()
	g := newArtGateway(t, ModeAuthorize, StatusPartiallyCaptured)
	c := g.client(g.payee)
	if _, err := c.Payments.Capture(context.Background(), artPayment, PaymentCaptureParams{Amount: "1.00"}); err != nil {
		t.Fatal(err)
	}
	return g, c
}

// Issue 21, item 3: a client reads a payment's terms once; every later step
// on it is a prepare and a submit. A refund whose tracked balance is right
// reads nothing; one whose balance another client moved reads once, and its
// payload is checked against that read before anything is signed.
func TestFlowsReadAPaymentOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := newArtGateway(t, ModeAuthorize, StatusPartiallyCaptured) // refundable 10.00
	c := g.client(g.payee)
	expect := Expectation{Payer: artPayer}
	want := func(step string, reads, prepares int) {
		t.Helper()
		if r, p := g.counts(); r != reads || p != prepares {
			t.Fatalf("after %s: %d reads and %d prepares, want %d and %d", step, r, p, reads, prepares)
		}
	}
	if _, err := c.Payments.Capture(ctx, artPayment, PaymentCaptureParams{Amount: "1.00"}); err != nil {
		t.Fatal(err)
	}
	want("the first capture", 1, 1)
	if _, err := c.Payments.Capture(ctx, artPayment, PaymentCaptureParams{Amount: "2.00"}); err != nil {
		t.Fatal(err)
	}
	want("a second capture", 1, 2)
	g.setRefundable("13000000") // both captures confirmed

	signed := g.payee.Signed.Load()
	if _, err := c.Payments.Refund(ctx, artPayment, PaymentRefundParams{Amount: "4.00", Expect: expect}); err != nil {
		t.Fatal(err)
	}
	want("a refund with the balance tracked", 1, 4)
	g.setRefundable("9000000") // the refund confirmed

	g.setRefundable("14000000") // another client captured 5.00 meanwhile
	if _, err := c.Payments.Refund(ctx, artPayment, PaymentRefundParams{Amount: "1.00", Expect: expect}); err != nil {
		t.Fatalf("a refund with a stale balance: %v", err)
	}
	want("a refund with a stale balance", 2, 6)
	if n := g.payee.Signed.Load() - signed; n != 4 {
		t.Errorf("two refunds signed %d digests, want 4: an authorization and a transaction each", n)
	}
	if got := g.submitted(); len(got) != 4 || got[2] != "POST refund" || got[3] != "POST refund" {
		t.Errorf("submitted %v", got)
	}
}

// A refund's payload whose nonce disagrees with the balance the client
// tracks and with the balance one read gives is refused, having read once
// and signed nothing.
func TestStaleBalanceReadsOnceAndFailsClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g, c := capturedOnce(t)
	g.mu.Lock()
	g.tamperPayload = func(d map[string]any) { msg(d)["nonce"] = fixtureReason }
	g.mu.Unlock()
	signed := g.payee.Signed.Load()
	_, err := c.Payments.Refund(ctx, artPayment, PaymentRefundParams{Amount: "4.00", Expect: Expectation{Payer: artPayer}})
	var ae *ArtifactError
	var fe *FlowError
	if !errors.As(err, &ae) || ae.Field != "message.nonce" || !errors.As(err, &fe) || fe.Step != StepVerify {
		t.Fatalf("err = %v, want an *ArtifactError on message.nonce at StepVerify", err)
	}
	if reads, _ := g.counts(); reads != 2 {
		t.Errorf("%d reads, want the capture's and one more", reads)
	}
	if n := g.payee.Signed.Load() - signed; n != 0 || len(g.submitted()) != 1 {
		t.Errorf("signed %d digests, submitted %v", n, g.submitted())
	}
}

// Terms a client holds are bound to each flow as a read is: the caller's
// expectation is checked against them before anything is prepared (when
// they fail it, they are forgotten and one read is checked in their
// place), and a name the client has not checked (the rail0_id, where the
// UUID was read) is read.
func TestKnownTermsAreBoundToEachFlow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g, c := capturedOnce(t)
	_, err := c.Payments.Capture(ctx, artPayment, PaymentCaptureParams{Amount: "1.00", Expect: Expectation{Payer: artOther}})
	var ae *ArtifactError
	if !errors.As(err, &ae) || ae.Artifact != "payment" || ae.Field != "payer" {
		t.Fatalf("an expectation the known payment does not meet: %v", err)
	}
	if reads, prepares := g.counts(); reads != 2 || prepares != 1 {
		t.Errorf("%d reads and %d prepares, want 2 and 1: one read, then refused before anything is prepared", reads, prepares)
	}
	// The fake gateway serves the payment by its UUID only: a flow naming
	// it by its rail0_id reads it, and fails there.
	_, err = c.Payments.Void(ctx, artRail0ID, PaymentVoidParams{})
	var fe *FlowError
	if !errors.As(err, &fe) || fe.Step != StepRead {
		t.Fatalf("a void by the rail0_id: %v, want a failed read", err)
	}
}

// A flow acting on terms the client holds that refuses what the gateway
// prepared forgets them: the next flow reads the payment again.
func TestRefusalForgetsKnownTerms(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g, c := capturedOnce(t)
	g.mu.Lock()
	g.tamperTx = func(_ Operation, tx map[string]any) { setWord(tx, 0, verify.Word{1}) }
	g.mu.Unlock()
	if _, err := c.Payments.Capture(ctx, artPayment, PaymentCaptureParams{Amount: "1.00"}); !errors.Is(err, ErrArtifactMismatch) {
		t.Fatalf("another payment's capture: %v", err)
	}
	g.mu.Lock()
	g.tamperTx = nil
	g.mu.Unlock()
	if _, err := c.Payments.Capture(ctx, artPayment, PaymentCaptureParams{Amount: "1.00"}); err != nil {
		t.Fatal(err)
	}
	if reads, _ := g.counts(); reads != 2 {
		t.Errorf("%d reads, want 2: the first capture's and the one after the refusal", reads)
	}
}

// One lie must not poison the terms a client holds: a poll answered with
// another payer's payment (consistent in itself) is remembered, and the
// next refund bound to the order's payer fails on it; it then forgets it,
// reads once, and the honest answer serves that refund and the next.
func TestOneLieDoesNotPoisonKnownTerms(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g, c := capturedOnce(t)
	g.mu.Lock()
	honest := g.payment.Payer
	g.mu.Unlock()
	setPayer := func(payer string) {
		g.mu.Lock()
		g.payment.Payer = payer
		g.mu.Unlock()
		hash := g.terms().ConfigHash.String()
		g.mu.Lock()
		g.payment.ConfigHash = hash
		g.mu.Unlock()
	}
	setPayer(artOther)
	if _, err := c.Payments.WaitForStatus(ctx, artPayment, PaymentWaitForStatusParams{Statuses: []PaymentStatus{StatusPartiallyCaptured}}); err != nil {
		t.Fatal(err)
	}
	setPayer(honest)
	reads, _ := g.counts()
	for i, refundable := range []string{"9000000", "8000000"} {
		if _, err := c.Payments.Refund(ctx, artPayment, PaymentRefundParams{Amount: "1.00", Expect: Expectation{Payer: artPayer}}); err != nil {
			t.Fatalf("refund %d from an honest gateway after one lie: %v", i+1, err)
		}
		g.setRefundable(refundable) // the refund confirmed
	}
	if r, _ := g.counts(); r-reads != 1 {
		t.Errorf("%d reads for two refunds, want 1: the lie forgotten, then the honest terms kept", r-reads)
	}
}

// What a client's polls and its own Create checked needs no read either;
// a client without a signer, which runs no flow, keeps nothing.
func TestPollsAndCreateAreReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := newArtGateway(t, ModeAuthorize, StatusAuthorized)
	c := g.client(g.payee)
	if _, err := c.Payments.WaitForStatus(ctx, artPayment, PaymentWaitForStatusParams{Statuses: []PaymentStatus{StatusAuthorized}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Payments.Capture(ctx, artPayment, PaymentCaptureParams{Amount: "1.00"}); err != nil {
		t.Fatal(err)
	}
	if reads, _ := g.counts(); reads != 1 {
		t.Errorf("%d reads, want the poll's alone", reads)
	}

	g = newArtGateway(t, ModeAuthorize, StatusPartiallyCaptured)
	payer := g.client(g.payer)
	if _, err := payer.Payments.Create(ctx, PaymentCreateParams{ChainID: artChain, Mode: ModeAuthorize, Amount: "25.00",
		Token: artToken, Payer: artPayer, Payee: artPayee}); err != nil {
		t.Fatal(err)
	}
	if _, err := payer.Payments.Dispute(ctx, artPayment, PaymentDisputeParams{}); err != nil {
		t.Fatal(err)
	}
	if reads, _ := g.counts(); reads != 0 {
		t.Errorf("%d reads, want none after Create", reads)
	}

	plain, err := NewClient(g.clientWithout(g.payee).baseStr, WithToken("t"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Payments.WaitForStatus(ctx, artPayment, PaymentWaitForStatusParams{Statuses: []PaymentStatus{StatusPartiallyCaptured}, PollInterval: time.Second, MaxPollInterval: time.Second}); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := plain.known.lookup(artPayment); ok {
		t.Error("a client without a signer kept a payment's terms")
	}
}

// The tracked refundable balance follows the client's own steps: a capture
// adds to it, a refund takes from it (never below zero), a charge sets it
// to the whole amount, the other steps leave it.
func TestTrackedRefundable(t *testing.T) {
	g := newArtGateway(t, ModeAuthorize, StatusPartiallyCaptured) // refundable 10000000 of 25000000
	for _, tt := range []struct {
		op     Operation
		amount string
		want   string
	}{
		{OpCapture, "1000000", "11000000"},
		{OpRefund, "4000000", "6000000"},
		{OpRefund, "99000000", "0"},
		{OpCharge, "", "25000000"},
		{OpAuthorize, "", "10000000"},
		{OpVoid, "", "10000000"},
		{OpRelease, "", "10000000"},
		{OpDispute, "", "10000000"},
		{OpCapture, "junk", "10000000"},
	} {
		var k knownPayments
		k.remember("p1", g.payment, g.terms())
		k.stepped("p1", tt.op, tt.amount)
		_, terms, _ := k.lookup("p1")
		if terms.Refundable.String() != tt.want {
			t.Errorf("%s of %q: refundable %s, want %s", tt.op, tt.amount, terms.Refundable, tt.want)
		}
		if _, again, _ := k.lookup("p1"); again.Refundable.Cmp(terms.Refundable) != 0 {
			t.Errorf("%s: the kept balance differs from the one returned", tt.op)
		}
	}
	var k knownPayments
	k.stepped("nothing", OpCapture, "1") // no entry: nothing to move
	if _, _, ok := k.lookup("nothing"); ok {
		t.Error("stepped created an entry")
	}
}

// A client keeps the terms of at most maxKnown payments, forgetting the
// oldest first.
func TestKnownPaymentsAreBounded(t *testing.T) {
	g := newArtGateway(t, ModeAuthorize, StatusPartiallyCaptured)
	var k knownPayments
	for i := range maxKnown + 10 {
		k.remember(fmt.Sprint(i), g.payment, g.terms())
	}
	if _, _, ok := k.lookup("9"); ok {
		t.Error("the oldest entries were kept beyond the bound")
	}
	if _, _, ok := k.lookup("10"); !ok {
		t.Error("an entry within the bound was forgotten")
	}
	if len(k.m) != maxKnown || len(k.order) != maxKnown {
		t.Errorf("%d entries, %d in order; want %d", len(k.m), len(k.order), maxKnown)
	}
	_, terms, _ := k.lookup("10")
	terms.Refundable = big.NewInt(1) // a copy: the kept terms do not move
	if _, kept, _ := k.lookup("10"); kept.Refundable.String() != "10000000" {
		t.Errorf("changing the returned terms changed the kept ones: %s", kept.Refundable)
	}
}
