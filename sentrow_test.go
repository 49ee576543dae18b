package rail0

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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

// F1b: a submit's answer without a hash comes back carrying the hash sent,
// which is what ties the step to its confirmation, whatever id the answer
// names.
func TestSubmitAnswerCarriesTheHashSent(t *testing.T) {
	ctx := context.Background()
	answer := `{"id":"` + fixtureTxID + `","payment_id":"` + fixturePaymentID + `","operation":"void","status":"submitting"}`
	srv := newScriptServer(t, step{status: 202, body: answer}, step{status: 202, body: answer})
	c := newTestClient(t, srv.URL)
	tx, err := c.Payments.Submit(ctx, fixturePaymentID, OpVoid, PaymentSubmitParams{SignedTransaction: fixtureSignedTx, TransactionID: fixtureTxID})
	require.NoError(t, err)
	require.NotNil(t, tx.TransactionHash)
	assert.Equal(t, fixtureSignedHash().String(), *tx.TransactionHash)

	reported := "0x" + strings.Repeat("Cd", 32)
	tx, err = c.Payments.SubmitByHash(ctx, fixturePaymentID, OpVoid, PaymentSubmitByHashParams{TransactionHash: reported, TransactionID: fixtureTxID})
	require.NoError(t, err)
	require.NotNil(t, tx.TransactionHash)
	assert.Equal(t, strings.ToLower(reported), *tx.TransactionHash)
}

// F1c: WaitForTransaction with the hash sent counts only the row carrying
// it: a row of that id confirmed under another hash, or confirmed without
// one, is not this step and ends the wait with ErrUnknownTransaction, never
// a success. F2: the id the caller typed compares ignoring case.
func TestWaitForTransactionTiedToTheHash(t *testing.T) {
	t.Parallel()
	sent := fixtureSignedHash().String()
	other := "0x" + strings.Repeat("ab", 32)
	row := func(status TransactionStatus, hash string) string {
		s := txJSON("tx1", OpCapture, status, "")
		if hash != "" {
			s = strings.Replace(s, `"transaction_hash": null`, `"transaction_hash": "`+hash+`"`, 1)
		}
		return paymentDetailJSON(StatusAuthorized, "", s)
	}
	for _, tc := range []struct {
		name, txID, hash string
		polls            []string
		ok               bool
	}{
		{"confirmed under the hash sent", "tx1", sent, []string{row(TxPending, ""), row(TxSubmitted, sent), row(TxConfirmed, sent)}, true},
		{"the hash in capitals", "tx1", "0x" + strings.ToUpper(sent[2:]), []string{row(TxConfirmed, sent)}, true},
		{"confirmed under another hash", "tx1", sent, []string{row(TxConfirmed, other)}, false},
		{"submitted under another hash", "tx1", sent, []string{row(TxSubmitted, other)}, false},
		{"confirmed without a hash", "tx1", sent, []string{row(TxConfirmed, "")}, false},
		{"no hash given: the id alone, as before", "tx1", "", []string{row(TxConfirmed, other)}, true},
		{"the id typed in capitals", "TX1", sent, []string{row(TxConfirmed, sent)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, c := newMuxServer(t)
			replies := make([]muxReply, len(tc.polls))
			for i, b := range tc.polls {
				replies[i] = muxOK(b)
			}
			srv.on("GET /payments/p", replies...)
			// A wait that never ends (a regression) fails at the deadline
			// rather than spinning: the recorder's sleeps are instant.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			tx, err := (&sleepRecorder{}).on(c).Payments.WaitForTransaction(ctx, "p", tc.txID, PaymentWaitForTransactionParams{TransactionHash: tc.hash})
			if tc.ok {
				require.NoError(t, err)
				assert.Equal(t, TxConfirmed, tx.Status)
				return
			}
			require.ErrorIs(t, err, ErrUnknownTransaction)
			assert.Nil(t, tx)
		})
	}
	t.Run("a malformed hash, before any request", func(t *testing.T) {
		t.Parallel()
		srv, c := newMuxServer(t)
		_, err := c.Payments.WaitForTransaction(context.Background(), "p", "tx1", PaymentWaitForTransactionParams{TransactionHash: "0x1234"})
		var ve *ValidationError
		require.ErrorAs(t, err, &ve)
		assert.Equal(t, "transaction_hash", ve.Field)
		assert.Empty(t, srv.requests())
	})
	// The condition itself: a confirmed row of another hash is never done
	// without an error.
	h := fixtureSignedHash()
	other2 := other
	_, done, err := waitCondition{transactionID: "tx1", hash: &h}.check(&PaymentDetail{Transactions: []Transaction{{ID: "tx1", Status: TxConfirmed, TransactionHash: &other2}}})
	if !done || !errors.Is(err, ErrUnknownTransaction) {
		t.Errorf("check of a row under another hash = %v, %v; want done with ErrUnknownTransaction", done, err)
	}
}
