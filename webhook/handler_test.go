package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rail0/rail0-go"
)

type ctxKey struct{}

func TestHandler(t *testing.T) {
	body := readmeBody(t)
	const ts = int64(1789381370)
	good := Sign(body, ts, readmeSecret)
	noTopic := []byte(`{"id":"e2"}`)

	tests := []struct {
		name       string
		method     string
		body       []byte
		sig, ts    string
		topicHdr   string
		maxBody    int64
		handleErr  error
		nilHandle  bool
		secret     string
		wantStatus int
		wantErr    error // passed to OnError; nil means OnError must not run
		wantEvent  string
		wantTopic  rail0.WebhookTopic
	}{
		{name: "valid delivery", body: body, sig: good, ts: readmeTimestamp,
			wantStatus: http.StatusNoContent, wantEvent: "0191f0aa-7c8d-7e9f-8a0b-1c2d3e4f5a6b", wantTopic: rail0.TopicPaymentsCaptured},
		{name: "the unsigned topic header is never read", body: noTopic, sig: Sign(noTopic, ts, readmeSecret), ts: readmeTimestamp, topicHdr: "payments.voided",
			wantStatus: http.StatusNoContent, wantEvent: "e2", wantTopic: ""},
		{name: "bad signature", body: body, sig: Sign(body, ts, "nope"), ts: readmeTimestamp,
			wantStatus: http.StatusUnauthorized, wantErr: ErrBadSignature},
		{name: "stale", body: body, sig: Sign(body, ts-3600, readmeSecret), ts: "1789377770",
			wantStatus: http.StatusUnauthorized, wantErr: ErrStale},
		{name: "malformed header", body: body, sig: "abc", ts: readmeTimestamp,
			wantStatus: http.StatusBadRequest, wantErr: ErrMalformedHeader},
		{name: "verified but not an event", body: []byte(`[]`), sig: Sign([]byte(`[]`), ts, readmeSecret), ts: readmeTimestamp,
			wantStatus: http.StatusBadRequest, wantErr: ErrMalformedEvent},
		{name: "body too large", body: body, sig: good, ts: readmeTimestamp, maxBody: 100,
			wantStatus: http.StatusRequestEntityTooLarge, wantErr: errAny},
		{name: "wrong method", method: http.MethodGet, body: nil, sig: good, ts: readmeTimestamp,
			wantStatus: http.StatusMethodNotAllowed, wantErr: errAny},
		{name: "handler failure asks for redelivery", body: body, sig: good, ts: readmeTimestamp, handleErr: errBoom,
			wantStatus: http.StatusInternalServerError, wantErr: errBoom, wantEvent: "0191f0aa-7c8d-7e9f-8a0b-1c2d3e4f5a6b", wantTopic: rail0.TopicPaymentsCaptured},
		{name: "no secret configured", body: body, sig: good, ts: readmeTimestamp, secret: "-",
			wantStatus: http.StatusInternalServerError, wantErr: ErrNoSecret},
		{name: "no handle func", body: body, sig: good, ts: readmeTimestamp, nilHandle: true,
			wantStatus: http.StatusInternalServerError, wantErr: ErrNoHandleFunc},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []Event
			var reported []error
			secret := readmeSecret
			if tt.secret == "-" {
				secret = ""
			}
			h := NewHandler(secret, func(ctx context.Context, e Event) error {
				if ctx.Value(ctxKey{}) != "marker" {
					t.Error("Handle did not get the request context")
				}
				got = append(got, e)
				return tt.handleErr
			})
			if tt.nilHandle {
				h.Handle = nil
			}
			h.Verifier.Now = clockAt(ts + 5)
			h.MaxBodyBytes = tt.maxBody
			h.OnError = func(_ *http.Request, err error) { reported = append(reported, err) }

			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			req := httptest.NewRequestWithContext(context.WithValue(context.Background(), ctxKey{}, "marker"),
				method, "/hooks/rail0", bytes.NewReader(tt.body))
			req.Header.Set(SignatureHeader, tt.sig)
			req.Header.Set(TimestampHeader, tt.ts)
			if tt.topicHdr != "" {
				req.Header.Set("X-Rail0-Topic", tt.topicHdr)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)

			if rec.Code != tt.wantStatus {
				t.Errorf("status = %d, want %d", rec.Code, tt.wantStatus)
			}
			if strings.Contains(rec.Body.String(), readmeSecret) {
				t.Errorf("response body leaks the secret")
			}
			if tt.wantStatus == http.StatusMethodNotAllowed && rec.Header().Get("Allow") != http.MethodPost {
				t.Errorf("Allow = %q", rec.Header().Get("Allow"))
			}
			if tt.wantEvent != "" {
				if len(got) != 1 || got[0].ID != tt.wantEvent || got[0].Topic != tt.wantTopic {
					t.Fatalf("Handle saw %+v, want event %s (%s)", got, tt.wantEvent, tt.wantTopic)
				}
			} else if len(got) != 0 {
				t.Fatalf("Handle saw %+v: unverified deliveries must not reach it", got)
			}
			if tt.wantErr == nil {
				if len(reported) != 0 {
					t.Errorf("OnError got %v, want no call", reported)
				}
				return
			}
			if len(reported) != 1 {
				t.Fatalf("OnError got %v, want one error", reported)
			}
			if tt.wantErr != errAny && !errors.Is(reported[0], tt.wantErr) {
				t.Errorf("OnError got %v, want %v", reported[0], tt.wantErr)
			}
		})
	}
}

