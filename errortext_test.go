package rail0

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// hostileText is gateway text built to act on whatever prints it: an ANSI
// colour and screen clear, an OSC 8 hyperlink and an OSC 52 clipboard write,
// a forged second log record after U+2028 and a newline, a right-to-left
// override that displays "exe.txt" as "txt.exe", C1 controls, DEL, NUL, a
// zero-width space and a byte that is not UTF-8.
const hostileText = "Only 15.00\x1b[31m is held\x1b[2J;\x1b]8;;https://evil.example\x07click\x1b]8;;\x07" +
	"\u2028level=INFO msg=\"refund approved\"\n\u202etxt.exe\u202c \u0085\u009b1m\x7f\x00\u200b\xff end"

// inert reports whether s holds nothing a terminal or log viewer would act
// on: every rune valid UTF-8, no control or format character, no line or
// paragraph separator.
func inert(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			return false
		}
	}
	return true
}

func TestOneLine(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"printable ASCII unchanged", "Only 15.00 is held;  lower it.", "Only 15.00 is held;  lower it."},
		{"empty", "", ""},
		{"newlines and tabs become one space", "line one\r\n\tline two\n", "line one line two"},
		{"line and paragraph separators and NEL", "a\u2028b\u2029c\u0085d", "a b c d"},
		{"ANSI colour is escaped, the rest stays readable", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"OSC hyperlink terminated by BEL", "\x1b]8;;http://e\x07x", `\x1b]8;;http://e\x07x`},
		{"C1 CSI, DEL and NUL", "a\u009b2Jb\x7fc\x00", `a\x9b2Jb\x7fc\x00`},
		{"right-to-left override and isolates", "\u202etxt.exe\u202c \u2066x\u2069", `\u202etxt.exe\u202c \u2066x\u2069`},
		{"zero-width and byte order marks", "a\u200bb\ufeffc", `a\u200bb\ufeffc`},
		{"format character beyond the BMP", "tag\U000e0041", `tag\U000e0041`},
		{"invalid UTF-8 byte", "bad\xffbyte", `bad\xffbyte`},
		{"non-ASCII letters stay", "Über 15,00 €  café", "Über 15,00 € café"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := oneLine(tt.in)
			if got != tt.want {
				t.Errorf("oneLine(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if !inert(got) {
				t.Errorf("oneLine(%q) = %q is not inert", tt.in, got)
			}
		})
	}
	if got := oneLine(hostileText); !inert(got) || !strings.Contains(got, "refund approved") {
		t.Errorf("oneLine(hostileText) = %q", got)
	}
}

// Through NewClient against a gateway that answers hostile text in every
// field of its error envelope: Error() is one inert line, while the typed
// fields keep the text as sent.
func TestGatewayTextInErrorsIsInert(t *testing.T) {
	t.Parallel()
	body, err := json.Marshal(map[string]string{
		"code": "amount_exceeds_capturable\x1b[8m", "title": hostileText, "detail": hostileText,
		"status": "invalid_state\n", "message": hostileText, "error": "x",
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, srv.URL, WithToken("t"))

	_, err = c.Payments.Get(context.Background(), "p")
	var apiErr *APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want an *APIError", err)
	}
	if msg := err.Error(); !inert(msg) || !strings.Contains(msg, "refund approved") || !strings.Contains(msg, `\x1b[31m`) {
		t.Errorf("Error() = %q: want one inert line that still shows what was sent", msg)
	}
	sent := strings.ToValidUTF8(hostileText, "\ufffd") // what encoding/json sends for the byte that is not UTF-8
	if apiErr.Detail != sent || apiErr.Title != sent || apiErr.Code != "amount_exceeds_capturable\x1b[8m" ||
		apiErr.Category != "invalid_state\n" {
		t.Errorf("typed fields changed: %q %q %q %q", apiErr.Code, apiErr.Category, apiErr.Title, apiErr.Detail)
	}
	if s := apiErr.Call.String(); !inert(strings.ReplaceAll(s, "\n", " ")) {
		t.Errorf("transcript = %q", s)
	}
}

