package webhook

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// The delivery of the contract guide (README section 13), copied byte for
// byte into testdata.
const (
	readmeSecret    = "example-shared-secret"
	readmeTimestamp = "1789381370"
	readmeSignature = "d7c3749a9cf1de2cfa67e2e3bd9ad39f0239233614a15de4c93588cb7c190109"
)

func readmeBody(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile("testdata/readme_delivery.json")
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// withClock returns v reading the time from now.
func withClock(v Verifier, now func() time.Time) Verifier {
	v.Now = now
	return v
}

func clockAt(unix int64) func() time.Time {
	return func() time.Time { return time.Unix(unix, 0) }
}

func TestVerifyReadmeVector(t *testing.T) {
	body := readmeBody(t)
	if got := Sign(body, 1789381370, readmeSecret); got != readmeSignature {
		t.Fatalf("Sign = %s, want %s", got, readmeSignature)
	}
	v := withClock(NewVerifier(readmeSecret), clockAt(1789381370+12))
	if err := v.Verify(body, readmeSignature, readmeTimestamp); err != nil {
		t.Fatalf("Verify(README vector) = %v", err)
	}
	// A Verifier without Now uses the system clock, which is far from the
	// vector's time: the digest matches, so only the clock can refuse it.
	if err := NewVerifier(readmeSecret).Verify(body, readmeSignature, readmeTimestamp); !errors.Is(err, ErrStale) {
		t.Fatalf("Verify with the system clock = %v, want ErrStale", err)
	}
}

func TestVerify(t *testing.T) {
	body := readmeBody(t)
	const ts = int64(1789381370)
	good := Sign(body, ts, readmeSecret)

	tests := []struct {
		name      string
		v         Verifier
		body      []byte
		sig, ts   string
		wantErr   error // nil: accepted
		wantInErr string
	}{
		{name: "valid", v: NewVerifier(readmeSecret), sig: good, ts: readmeTimestamp},
		{name: "upper-case hex accepted", v: NewVerifier(readmeSecret), sig: strings.ToUpper(good), ts: readmeTimestamp},
		{name: "wrong secret", v: NewVerifier("other"), sig: good, ts: readmeTimestamp, wantErr: ErrBadSignature},
		{name: "body altered", v: NewVerifier(readmeSecret), body: append(readmeBody(t), ' '), sig: good, ts: readmeTimestamp, wantErr: ErrBadSignature},
		{name: "timestamp altered", v: NewVerifier(readmeSecret), sig: good, ts: "1789381371", wantErr: ErrBadSignature},
		{name: "zero signature", v: NewVerifier(readmeSecret), sig: strings.Repeat("0", 64), ts: readmeTimestamp, wantErr: ErrBadSignature},
		{name: "previous secret accepted", v: NewVerifier("new-secret", "", readmeSecret), sig: good, ts: readmeTimestamp},
		{name: "no secret", v: Verifier{}, sig: good, ts: readmeTimestamp, wantErr: ErrNoSecret},
		{name: "only empty secrets", v: NewVerifier("", ""), sig: good, ts: readmeTimestamp, wantErr: ErrNoSecret},
		{name: "missing signature", v: NewVerifier(readmeSecret), sig: "", ts: readmeTimestamp, wantErr: ErrMalformedHeader, wantInErr: SignatureHeader},
		{name: "short signature", v: NewVerifier(readmeSecret), sig: good[:63], ts: readmeTimestamp, wantErr: ErrMalformedHeader},
		{name: "prefixed signature", v: NewVerifier(readmeSecret), sig: "sha256=" + good, ts: readmeTimestamp, wantErr: ErrMalformedHeader},
		{name: "non-hex signature", v: NewVerifier(readmeSecret), sig: "zz" + good[2:], ts: readmeTimestamp, wantErr: ErrMalformedHeader},
		{name: "missing timestamp", v: NewVerifier(readmeSecret), sig: good, ts: "", wantErr: ErrMalformedHeader, wantInErr: TimestampHeader},
		{name: "signed timestamp", v: NewVerifier(readmeSecret), sig: good, ts: "+1789381370", wantErr: ErrMalformedHeader},
		{name: "spaced timestamp", v: NewVerifier(readmeSecret), sig: good, ts: " 1789381370", wantErr: ErrMalformedHeader},
		{name: "fractional timestamp", v: NewVerifier(readmeSecret), sig: good, ts: "1789381370.5", wantErr: ErrMalformedHeader},
		{name: "overflowing timestamp", v: NewVerifier(readmeSecret), sig: good, ts: "99999999999999999999", wantErr: ErrMalformedHeader},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.v.Now == nil {
				tt.v.Now = clockAt(ts)
			}
			b := tt.body
			if b == nil {
				b = body
			}
			err := tt.v.Verify(b, tt.sig, tt.ts)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Verify = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Verify = %v, want %v", err, tt.wantErr)
			}
			for _, other := range []error{ErrBadSignature, ErrMalformedHeader, ErrStale, ErrNoSecret} {
				if other != tt.wantErr && errors.Is(err, other) {
					t.Errorf("Verify = %v, also matches %v", err, other)
				}
			}
			if !strings.Contains(err.Error(), tt.wantInErr) {
				t.Errorf("error %q does not mention %q", err, tt.wantInErr)
			}
		})
	}
}

