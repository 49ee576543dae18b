package rail0

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// flowSigner signs deterministically without keys: a "signed transaction" is
// 0x02 followed by the hex of the unsigned JSON, and a payload signature is
// derived from the payload's primaryType. It records every call.
type flowSigner struct {
	addr string
	fail map[string]error // method name -> error to return

	mu    sync.Mutex
	calls []string
}

func (f *flowSigner) record(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

func (f *flowSigner) Address() string { return f.addr }

func (f *flowSigner) SignMessage(ctx context.Context, message string) (string, error) {
	f.record("SignMessage")
	return "", errors.New("flowSigner: SignMessage is not used by payment flows")
}

func (f *flowSigner) SignPayload(ctx context.Context, payload json.RawMessage) (string, error) {
	f.record("SignPayload")
	if err := f.fail["SignPayload"]; err != nil {
		return "", err
	}
	var v struct {
		PrimaryType string `json:"primaryType"`
	}
	if err := json.Unmarshal(payload, &v); err != nil {
		return "", err
	}
	return "0xsig-" + v.PrimaryType, nil
}

func (f *flowSigner) SignTransaction(ctx context.Context, unsigned string) (string, error) {
	f.record("SignTransaction")
	if err := f.fail["SignTransaction"]; err != nil {
		return "", err
	}
	return fakeSigned(unsigned), nil
}

func fakeSigned(unsigned string) string { return "0x02" + hex.EncodeToString([]byte(unsigned)) }

func (f *flowSigner) callList() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.calls, ",")
}

// pendingUnsigned is the unsigned_transaction of fixturePendingTxJSON.
func pendingUnsigned(t *testing.T) string {
	t.Helper()
	var tx Transaction
	if err := json.Unmarshal([]byte(fixturePendingTxJSON), &tx); err != nil || tx.UnsignedTransaction == nil {
		t.Fatalf("fixture: %v", err)
	}
	return *tx.UnsignedTransaction
}

