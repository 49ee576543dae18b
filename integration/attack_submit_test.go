package integration_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0test"
)

// capturedBehindAProxy is a payment of 25.00, authorized and captured for
// 10.00 (first, confirmed) by merchant through proxy, which rewrites
// nothing yet, in front of rail0test on a manual clock.
func capturedBehindAProxy(t *testing.T) (*rail0test.Server, *rail0test.ManualClock, *rewritingProxy, *rail0.Client, *rail0.PaymentDetail, *rail0.Transaction) {
	t.Helper()
	clock := rail0test.NewManualClock(time.Now())
	e, proxy, p := authorizedBehindAProxy(t, clock)
	first, err := e.merchant.Payments.Capture(context.Background(), p.ID, rail0.PaymentCaptureParams{Amount: "10.00"})
	if err != nil {
		t.Fatal(err)
	}
	e.confirmed(t, p.ID, first)
	return e.gw, clock, proxy, e.merchant, p, first
}

// authorizedBehindAProxy is a payment of 25.00 authorized through proxy,
// which rewrites nothing yet, in front of rail0test on clock (nil: the
// gateway's own, which confirms at once).
func authorizedBehindAProxy(t *testing.T, clock *rail0test.ManualClock) (escrow, *rewritingProxy, *rail0.PaymentDetail) {
	t.Helper()
	opts := []rail0test.Option{rail0test.WithoutRateLimits()}
	if clock != nil {
		opts = append(opts, rail0test.WithClock(clock))
	}
	gw := rail0test.NewServer(opts...)
	t.Cleanup(gw.Close)
	proxy := newRewritingProxy(t, gw)
	buyer, merchant := signingClients(t, gw, proxy.URL)
	e := escrow{gw, clock, buyer, gw.Buyer.Address, merchant}
	return e, proxy, e.authorized(t, "25.00")
}

// The review's submit attack: a proxy answers a capture's submit with
// another capture of the same payment (the one confirmed earlier), its id
// rewritten and no hash, the rest as rail0test wrote it. The SDK took it for
// the submit's answer, so the caller waited for that older capture, saw it
// confirmed at once and took the new capture for done. The contract answers
// a submit with the prepared row, so now that answer is not the submit's:
// the flow reads the payment and returns the row carrying the hash it sent,
// and a low-level Submit tied to its prepared row (TransactionID) does the
// same.
func TestAttackSubmitAnswerNamesAnotherTransaction(t *testing.T) {
	gw, clock, proxy, merchant, p, first := capturedBehindAProxy(t)
	ctx := context.Background()

	// answerAsFirst rewrites the answer of the capture's submit into the
	// first capture: its id, and no hash.
	answerAsFirst := func(route string, body map[string]any) bool {
		if route != "POST /payments/"+p.ID+"/capture" {
			return false
		}
		body["id"] = first.ID
		delete(body, "transaction_hash")
		return true
	}
	check := func(what string, tx *rail0.Transaction, err error, captures int) {
		t.Helper()
		proxy.mu.Lock()
		hits := proxy.hits
		proxy.mu.Unlock()
		if hits != 1 {
			t.Fatalf("%s: the proxy rewrote %d answers, want 1", what, hits)
		}
		if err != nil {
			t.Fatalf("%s: %v, want the capture sent, found on the payment by its hash", what, err)
		}
		if tx.ID == first.ID || tx.TransactionHash == nil || *tx.TransactionHash == *first.TransactionHash {
			t.Fatalf("%s: returned transaction %s (hash %v), the earlier capture %s: the caller would wait for that one", what, tx.ID, tx.TransactionHash, first.ID)
		}
		if n := gw.Ledger.CountOperation(p.ID, "capture"); n != captures {
			t.Fatalf("%s: %d capture submits ran, want %d", what, n, captures)
		}
		clock.Advance(time.Minute)
		got, err := merchant.Payments.WaitForTransaction(ctx, p.ID, tx.ID, rail0.PaymentWaitForTransactionParams{})
		if err != nil || got.Amount == nil || *got.Amount != "5000000" {
			t.Fatalf("%s: waiting for the capture returned %+v, %v, want the capture of 5.00", what, got, err)
		}
	}

	proxy.set(answerAsFirst)
	tx, err := merchant.Payments.Capture(ctx, p.ID, rail0.PaymentCaptureParams{Amount: "5.00"})
	check("Capture", tx, err, 2)
	proxy.set(nil)

	// The low-level path: Prepare, sign elsewhere, Submit tied to the row.
	prep, raw := preparedCapture(t, gw, merchant, p.ID, "5.00")
	proxy.set(answerAsFirst)
	tx, err = merchant.Payments.Submit(ctx, p.ID, rail0.OpCapture, rail0.PaymentSubmitParams{SignedTransaction: raw, TransactionID: prep.ID})
	check("Submit", tx, err, 3)
	proxy.set(nil)
	if tx.ID != prep.ID {
		t.Fatalf("Submit returned transaction %s, want the prepared %s", tx.ID, prep.ID)
	}

	// The payment moved by what was captured, not more.
	got, err := merchant.Payments.Get(ctx, p.ID)
	if err != nil || got.CapturableAmount != "5000000" {
		t.Fatalf("capturable after the captures: %v, %v, want 5000000", got, err)
	}
}