var (
	errBoom = errors.New("boom")
	errAny  = errors.New("any error")
)

// Through a real server, the body bytes reach the verifier unchanged.
func TestHandlerOverHTTP(t *testing.T) {
	body := readmeBody(t)
	var ids []string
	h := NewHandler(readmeSecret, func(_ context.Context, e Event) error {
		ids = append(ids, e.ID)
		return nil
	})
	h.Verifier.Now = clockAt(1789381370)
	srv := httptest.NewServer(h)
	defer srv.Close()

	post := func(body string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Rail0-Topic", "payments.captured")
		req.Header.Set(TimestampHeader, readmeTimestamp)
		req.Header.Set(SignatureHeader, readmeSignature)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post(string(body)); code != http.StatusNoContent {
		t.Fatalf("README delivery answered %d", code)
	}
	// The same JSON with different whitespace is a different body.
	if code := post(strings.ReplaceAll(string(body), ", ", ",")); code != http.StatusUnauthorized {
		t.Fatalf("re-encoded delivery answered %d, want 401", code)
	}
	if len(ids) != 1 || ids[0] != "0191f0aa-7c8d-7e9f-8a0b-1c2d3e4f5a6b" {
		t.Fatalf("handled %v", ids)
	}
}

// Issue 29 item 4, as an attack: the retired secret leaked (which is why
// it was rotated), and the receiver's deploy lost its current one, so its
// Handler was built with an empty current secret and the retired one. A
// delivery forged with the retired secret reached Handle; now every
// delivery is refused as a misconfiguration (500, ErrNoSecret).
func TestHandlerWithoutCurrentSecretRefusesTheRetiredOne(t *testing.T) {
	const retired = "leaked-retired-secret"
	for name, v := range map[string]Verifier{
		"NewVerifier":      NewVerifier("", retired),
		"WithSubscription": Verifier{}.WithSubscription(Subscription{ID: "wh-1", Topic: rail0.TopicPaymentsCaptured}, "", retired),
	} {
		t.Run(name, func(t *testing.T) {
			var handled []Event
			var reported []error
			h := &Handler{Verifier: v,
				Handle:  func(_ context.Context, e Event) error { handled = append(handled, e); return nil },
				OnError: func(_ *http.Request, err error) { reported = append(reported, err) }}
			srv := httptest.NewServer(h)
			defer srv.Close()

			body := `{"id":"evt-forged","topic":"payments.captured","payment":{"id":"pay-1","status":"captured"}}`
			ts := time.Now().Unix()
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set(TimestampHeader, fmt.Sprint(ts))
			req.Header.Set(SignatureHeader, Sign([]byte(body), ts, retired))
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			answer, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusInternalServerError || len(handled) != 0 {
				t.Fatalf("forged delivery answered %d, handled %+v; want 500 and nothing handled", resp.StatusCode, handled)
			}
			if len(reported) != 1 || !errors.Is(reported[0], ErrNoSecret) {
				t.Fatalf("OnError got %v, want ErrNoSecret", reported)
			}
			if strings.Contains(string(answer), retired) || strings.Contains(reported[0].Error(), retired) {
				t.Fatal("the answer or the error shows the secret")
			}
		})
	}
}

// deliverAt posts body to h signed with secret at the Unix time ts, as the
// gateway does (a redelivery signs the same body again with a new
// timestamp), and returns the answer's status.
func deliverAt(h http.Handler, body, secret string, ts int64) int {
	req := httptest.NewRequest(http.MethodPost, "/hooks/rail0", strings.NewReader(body))
	req.Header.Set(TimestampHeader, fmt.Sprint(ts))
	req.Header.Set(SignatureHeader, Sign([]byte(body), ts, secret))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

// Issue 29 item 10: with a Deduplicator, a redelivered event (same id, new
// timestamp and signature) is answered 204 without reaching Handle again;
// another event runs. Without one, Handle saw every delivery.
func TestHandlerDeduplicatesRedeliveries(t *testing.T) {
	const ts = int64(1789381370)
	evt1, evt2 := `{"id":"evt-1","topic":"payments.captured"}`, `{"id":"evt-2","topic":"payments.captured"}`
	for _, dedup := range []bool{true, false} {
		t.Run(fmt.Sprint("deduplicator ", dedup), func(t *testing.T) {
			var seen []string
			var reported []error
			h := NewHandler("s", func(_ context.Context, e Event) error { seen = append(seen, e.ID); return nil })
			h.Verifier.Now = clockAt(ts + 60)
			h.OnError = func(_ *http.Request, err error) { reported = append(reported, err) }
			if dedup {
				h.Deduplicator = NewMemoryDeduplicator(0, 0)
			}
			for i, d := range []struct {
				body string
				at   int64
			}{{evt1, ts}, {evt1, ts + 30}, {evt2, ts + 40}, {evt1, ts + 50}} {
				if code := deliverAt(h, d.body, "s", d.at); code != http.StatusNoContent {
					t.Fatalf("delivery %d answered %d, want 204", i+1, code)
				}
			}
			want := []string{"evt-1", "evt-2"}
			if !dedup {
				want = []string{"evt-1", "evt-1", "evt-2", "evt-1"}
			}
			if fmt.Sprint(seen) != fmt.Sprint(want) || len(reported) != 0 {
				t.Fatalf("Handle saw %v (OnError %v), want %v", seen, reported, want)
			}
		})
	}
}

// Issue 29 item 10: eight deliveries of one event arrive at once. One runs
// Handle; the others, arriving while it runs, are answered 409 so that the
// gateway retries them rather than take them for done before Handle
// succeeded. Once it has, a redelivery is answered 204 without Handle.
func TestHandlerDeduplicatesConcurrentDeliveries(t *testing.T) {
	const ts = int64(1789381370)
	body := `{"id":"evt-1","topic":"payments.captured"}`
	var runs atomic.Int32
	running, finish := make(chan struct{}), make(chan struct{})
	h := NewHandler("s", func(context.Context, Event) error {
		if runs.Add(1) == 1 {
			close(running)
			<-finish
		}
		return nil
	})
	h.Verifier.Now = clockAt(ts)
	h.Deduplicator = NewMemoryDeduplicator(0, 0)
	var mu sync.Mutex
	var reported []error
	h.OnError = func(_ *http.Request, err error) { mu.Lock(); reported = append(reported, err); mu.Unlock() }

	const n = 8
	codes := make(chan int, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			codes <- deliverAt(h, body, "s", ts)
		})
	}
	close(start)
	<-running
	// Every other delivery answers while Handle still runs.
	count := map[int]int{}
	for range n - 1 {
		count[<-codes]++
	}
	close(finish)
	wg.Wait()
	count[<-codes]++
	if runs.Load() != 1 || count[http.StatusNoContent] != 1 || count[http.StatusConflict] != n-1 {
		t.Fatalf("Handle ran %d times; answers %v; want once, one 204 and %d 409", runs.Load(), count, n-1)
	}
	for _, err := range reported {
		if !errors.Is(err, ErrEventInFlight) {
			t.Errorf("OnError got %v, want ErrEventInFlight", err)
		}
	}
	if code := deliverAt(h, body, "s", ts); code != http.StatusNoContent || runs.Load() != 1 {
		t.Fatalf("the redelivery after success answered %d, Handle ran %d times", code, runs.Load())
	}
}

