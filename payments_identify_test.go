package rail0

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	envelope422 = `{"code":"invalid_amount","title":"Invalid amount","detail":"Not a valid amount.","status":"invalid_amount"}`
	envelope401 = `{"code":"unauthorized","title":"Unauthorized","detail":"Token revoked.","status":"unauthorized"}`
	htmlPage    = `<html><body><h1>Accepted</h1></body></html>`
)

// A payment creation whose 201 cannot be read keeps the Idempotency-Key the
// SDK generated for it, on the *OutcomeUnknownError: creating again with
// that key is safe, and replays the payment if the first one was made.
func TestCreateUndecodableAnswerKeepsTheKey(t *testing.T) {
	srv := newScriptServer(t, step{status: 201, body: htmlPage, header: map[string]string{"Content-Type": "text/html"}},
		step{status: 200, body: paymentBody})
	c := newTestClient(t, srv.URL, WithToken("tok"))
	params := PaymentCreateParams{ChainID: 84532, Mode: ModeAuthorize, Amount: "1.00",
		Token: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
		Payer: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4", Payee: "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2"}

	_, err := c.Payments.Create(context.Background(), params)

	var unknown *OutcomeUnknownError
	require.ErrorAs(t, err, &unknown)
	var decodeErr *DecodeError
	require.ErrorAs(t, err, &decodeErr)
	sent := srv.requests()[0].header.Get("Idempotency-Key")
	require.NotEmpty(t, sent)
	assert.Equal(t, sent, unknown.IdempotencyKey)

	params.IdempotencyKey = unknown.IdempotencyKey
	p, err := c.Payments.Create(context.Background(), params)
	require.NoError(t, err)
	assert.NotEmpty(t, p.ID)
	assert.Equal(t, sent, srv.requests()[1].header.Get("Idempotency-Key"))
}

func repeatHex(s string, n int) string {
	b := make([]byte, 0, len(s)*n)
	for range n {
		b = append(b, s...)
	}
	return string(b)
}

func TestNotTheResource(t *testing.T) {
	hash := fixtureSignedHash()
	other := "0x" + strings.Repeat("ab", 32)
	str := func(s string) *string { return &s }
	txs := []struct {
		name     string
		tx       Transaction
		ok       bool
		prepared preparedRow
	}{
		{"the step's transaction with the hash sent", Transaction{ID: "t1", Operation: OpCapture, TransactionHash: str(hash.String())}, true, preparedRow{}},
		{"the hash in upper case", Transaction{ID: "t1", Operation: OpCapture, TransactionHash: str("0x" + strings.ToUpper(hash.String()[2:]))}, true, preparedRow{}},
		{"no hash yet", Transaction{ID: "t1", Operation: OpCapture}, true, preparedRow{}},
		{"an empty hash", Transaction{ID: "t1", Operation: OpCapture, TransactionHash: str("")}, true, preparedRow{}},
		{"null, {} or a proxy's message: no id", Transaction{}, false, preparedRow{}},
		{"no id", Transaction{Operation: OpCapture, TransactionHash: str(hash.String())}, false, preparedRow{}},
		{"no operation", Transaction{ID: "t1"}, false, preparedRow{}},
		{"another step", Transaction{ID: "t1", Operation: OpVoid, TransactionHash: str(hash.String())}, false, preparedRow{}},
		{"another hash", Transaction{ID: "t1", Operation: OpCapture, TransactionHash: str(other)}, false, preparedRow{}},
		{"a hash that is not one", Transaction{ID: "t1", Operation: OpCapture, TransactionHash: str("pending\x1b[2J")}, false, preparedRow{}},
		// The submit's answer is the prepared row (contract section 5).
		{"the prepared row", Transaction{ID: "t1", PaymentID: "p1", Operation: OpCapture}, true, preparedRow{"t1", "p1", false}},
		{"the prepared row without its payment_id", Transaction{ID: "t1", Operation: OpCapture}, true, preparedRow{"t1", "p1", false}},
		{"the prepared row, the payment named by rail0_id", Transaction{ID: "t1", PaymentID: "p2", Operation: OpCapture}, true, preparedRow{"t1", "", false}},
		{"a submit not tied to a prepare", Transaction{ID: "t2", PaymentID: "p1", Operation: OpCapture}, true, preparedRow{"", "p1", false}},
		{"another transaction of the step, no hash", Transaction{ID: "t2", PaymentID: "p1", Operation: OpCapture}, false, preparedRow{"t1", "p1", false}},
		{"another transaction of the step, the hash sent", Transaction{ID: "t2", Operation: OpCapture, TransactionHash: str(hash.String())}, false, preparedRow{"t1", "", false}},
		// Ids the caller typed compare ignoring case; the gateway's own
		// (a flow's Prepare and read) exactly, since its answer repeats
		// what it said. The wait and the sent-row check match a payment's
		// rows ignoring case (sameUUID), and so must not be passed an id
		// that differs only in capitals from another row's.
		{"the prepared ids typed in capitals", Transaction{ID: "t1", PaymentID: "p1", Operation: OpCapture}, true, preparedRow{"T1", "P1", true}},
		{"the typed ids answered in capitals", Transaction{ID: "T1", PaymentID: "P1", Operation: OpCapture}, true, preparedRow{"t1", "p1", true}},
		{"the gateway's prepared id answered in capitals", Transaction{ID: "T1", PaymentID: "p1", Operation: OpCapture}, false, preparedRow{"t1", "p1", false}},
		{"the gateway's payment id answered in capitals", Transaction{ID: "t1", PaymentID: "P1", Operation: OpCapture}, false, preparedRow{"t1", "p1", false}},
		{"another payment's transaction", Transaction{ID: "t1", PaymentID: "p2", Operation: OpCapture}, false, preparedRow{"t1", "p1", false}},
		{"another payment, not tied to a prepare", Transaction{ID: "t2", PaymentID: "p2", Operation: OpCapture}, false, preparedRow{"", "p1", false}},
		{"another id that is not one", Transaction{ID: "t2\x1b[2J", Operation: OpCapture}, false, preparedRow{"t1", "", false}},
	}
	for _, tc := range txs {
		t.Run("transaction: "+tc.name, func(t *testing.T) {
			why := notTheTransaction(&tc.tx, OpCapture, hash, tc.prepared)
			assert.Equal(t, tc.ok, why == "", why)
			assert.NotContains(t, why, "\x1b")
		})
	}
	payments := []struct {
		name string
		p    PaymentDetail
		ok   bool
	}{
		{"id and rail0_id", PaymentDetail{Payment: Payment{ID: fixturePaymentID, Rail0ID: "0x" + strings.Repeat("9f", 32)}}, true},
		{"null, {} or a proxy's message", PaymentDetail{}, false},
		{"no rail0_id", PaymentDetail{Payment: Payment{ID: fixturePaymentID}}, false},
		{"no id", PaymentDetail{Payment: Payment{Rail0ID: "0x" + strings.Repeat("9f", 32)}}, false},
		{"a rail0_id that is not one", PaymentDetail{Payment: Payment{ID: fixturePaymentID, Rail0ID: "0x1234"}}, false},
	}
	for _, tc := range payments {
		t.Run("payment: "+tc.name, func(t *testing.T) {
			why := notThePayment(&tc.p)
			assert.Equal(t, tc.ok, why == "", why)
		})
	}
}

// A submit answered by a 2xx that is not its transaction reads the payment:
// the transaction of the step carrying the hash sent is the result; when the
// payment does not show it, the outcome is unknown. A Create so answered is
// an *OutcomeUnknownError with the key it sent.
func TestTwoHundredNotTheResourceEndToEnd(t *testing.T) {
	hash := fixtureSignedHash().String()
	withTx := strings.TrimSuffix(fixturePaymentJSON, "}") + `, "transactions": [` + submittedTxJSON(OpVoid, hash) + `]}`
	withoutTx := strings.TrimSuffix(fixturePaymentJSON, "}") + `, "transactions": []}`
	ctx := context.Background()
	for _, body := range []string{`null`, `{}`, `{"message":"Accepted"}`, submittedTxJSON(OpCapture, hash)} {
		t.Run("submit ran: "+body, func(t *testing.T) {
			srv := newScriptServer(t, step{status: 202, body: body}, step{status: 200, body: withTx})
			c := newTestClient(t, srv.URL)
			tx, err := c.Payments.Submit(ctx, fixturePaymentID, OpVoid, PaymentSubmitParams{SignedTransaction: fixtureSignedTx})
			require.NoError(t, err)
			assert.Equal(t, OpVoid, tx.Operation)
			assert.Equal(t, fixtureTxID, tx.ID)
			assert.Len(t, srv.requests(), 2)
		})
		t.Run("submit not found: "+body, func(t *testing.T) {
			srv := newScriptServer(t, step{status: 202, body: body}, step{status: 200, body: withoutTx})
			c := newTestClient(t, srv.URL)
			_, err := c.Payments.Submit(ctx, fixturePaymentID, OpVoid, PaymentSubmitParams{SignedTransaction: fixtureSignedTx})
			var unknown *OutcomeUnknownError
			var decodeErr *DecodeError
			require.ErrorAs(t, err, &unknown)
			require.ErrorAs(t, err, &decodeErr)
			assert.Contains(t, err.Error(), "not the resource the operation promises")
		})
		t.Run("submit of another prepared row, ran: "+body, func(t *testing.T) {
			srv := newScriptServer(t, step{status: 202, body: body}, step{status: 200, body: withTx})
			c := newTestClient(t, srv.URL)
			tx, err := c.Payments.Submit(ctx, fixturePaymentID, OpVoid, PaymentSubmitParams{SignedTransaction: fixtureSignedTx, TransactionID: fixtureTxID})
			require.NoError(t, err)
			assert.Equal(t, fixtureTxID, tx.ID)
			assert.Len(t, srv.requests(), 2)
		})
		t.Run("create: "+body, func(t *testing.T) {
			srv := newScriptServer(t, step{status: 201, body: body})
			c := newTestClient(t, srv.URL)
			_, err := c.Payments.Create(ctx, PaymentCreateParams{ChainID: 84532, Mode: ModeAuthorize, Amount: "25.00",
				Token: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", Payer: "0x5B38Da6a701c568545dCfcB03FcB875f56beddC4",
				Payee: "0xAb8483F64d9C6d1EcF9b849Ae677dD3315835cb2"})
			var unknown *OutcomeUnknownError
			require.ErrorAs(t, err, &unknown)
			require.Len(t, srv.requests(), 1)
			assert.NotEmpty(t, unknown.IdempotencyKey)
			assert.Equal(t, srv.requests()[0].header.Get("Idempotency-Key"), unknown.IdempotencyKey)
		})
	}
}

// A submit tied to its prepared row (TransactionID), answered 202 with
// another transaction of the same step and payment and no hash yet, is not
// that submit's answer: the payment is read, and the prepared row carrying
// the hash sent is the result; when the read does not show it, the
// outcome is unknown. A payment named by its UUID refuses an answer of
// another payment even when the submit is not tied to a prepare; a
// payment named by its rail0_id cannot tell, and the id decides.
func TestSubmitAnswerNamingAnotherTransaction(t *testing.T) {
	ctx := context.Background()
	hash := fixtureSignedHash().String()
	const otherTx, otherPayment = "0191f0a9-5e6f-7a80-9b1c-2d3e4f5a6b7c", "0191f0a2-3c4d-7e5f-8a6b-000000000000"
	answer := func(id, paymentID string) string {
		return `{"id":"` + id + `","payment_id":"` + paymentID + `","operation":"void","status":"submitting"}`
	}
	withTx := strings.TrimSuffix(fixturePaymentJSON, "}") + `, "transactions": [` + submittedTxJSON(OpVoid, hash) + `]}`
	withoutTx := strings.TrimSuffix(fixturePaymentJSON, "}") + `, "transactions": []}`
	rail0ID := "0x9f2c4e1a7b3d5c8e0f6a2b4d6c8e0a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e2f"
	for _, tc := range []struct {
		name, id, answer, txID, read string
		want                         string // the result's id; "" for an unknown outcome
		requests                     int
	}{
		{"the prepared row", fixturePaymentID, answer(fixtureTxID, fixturePaymentID), fixtureTxID, "", fixtureTxID, 1},
		{"another row, found by hash", fixturePaymentID, answer(otherTx, fixturePaymentID), fixtureTxID, withTx, fixtureTxID, 2},
		{"another row, not found", fixturePaymentID, answer(otherTx, fixturePaymentID), fixtureTxID, withoutTx, "", 2},
		{"another payment's row", fixturePaymentID, answer(fixtureTxID, otherPayment), fixtureTxID, withoutTx, "", 2},
		{"another payment's row, untied", fixturePaymentID, answer(otherTx, otherPayment), "", withoutTx, "", 2},
		{"untied, as before", fixturePaymentID, answer(otherTx, fixturePaymentID), "", "", otherTx, 1},
		{"by rail0_id, another row", rail0ID, answer(otherTx, fixturePaymentID), fixtureTxID, withoutTx, "", 2},
		{"by rail0_id, the prepared row", rail0ID, answer(fixtureTxID, fixturePaymentID), fixtureTxID, "", fixtureTxID, 1},
		{"the payment's UUID in capitals", strings.ToUpper(fixturePaymentID), answer(fixtureTxID, fixturePaymentID), strings.ToUpper(fixtureTxID), "", fixtureTxID, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps := []step{{status: 202, body: tc.answer}}
			if tc.read != "" {
				steps = append(steps, step{status: 200, body: tc.read})
			}
			srv := newScriptServer(t, steps...)
			c := newTestClient(t, srv.URL)
			tx, err := c.Payments.Submit(ctx, tc.id, OpVoid, PaymentSubmitParams{SignedTransaction: fixtureSignedTx, TransactionID: tc.txID})
			assert.Len(t, srv.requests(), tc.requests)
			if tc.want != "" {
				require.NoError(t, err)
				assert.Equal(t, tc.want, tx.ID)
				return
			}
			var unknown *OutcomeUnknownError
			var decodeErr *DecodeError
			require.ErrorAs(t, err, &unknown)
			require.ErrorAs(t, err, &decodeErr)
			assert.Contains(t, err.Error(), "not the resource the operation promises")
		})
	}
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
