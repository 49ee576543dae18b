package rail0

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/rail0/rail0-go/internal/verify"
	"github.com/rail0/rail0-go/internal/verifytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// requireRowRefused checks that err is a flow's refusal, before signing, of
// the transaction it was prepared (an *ArtifactError on its id at
// StepVerify), and that g then holds submits submitted rows in all.
func requireRowRefused(t *testing.T, g *artGateway, err error, submits int) {
	t.Helper()
	var fe *FlowError
	var ae *ArtifactError
	require.ErrorAs(t, err, &fe)
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, StepVerify, fe.Step)
	assert.Equal(t, "id", ae.Field)
	assert.Len(t, g.submitted(), submits, "nothing more submitted")
}

// The review of the sent-row check (issue 21's F1a), finding 1: the wait
// matches a row ignoring case (sameUUID), so the check that a prepared row
// was not sent already must too. A prepare answering a confirmed row's id
// in other capitals passed it, and a caller waiting for that id without
// the hash got the old confirmed row as this step's success.
func TestPreparedRowSentAlreadyInOtherCapitals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hash := "0x" + strings.Repeat("ab", 32)
	confirmed := func(id string) Transaction {
		return Transaction{ID: id, PaymentID: artPayment, Operation: OpCapture, Status: TxConfirmed, TransactionHash: &hash}
	}
	t.Run("on the payment the flow reads", func(t *testing.T) {
		t.Parallel()
		g := newArtGateway(t, ModeAuthorize, StatusPartiallyCaptured)
		g.payment.Transactions = []Transaction{confirmed("TX-CAPTURE-1")} // the next prepare names tx-capture-1
		c := g.client(g.payee)
		_, err := c.Payments.Capture(ctx, artPayment, PaymentCaptureParams{Amount: "1.00"})
		requireRowRefused(t, g, err, 0)
	})
	t.Run("on the payment the client holds from a wait", func(t *testing.T) {
		t.Parallel()
		g, c := capturedOnce(t) // sent tx-capture-1; the next prepare names tx-capture-2
		g.mu.Lock()
		g.payment.Transactions = []Transaction{confirmed("tx-capture-1"), confirmed("TX-CAPTURE-2")}
		g.mu.Unlock()
		_, err := c.Payments.WaitForTransaction(ctx, artPayment, "tx-capture-1", PaymentWaitForTransactionParams{})
		require.NoError(t, err)
		reads, _ := g.counts()
		_, err = c.Payments.Capture(ctx, artPayment, PaymentCaptureParams{Amount: "1.00"})
		requireRowRefused(t, g, err, 1)
		again, _ := g.counts()
		assert.Equal(t, reads, again, "refused from what the client holds, with no read")
	})
}

// spentRows keeps a row once, however its id is written; ids compare as
// the wait compares them (sameUUID), so foldID maps two ids to one key
// exactly when sameUUID says they are one.
func TestSpentRowsIgnoreCase(t *testing.T) {
	t.Parallel()
	sent := func(id string) Transaction { return Transaction{ID: id, Operation: OpCapture, Status: TxSubmitted} }
	got := spentRows([]Transaction{sent("TX-1"), sent("tx-2")}, []Transaction{sent("tx-1"), sent("Tx-2"), sent("tx-3")})
	var ids []string
	for _, tx := range got {
		ids = append(ids, tx.ID)
	}
	assert.Equal(t, []string{"tx-1", "Tx-2", "tx-3"}, ids)

	for _, tc := range []struct{ a, b string }{
		{"0190f3c2-AB", "0190f3c2-ab"},
		{"k", "\u212a"},  // Kelvin sign
		{"s", "\u017f"},  // long s
		{"S", "\u017f"},  // long s
		{"\u00e9", "É"},  // é, É
		{"\xff", "\xfe"}, // invalid UTF-8 reads as U+FFFD for both
		{"a", "b"},
		{"tx-1", "tx-10"},
		{"\u0131", "i"}, // dotless i is not i
		{"", ""},
	} {
		assert.Equal(t, sameUUID(tc.a, tc.b), foldID(tc.a) == foldID(tc.b), "%q and %q", tc.a, tc.b)
	}
}

