package integration_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0test"
	"github.com/rail0/rail0-go/signing"
)

// swapProxy answers every request about payment A with payment B: it sends
// A's requests to B (by UUID, and by rail0_id when mapRail0ID is set) and
// writes A's UUID over B's in every answer, as a compromised gateway or a man
// in the middle serving an attacker would (issue 19, attack 2). B's rail0_id
// is left as it is: it is inside the calldata and the signing payloads, so a
// proxy that rewrote it would only get refused there.
type swapProxy struct {
	*httptest.Server
	mu       sync.Mutex
	a, b     *rail0.PaymentDetail
	mapRail0 bool
	requests int
}

func newSwapProxy(t *testing.T, gw *rail0test.Server) *swapProxy {
	sp := &swapProxy{}
	sp.Server = newProxy(t, gw, proxyHooks{
		in: func(r *http.Request) {
			sp.mu.Lock()
			defer sp.mu.Unlock()
			sp.requests++
			if sp.a == nil {
				return
			}
			r.URL.Path = strings.Replace(r.URL.Path, "/payments/"+sp.a.ID, "/payments/"+sp.b.ID, 1)
			if sp.mapRail0 {
				r.URL.Path = strings.Replace(r.URL.Path, "/payments/"+sp.a.Rail0ID, "/payments/"+sp.b.Rail0ID, 1)
			}
			r.URL.RawPath = ""
		},
		out: func(resp *http.Response) error {
			sp.mu.Lock()
			a, b := sp.a, sp.b
			sp.mu.Unlock()
			if a == nil {
				return nil
			}
			raw, err := drain(resp.Body)
			if err != nil {
				return err
			}
			resp.Body, resp.ContentLength = withBody(resp.Header, bytes.ReplaceAll(raw, []byte(b.ID), []byte(a.ID)))
			return nil
		},
	})
	return sp
}

// swap starts answering for a with b (nil a: pass everything through).
func (sp *swapProxy) swap(a, b *rail0.PaymentDetail, mapRail0 bool) {
	sp.mu.Lock()
	sp.a, sp.b, sp.mapRail0, sp.requests = a, b, mapRail0, 0
	sp.mu.Unlock()
}

func (sp *swapProxy) seen() int {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.requests
}

// bindingWorld is rail0test with a merchant, its buyer and an attacker who
// pays the same merchant, each with a signing client behind a swapProxy.
type bindingWorld struct {
	t                         *testing.T
	gw                        *rail0test.Server
	clock                     *rail0test.ManualClock
	proxy                     *swapProxy
	buyer, attacker, merchant *rail0.Client
	attackerAddress           string
	// client returns a new signing client of a key behind the proxy.
	client func(hexKey string) (*rail0.Client, string)
}

func newBindingWorld(t *testing.T, opts ...rail0test.Option) *bindingWorld {
	t.Helper()
	clock := rail0test.NewManualClock(time.Now())
	gw := rail0test.NewServer(append([]rail0test.Option{rail0test.WithoutRateLimits(), rail0test.WithClock(clock)}, opts...)...)
	t.Cleanup(gw.Close)
	w := &bindingWorld{t: t, gw: gw, clock: clock, proxy: newSwapProxy(t, gw)}
	client := func(hexKey string) (*rail0.Client, string) {
		key, err := signing.NewPrivateKeySigner(hexKey)
		if err != nil {
			t.Fatal(err)
		}
		c, err := rail0.NewClient(w.proxy.URL, w.gw.Pins(), rail0.WithSigner(key))
		if err != nil {
			t.Fatal(err)
		}
		return c, key.Address()
	}
	w.client = client
	w.buyer, _ = client(gw.Buyer.PrivateKey)
	w.merchant, _ = client(gw.Merchant.PrivateKey)
	w.attacker, w.attackerAddress = client(hex.EncodeToString(crypto.Keccak256([]byte("rail0-go attacker"))))
	return w
}

// payment has payer open a 25.00 escrow to the merchant, signs it, has the
// merchant authorize it and capture capture of it ("" for none), and
// returns it as read.
func (w *bindingWorld) payment(payer *rail0.Client, payerAddress, capture string) *rail0.PaymentDetail {
	w.t.Helper()
	ctx := context.Background()
	p := escrow{w.gw, w.clock, payer, payerAddress, w.merchant}.authorized(w.t, "25.00")
	if capture != "" {
		w.confirm(p.ID)(w.merchant.Payments.Capture(ctx, p.ID, rail0.PaymentCaptureParams{Amount: capture}))
	}
	p, err := w.merchant.Payments.Get(ctx, p.ID)
	if err != nil {
		w.t.Fatal(err)
	}
	return p
}

