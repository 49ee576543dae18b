package rail0

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/rail0/rail0-go/internal/verifytest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
