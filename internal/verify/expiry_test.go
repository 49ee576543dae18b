package verify

import (
	"errors"
	"testing"
	"time"
)

func TestCheckExpiries(t *testing.T) {
	now := time.Unix(1_789_000_000, 0)
	day := uint64(24 * 3600)
	n := uint64(now.Unix())
	b := DefaultExpiryBounds
	for _, tt := range []struct {
		name         string
		auth, refund uint64
		bounds       ExpiryBounds
		field        string // "" when it passes
	}{
		{"rail0test's defaults: 7 and 30 days", n + 7*day, n + 30*day, b, ""},
		{"at the bounds", n + 30*day, n + 365*day, b, ""},
		{"the refund window at its minimum", n, n + day, b, ""},
		{"an authorization already expired", n - day, n + 30*day, b, ""},
		{"an authorization past the bound", n + 30*day + 1, n + 60*day, b, "authorization_expiry"},
		{"forever (2^48-1)", 1<<48 - 1, 1<<48 - 1, b, "authorization_expiry"},
		{"a refund window past the bound", n + 7*day, n + 365*day + 1, b, "refund_expiry"},
		{"a refund window closed at creation", n, n, b, "refund_expiry"},
		{"a refund window closing in an hour", n, n + 3600, b, "refund_expiry"},
		{"a refund window already closed", 0, 0, b, "refund_expiry"},
		{"a caller's tighter bound", n + 7*day + 1, n + 30*day, ExpiryBounds{MaxAuthorization: 7 * 24 * time.Hour, MinRefund: time.Hour, MaxRefund: 31 * 24 * time.Hour}, "authorization_expiry"},
		{"a caller's longer bound", n + 90*day, n + 3*365*day, ExpiryBounds{MaxAuthorization: 90 * 24 * time.Hour, MinRefund: time.Hour, MaxRefund: 3 * 365 * 24 * time.Hour}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckExpiries(&Terms{ID: "p1", AuthExpiry: tt.auth, RefundExpiry: tt.refund}, now, tt.bounds)
			var m *Mismatch
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.field != "" && (!errors.As(err, &m) || m.Field != tt.field || m.Artifact != "payment"):
				t.Fatalf("err = %v, want a mismatch on %s", err, tt.field)
			}
		})
	}
}
