package rail0

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
	refused := func(t *testing.T, g *artGateway, err error, submits int) {
		t.Helper()
		var fe *FlowError
		var ae *ArtifactError
		require.ErrorAs(t, err, &fe)
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, StepVerify, fe.Step)
		assert.Equal(t, "id", ae.Field)
		g.mu.Lock()
		defer g.mu.Unlock()
		assert.Len(t, g.submits, submits, "nothing more submitted")
	}
	t.Run("on the payment the flow reads", func(t *testing.T) {
		t.Parallel()
		g := newArtGateway(t, ModeAuthorize, StatusPartiallyCaptured)
		g.payment.Transactions = []Transaction{confirmed("TX-CAPTURE-1")} // the next prepare names tx-capture-1
		c := g.client(g.payee)
		_, err := c.Payments.Capture(ctx, artPayment, PaymentCaptureParams{Amount: "1.00"})
		refused(t, g, err, 0)
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
		refused(t, g, err, 1)
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
