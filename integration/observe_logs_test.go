package integration_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/internal/leaktest"
	"github.com/rail0/rail0-go/rail0test"
	"github.com/rail0/rail0-go/signing"
)

// recordingSigner remembers every signature it makes (sign-ins included),
// so that the test can look for them.
type recordingSigner struct {
	rail0.Signer
	mu   sync.Mutex
	sigs [][]byte
}

func (r *recordingSigner) SignDigest(ctx context.Context, digest [32]byte) ([]byte, error) {
	sig, err := r.Signer.SignDigest(ctx, digest)
	r.mu.Lock()
	r.sigs = append(r.sigs, append([]byte(nil), sig...))
	r.mu.Unlock()
	return sig, err
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of loggers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// encodings returns s as it could leak: raw, base64, hex and JSON-escaped.
func encodings(s string) []string {
	js, _ := json.Marshal(s)
	return []string{s, base64.StdEncoding.EncodeToString([]byte(s)), base64.RawURLEncoding.EncodeToString([]byte(s)),
		hex.EncodeToString([]byte(s)), strings.Trim(string(js), `"`)}
}

// bytesEncodings returns b as it could leak: hex (with and without 0x, in
// both cases) and base64.
func bytesEncodings(b []byte) []string {
	h := hex.EncodeToString(b)
	return []string{h, strings.ToUpper(h), base64.StdEncoding.EncodeToString(b), base64.RawURLEncoding.EncodeToString(b)}
}

// TestDebugLogsOfALifecycleHoldNoSecret runs a payment's whole life against
// rail0test (sign-ins, a webhook and its rotated secret, retried faults and
// rate limits, authorize, capture, refund, logout) with the SDK and the
// gateway logging at debug level, the SDK's wire log on (every request's and
// answer's headers and bodies, redacted), through slog's JSON and text
// handlers at once, and searches every log line, and every call's
// transcript, for the session tokens, the private keys, the webhook secrets,
// every signature (the sign-in ones included, and the r and s that a signed
// transaction carries apart), in raw, base64, hex and JSON-escaped form. The wire log must still show
// what it is for: the payment's id, its amounts and its statuses.
func TestDebugLogsOfALifecycleHoldNoSecret(t *testing.T) {
	var logs, textLogs syncBuffer
	logger := leaktest.Logger(&logs, &textLogs, slog.LevelDebug)
	gw := rail0test.NewServer(rail0test.WithLogger(logger),
		rail0test.WithRateLimits(rail0test.Limit{Requests: 100}, rail0test.Limit{Requests: 8}),
		rail0test.WithRateLimitPeriod(time.Second))
	defer gw.Close()
	gw.Faults.Add(rail0test.Fault{Method: http.MethodGet, Path: "/payments/*", Times: 2, Kind: rail0test.FaultStatus, Status: http.StatusBadGateway})
	ctx := context.Background()

	var transcripts []string
	keep := func(r *rail0.Response) {
		if r != nil && r.Call != nil {
			transcripts = append(transcripts, r.Call.String())
		}
	}
	var signers []*recordingSigner
	var tokens []string
	clientFor := func(hexKey string) *rail0.Client {
		key, err := signing.NewPrivateKeySigner(hexKey)
		if err != nil {
			t.Fatal(err)
		}
		rs := &recordingSigner{Signer: key}
		signers = append(signers, rs)
		c, err := rail0.NewClient(gw.URL, rail0.WithLogger(logger), rail0.WithWireLog(true), rail0.WithRetryOn429(true),
			rail0.WithHTTPClient(gw.HTTPClient()), rail0.WithSigner(rs), gw.Pins())
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.Session(ctx)
		if err != nil {
			t.Fatal(err)
		}
		keep(s.Response)
		tokens = append(tokens, s.Token())
		return c
	}
	buyer, merchant := clientFor(gw.Buyer.PrivateKey), clientFor(gw.Merchant.PrivateKey)

	hook, err := merchant.Webhooks.Create(ctx, rail0.WebhookCreateParams{Name: "n", CallbackURL: "https://example.invalid/hook", Topic: rail0.TopicPaymentsCaptured})
	if err != nil {
		t.Fatal(err)
	}
	keep(hook.Response)
	rotated, err := merchant.Webhooks.RotateSecret(ctx, hook.ID)
	if err != nil {
		t.Fatal(err)
	}
	keep(rotated.Response)
	p, err := buyer.Payments.Create(ctx, rail0.PaymentCreateParams{ChainID: gw.ChainID, Mode: rail0.ModeAuthorize,
		Amount: "3.00", Token: gw.Token, Payer: gw.Buyer.Address, Payee: gw.Merchant.Address})
	if err != nil {
		t.Fatal(err)
	}
	keep(p.Response)
	signed, err := buyer.Payments.PayerSign(ctx, p.ID, rail0.PaymentPayerSignParams{})
	if err != nil {
		t.Fatal(err)
	}
	keep(signed.Response)
	poll := rail0.PaymentWaitForTransactionParams{PollInterval: 200 * time.Millisecond, MaxPollInterval: 200 * time.Millisecond}
	for _, step := range []func() (*rail0.Transaction, error){
		func() (*rail0.Transaction, error) {
			return merchant.Payments.Authorize(ctx, p.ID, rail0.PaymentAuthorizeParams{})
		},
		func() (*rail0.Transaction, error) {
			return merchant.Payments.Capture(ctx, p.ID, rail0.PaymentCaptureParams{Amount: "1.00"})
		},
		func() (*rail0.Transaction, error) {
			return merchant.Payments.Refund(ctx, p.Rail0ID, rail0.PaymentRefundParams{Amount: "0.50"})
		},
	} {
		tx, err := step()
		if err != nil {
			t.Fatal(err)
		}
		keep(tx.Response)
		done, err := merchant.Payments.WaitForTransaction(ctx, p.ID, tx.ID, poll)
		if err != nil {
			t.Fatal(err)
		}
		keep(done.Response)
	}
	out, err := buyer.Auth.Logout(ctx)
	if err != nil || !out.Revoked {
		t.Fatalf("Logout = %+v, %v", out, err)
	}
	keep(out.Response)

	var secrets []string
	for _, s := range append(tokens, hook.SharedSecret(), rotated.SharedSecret()) {
		secrets = append(secrets, encodings(s)...)
	}
	for _, k := range []string{gw.Buyer.PrivateKey, gw.Merchant.PrivateKey} {
		bare := strings.TrimPrefix(k, "0x")
		secrets = append(secrets, encodings(bare)...)
		raw, err := hex.DecodeString(bare)
		if err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, bytesEncodings(raw)...)
	}
	sigs := 0
	for _, rs := range signers {
		for _, sig := range rs.sigs {
			sigs++
			secrets = append(secrets, bytesEncodings(sig)...)
		}
	}
	if sigs < 3 || len(tokens) != 2 {
		t.Fatalf("%d signatures and %d tokens recorded; the run proves little", sigs, len(tokens))
	}

	for _, rs := range signers {
		for _, sig := range rs.sigs {
			// A signed transaction carries r and s apart, each after its
			// RLP length prefix.
			secrets = append(secrets, bytesEncodings(sig[:32])...)
			secrets = append(secrets, bytesEncodings(sig[32:64])...)
		}
	}

	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	textLines := strings.Split(strings.TrimSpace(textLogs.String()), "\n")
	text := logs.String() + strings.Join(transcripts, "\n")
	for _, want := range []string{`"msg":"rail0: attempt"`, `"will_retry":true`, `"msg":"rail0test: request"`,
		`"msg":"rail0: wire request"`, `"msg":"rail0: wire response"`, `"Authorization":"[redacted]"`} {
		if !strings.Contains(text, want) {
			t.Fatalf("the logs hold no %s, so they prove little", want)
		}
	}
	if len(lines) < 30 || len(transcripts) < 10 || len(textLines) != len(lines) {
		t.Fatalf("%d JSON and %d text log lines, %d transcripts; the run proves little", len(lines), len(textLines), len(transcripts))
	}
	// What the wire log is for: the bodies show the payment's id, amounts
	// and statuses, in both handlers' output.
	var bodies strings.Builder
	for _, l := range lines {
		var rec struct{ Msg, Body string }
		if json.Unmarshal([]byte(l), &rec) == nil && strings.HasPrefix(rec.Msg, "rail0: wire") {
			bodies.WriteString(rec.Body + "\n")
		}
	}
	for _, want := range []string{`"id":"` + p.ID + `"`, `"rail0_id":"` + p.Rail0ID + `"`, `"amount":"3.00"`, `"amount":"1.00"`,
		`"status":"partially_captured"`, `"status":"confirmed"`, `"signed_transaction":"[redacted]"`, `"signature":"[redacted]"`, `"shared_secret":"[redacted]"`,
		`"token":"[redacted]"`} {
		if !strings.Contains(bodies.String(), want) {
			t.Errorf("no wire body holds %s", want)
		}
	}
	if !strings.Contains(textLogs.String(), p.ID) || !strings.Contains(textLogs.String(), `header.Authorization=[redacted]`) {
		t.Error("the text handler's wire lines show neither the payment nor the redacted header")
	}
	lines = append(lines, textLines...)
	for _, s := range secrets {
		if len(s) < 16 {
			continue
		}
		for i, line := range append(lines, transcripts...) {
			if strings.Contains(line, s) {
				t.Errorf("line %d holds a secret (an encoding of length %d)", i, len(s))
			}
		}
	}
}