func TestFlowsPrepareSignSubmit(t *testing.T) {
	t.Parallel()
	refundPayload := strings.Replace(fixtureSigningPayloadJSON, `"primaryType": "TransferWithAuthorization"`, `"primaryType": "ReceiveWithAuthorization"`, 1)
	tests := []struct {
		name      string
		run       func(ctx context.Context, p *PaymentsService, s Signer) (*Transaction, error)
		prepare   string // route of the (last) prepare call
		prepBody  string
		submit    string
		wantCalls string
	}{
		{"Authorize", func(ctx context.Context, p *PaymentsService, s Signer) (*Transaction, error) {
			return p.Authorize(ctx, "p", s)
		}, "/payments/p/authorize/prepare", "", "/payments/p/authorize", "SignTransaction"},
		{"Charge", func(ctx context.Context, p *PaymentsService, s Signer) (*Transaction, error) {
			return p.Charge(ctx, "p", s)
		}, "/payments/p/charge/prepare", "", "/payments/p/charge", "SignTransaction"},
		{"Capture", func(ctx context.Context, p *PaymentsService, s Signer) (*Transaction, error) {
			return p.Capture(ctx, "p", "10.00", s)
		}, "/payments/p/capture/prepare", `{"amount": "10.00"}`, "/payments/p/capture", "SignTransaction"},
		{"Void", func(ctx context.Context, p *PaymentsService, s Signer) (*Transaction, error) {
			return p.Void(ctx, "p", s)
		}, "/payments/p/void/prepare", "", "/payments/p/void", "SignTransaction"},
		{"Release from the signer", func(ctx context.Context, p *PaymentsService, s Signer) (*Transaction, error) {
			return p.Release(ctx, "p", s)
		}, "/payments/p/release/prepare", `{"from": "` + fixturePayer + `"}`, "/payments/p/release", "SignTransaction"},
		{"Dispute", func(ctx context.Context, p *PaymentsService, s Signer) (*Transaction, error) {
			return p.Dispute(ctx, "p", fixtureReason, s)
		}, "/payments/p/dispute/prepare", `{"reason": "` + fixtureReason + `"}`, "/payments/p/dispute", "SignTransaction"},
		{"CloseDispute", func(ctx context.Context, p *PaymentsService, s Signer) (*Transaction, error) {
			return p.CloseDispute(ctx, "p", "", s)
		}, "/payments/p/dispute/close/prepare", "", "/payments/p/dispute/close", "SignTransaction"},
		{"Refund both phases", func(ctx context.Context, p *PaymentsService, s Signer) (*Transaction, error) {
			return p.Refund(ctx, "p", "2.5", s)
		}, "/payments/p/refund/prepare", `{"amount": "2.5", "signature": "0xsig-ReceiveWithAuthorization"}`,
			"/payments/p/refund", "SignPayload,SignTransaction"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, c := newMuxServer(t)
			if strings.Contains(tt.name, "Refund") {
				srv.on("POST "+tt.prepare, muxOK(`{"signing_payload": `+refundPayload+`}`))
			}
			srv.on("POST "+tt.prepare, muxReply{status: http.StatusCreated, body: fixturePendingTxJSON})
			srv.on("POST "+tt.submit, muxReply{status: http.StatusAccepted, body: fixtureSubmittedTxJSON})
			signer := &flowSigner{addr: fixturePayer}
			tx, err := tt.run(context.Background(), c.Payments, signer)
			if err != nil {
				t.Fatal(err)
			}
			if tx.ID != fixtureTxID || tx.Status != TxSubmitted {
				t.Errorf("returned %+v, want the submitted transaction", tx)
			}
			if got := signer.callList(); got != tt.wantCalls {
				t.Errorf("signer calls = %s, want %s", got, tt.wantCalls)
			}
			reqs := srv.requests()
			last := reqs[len(reqs)-1]
			if last.Path != tt.submit {
				t.Fatalf("last request %s, want the submit %s", last.Path, tt.submit)
			}
			assertMuxBody(t, last, `{"signed_transaction": "`+fakeSigned(pendingUnsigned(t))+`"}`)
			prep := reqs[len(reqs)-2]
			if prep.Path != tt.prepare {
				t.Fatalf("request before submit %s, want %s", prep.Path, tt.prepare)
			}
			assertMuxBody(t, prep, tt.prepBody)
			if strings.Contains(tt.name, "Refund") {
				if len(reqs) != 3 {
					t.Fatalf("refund sent %v, want phase 1, phase 2, submit", srv.routes())
				}
				assertMuxBody(t, reqs[0], `{"amount": "2.5"}`)
			}
		})
	}
}