func (w *bindingWorld) confirm(id string) func(*rail0.Transaction, error) {
	return func(tx *rail0.Transaction, err error) {
		w.t.Helper()
		if err != nil {
			w.t.Fatal(err)
		}
		escrow{gw: w.gw, clock: w.clock, merchant: w.merchant}.confirmed(w.t, id, tx)
	}
}

// executed counts the submits of op that reached the gateway for either
// payment.
func (w *bindingWorld) executed(op string, ps ...*rail0.PaymentDetail) int {
	n := 0
	for _, p := range ps {
		n += w.gw.Ledger.CountOperation(p.ID, op)
	}
	return n
}

// Issue 19, attack 2, end to end: a proxy in front of rail0test answers
// every request about the buyer's payment A with the attacker's payment B to
// the same merchant, its id rewritten. With the defaults a refund of A is
// refused before any request; with an expectation of the payer, or with A
// named by its rail0_id, Refund, Capture and Void are refused before
// anything is signed, and nothing reaches B. Without either, a capture or a
// void goes to B: that is what an expectation is for.
//
// A merchant client that has never seen A reads it through the proxy and
// refuses the binding. One that checked A before (it authorized A) acts on
// A's terms without reading them, so B's prepared artifacts are what it
// refuses, at StepVerify with nothing signed; it then forgets A's terms and
// reads A afresh, where the binding refuses B as before.
func TestAttackSwappedPaymentIsRefused(t *testing.T) {
	ctx := context.Background()
	w := newBindingWorld(t)
	buyer := w.gw.Buyer.Address
	order := rail0.Expectation{Payer: buyer, Amount: "25.00", Token: w.gw.Token, ChainID: w.gw.ChainID}

	t.Run("refund", func(t *testing.T) {
		a, b := w.payment(w.buyer, buyer, "10.00"), w.payment(w.attacker, w.attackerAddress, "10.00")
		w.proxy.swap(a, b, true)
		defer w.proxy.swap(nil, nil, false)
		// The proxy works: a read of A is B, the attacker as payer, A's id.
		if got, err := w.merchant.Payments.Get(ctx, a.ID); err != nil || got.ID != a.ID || got.Payer != w.attackerAddress {
			t.Fatalf("the proxy does not swap: %+v, %v", got, err)
		}

		// The merchant client that authorized A knows its terms.
		_, err := w.merchant.Payments.Refund(ctx, a.ID, rail0.PaymentRefundParams{Amount: "4.00", Expect: rail0.Expectation{Payer: buyer}})
		refusedArtifact(t, err)
		_, err = w.merchant.Payments.Refund(ctx, a.ID, rail0.PaymentRefundParams{Amount: "4.00", Expect: rail0.Expectation{Payer: buyer}})
		refusedOn(t, err, "payer")

		merchant, _ := w.client(w.gw.Merchant.PrivateKey) // one that never saw A
		w.proxy.swap(a, b, true)
		_, err = merchant.Payments.Refund(ctx, a.ID, rail0.PaymentRefundParams{Amount: "4.00"})
		if !errors.Is(err, rail0.ErrUnbound) || w.proxy.seen() != 0 {
			t.Fatalf("a refund with the defaults: %v after %d requests, want ErrUnbound before any", err, w.proxy.seen())
		}
		_, err = merchant.Payments.Refund(ctx, a.ID, rail0.PaymentRefundParams{Amount: "4.00", Expect: rail0.Expectation{Payer: buyer}})
		refusedOn(t, err, "payer")
		_, err = merchant.Payments.Refund(ctx, a.Rail0ID, rail0.PaymentRefundParams{Amount: "4.00"})
		refusedOn(t, err, "rail0_id")
		if n := w.executed("refund", a, b); n != 0 {
			t.Fatalf("%d refunds reached the gateway", n)
		}

		// The same calls with an honest gateway: the refund is A's.
		w.proxy.swap(nil, nil, false)
		tx, err := w.merchant.Payments.Refund(ctx, a.Rail0ID, rail0.PaymentRefundParams{Amount: "4.00", Expect: order})
		w.confirm(a.ID)(tx, err)
		if w.executed("refund", a) != 1 || w.executed("refund", b) != 0 {
			t.Fatal("the honest refund did not go to A alone")
		}
	})

	for _, step := range []struct {
		op  string
		run func(id string, e rail0.Expectation) (*rail0.Transaction, error)
	}{
		{"capture", func(id string, e rail0.Expectation) (*rail0.Transaction, error) {
			return w.merchant.Payments.Capture(ctx, id, rail0.PaymentCaptureParams{Amount: "5.00", Expect: e})
		}},
		{"void", func(id string, e rail0.Expectation) (*rail0.Transaction, error) {
			return w.merchant.Payments.Void(ctx, id, rail0.PaymentVoidParams{Expect: e})
		}},
	} {
		t.Run(step.op, func(t *testing.T) {
			a, b := w.payment(w.buyer, buyer, ""), w.payment(w.attacker, w.attackerAddress, "")
			w.proxy.swap(a, b, true)
			_, err := step.run(a.ID, order) // the merchant client knows A's terms
			refusedArtifact(t, err)
			_, err = step.run(a.ID, order) // and read A again
			refusedOn(t, err, "payer")
			_, err = step.run(a.Rail0ID, rail0.Expectation{})
			refusedOn(t, err, "rail0_id")
			if n := w.executed(step.op, a, b); n != 0 {
				t.Fatalf("%d %s submits reached the gateway", n, step.op)
			}
			// What is not bound: named by its UUID and without an expectation,
			// the step acts on the payment the gateway returns, B.
			w.confirm(b.ID)(step.run(a.ID, rail0.Expectation{}))
			if w.executed(step.op, a) != 0 || w.executed(step.op, b) != 1 {
				t.Fatalf("the unbound %s did not go to B", step.op)
			}
			w.proxy.swap(nil, nil, false)
			tx, err := step.run(a.Rail0ID, order)
			w.confirm(a.ID)(tx, err)
			if w.executed(step.op, a) != 1 || w.executed(step.op, b) != 1 {
				t.Fatalf("the honest %s did not go to A", step.op)
			}
		})
	}
}