// The review, finding 3: spentRows runs on every read by a client with a
// signer (each poll of a wait, uncancellable), and its dedupe compared each
// row with every row kept before truncating to maxSpentRows: a 32 MiB
// answer of half a million rows cost minutes of CPU per poll. It now keeps
// the first maxSpentRows rows of the read (then of those kept), skips ids
// longer than maxRowID, and its cost grows with the rows, not their square.
func TestSpentRowsBounded(t *testing.T) { // not parallel: AllocsPerRun
	sent := func(id string) Transaction { return Transaction{ID: id, Operation: OpCapture, Status: TxConfirmed} }
	rows := func(prefix string, n int) []Transaction {
		out := make([]Transaction, n)
		for i := range out {
			out[i] = sent(fmt.Sprintf("%s-%d", prefix, i))
		}
		return out
	}
	long := strings.Repeat("a", maxRowID+1)
	for _, tc := range []struct {
		name        string
		kept, read  []Transaction
		n           int
		first, last string
	}{
		{"a read beyond the bound keeps its first rows", nil, rows("r", maxSpentRows+10), maxSpentRows, "r-0", fmt.Sprintf("r-%d", maxSpentRows-1)},
		{"the read first, then the rows kept", rows("k", 10), rows("r", 10), 20, "r-0", "k-9"},
		{"the rows kept up to the bound", rows("k", maxSpentRows), rows("r", 10), maxSpentRows, "r-0", fmt.Sprintf("k-%d", maxSpentRows-11)},
		{"an id longer than a UUID is not kept", []Transaction{sent(long)}, []Transaction{sent(long + "b"), sent("r-0")}, 1, "r-0", "r-0"},
		{"an id of maxRowID bytes is kept", nil, []Transaction{sent(long[1:])}, 1, long[1:], long[1:]},
		{"pending rows are not kept", nil, []Transaction{{ID: "p", Status: TxPending}, sent("r-0")}, 1, "r-0", "r-0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := spentRows(tc.kept, tc.read)
			require.Len(t, got, tc.n)
			assert.Equal(t, tc.first, got[0].ID)
			assert.Equal(t, tc.last, got[len(got)-1].ID)
		})
	}
	// The work is one pass and a bounded result: the allocations do not
	// grow with the rows read (the quadratic dedupe grew its slice to them).
	big, kept := rows("r", 50_000), rows("k", 10)
	few := testing.AllocsPerRun(3, func() { spentRows(nil, big[:maxSpentRows+1]) })
	many := testing.AllocsPerRun(3, func() { spentRows(kept, big) })
	assert.Equal(t, few, many, "allocations for %d rows and for %d", maxSpentRows+1, len(big))
}

// BenchmarkSpentRows measures spentRows on an answer of 40,000 sent rows
// (the review measured 5.9 s for it with the quadratic dedupe).
func BenchmarkSpentRows(b *testing.B) {
	read := make([]Transaction, 40_000)
	for i := range read {
		read[i] = Transaction{ID: fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i), Operation: OpCapture, Status: TxConfirmed}
	}
	b.ReportAllocs()
	for b.Loop() {
		spentRows(nil, read)
	}
}

// The review, finding 2: the rows this client sent are its own knowledge,
// not an answer's. They were kept in the entry of the name the caller
// typed, dropped with it when a flow refused a prepare, and not consulted
// when a flow read the payment: a second capture whose prepare named the
// first's row was refused, and a third, reading a payment that did not
// list the row, signed and submitted it again. They are now kept by the
// payment's UUID and checked on every flow, whatever name it is given.
func TestPreparedRowSentByThisClientIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	again := func(g *artGateway) { // the next prepare names tx-capture-1
		g.mu.Lock()
		g.prepares = 0
		g.mu.Unlock()
	}
	refused := func(t *testing.T, g *artGateway, err error) {
		t.Helper()
		requireRowRefused(t, g, err, 1) // only the first capture
		assert.Contains(t, err.Error(), "tx-capture-1")
	}
	t.Run("after a refusal, on a flow that reads", func(t *testing.T) {
		t.Parallel()
		g, c := capturedOnce(t) // sent tx-capture-1; the read lists no row
		again(g)
		_, err := c.Payments.Capture(ctx, artPayment, PaymentCaptureParams{Amount: "1.00"})
		refused(t, g, err)
		again(g)
		reads, _ := g.counts()
		_, err = c.Payments.Capture(ctx, artPayment, PaymentCaptureParams{Amount: "1.00"})
		refused(t, g, err)
		after, _ := g.counts()
		assert.Equal(t, reads+1, after, "the refusal dropped what reads showed: the third capture reads")
	})
	for name, id := range map[string]string{
		"named by its rail0_id":         verifytest.Rail0ID.String(),
		"named by its UUID in capitals": strings.ToUpper(artPayment),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g, c := capturedOnce(t) // named by its UUID
			again(g)
			g.mu.Lock()
			g.otherNames = true
			g.mu.Unlock()
			_, err := c.Payments.Capture(ctx, id, PaymentCaptureParams{Amount: "1.00"})
			refused(t, g, err)
		})
	}
	t.Run("a read lying about the rows does not forget them", func(t *testing.T) {
		t.Parallel()
		g, c := capturedOnce(t)
		_, err := c.Payments.WaitForStatus(ctx, artPayment, PaymentWaitForStatusParams{Statuses: []PaymentStatus{StatusPartiallyCaptured}})
		require.NoError(t, err) // remembered afresh from a read listing no row
		again(g)
		_, err = c.Payments.Capture(ctx, artPayment, PaymentCaptureParams{Amount: "1.00"})
		refused(t, g, err)
	})
}