// Issue 29 item 10: a Handle that fails or panics releases its claim, so
// the gateway's redelivery runs Handle again; once that succeeds, the
// next redelivery is dropped.
func TestHandlerFailureReleasesTheClaim(t *testing.T) {
	const ts = int64(1789381370)
	body := `{"id":"evt-1","topic":"payments.captured"}`
	var calls int
	h := NewHandler("s", func(context.Context, Event) error {
		calls++
		switch calls {
		case 1:
			return errBoom
		case 2:
			panic("handler bug")
		}
		return nil
	})
	h.Verifier.Now = clockAt(ts)
	h.Deduplicator = NewMemoryDeduplicator(0, 0)

	if code := deliverAt(h, body, "s", ts); code != http.StatusInternalServerError {
		t.Fatalf("failed Handle answered %d, want 500", code)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic did not reach the server")
			}
		}()
		deliverAt(h, body, "s", ts)
	}()
	for i, want := range []int{http.StatusNoContent, http.StatusNoContent} {
		if code := deliverAt(h, body, "s", ts); code != want {
			t.Fatalf("redelivery %d answered %d, want %d", i+1, code, want)
		}
	}
	if calls != 3 {
		t.Fatalf("Handle ran %d times, want 3 (failed, panicked, succeeded)", calls)
	}
}