func TestFlowErrorsNameTheStep(t *testing.T) {
	t.Parallel()
	boom := errors.New("device unplugged")
	t.Run("prepare refused", func(t *testing.T) {
		t.Parallel()
		srv, c := newMuxServer(t)
		srv.on("POST /payments/p/void/prepare", muxReply{status: 422,
			body: `{"code": "not_voidable", "title": "Not voidable", "detail": "Something was captured.", "status": "invalid_state"}`})
		signer := &flowSigner{addr: fixturePayee}
		_, err := c.Payments.Void(context.Background(), "p", signer)
		var fe *FlowError
		var apiErr *APIError
		if !errors.As(err, &fe) || fe.Step != StepPrepare || fe.Operation != OpVoid || fe.TransactionID != "" {
			t.Fatalf("error = %v, want a prepare FlowError", err)
		}
		if !errors.As(err, &apiErr) || apiErr.Code != CodeNotVoidable {
			t.Errorf("cause = %v, want the not_voidable APIError", err)
		}
		if signer.callList() != "" {
			t.Errorf("signer called: %s", signer.callList())
		}
	})
	t.Run("signer fails", func(t *testing.T) {
		t.Parallel()
		srv, c := newMuxServer(t)
		srv.on("POST /payments/p/capture/prepare", muxReply{status: 201, body: fixturePendingTxJSON})
		_, err := c.Payments.Capture(context.Background(), "p", "1", &flowSigner{fail: map[string]error{"SignTransaction": boom}})
		var fe *FlowError
		if !errors.As(err, &fe) || fe.Step != StepSignTransaction || fe.TransactionID != fixtureTxID || !errors.Is(err, boom) {
			t.Fatalf("error = %v, want a sign_transaction FlowError wrapping the signer error", err)
		}
		if got := srv.routes(); len(got) != 1 {
			t.Errorf("requests = %v, want only the prepare", got)
		}
	})
	t.Run("no unsigned transaction", func(t *testing.T) {
		t.Parallel()
		srv, c := newMuxServer(t)
		srv.on("POST /payments/p/charge/prepare", muxReply{status: 201, body: fixtureSubmittedTxJSON})
		_, err := c.Payments.Charge(context.Background(), "p", &flowSigner{})
		if !errors.Is(err, ErrNoUnsignedTransaction) {
			t.Fatalf("error = %v, want ErrNoUnsignedTransaction", err)
		}
	})
	t.Run("refund payload signer fails", func(t *testing.T) {
		t.Parallel()
		srv, c := newMuxServer(t)
		srv.on("POST /payments/p/refund/prepare", muxOK(`{"signing_payload": `+fixtureSigningPayloadJSON+`}`))
		_, err := c.Payments.Refund(context.Background(), "p", "1", &flowSigner{fail: map[string]error{"SignPayload": boom}})
		var fe *FlowError
		if !errors.As(err, &fe) || fe.Step != StepSignPayload || !errors.Is(err, boom) {
			t.Fatalf("error = %v, want a sign_payload FlowError", err)
		}
	})
	t.Run("submit refused", func(t *testing.T) {
		t.Parallel()
		srv, c := newMuxServer(t)
		srv.on("POST /payments/p/authorize/prepare", muxReply{status: 200, body: fixturePendingTxJSON})
		srv.on("POST /payments/p/authorize", muxReply{status: 403,
			body: `{"code": "not_payee", "title": "Wrong sender", "detail": "The transaction must be sent from the payee.", "status": "forbidden"}`})
		_, err := c.Payments.Authorize(context.Background(), "p", &flowSigner{})
		var fe *FlowError
		if !errors.As(err, &fe) || fe.Step != StepSubmit || !errors.Is(err, ErrForbidden) {
			t.Fatalf("error = %v, want a submit FlowError matching ErrForbidden", err)
		}
		if !strings.Contains(err.Error(), "authorize of payment p: submit:") {
			t.Errorf("message %q does not name the step", err)
		}
	})
	t.Run("nil signer", func(t *testing.T) {
		t.Parallel()
		_, c := newMuxServer(t)
		for name, run := range map[string]func() error{
			"Authorize": func() error { _, err := c.Payments.Authorize(context.Background(), "p", nil); return err },
			"Release":   func() error { _, err := c.Payments.Release(context.Background(), "p", nil); return err },
			"Refund":    func() error { _, err := c.Payments.Refund(context.Background(), "p", "1", nil); return err },
			"PayerSign": func() error { _, err := c.Payments.PayerSign(context.Background(), "p", nil); return err },
		} {
			var ve *ValidationError
			if err := run(); !errors.As(err, &ve) || ve.Field != "signer" {
				t.Errorf("%s(nil signer) = %v, want a signer ValidationError", name, err)
			}
		}
	})
}

// sleepRecorder replaces WaitFor's sleep: it records each wait and returns at
// once (or the context's error), so tests never sleep.
type sleepRecorder struct {
	mu    sync.Mutex
	waits []time.Duration
	// onSleep, when set, runs before each recorded wait returns.
	onSleep func(n int)
}

func (r *sleepRecorder) option() WaitOption {
	return func(c *waitConfig) error {
		c.sleep = func(ctx context.Context, d time.Duration) error {
			r.mu.Lock()
			r.waits = append(r.waits, d)
			n := len(r.waits)
			r.mu.Unlock()
			if r.onSleep != nil {
				r.onSleep(n)
			}
			return ctx.Err()
		}
		return nil
	}
}

func (r *sleepRecorder) all() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.waits...)
}

