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

const (
	envelope422 = `{"code":"invalid_amount","title":"Invalid amount","detail":"Not a valid amount.","status":"invalid_amount"}`
	envelope401 = `{"code":"unauthorized","title":"Unauthorized","detail":"Token revoked.","status":"unauthorized"}`
	htmlPage    = `<html><body><h1>Accepted</h1></body></html>`
)

func TestProvesNotRun(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   bool
	}{
		{"429, the throttle's", 429, rateLimitedBody, true},
		{"429 with no body: the throttle answers before the application", 429, "", true},
		{"429 from anything", 429, htmlPage, true},
		{"422 envelope", 422, envelope422, true},
		{"401 envelope", 401, envelope401, true},
		{"403 envelope", 403, `{"code":"not_the_payee","title":"Forbidden","detail":"Only the payee.","status":"forbidden"}`, true},
		{"404 envelope", 404, `{"code":"not_found","title":"Not found","detail":"No payment.","status":"not_found","resource":"payment"}`, true},
		{"409 envelope with a code the guide does not list", 409, `{"code":"idempotency_key_reused","title":"Conflict","detail":"Used.","status":"conflict"}`, true},
		{"400 envelope with the older fields too", 400, `{"code":"missing_param","title":"Missing","detail":"amount","status":"missing_param","message":"amount","error":"missing_param","param":"amount"}`, true},
		{"envelope with spaces", 422, `{ "code" : "invalid_amount", "title" : "t", "detail" : "d", "status" : "s" }`, true},
		{"empty title and detail are still strings", 422, `{"code":"invalid_amount","title":"","detail":"","status":"invalid_amount"}`, true},

		{"408 even with the envelope: a timeout may follow forwarding", 408, `{"code":"timeout","title":"Timeout","detail":"d","status":"timeout"}`, false},
		{"401 without a body, as an authenticating proxy writes it", 401, "", false},
		{"401 HTML page", 401, `<html><head><title>401 Authorization Required</title></head></html>`, false},
		{"401 an API gateway's JSON", 401, `{"message":"Unauthorized"}`, false},
		{"401 a legacy-looking error field only", 401, `{"error":"unauthorized"}`, false},
		{"403 code only", 403, `{"code":"forbidden"}`, false},
		{"400 without a body (an undecodable raw transaction)", 400, "", false},
		{"422 empty code", 422, `{"code":"","title":"t","detail":"d","status":"s"}`, false},
		{"422 null title", 422, `{"code":"invalid_amount","title":null,"detail":"d","status":"s"}`, false},
		{"422 numeric code", 422, `{"code":422,"title":"t","detail":"d","status":"s"}`, false},
		{"422 numeric status, RFC 9457 style", 422, `{"code":"invalid_amount","title":"t","detail":"d","status":422}`, false},
		{"422 keys in another case", 422, `{"Code":"invalid_amount","Title":"t","Detail":"d","Status":"s"}`, false},
		{"422 an array", 422, `[` + envelope422 + `]`, false},
		{"422 cut short", 422, envelope422[:40], false},

		{"200 with the gateway's answer: it ran", 200, paymentBody, false},
		{"202 HTML", 202, htmlPage, false},
		{"200 empty", 200, "", false},
		{"204", 204, "", false},
		{"302", 302, "", false},
		{"500 envelope", 500, `{"code":"error","title":"t","detail":"d","status":"error"}`, false},
		{"503", 503, "", false},
		{"600", 600, envelope422, false},
		{"no answer", 0, "", false},
		{"100", 100, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, provesNotRun(tt.status, []byte(tt.body)))
		})
	}
}