func TestVerifyTolerance(t *testing.T) {
	body := []byte(`{"id":"evt_1"}`)
	const signedAt = int64(1_800_000_000)
	sig := Sign(body, signedAt, "s")
	ts := fmt.Sprint(signedAt)

	tests := []struct {
		name      string
		tolerance time.Duration
		now       time.Time
		stale     bool
	}{
		{"same second", 0, time.Unix(signedAt, 0), false},
		{"300 s late is the edge", 0, time.Unix(signedAt+300, 0), false},
		{"just over 300 s late", 0, time.Unix(signedAt+300, 1), true},
		{"one hour late", 0, time.Unix(signedAt+3600, 0), true},
		{"300 s early is the edge", 0, time.Unix(signedAt-300, 0), false},
		{"301 s early", 0, time.Unix(signedAt-301, 0), true},
		{"custom tolerance allows", 10 * time.Second, time.Unix(signedAt+10, 0), false},
		{"custom tolerance refuses", 10 * time.Second, time.Unix(signedAt+11, 0), true},
		{"negative tolerance means none", -time.Hour, time.Unix(signedAt+1, 0), true},
		{"negative tolerance, exact second", -time.Hour, time.Unix(signedAt, 0), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewVerifier("s")
			v.Tolerance, v.Now = tt.tolerance, func() time.Time { return tt.now }
			err := v.Verify(body, sig, ts)
			switch {
			case !tt.stale && err != nil:
				t.Fatalf("Verify = %v, want nil", err)
			case tt.stale && !errors.Is(err, ErrStale):
				t.Fatalf("Verify = %v, want ErrStale", err)
			case tt.stale && errors.Is(err, ErrBadSignature):
				t.Fatalf("Verify = %v: a stale but authentic delivery is not a bad signature", err)
			}
		})
	}
}

// A far-future timestamp overflows a time.Duration; it must still be stale,
// not wrap around into the window.
func TestVerifyFarFutureTimestamp(t *testing.T) {
	body := []byte(`{"id":"x"}`)
	const farFuture = int64(253402300799) // 9999-12-31T23:59:59Z
	v := withClock(NewVerifier("s"), clockAt(1_800_000_000))
	if err := v.Verify(body, Sign(body, farFuture, "s"), fmt.Sprint(farFuture)); !errors.Is(err, ErrStale) {
		t.Fatalf("year 9999: Verify = %v, want ErrStale", err)
	}
	if err := v.Verify(body, Sign(body, farFuture+1, "s"), fmt.Sprint(farFuture+1)); !errors.Is(err, ErrMalformedHeader) {
		t.Fatalf("beyond year 9999: Verify = %v, want ErrMalformedHeader", err)
	}
}

func TestVerifierNeverPrintsSecret(t *testing.T) {
	const secret = "whsec-very-private"
	v := NewVerifier(secret, "old-private")
	h := &Handler{Verifier: v}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		for _, x := range []any{v, &v, h, *h} {
			out := fmt.Sprintf(format, x)
			if strings.Contains(out, secret) || strings.Contains(out, "old-private") {
				t.Errorf("Sprintf(%q, %T) = %s: leaks a secret", format, x, out)
			}
		}
	}
	if !strings.Contains(v.String(), "secrets: 2, tolerance: 5m0s") {
		t.Errorf("String() = %s, want the secret count", v.String())
	}

	body := []byte(`{"id":"x"}`)
	sig := Sign(body, 1000, secret)
	err := withClock(NewVerifier(secret), clockAt(0)).Verify(body, sig, "1000")
	if !errors.Is(err, ErrStale) {
		t.Fatalf("Verify = %v, want ErrStale", err)
	}
	if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), sig) {
		t.Errorf("error %q leaks the secret or digest", err)
	}
}

func TestErrorsAreDistinct(t *testing.T) {
	all := []error{ErrMalformedHeader, ErrBadSignature, ErrStale, ErrNoSecret, ErrMalformedEvent, ErrNoHandleFunc, ErrTopicMismatch}
	for i, a := range all {
		for j, b := range all {
			if errors.Is(a, b) != (i == j) {
				t.Errorf("errors.Is(%v, %v) = %v", a, b, i != j)
			}
		}
	}
}

// The testdata copy of the README delivery must stay byte-identical to the
// contract guide when the guide is available (it lives outside the module).
func TestReadmeVectorMatchesContractGuide(t *testing.T) {
	guide, err := os.ReadFile("../../shared/gateway/README.md")
	if err != nil {
		t.Skipf("contract guide not available: %v", err)
	}
	var row string
	for _, line := range strings.Split(string(guide), "\n") {
		if strings.HasPrefix(line, "| Webhook delivery") {
			row = line
		}
	}
	if !strings.Contains(row, "X-Rail0-Signature: "+readmeSignature) || !strings.Contains(row, "X-Rail0-Timestamp: "+readmeTimestamp) {
		t.Fatalf("the guide's delivery row no longer carries the vector's headers: %q", row)
	}
	if !strings.Contains(row, "`"+string(readmeBody(t))+"`") {
		t.Fatal("testdata/readme_delivery.json differs from the body in the contract guide")
	}
}