func TestPayerSign(t *testing.T) {
	t.Parallel()
	t.Run("signs the payload as received", func(t *testing.T) {
		t.Parallel()
		srv, c := newMuxServer(t)
		srv.on("GET /payments/p", muxOK(paymentDetailJSON(StatusUnsigned, fixtureSigningPayloadJSON)))
		srv.on("PUT /payments/p/sign", muxOK(paymentDetailJSON(StatusSigned, "")))
		signer := &flowSigner{addr: fixturePayer}
		p, err := c.Payments.PayerSign(context.Background(), "p", signer)
		if err != nil {
			t.Fatal(err)
		}
		if p.Status != StatusSigned {
			t.Errorf("status = %s, want signed", p.Status)
		}
		reqs := srv.requests()
		if len(reqs) != 2 {
			t.Fatalf("requests = %v", srv.routes())
		}
		assertMuxBody(t, reqs[1], `{"signature": "0xsig-TransferWithAuthorization"}`)
	})
	t.Run("re-reads a null payload", func(t *testing.T) {
		t.Parallel()
		srv, c := newMuxServer(t)
		srv.on("GET /payments/p", muxOK(paymentDetailJSON(StatusUnsigned, "")), muxOK(paymentDetailJSON(StatusUnsigned, "")),
			muxOK(paymentDetailJSON(StatusUnsigned, fixtureSigningPayloadJSON)))
		srv.on("PUT /payments/p/sign", muxOK(paymentDetailJSON(StatusSigned, "")))
		rec := &sleepRecorder{}
		if _, err := c.Payments.PayerSign(context.Background(), "p", &flowSigner{}, rec.option()); err != nil {
			t.Fatal(err)
		}
		if got := srv.routes(); strings.Join(got, ",") != "GET /payments/p,GET /payments/p,GET /payments/p,PUT /payments/p/sign" {
			t.Errorf("requests = %v", got)
		}
		if w := rec.all(); len(w) != 2 || w[0] != DefaultPollInterval {
			t.Errorf("waits = %v, want two, the first DefaultPollInterval", w)
		}
	})
	t.Run("gives up on a payload that stays null", func(t *testing.T) {
		t.Parallel()
		srv, c := newMuxServer(t)
		srv.on("GET /payments/p", muxOK(paymentDetailJSON(StatusUnsigned, "")))
		rec := &sleepRecorder{}
		signer := &flowSigner{}
		_, err := c.Payments.PayerSign(context.Background(), "p", signer, rec.option())
		if !errors.Is(err, ErrSigningPayloadUnavailable) {
			t.Fatalf("error = %v, want ErrSigningPayloadUnavailable", err)
		}
		if n := len(srv.requests()); n != payerSignReads {
			t.Errorf("read %d times, want %d", n, payerSignReads)
		}
		if signer.callList() != "" {
			t.Error("signer called without a payload")
		}
	})
	t.Run("refuses a payment that is not unsigned", func(t *testing.T) {
		t.Parallel()
		srv, c := newMuxServer(t)
		srv.on("GET /payments/p", muxOK(paymentDetailJSON(StatusSigned, "")))
		_, err := c.Payments.PayerSign(context.Background(), "p", &flowSigner{})
		var fe *FlowError
		if !errors.Is(err, ErrNotSignable) || !errors.As(err, &fe) || fe.Step != StepRead {
			t.Fatalf("error = %v, want ErrNotSignable at the read step", err)
		}
	})
}