// remember merges the rows kept with those read under the lock that stores
// them: concurrent reads of one payment (polls of several waits) each add
// their rows, and none is lost between another's read and write.
func TestKnownPaymentsRememberConcurrently(t *testing.T) {
	t.Parallel()
	g := newArtGateway(t, ModeAuthorize, StatusPartiallyCaptured)
	var k knownPayments
	const n = 64
	done := make(chan struct{})
	for i := range n {
		go func() {
			defer func() { done <- struct{}{} }()
			p := *g.payment
			p.Transactions = []Transaction{{ID: fmt.Sprintf("tx-%d", i), Operation: OpCapture, Status: TxSubmitted}}
			k.remember("p1", &p, g.terms())
		}()
	}
	for range n {
		<-done
	}
	p, _, ok := k.lookup("p1")
	require.True(t, ok)
	assert.Len(t, p.Transactions, n, "rows lost between a read of the entry and its write")
}

// The ids a client sent are kept per payment, at most maxSpentRows, the
// oldest going first, each once however it is written.
func TestOwnRowsBounded(t *testing.T) {
	t.Parallel()
	var k knownPayments
	for i := range maxSpentRows + 5 {
		k.sent("P1", fmt.Sprintf("tx-%d", i))
	}
	k.sent("p1", "TX-10")
	ids, _ := k.own.get(foldID("p1"))
	assert.Len(t, ids, maxSpentRows)
	assert.False(t, k.sentBy("p1", "tx-4"), "the oldest go first")
	assert.True(t, k.sentBy("p1", "tx-5"))
	assert.True(t, k.sentBy("P1", "Tx-10"))
	assert.False(t, k.sentBy("p2", "tx-10"), "another payment's")
}

// A prepared row whose id is longer than a UUID can be is refused before
// signing: the client keeps the ids it sends (knownPayments.sent) and, to
// keep them small, keeps none that long (maxRowID).
func TestPreparedRowIDTooLong(t *testing.T) {
	t.Parallel()
	g := newArtGateway(t, ModeAuthorize, StatusPartiallyCaptured)
	fields := g.txFields(OpCapture, PaymentPrepareParams{Amount: "1.00"})
	g.mu.Lock()
	g.pending, g.prepared = fields, map[string]string{"capture": strings.Repeat("a", maxRowID+1)}
	g.mu.Unlock()
	c := g.client(g.payee)
	_, err := c.Payments.Capture(context.Background(), artPayment, PaymentCaptureParams{Amount: "1.00"})
	requireRowRefused(t, g, err, 0)

	g.mu.Lock()
	g.prepared = map[string]string{"capture": strings.Repeat("a", maxRowID)}
	g.mu.Unlock()
	_, err = c.Payments.Capture(context.Background(), artPayment, PaymentCaptureParams{Amount: "1.00"})
	require.NoError(t, err, "an id of maxRowID bytes")
}

// The review of the submit's answer (F1a): a prepare answers with a new
// row, or with the pending one not yet sent. A prepared id that the
// payment the flow bound shows sent already (confirmed, failed, carrying a
// hash) is an earlier step's: its submit's answer would name it, its wait
// would find it settled, and the caller would take that step for this
// one. The flow refuses it before anything is signed, from the payment it
// read, or from the rows the client saw sent (its own submits, its reads),
// with no extra request.
func TestPreparedRowSentAlreadyIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hash := "0x" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name string
		row  Transaction // on the payment read, named as the next prepare names its row
		ok   bool
	}{
		{"confirmed", Transaction{Status: TxConfirmed, TransactionHash: &hash}, false},
		{"failed", Transaction{Status: TxFailed}, false},
		{"submitted", Transaction{Status: TxSubmitted, TransactionHash: &hash}, false},
		{"pending with a hash", Transaction{Status: TxPending, TransactionHash: &hash}, false},
		{"pending, not yet sent: handed back (Reused)", Transaction{Status: TxPending}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newArtGateway(t, ModeAuthorize, StatusPartiallyCaptured)
			row := tc.row
			row.ID, row.PaymentID, row.Operation = "tx-capture-1", artPayment, OpCapture
			g.payment.Transactions = []Transaction{row}
			c := g.client(g.payee)
			_, err := c.Payments.Capture(ctx, artPayment, PaymentCaptureParams{Amount: "1.00"})
			if tc.ok {
				require.NoError(t, err)
				assert.Len(t, g.submitted(), 1)
				return
			}
			requireRowRefused(t, g, err, 0)
			assert.Contains(t, err.Error(), "tx-capture-1")
		})
	}
	t.Run("the client's own earlier step, handed back with no read", func(t *testing.T) {
		t.Parallel()
		g, c := capturedOnce(t) // sent tx-capture-1
		g.mu.Lock()
		g.prepares = 0 // the next prepare names tx-capture-1 again
		g.mu.Unlock()
		_, err := c.Payments.Capture(ctx, artPayment, PaymentCaptureParams{Amount: "1.00"})
		var ae *ArtifactError
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, "id", ae.Field)
		reads, _ := g.counts()
		g.mu.Lock()
		submits := len(g.submits)
		g.mu.Unlock()
		assert.Equal(t, 1, reads, "no extra read")
		assert.Equal(t, 1, submits, "only the first capture submitted")
	})
}