// refusedArtifact checks that err is a refusal at StepVerify of what the
// gateway prepared (not of the payment), with nothing signed.
func refusedArtifact(t *testing.T, err error) {
	t.Helper()
	var ae *rail0.ArtifactError
	var fe *rail0.FlowError
	if !errors.As(err, &ae) || ae.Artifact == "payment" || !errors.As(err, &fe) || fe.Step != rail0.StepVerify ||
		!strings.Contains(err.Error(), "nothing was signed") {
		t.Fatalf("err = %v, want an *ArtifactError on a prepared artifact at StepVerify", err)
	}
}

// refusedOn checks that err is a refusal at StepVerify naming the payment's
// field.
func refusedOn(t *testing.T, err error, field string) {
	t.Helper()
	var ae *rail0.ArtifactError
	var fe *rail0.FlowError
	if !errors.As(err, &ae) || ae.Artifact != "payment" || ae.Field != field || !errors.As(err, &fe) || fe.Step != rail0.StepVerify {
		t.Fatalf("err = %v, want an *ArtifactError on the payment's %s at StepVerify", err, field)
	}
}

// Issue 19, attack 6, end to end: a repeat that finds the work done is
// reported as what happened. The first answer of each write is dropped
// after the gateway ran it.
func TestAttackRepeatAfterALostAnswer(t *testing.T) {
	ctx := context.Background()

	t.Run("the payer signature", func(t *testing.T) {
		w := newBindingWorld(t)
		p, err := w.buyer.Payments.Create(ctx, rail0.PaymentCreateParams{ChainID: w.gw.ChainID, Mode: rail0.ModeAuthorize, Amount: "25.00",
			Token: w.gw.Token, Payer: w.gw.Buyer.Address, Payee: w.gw.Merchant.Address})
		if err != nil {
			t.Fatal(err)
		}
		drop := w.gw.Faults.Add(rail0test.Fault{Method: http.MethodPut, Path: "/payments/*/sign", Kind: rail0test.FaultDropAfter, Times: 1})
		signed, err := w.buyer.Payments.PayerSign(ctx, p.ID, rail0.PaymentPayerSignParams{})
		if err != nil || signed.Status != rail0.StatusSigned || signed.SignedAt == nil {
			t.Fatalf("PayerSign after a lost answer = %+v, %v; want the signed payment", signed, err)
		}
		if w.gw.Faults.Hits(drop) != 1 {
			t.Fatal("the fault dropped nothing: the test proves nothing")
		}
		// The signature on file works: the merchant authorizes with it.
		w.confirm(p.ID)(w.merchant.Payments.Authorize(ctx, p.ID, rail0.PaymentAuthorizeParams{}))
	})

	// The low-level path: a raw transaction submitted, its answer lost,
	// submitted again; and a hash reported, its answer lost while the
	// transaction confirmed, reported again.
	for _, byHash := range []bool{false, true} {
		name := "a raw transaction"
		if byHash {
			name = "a transaction reported by hash"
		}
		t.Run(name, func(t *testing.T) {
			// A report by hash confirms at once (no confirmation delay), before
			// the SDK's repeat of the report arrives; a raw transaction stays
			// pending until the clock moves.
			delay := 30 * time.Second
			if byHash {
				delay = 0
			}
			w := newBindingWorld(t, rail0test.WithConfirmationDelay(delay))
			p := w.payment(w.buyer, w.gw.Buyer.Address, "")
			prep, err := w.merchant.Payments.Prepare(ctx, p.ID, rail0.OpCapture, rail0.PaymentPrepareParams{Amount: "5.00"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.merchant.Payments.VerifyTransaction(ctx, p, rail0.Intent{Operation: rail0.OpCapture, Amount: "5.00"}, *prep.UnsignedTransaction); err != nil {
				t.Fatal(err)
			}
			raw, err := signRaw(w.gw.Merchant.PrivateKey, *prep.UnsignedTransaction)
			if err != nil {
				t.Fatal(err)
			}
			hash := crypto.Keccak256Hash(hexutil.MustDecode(raw)).Hex()
			submit := func() (*rail0.Transaction, error) {
				if byHash {
					return w.merchant.Payments.SubmitByHash(ctx, p.ID, rail0.OpCapture, rail0.PaymentSubmitByHashParams{TransactionHash: hash})
				}
				return w.merchant.Payments.Submit(ctx, p.ID, rail0.OpCapture, rail0.PaymentSubmitParams{SignedTransaction: raw})
			}
			route := "/payments/*/capture"
			if byHash {
				route += "/submitted"
			}
			drop := w.gw.Faults.Add(rail0test.Fault{Method: http.MethodPost, Path: route, Kind: rail0test.FaultDropAfter, Times: 1})
			tx, err := submit()
			if !byHash {
				// A raw submit is not repeated by the SDK: its outcome is unknown,
				// and the caller sends the same bytes again, while it is pending
				// and once it is mined.
				if !errors.Is(err, rail0.ErrOutcomeUnknown) {
					t.Fatalf("a raw submit whose answer was lost: %v, want ErrOutcomeUnknown", err)
				}
				if tx, err = submit(); err != nil || tx.Status != rail0.TxSubmitted {
					t.Fatalf("the repeat while pending = %+v, %v", tx, err)
				}
				w.clock.Advance(time.Minute)
				tx, err = submit()
			}
			if err != nil || tx.Status != rail0.TxConfirmed || tx.TransactionHash == nil || !strings.EqualFold(*tx.TransactionHash, hash) || tx.ID != prep.ID {
				t.Fatalf("the repeat once confirmed = %+v, %v; want the confirmed transaction %s", tx, err, hash)
			}
			if w.gw.Faults.Hits(drop) != 1 {
				t.Fatal("the fault dropped nothing: the test proves nothing")
			}
			got, err := w.merchant.Payments.Get(ctx, p.ID)
			if err != nil || got.CapturableAmount != "20000000" {
				t.Fatalf("capturable after one capture of 5.00 = %v, %v", got.CapturableAmount, err)
			}
		})
	}

	// A refusal that is not "already done" stands: another signed
	// transaction for a step under way is not this client's work.
	t.Run("another transaction's refusal stands", func(t *testing.T) {
		w := newBindingWorld(t, rail0test.WithConfirmationDelay(30*time.Second))
		p := w.payment(w.buyer, w.gw.Buyer.Address, "")
		prep, err := w.merchant.Payments.Prepare(ctx, p.ID, rail0.OpCapture, rail0.PaymentPrepareParams{Amount: "5.00"})
		if err != nil {
			t.Fatal(err)
		}
		raw, err := signRaw(w.gw.Merchant.PrivateKey, *prep.UnsignedTransaction)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.merchant.Payments.Submit(ctx, p.ID, rail0.OpCapture, rail0.PaymentSubmitParams{SignedTransaction: raw}); err != nil {
			t.Fatal(err)
		}
		other, err := signRaw(w.gw.Merchant.PrivateKey, strings.Replace(*prep.UnsignedTransaction, `"nonce":`, `"nonce":1`, 1))
		if err != nil {
			t.Fatal(err)
		}
		_, err = w.merchant.Payments.Submit(ctx, p.ID, rail0.OpCapture, rail0.PaymentSubmitParams{SignedTransaction: other})
		var apiErr *rail0.APIError
		if !errors.As(err, &apiErr) || apiErr.Code != rail0.CodeTransactionNotOverwritable {
			t.Fatalf("another transaction for a step under way: %v, want transaction_not_overwritable", err)
		}
	})
}