// Every answer to a write that must not run twice which does not prove the
// write did not run comes back as an *OutcomeUnknownError with the call's
// Idempotency-Key, unwrapping to the answer (*APIError or *DecodeError): an
// undecodable 2xx, a 3xx, a 408, a 4xx without the gateway's envelope. A
// 429 and an enveloped 4xx are refusals (*APIError). Reads and writes safe
// to repeat keep the plain error.
func TestOutcomeUnknownUnlessProvedNotRun(t *testing.T) {
	submit := func(c *Client) error {
		_, err := c.Payments.Submit(context.Background(), "p1", OpCapture, PaymentSubmitParams{SignedTransaction: "0x02f8"})
		return err
	}
	tests := []struct {
		name    string
		step    step
		call    func(*Client) error
		unknown bool
		decode  bool // the answer inside is a *DecodeError, else an *APIError
	}{
		{"submit: 202 HTML", step{status: 202, body: htmlPage, header: map[string]string{"Content-Type": "text/html"}}, submit, true, true},
		{"submit: empty 200", step{status: 200}, submit, true, true},
		{"submit: JSON of another shape cut short", step{status: 202, body: `{"id":"t1","status":"subm`}, submit, true, true},
		{"submit: bodiless 401 from a proxy", step{status: 401}, submit, true, false},
		{"submit: a proxy's JSON 401", step{status: 401, body: `{"message":"Unauthorized"}`}, submit, true, false},
		{"submit: 403 HTML from a firewall", step{status: 403, body: htmlPage, header: map[string]string{"Content-Type": "text/html"}}, submit, true, false},
		{"submit: 408", step{status: 408}, submit, true, false},
		{"submit: 302", step{status: 302, header: map[string]string{"Location": "https://elsewhere.example/"}}, submit, true, false},
		{"submit: bodiless 400", step{status: 400}, submit, true, false},

		{"submit: the gateway's 401", step{status: 401, body: envelope401}, submit, false, false},
		{"submit: the gateway's 422", step{status: 422, body: envelope422}, submit, false, false},
		{"submit: 429", step{status: 429, body: rateLimitedBody, header: map[string]string{"Retry-After": "30"}}, submit, false, false},

		{"rotate secret: empty 200", step{status: 200}, func(c *Client) error {
			_, err := c.Webhooks.RotateSecret(context.Background(), "w1")
			return err
		}, true, true},
		{"read: HTML 200 is a plain decode error", step{status: 200, body: htmlPage}, func(c *Client) error {
			_, err := c.Payments.Get(context.Background(), "p1")
			return err
		}, false, true},
		{"read: bodiless 401", step{status: 401}, func(c *Client) error {
			_, err := c.Payments.Get(context.Background(), "p1")
			return err
		}, false, false},
		{"sign (safe to repeat): HTML 200", step{status: 200, body: htmlPage}, func(c *Client) error {
			_, err := c.Payments.SubmitSignature(context.Background(), "p1", PaymentSubmitSignatureParams{Signature: "0x" + repeatHex("ab", 65)})
			return err
		}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newScriptServer(t, tt.step)
			c := newTestClient(t, srv.URL, WithToken("tok"))

			err := tt.call(c)

			require.Error(t, err)
			// Never sent again. A submit refused with a 422 is followed by
			// one read of the payment (reconcileSubmit: is the transaction
			// known already?), which is no resend of the write.
			sent, again := srv.requests(), 0
			for _, r := range sent[1:] {
				if r.method == sent[0].method && r.path == sent[0].path {
					again++
				}
				assert.Equal(t, "GET", r.method, "only a read may follow")
			}
			assert.Zero(t, again, "never sent again")
			var unknown *OutcomeUnknownError
			assert.Equal(t, tt.unknown, errors.As(err, &unknown), "%v", err)
			assert.Equal(t, tt.unknown, errors.Is(err, ErrOutcomeUnknown))
			var apiErr *APIError
			var decodeErr *DecodeError
			if tt.decode {
				require.ErrorAs(t, err, &decodeErr)
				assert.Equal(t, tt.step.status, decodeErr.StatusCode)
			} else {
				require.ErrorAs(t, err, &apiErr)
				assert.Equal(t, tt.step.status, apiErr.StatusCode)
			}
			call := CallOf(err)
			require.NotNil(t, call)
			assert.Equal(t, tt.unknown, call.Outcome == OutcomeUnknown, call.Outcome)
		})
	}
}

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

// A sign-in answered 2xx by something that is not a session ({} from a
// proxy, a session without its expiry) is refused, its body dropped: taken
// as a session it would never be fresh, and a client WithSigner would have
// its key sign a new SIWE message on every later call.
func TestSignInAnswerThatIsNotASession(t *testing.T) {
	ctx := context.Background()
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for _, tc := range []struct {
		body string
		ok   bool
	}{
		{`{"token":"tok-SECRET","address":"0x5B38Da6a701c568545dCfcB03FcB875f56beddC4","expires_at":"` + future + `"}`, true},
		{`{}`, false},
		{`{"message":"OK"}`, false},
		{`{"token":"","expires_at":"` + future + `"}`, false},
		{`{"token":"tok-SECRET","address":"0x5B38Da6a701c568545dCfcB03FcB875f56beddC4"}`, false},
	} {
		t.Run(tc.body, func(t *testing.T) {
			srv := newScriptServer(t, step{status: 200, body: tc.body})
			c := newTestClient(t, srv.URL)
			sess, err := c.Auth.Verify(ctx, AuthVerifyParams{Message: "m", Signature: "0x01"})
			if tc.ok {
				require.NoError(t, err)
				assert.Equal(t, "tok-SECRET", sess.Token())
				return
			}
			var decodeErr *DecodeError
			require.ErrorAs(t, err, &decodeErr)
			assert.Contains(t, err.Error(), "not the resource the operation promises")
			assert.Empty(t, decodeErr.Body)
			assert.NotContains(t, err.Error(), "tok-SECRET")
		})
	}
}