// A prepare answer without the row's id gives the flow nothing to bind its
// submit's answer to (see above): it is refused before anything is signed.
func TestAttackPreparedTransactionWithoutAnID(t *testing.T) {
	e, proxy, p := authorizedBehindAProxy(t, nil)
	gw, merchant, ctx := e.gw, e.merchant, context.Background()
	proxy.set(func(route string, body map[string]any) bool {
		if route != "POST /payments/"+p.ID+"/capture/prepare" {
			return false
		}
		delete(body, "id")
		return true
	})
	_, err := merchant.Payments.Capture(ctx, p.ID, rail0.PaymentCaptureParams{Amount: "10.00"})
	proxy.mu.Lock()
	hits := proxy.hits
	proxy.mu.Unlock()
	proxy.set(nil)
	var fe *rail0.FlowError
	var decodeErr *rail0.DecodeError
	if hits == 0 || !errors.As(err, &fe) || fe.Step != rail0.StepPrepare || !errors.As(err, &decodeErr) {
		t.Fatalf("Capture prepared without an id (%d rewritten): %v, want a *FlowError at prepare over a *DecodeError", hits, err)
	}
	if n := gw.Ledger.CountOperation(p.ID, "capture"); n != 0 {
		t.Fatalf("%d capture submits ran, want none", n)
	}
}

// The review's second submit attack (F1): the proxy also rewrites the
// prepare's answer, so that the prepared row, the submit's answer and the
// row the caller then waits for all name the earlier, confirmed capture,
// and the submit's answer carries no hash. Every id matches, so the checks
// of the answer's id alone pass; what does not is the row being new. The
// flow refuses a prepared row it has seen sent before signing anything;
// where it has not seen it (a low-level Prepare, a gateway hiding the row
// from its reads), the hash sent, which the returned row now carries, ties
// the wait: the earlier row is confirmed under another hash, so the wait
// ends with ErrUnknownTransaction, never with this step confirmed.
func TestAttackPrepareAndSubmitNameAnEarlierRow(t *testing.T) {
	gw, clock, proxy, merchant, p, first := capturedBehindAProxy(t)
	ctx := context.Background()
	firstHash := *first.TransactionHash

	// hide, while set, drops the earlier row from the payment's reads.
	var hide bool
	asFirst := func(route string, body map[string]any) bool {
		switch route {
		case "POST /payments/" + p.ID + "/capture/prepare":
			body["id"] = first.ID
		case "POST /payments/" + p.ID + "/capture":
			body["id"] = first.ID
			delete(body, "transaction_hash")
		case "GET /payments/" + p.ID:
			txs, _ := body["transactions"].([]any)
			if !hide || txs == nil {
				return false
			}
			kept := txs[:0]
			for _, tx := range txs {
				if row, _ := tx.(map[string]any); row["id"] != first.ID {
					kept = append(kept, tx)
				}
			}
			body["transactions"] = kept
		default:
			return false
		}
		return true
	}
	poll := rail0.PaymentWaitForTransactionParams{PollInterval: 200 * time.Millisecond, MaxPollInterval: 200 * time.Millisecond}
	// notThisStep checks that the wait for tx, tied to the hash it carries,
	// does not report the step confirmed.
	notThisStep := func(what string, tx *rail0.Transaction) {
		t.Helper()
		if tx.TransactionHash == nil || *tx.TransactionHash == firstHash {
			t.Fatalf("%s: returned %+v, want the hash sent, not the earlier capture's", what, tx)
		}
		clock.Advance(time.Minute)
		wait := poll
		wait.TransactionHash = *tx.TransactionHash
		got, err := merchant.Payments.WaitForTransaction(ctx, p.ID, tx.ID, wait)
		if !errors.Is(err, rail0.ErrUnknownTransaction) {
			t.Fatalf("%s: waiting for %s under the hash sent = %+v, %v; want ErrUnknownTransaction, not the earlier capture confirmed", what, tx.ID, got, err)
		}
	}

	// The flow on the client that saw the earlier capture sent and
	// confirmed: refused before signing, nothing submitted.
	proxy.set(asFirst)
	_, err := merchant.Payments.Capture(ctx, p.ID, rail0.PaymentCaptureParams{Amount: "5.00"})
	proxy.set(nil)
	var fe *rail0.FlowError
	var ae *rail0.ArtifactError
	if !errors.As(err, &fe) || fe.Step != rail0.StepVerify || !errors.As(err, &ae) || ae.Field != "id" {
		t.Fatalf("Capture prepared as the earlier row: %v, want a *FlowError at verify over an *ArtifactError on the id", err)
	}
	if n := gw.Ledger.CountOperation(p.ID, "capture"); n != 1 {
		t.Fatalf("%d capture submits ran, want only the first", n)
	}

	// A fresh process, whose read the gateway strips of the earlier row:
	// the flow signs and sends; the row it returns carries the hash sent,
	// and the wait tied to it is not fooled.
	_, fresh := signingClients(t, gw, proxy.URL)
	hide = true
	proxy.set(asFirst)
	tx, err := fresh.Payments.Capture(ctx, p.ID, rail0.PaymentCaptureParams{Amount: "5.00"})
	proxy.set(nil)
	if err != nil {
		t.Fatalf("Capture through the hiding gateway: %v", err)
	}
	notThisStep("Capture, the row hidden", tx)

	// The low-level path: Prepare and a Submit tied to the row it named.
	proxy.set(asFirst)
	prep, raw := preparedCapture(t, gw, merchant, p.ID, "5.00")
	tx, err = merchant.Payments.Submit(ctx, p.ID, rail0.OpCapture, rail0.PaymentSubmitParams{SignedTransaction: raw, TransactionID: prep.ID})
	proxy.set(nil)
	if err != nil {
		t.Fatalf("Submit: %v", err)
	}
	notThisStep("Submit", tx)
}