// A Deduplicator that fails to claim keeps Handle from running and asks
// for a redelivery (503); one that fails to record a handled event still
// answers 204, since a redelivery would run Handle again.
func TestHandlerDeduplicatorFailures(t *testing.T) {
	const ts = int64(1789381370)
	body := `{"id":"evt-1"}`
	for _, tc := range []struct {
		name     string
		dedup    failingDedup
		wantCode int
		wantRuns int
	}{
		{"claim fails", failingDedup{claim: errBoom}, http.StatusServiceUnavailable, 0},
		{"an unknown claim", failingDedup{answer: Claim(7)}, http.StatusInternalServerError, 0},
		{"done fails", failingDedup{done: errBoom}, http.StatusNoContent, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := 0
			var reported []error
			h := NewHandler("s", func(context.Context, Event) error { runs++; return nil })
			h.Verifier.Now = clockAt(ts)
			h.Deduplicator = tc.dedup
			h.OnError = func(_ *http.Request, err error) { reported = append(reported, err) }
			if code := deliverAt(h, body, "s", ts); code != tc.wantCode || runs != tc.wantRuns {
				t.Fatalf("answered %d, Handle ran %d times; want %d, %d", code, runs, tc.wantCode, tc.wantRuns)
			}
			if len(reported) != 1 {
				t.Fatalf("OnError got %v, want one error", reported)
			}
		})
	}
}

// failingDedup answers Claim with answer (Claimed when zero) or fails.
type failingDedup struct {
	answer      Claim
	claim, done error
}

func (f failingDedup) Claim(context.Context, string) (Claim, error) {
	if f.answer == 0 {
		return Claimed, f.claim
	}
	return f.answer, f.claim
}
func (f failingDedup) Done(context.Context, string) error    { return f.done }
func (f failingDedup) Release(context.Context, string) error { return nil }

// Issue 29 item 10: a handled event's id is remembered for the TTL, then
// forgotten, so a redelivery after it runs Handle again. The Handler reads
// the bubble's clock, as does the deduplicator.
func TestHandlerDeduplicationExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		body := `{"id":"evt-1"}`
		runs := 0
		h := NewHandler("s", func(context.Context, Event) error { runs++; return nil })
		h.Deduplicator = NewMemoryDeduplicator(time.Hour, 0)
		for _, step := range []struct {
			wait time.Duration
			runs int
		}{{0, 1}, {59 * time.Minute, 1}, {2 * time.Minute, 2}, {30 * time.Minute, 2}} {
			time.Sleep(step.wait)
			if code := deliverAt(h, body, "s", time.Now().Unix()); code != http.StatusNoContent || runs != step.runs {
				t.Fatalf("after %v: answered %d, Handle ran %d times; want 204, %d", step.wait, code, runs, step.runs)
			}
		}
	})
}

// With a Deduplicator, a delivery signed with one topic's secret cannot
// claim another topic's event by reusing its id: the claim names the
// topic. Before, the forged payments.created delivery claimed "e1", and
// the genuine payments.refunded event e1 was answered 204 without Handle.
func TestDeduplicationIsPerTopic(t *testing.T) {
	const ts = int64(1789381370)
	var handled []string
	h := &Handler{
		Verifier: Verifier{Now: clockAt(ts)}.
			WithSubscription(Subscription{ID: "wh-created", Topic: rail0.TopicPaymentsCreated}, "created-secret").
			WithSubscription(Subscription{ID: "wh-refunded", Topic: rail0.TopicPaymentsRefunded}, "refunded-secret"),
		Handle: func(_ context.Context, e Event) error {
			handled = append(handled, string(e.Topic)+" "+e.ID)
			return nil
		},
		Deduplicator: NewMemoryDeduplicator(0, 0),
	}
	for _, d := range []struct{ body, secret string }{
		{`{"id":"e1","topic":"payments.created"}`, "created-secret"},
		{`{"id":"e1","topic":"payments.refunded"}`, "refunded-secret"},
		{`{"id":"e1","topic":"payments.refunded"}`, "refunded-secret"}, // a redelivery
	} {
		if code := deliverAt(h, d.body, d.secret, ts); code != http.StatusNoContent {
			t.Fatalf("%s answered %d, want 204", d.body, code)
		}
	}
	if want := []string{"payments.created e1", "payments.refunded e1"}; fmt.Sprint(handled) != fmt.Sprint(want) {
		t.Errorf("Handle saw %v, want %v", handled, want)
	}
}
