package webhook

import (
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzVerify checks that Verify never panics and accepts exactly the
// deliveries whose signature is the HMAC of the timestamp header and body
// and whose timestamp is within the tolerance. Seeds live in
// testdata/fuzz/FuzzVerify.
func FuzzVerify(f *testing.F) {
	f.Add([]byte(`{"id":"e1"}`), "", "1789381370", int64(1789381370), false)
	f.Add([]byte(`{"id":"e1"}`), "d7c3749a9cf1de2cfa67e2e3bd9ad39f0239233614a15de4c93588cb7c190109", "1789381370", int64(1789381370), true)
	f.Fuzz(func(t *testing.T, body []byte, sig, ts string, now int64, signIt bool) {
		if now < 0 || now > maxUnix {
			now %= maxUnix
			if now < 0 {
				now = -now
			}
		}
		if signIt {
			// Sign what is in the header so that the digest matches and
			// only the header syntax and the clock decide.
			sig = hex.EncodeToString(digest("fuzz-secret", ts, body))
		}
		v := withClock(NewVerifier("fuzz-secret"), func() time.Time { return time.Unix(now, 0) })
		err := v.Verify(body, sig, ts)
		if err != nil {
			return
		}
		// Accepted: the header must be canonical-enough decimal seconds
		// within 300 s, and the signature must be the real digest.
		n, perr := strconv.ParseInt(ts, 10, 64)
		if perr != nil || ts[0] == '+' || ts[0] == '-' {
			t.Fatalf("accepted malformed timestamp %q", ts)
		}
		if d := n - now; d > 300 || d < -300 {
			t.Fatalf("accepted timestamp %d at now %d", n, now)
		}
		if want := hex.EncodeToString(digest("fuzz-secret", ts, body)); !strings.EqualFold(sig, want) {
			t.Fatalf("accepted signature %q, want %q", sig, want)
		}
	})
}

// FuzzDecodeEvent checks that DecodeEvent never panics, that success means
// a non-empty id, and that Raw is always the exact input.
func FuzzDecodeEvent(f *testing.F) {
	f.Add([]byte(`{"id":"e1","topic":"payments.created","payment":{"id":"p1"},"transaction":null}`))
	f.Add([]byte(`{"id":"e1","emitted_at":"2026-09-14T10:22:50Z","payment":{"chain_id":"x"}}`))
	f.Add([]byte(`{"id":""}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		e, err := DecodeEvent(body)
		if err != nil {
			if e.ID != "" || e.Raw != nil {
				t.Fatalf("error %v with a partial event %+v", err, e)
			}
			return
		}
		if e.ID == "" {
			t.Fatal("decoded an event without id")
		}
		if string(e.Raw) != string(body) {
			t.Fatalf("Raw = %q, want the input %q", e.Raw, body)
		}
	})
}