// The review's F2: the submit's answer names the prepared row in capitals.
// Ids the gateway gave (Prepare's) are compared with its later answers
// exactly, as the wait compares them, so that answer is not the submit's:
// the flow reads the payment and returns the row carrying the hash sent,
// under the id the gateway's reads use, and the wait for it succeeds (it
// used to be taken, and the wait then failed with ErrUnknownTransaction
// after the money was sent).
func TestAttackSubmitAnswerNamesThePreparedRowInCapitals(t *testing.T) {
	e, proxy, p := authorizedBehindAProxy(t, nil)
	merchant, ctx := e.merchant, context.Background()
	proxy.set(func(route string, body map[string]any) bool {
		if route != "POST /payments/"+p.ID+"/capture" {
			return false
		}
		body["id"] = strings.ToUpper(body["id"].(string))
		delete(body, "transaction_hash")
		return true
	})
	tx, err := merchant.Payments.Capture(ctx, p.ID, rail0.PaymentCaptureParams{Amount: "10.00"})
	proxy.set(nil)
	if err != nil {
		t.Fatal(err)
	}
	if tx.ID != strings.ToLower(tx.ID) {
		t.Fatalf("Capture returned the answer's id %s, want the row as the payment shows it", tx.ID)
	}
	got, err := merchant.Payments.WaitForTransaction(ctx, p.ID, tx.ID, rail0.PaymentWaitForTransactionParams{})
	if err != nil || got.Status != rail0.TxConfirmed {
		t.Fatalf("waiting for %s = %+v, %v; want it confirmed", tx.ID, got, err)
	}
}

// preparedCapture prepares a capture of amount on payment id through c and
// signs it with the gateway's merchant key, as a program signing elsewhere
// does: the prepared row and the signed transaction.
func preparedCapture(t *testing.T, gw *rail0test.Server, c *rail0.Client, id, amount string) (*rail0.PreparedTransaction, string) {
	t.Helper()
	prep, err := c.Payments.Prepare(context.Background(), id, rail0.OpCapture, rail0.PaymentPrepareParams{Amount: amount})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := signRaw(gw.Merchant.PrivateKey, *prep.UnsignedTransaction)
	if err != nil {
		t.Fatal(err)
	}
	return prep, raw
}