func TestWaitForTransaction(t *testing.T) {
	t.Parallel()
	t.Run("polls until confirmed with a growing interval", func(t *testing.T) {
		t.Parallel()
		srv, c := newMuxServer(t)
		srv.on("GET /payments/p",
			muxOK(paymentDetailJSON(StatusAuthorized, "", txJSON("tx1", OpCapture, TxPending, ""))),
			muxOK(paymentDetailJSON(StatusAuthorized, "", txJSON("tx1", OpCapture, TxSubmitting, ""))),
			muxOK(paymentDetailJSON(StatusAuthorized, "", txJSON("tx1", OpCapture, TxSubmitted, ""))),
			muxOK(paymentDetailJSON(StatusAuthorized, "", txJSON("tx1", OpCapture, TxSubmitted, ""))),
			muxOK(paymentDetailJSON(StatusCaptured, "", txJSON("tx0", OpAuthorize, TxConfirmed, ""), txJSON("tx1", OpCapture, TxConfirmed, ""))))
		rec := &sleepRecorder{}
		tx, err := c.Payments.WaitForTransaction(context.Background(), "p", "tx1", rec.option(), WithPollInterval(time.Second, 2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if tx.ID != "tx1" || tx.Status != TxConfirmed {
			t.Errorf("tx = %+v", tx)
		}
		want := []time.Duration{time.Second, 1500 * time.Millisecond, 2 * time.Second, 2 * time.Second}
		if got := rec.all(); !slices.Equal(got, want) {
			t.Errorf("waits = %v, want %v", got, want)
		}
	})
	t.Run("failed transaction is a typed error", func(t *testing.T) {
		t.Parallel()
		srv, c := newMuxServer(t)
		srv.on("GET /payments/p", muxOK(paymentDetailJSON(StatusAuthorized, "", txJSON("tx1", OpCapture, TxFailed, "nonce_too_low"))))
		_, err := c.Payments.WaitForTransaction(context.Background(), "p", "tx1", (&sleepRecorder{}).option())
		var tfe *TransactionFailedError
		if !errors.As(err, &tfe) || !errors.Is(err, ErrTransactionFailed) {
			t.Fatalf("error = %v, want a *TransactionFailedError", err)
		}
		if tfe.Code != CodeNonceTooLow || tfe.Title != "Nonce too low" || tfe.Detail != "Prepare the step again." || tfe.Transaction.ID != "tx1" {
			t.Errorf("error fields = %+v", tfe)
		}
		if !strings.Contains(err.Error(), "nonce_too_low") {
			t.Errorf("message %q lacks the code", err)
		}
	})
	t.Run("unknown transaction", func(t *testing.T) {
		t.Parallel()
		srv, c := newMuxServer(t)
		srv.on("GET /payments/p", muxOK(paymentDetailJSON(StatusAuthorized, "", txJSON("tx1", OpCapture, TxPending, ""))))
		_, err := c.Payments.WaitForTransaction(context.Background(), "p", "nope", (&sleepRecorder{}).option())
		if !errors.Is(err, ErrUnknownTransaction) {
			t.Fatalf("error = %v, want ErrUnknownTransaction", err)
		}
	})
	t.Run("a 429 waits at least Retry-After and goes on", func(t *testing.T) {
		t.Parallel()
		srv, c := newMuxServer(t)
		srv.on("GET /payments/p",
			muxReply{status: 429, header: map[string]string{"Retry-After": "60"},
				body: `{"code": "rate_limited", "title": "Too many requests", "detail": "Request limit reached for this period; retry after the Retry-After delay.", "status": "rate_limited"}`},
			muxOK(paymentDetailJSON(StatusAuthorized, "", txJSON("tx1", OpCapture, TxConfirmed, ""))))
		rec := &sleepRecorder{}
		if _, err := c.Payments.WaitForTransaction(context.Background(), "p", "tx1", rec.option()); err != nil {
			t.Fatal(err)
		}
		if got := rec.all(); len(got) != 1 || got[0] != 60*time.Second {
			t.Errorf("waits = %v, want [1m0s]", got)
		}
	})
	t.Run("a hostile Retry-After is capped by RetryAfterCap", func(t *testing.T) {
		t.Parallel()
		srv, c := newMuxServer(t)
		c.policy.retryAfterCap = 5 * time.Second
		srv.on("GET /payments/p",
			muxReply{status: 429, header: map[string]string{"Retry-After": "999999999"}},
			muxOK(paymentDetailJSON(StatusAuthorized, "", txJSON("tx1", OpCapture, TxConfirmed, ""))))
		rec := &sleepRecorder{}
		if _, err := c.Payments.WaitForTransaction(context.Background(), "p", "tx1", rec.option()); err != nil {
			t.Fatal(err)
		}
		if got := rec.all(); len(got) != 1 || got[0] != 5*time.Second {
			t.Errorf("waits = %v, want [5s]", got)
		}
	})
	t.Run("other errors end the wait", func(t *testing.T) {
		t.Parallel()
		srv, c := newMuxServer(t)
		srv.on("GET /payments/p", muxReply{status: 403,
			body: `{"code": "not_a_participant", "title": "Forbidden", "detail": "Not your payment.", "status": "forbidden"}`})
		_, err := c.Payments.WaitForTransaction(context.Background(), "p", "tx1", (&sleepRecorder{}).option())
		if !errors.Is(err, ErrForbidden) {
			t.Fatalf("error = %v, want ErrForbidden", err)
		}
	})
	t.Run("honours ctx", func(t *testing.T) {
		t.Parallel()
		srv, c := newMuxServer(t)
		srv.on("GET /payments/p", muxOK(paymentDetailJSON(StatusAuthorized, "", txJSON("tx1", OpCapture, TxSubmitted, ""))))
		ctx, cancel := context.WithCancel(context.Background())
		rec := &sleepRecorder{onSleep: func(n int) {
			if n == 2 {
				cancel()
			}
		}}
		_, err := c.Payments.WaitForTransaction(ctx, "p", "tx1", rec.option())
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error = %v, want context.Canceled", err)
		}
		if n := len(srv.requests()); n != 2 {
			t.Errorf("polled %d times, want 2 (none after cancel)", n)
		}
	})
}

func TestWaitForStatus(t *testing.T) {
	t.Parallel()
	srv, c := newMuxServer(t)
	srv.on("GET /payments/p", muxOK(paymentDetailJSON(StatusSigned, "")), muxOK(paymentDetailJSON(StatusCharged, "")))
	rec := &sleepRecorder{}
	p, err := c.Payments.WaitFor(context.Background(), "p", ForStatus(StatusAuthorized, StatusCharged), rec.option())
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != StatusCharged || len(rec.all()) != 1 {
		t.Errorf("status %s after %d waits", p.Status, len(rec.all()))
	}
	var ve *ValidationError
	if _, err := c.Payments.WaitFor(context.Background(), "p", WaitCondition{}); !errors.As(err, &ve) {
		t.Errorf("empty condition: %v, want a ValidationError", err)
	}
}

func TestWaitOptions(t *testing.T) {
	t.Parallel()
	cfg, err := newWaitConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []time.Duration
	for range 8 {
		got = append(got, cfg.next())
	}
	want := []time.Duration{time.Second, 1500 * time.Millisecond, 2250 * time.Millisecond, 3375 * time.Millisecond,
		5062500 * time.Microsecond, 7593750 * time.Microsecond, 10 * time.Second, 10 * time.Second}
	if !slices.Equal(got, want) {
		t.Errorf("default intervals = %v, want %v", got, want)
	}
	cfg, err = newWaitConfig([]WaitOption{WithPollInterval(time.Millisecond, time.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	if d := cfg.next(); d != MinPollInterval {
		t.Errorf("interval below the floor = %v, want MinPollInterval", d)
	}
	huge := time.Duration(math.MaxInt64 - 1)
	cfg, err = newWaitConfig([]WaitOption{WithPollInterval(huge/2, huge)})
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if d := cfg.next(); d < huge/2 {
			t.Fatalf("interval overflowed to %v", d)
		}
	}
	if _, err := newWaitConfig([]WaitOption{WithPollInterval(5*time.Second, time.Second)}); err == nil {
		t.Error("max below first accepted")
	}
	if _, err := newWaitConfig([]WaitOption{nil}); err == nil {
		t.Error("nil option accepted")
	}
}

// A failed transaction's text comes from the gateway; its Error() stays on
// one line whatever that text holds.
func TestTransactionFailedErrorIsOneLine(t *testing.T) {
	e := &TransactionFailedError{PaymentID: "p", Code: "nonce_too_low\nx", Detail: "line one\r\nline two"}
	if got := e.Error(); strings.ContainsAny(got, "\r\n") {
		t.Fatalf("Error() = %q spans lines", got)
	}
	if !errors.Is(e, ErrTransactionFailed) {
		t.Fatal("errors.Is(ErrTransactionFailed) must hold")
	}
}