// A failed transaction's error fields, and the ids around them, come from
// the gateway too.
func TestFailedTransactionTextIsInert(t *testing.T) {
	t.Parallel()
	srv, c := newMuxServer(t)
	tx := txJSON(`tx1\u001b[2J`, OpCapture, TxFailed, "nonce_too_low")
	for from, to := range map[string]string{
		`"error_code": "nonce_too_low"`:             `"error_code": "nonce_too_low\u2028forged"`,
		`"error_title": "Nonce too low"`:            `"error_title": "\u202eNonce"`,
		`"error_detail": "Prepare the step again."`: `"error_detail": "Prepare\nagain \u001b]52;c;cm0gLXJmIH4=\u0007"`,
	} {
		if !strings.Contains(tx, from) {
			t.Fatalf("fixture lacks %s", from)
		}
		tx = strings.Replace(tx, from, to, 1)
	}
	srv.on("GET /payments/p", muxOK(paymentDetailJSON(StatusAuthorized, "", tx)))
	_, err := (&sleepRecorder{}).on(c).Payments.WaitForTransaction(context.Background(), "p", "tx1\x1b[2J", PaymentWaitForTransactionParams{})
	var tfe *TransactionFailedError
	if !errors.As(err, &tfe) {
		t.Fatalf("err = %v, want a *TransactionFailedError", err)
	}
	if msg := err.Error(); !inert(msg) || !strings.Contains(msg, "forged") || !strings.Contains(msg, "Prepare again") {
		t.Errorf("Error() = %q", msg)
	}
	if tfe.Code != "nonce_too_low\u2028forged" || tfe.Detail != "Prepare\nagain \x1b]52;c;cm0gLXJmIH4=\x07" || tfe.Transaction.ID != "tx1\x1b[2J" {
		t.Errorf("typed fields changed: %q %q %q", tfe.Code, tfe.Detail, tfe.Transaction.ID)
	}
	tfe.Detail, tfe.Title = "", "\u202eNonce"
	if msg := tfe.Error(); !inert(msg) {
		t.Errorf("Error() with only a title = %q", msg)
	}
}

// Gateway text that reaches a flow's or a check's error: PayerSign's report
// of a status it cannot sign, and the payment id an *ArtifactError names,
// which for VerifyPayload and VerifyTransaction is the gateway's own.
func TestGatewayTextInArtifactErrorsIsInert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("PayerSign of a payment in a status it cannot sign", func(t *testing.T) {
		t.Parallel()
		g := newArtGateway(t, ModeAuthorize, StatusUnsigned)
		g.tamperPayment = func(p map[string]any) { p["status"], p["signed_at"] = hostileText, nil }
		_, err := g.client(g.payer).Payments.PayerSign(ctx, artPayment, PaymentPayerSignParams{Expect: artOrder(ModeAuthorize)})
		if !errors.Is(err, ErrNotSignable) {
			t.Fatalf("err = %v, want ErrNotSignable", err)
		}
		if msg := err.Error(); !inert(msg) || !strings.Contains(msg, "refund approved") {
			t.Errorf("Error() = %q: want one inert line that still shows the status", msg)
		}
	})
	t.Run("the payment id of an *ArtifactError", func(t *testing.T) {
		t.Parallel()
		g := newArtGateway(t, ModeAuthorize, StatusPartiallyCaptured)
		c := g.client(g.payee)
		p, err := c.Payments.Get(ctx, artPayment)
		if err != nil {
			t.Fatal(err)
		}
		p.ID, p.Amount = hostileText, "1" // any mismatch: config_hash
		_, err = c.Payments.VerifyTransaction(ctx, p, Intent{Operation: OpVoid}, "{}")
		var ae *ArtifactError
		if !errors.As(err, &ae) || ae.PaymentID != hostileText {
			t.Fatalf("err = %v, want an *ArtifactError keeping the id as sent", err)
		}
		if msg := err.Error(); !inert(msg) || !strings.Contains(msg, "refund approved") {
			t.Errorf("Error() = %q: want one inert line that still shows the id", msg)
		}
	})
}