// Issue 29 item 4: a verifier whose current (first) secret is empty
// refuses every delivery with ErrNoSecret, whichever path set the secrets,
// even one signed with a retired secret or another subscription's: a
// deploy that lost its current secret accepted the retired one alone.
func TestEmptyCurrentSecretRefusesEverything(t *testing.T) {
	body := []byte(`{"id":"e1","topic":"payments.refunded"}`)
	const ts = int64(1789381370)
	refunds := Subscription{ID: "wh-refunds", Topic: "payments.refunded"}
	for _, tc := range []struct {
		name   string
		v      Verifier
		signer string // a secret the verifier holds
	}{
		{"NewVerifier, retired secret only", NewVerifier("", "retired"), "retired"},
		{"NewVerifier, several retired", NewVerifier("", "", "retired"), "retired"},
		{"WithSubscription, retired secret only", Verifier{}.WithSubscription(refunds, "", "retired"), "retired"},
		{"WithSubscription without any secret", NewVerifier("orders").WithSubscription(refunds), "orders"},
		{"another subscription's good secret", NewVerifier("orders").WithSubscription(refunds, "", "retired"), "orders"},
		{"added before a good subscription", NewVerifier("", "retired").WithSubscription(refunds, "refunds"), "refunds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := withClock(tc.v, clockAt(ts))
			sig := Sign(body, ts, tc.signer)
			err := v.Verify(body, sig, fmt.Sprint(ts))
			if !errors.Is(err, ErrNoSecret) {
				t.Fatalf("Verify = %v, want ErrNoSecret", err)
			}
			if !strings.Contains(err.Error(), "current (first) secret") || strings.Contains(err.Error(), tc.signer) {
				t.Errorf("error %q: want it to name the empty current secret, and no secret", err)
			}
			if e, err := v.VerifyEvent(body, sig, fmt.Sprint(ts)); !errors.Is(err, ErrNoSecret) || e.ID != "" {
				t.Fatalf("VerifyEvent = %+v, %v; want ErrNoSecret", e, err)
			}
		})
	}
	// An empty previous secret is ordinary (no rotation under way).
	v := withClock(NewVerifier("current", ""), clockAt(ts))
	if err := v.Verify(body, Sign(body, ts, "current"), fmt.Sprint(ts)); err != nil {
		t.Fatalf("an empty previous secret: Verify = %v", err)
	}
	// A verifier built without secrets is completed by WithSubscription.
	v = withClock(NewVerifier().WithSubscription(refunds, "refunds"), clockAt(ts))
	if err := v.Verify(body, Sign(body, ts, "refunds"), fmt.Sprint(ts)); err != nil {
		t.Fatalf("NewVerifier().WithSubscription: Verify = %v", err)
	}
}

// Issue 29 item 2: ClockOffset comes from unsigned Date headers, so the
// verifier moves its clock only forward by it, by at most half the
// tolerance. A lie can neither accept a delivery older than the
// tolerance nor refuse a fresh one.
func TestVerifyClockOffsetCannotWidenTheWindow(t *testing.T) {
	body := []byte(`{"id":"evt_1"}`)
	const now = int64(1_800_000_000)
	for _, tc := range []struct {
		name     string
		offset   time.Duration
		signedAt int64 // seconds before now (negative: after)
		stale    bool
	}{
		{"a lying past Date: a delivery 20 h old", -20 * time.Hour, 20 * 3600, true},
		{"a lying past Date: just over the tolerance", -20 * time.Hour, 301, true},
		{"a lying past Date: a fresh delivery", -20 * time.Hour, 5, false},
		{"a lying future Date: a fresh delivery", 20 * time.Hour, 5, false},
		{"a lying future Date: 150 s old is the edge", 20 * time.Hour, 150, false},
		{"a lying future Date: a delivery 20 h ahead", 20 * time.Hour, -20 * 3600, true},
		{"a gateway 2 min ahead: its fresh delivery", 2 * time.Minute, -120, false},
		{"a gateway 2 min ahead: 6 min old by its clock", 2 * time.Minute, 240, true},
		{"a gateway 7 min ahead: its fresh delivery", 7 * time.Minute, -420, false},
		{"a gateway behind: nothing older is accepted", -4 * time.Minute, 301, true},
		{"no offset", 0, 300, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := withClock(NewVerifier("s"), clockAt(now))
			v.ClockOffset = func() time.Duration { return tc.offset }
			ts := now - tc.signedAt
			err := v.Verify(body, Sign(body, ts, "s"), fmt.Sprint(ts))
			if tc.stale != errors.Is(err, ErrStale) || (!tc.stale && err != nil) {
				t.Fatalf("Verify = %v, want stale %v", err, tc.stale)
			}
		})
	}
}
