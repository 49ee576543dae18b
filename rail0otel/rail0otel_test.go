package rail0otel_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/rail0/rail0-go"
	"github.com/rail0/rail0-go/rail0otel"
)

const secretToken = "tok-SECRET-otel-5f3a"

// gateway answers each path with its scripted statuses in turn (then 200),
// and records the traceparent of every request.
type gateway struct {
	mu          sync.Mutex
	script      map[string][]int
	traceparent []string
	auth        []string
	baggage     []string
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	g.traceparent = append(g.traceparent, r.Header.Get("Traceparent"))
	g.auth = append(g.auth, r.Header.Get("Authorization"))
	g.baggage = append(g.baggage, r.Header.Get("Baggage"))
	status := http.StatusOK
	if s := g.script[r.URL.Path]; len(s) > 0 {
		status, g.script[r.URL.Path] = s[0], s[1:]
	}
	n := len(g.traceparent)
	g.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", fmt.Sprintf("req-%d", n))
	switch status {
	case http.StatusOK:
		fmt.Fprint(w, `{"id":"p1","status":"authorized"}`)
	case http.StatusTooManyRequests:
		// Long enough to be refused when the allowance is short, and
		// capped to a millisecond (WithRetryAfterCap) when retried.
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(status)
		fmt.Fprint(w, `{"code":"rate_limited","title":"Too many requests","detail":"slow down"}`)
	default:
		w.WriteHeader(status)
		fmt.Fprint(w, `{"code":"internal","detail":"boom"}`)
	}
}

type harness struct {
	gw     *gateway
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	client *rail0.Client
}

func newHarness(t *testing.T, script map[string][]int, opts ...rail0.Option) *harness {
	t.Helper()
	h := &harness{gw: &gateway{script: script}, spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	srv := httptest.NewServer(h.gw)
	t.Cleanup(srv.Close)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(h.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))
	obs, err := rail0otel.New(rail0otel.WithTracerProvider(tp), rail0otel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	base := []rail0.Option{rail0.WithToken(secretToken), rail0.WithObserver(obs), rail0.WithRetryOn429(true),
		rail0.WithRetryAfterCap(time.Millisecond)}
	h.client, err = rail0.NewClient(srv.URL, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) metrics(t *testing.T) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := h.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// sum returns the counter's value for the data point with all of want's
// attributes.
func sum(t *testing.T, data metricdata.Aggregation, want ...attribute.KeyValue) int64 {
	t.Helper()
	s, ok := data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("not an int64 sum: %T", data)
	}
	var total int64
	for _, dp := range s.DataPoints {
		if hasAll(dp.Attributes, want) {
			total += dp.Value
		}
	}
	return total
}

func histCount(t *testing.T, data metricdata.Aggregation, want ...attribute.KeyValue) uint64 {
	t.Helper()
	h, ok := data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("not a float64 histogram: %T", data)
	}
	var n uint64
	for _, dp := range h.DataPoints {
		if hasAll(dp.Attributes, want) {
			n += dp.Count
		}
	}
	return n
}

func hasAll(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

func attr(kvs []attribute.KeyValue, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// A call throttled once: one client span with the semantic-convention and
// RAIL0 attributes, an event per attempt and one for the wait, the span's
// traceparent on both attempts, and the metrics of the 429 and the retry.
func TestSpanEventsTraceparentAndMetrics(t *testing.T) {
	h := newHarness(t, map[string][]int{"/payments/p1": {429}})
	p, err := h.client.Payments.Get(context.Background(), "p1")
	if err != nil {
		t.Fatal(err)
	}
	if p.Response.Call.ID == 0 || len(p.Response.Call.Attempts) != 2 {
		t.Fatalf("transcript = %v", p.Response.Call)
	}

	spans := h.spans.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	if s.Name != "GET /payments/{id}" || s.SpanKind != trace.SpanKindClient {
		t.Errorf("span %q kind %v", s.Name, s.SpanKind)
	}
	for key, want := range map[attribute.Key]attribute.Value{
		"http.request.method":       attribute.StringValue("GET"),
		"url.template":              attribute.StringValue("/payments/{id}"),
		"http.response.status_code": attribute.IntValue(200),
		"http.request.resend_count": attribute.IntValue(1),
		"server.address":            attribute.StringValue("127.0.0.1"),
		rail0otel.AttrOperation:     attribute.StringValue("getPayment"),
		rail0otel.AttrPaymentID:     attribute.StringValue("p1"),
		rail0otel.AttrAttempts:      attribute.IntValue(2),
		rail0otel.AttrOutcome:       attribute.StringValue("ok"),
	} {
		if got, ok := attr(s.Attributes, key); !ok || got != want {
			t.Errorf("attribute %s = %v, want %v", key, got.String(), want.String())
		}
	}
	var names []string
	for _, ev := range s.Events {
		names = append(names, ev.Name)
	}
	// The limiter admits each attempt (WithRetryOn429 waits out cooldowns).
	if strings.Join(names, ",") != "rail0.limiter,rail0.attempt,rail0.wait,rail0.limiter,rail0.attempt" {
		t.Fatalf("events = %v", names)
	}
	if got, _ := attr(s.Events[1].Attributes, rail0otel.AttrRequestID); got.AsString() != "req-1" {
		t.Errorf("first attempt's request id = %q", got.AsString())
	}
	if got, _ := attr(s.Events[2].Attributes, rail0otel.AttrWaitSource); got.AsString() != "server" {
		t.Errorf("wait source = %q, want server", got.AsString())
	}

	want := fmt.Sprintf("00-%s-%s-01", s.SpanContext.TraceID(), s.SpanContext.SpanID())
	if len(h.gw.traceparent) != 2 {
		t.Fatalf("%d requests, want 2", len(h.gw.traceparent))
	}
	for i, tp := range h.gw.traceparent {
		if tp != want {
			t.Errorf("attempt %d traceparent = %q, want %q", i+1, tp, want)
		}
		if h.gw.auth[i] != "Bearer "+secretToken {
			t.Errorf("attempt %d Authorization changed: %q", i+1, h.gw.auth[i])
		}
	}

	m := h.metrics(t)
	op := rail0otel.AttrOperation.String("getPayment")
	if n := sum(t, m["rail0.client.calls"], op, rail0otel.AttrOutcome.String("ok")); n != 1 {
		t.Errorf("calls{getPayment,ok} = %d", n)
	}
	if n := sum(t, m["rail0.client.rate_limited"], op); n != 1 {
		t.Errorf("rate_limited = %d", n)
	}
	if n := sum(t, m["rail0.client.retries"], rail0otel.AttrReason.String(string(rail0.ReasonRateLimited))); n != 1 {
		t.Errorf("retries{rate_limited} = %d", n)
	}
	if n := histCount(t, m["rail0.client.retry.wait"], rail0otel.AttrWaitSource.String("server")); n != 1 {
		t.Errorf("retry.wait{server} count = %d", n)
	}
	if n := histCount(t, m["rail0.client.call.duration"], op); n != 1 {
		t.Errorf("call.duration count = %d", n)
	}
}

// A refused 429 and a failed write: error spans, and refusals by reason.
func TestFailuresAndRefusals(t *testing.T) {
	h := newHarness(t, map[string][]int{"/payments/p2": {429}, "/payments/p3/capture": {500}},
		rail0.WithMaxRetryWait(500*time.Millisecond))
	_, err := h.client.Payments.Get(context.Background(), "p2")
	if !errors.Is(err, rail0.ErrRateLimited) {
		t.Fatalf("err = %v, want the 429", err)
	}
	_, err = h.client.Payments.Submit(context.Background(), "p3", rail0.OpCapture, rail0.PaymentSubmitParams{SignedTransaction: "0x02f8"})
	if !errors.Is(err, rail0.ErrOutcomeUnknown) {
		t.Fatalf("err = %v, want an unknown outcome", err)
	}

	spans := h.spans.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	for i, want := range []struct{ outcome, errType string }{{"rate_limited", "429"}, {"outcome_unknown", "500"}} {
		s := spans[i]
		if s.Status.Code != codes.Error || s.Status.Description != want.outcome {
			t.Errorf("span %d status = %+v", i, s.Status)
		}
		if got, _ := attr(s.Attributes, "error.type"); got.AsString() != want.errType {
			t.Errorf("span %d error.type = %q, want %q", i, got.AsString(), want.errType)
		}
	}
	if got, _ := attr(spans[1].Attributes, rail0otel.AttrOperation); got.AsString() != "submitPaymentOperation" {
		t.Errorf("operation = %q", got.AsString())
	}

	m := h.metrics(t)
	if n := sum(t, m["rail0.client.refusals"], rail0otel.AttrReason.String(string(rail0.ReasonAllowance))); n != 1 {
		t.Errorf("refusals{allowance} = %d", n)
	}
	if n := sum(t, m["rail0.client.calls"], rail0otel.AttrOutcome.String("outcome_unknown")); n != 1 {
		t.Errorf("calls{outcome_unknown} = %d", n)
	}
	if n := sum(t, m["rail0.client.calls"], rail0otel.AttrOutcome.String("rate_limited")); n != 1 {
		t.Errorf("calls{rate_limited} = %d", n)
	}
}

// Pacing holds the second call back: a limiter event and the limiter wait
// metric.
func TestLimiterWaits(t *testing.T) {
	// One per 100 ms in the gateway's fixed windows: of three calls in a
	// row, the second or the third shares a window with the one before it
	// and waits (the second goes at once only if the first ended the
	// window).
	h := newHarness(t, nil, rail0.WithPacing(rail0.Pacing{Session: rail0.Budget{Limit: 1, Period: 100 * time.Millisecond}, Margin: time.Millisecond}))
	for range 3 {
		if _, err := h.client.Payments.Get(context.Background(), "p1"); err != nil {
			t.Fatal(err)
		}
	}
	// Every admission is an event; only one that had to wait (the window
	// was full) is recorded in the histogram. Whether the second or the
	// third call waits depends on where the first one fell in its window,
	// so count the events that carry a wait rather than assume which.
	var ev sdktrace.Event
	var waits uint64
	for _, sp := range h.spans.GetSpans()[1:] {
		if len(sp.Events) == 0 || sp.Events[0].Name != "rail0.limiter" {
			continue
		}
		if w, _ := attr(sp.Events[0].Attributes, rail0otel.AttrWait); w.AsFloat64() > 0 {
			ev = sp.Events[0]
			waits++
		}
	}
	if waits == 0 {
		t.Fatal("no call after the first waited for the limiter")
	}
	if got, _ := attr(ev.Attributes, rail0otel.AttrPartition); got.AsString() != "session" {
		t.Errorf("partition = %q", got.AsString())
	}
	if n := histCount(t, h.metrics(t)["rail0.client.limiter.wait"], rail0otel.AttrLimiterKind.String("pacing")); n != waits {
		t.Errorf("limiter.wait{pacing} count = %d, want %d", n, waits)
	}
}

// No attribute of any span, event or metric holds the token, in any
// encoding.
func TestNoSecretInTelemetry(t *testing.T) {
	h := newHarness(t, map[string][]int{"/payments/p1": {429, 500}})
	_, _ = h.client.Payments.Get(context.Background(), "p1")
	_, _ = h.client.Payments.Submit(context.Background(), "p1", rail0.OpCapture, rail0.PaymentSubmitParams{SignedTransaction: "0x02f8"})

	var values []string
	add := func(kvs []attribute.KeyValue) {
		for _, kv := range kvs {
			values = append(values, string(kv.Key)+"="+kv.Value.String())
		}
	}
	for _, s := range h.spans.GetSpans() {
		values = append(values, s.Name, s.Status.Description)
		add(s.Attributes)
		for _, ev := range s.Events {
			values = append(values, ev.Name)
			add(ev.Attributes)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := h.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					add(dp.Attributes.ToSlice())
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					add(dp.Attributes.ToSlice())
				}
			}
		}
	}
	if len(values) < 20 {
		t.Fatalf("only %d values collected", len(values))
	}
	all := strings.Join(values, "\n")
	for _, enc := range []string{secretToken, base64.StdEncoding.EncodeToString([]byte(secretToken)), hex.EncodeToString([]byte(secretToken))} {
		if strings.Contains(all, enc) {
			t.Errorf("telemetry holds the token (%q)", enc)
		}
	}
}

// After a 429 the cooldown gauge reports the call's partition, named by a
// hash prefix of the session, never the token.
func TestCooldownGaugePerPartition(t *testing.T) {
	h := newHarness(t, map[string][]int{"/payments/p1": {429}})
	if _, err := h.client.Payments.Get(context.Background(), "p1"); err != nil {
		t.Fatal(err)
	}
	g, ok := h.metrics(t)["rail0.client.cooldown"].(metricdata.Gauge[float64])
	if !ok || len(g.DataPoints) != 1 {
		t.Fatalf("rail0.client.cooldown = %#v, want one data point", h.metrics(t)["rail0.client.cooldown"])
	}
	dp := g.DataPoints[0]
	p, _ := dp.Attributes.Value(rail0otel.AttrPartition)
	if !strings.HasPrefix(p.AsString(), "session:") || strings.Contains(p.AsString(), secretToken) {
		t.Errorf("partition = %q", p.AsString())
	}
	// RetryAfterCap is 1 ms in the harness: the partition has reopened.
	if dp.Value < 0 || dp.Value > 0.001 {
		t.Errorf("cooldown = %v s", dp.Value)
	}
}

// A cooldown can end before its attempt reaches the observer (a loaded
// machine, a 1 ms cap): the partition the 429 closed is still reported,
// at 0 s, rather than dropped by the very report that names it.
func TestPartitionReportedAfterItsCooldownPassed(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	obs, err := rail0otel.New(rail0otel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	call := &rail0.Call{Method: "GET", Route: "/payments/{id}", Operation: "getPayment"}
	obs.EndAttempt(obs.StartCall(ctx, call), call, &rail0.Attempt{N: 1, StatusCode: 429,
		PartitionState: &rail0.PartitionState{Partition: "session:ab12", CooldownUntil: time.Now().Add(-time.Second)}})
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	var points []metricdata.DataPoint[float64]
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if g, ok := m.Data.(metricdata.Gauge[float64]); ok && m.Name == "rail0.client.cooldown" {
				points = g.DataPoints
			}
		}
	}
	if len(points) != 1 || points[0].Value != 0 {
		t.Fatalf("rail0.client.cooldown = %+v, want the reported partition at 0 s", points)
	}
}

// The application's baggage is not the gateway's: even with a global
// propagator that carries it, only the trace context is sent.
func TestBaggageIsNotSentToTheGateway(t *testing.T) {
	prev := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	t.Cleanup(func() { otel.SetTextMapPropagator(prev) })
	h := newHarness(t, nil)
	m, err := baggage.NewMember("tenant", "acme")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := baggage.New(m)
	if _, err := h.client.Payments.Get(baggage.ContextWithBaggage(context.Background(), b), "p1"); err != nil {
		t.Fatal(err)
	}
	if len(h.gw.baggage) != 1 || h.gw.baggage[0] != "" || h.gw.traceparent[0] == "" {
		t.Fatalf("baggage %q, traceparent %q", h.gw.baggage, h.gw.traceparent)
	}
}

// The gauges keep only partitions with something to say: a session whose
// cooldown has passed and that learned no budget is dropped, so one entry
// per session does not accumulate for the life of the process.
func TestReopenedPartitionsAreForgotten(t *testing.T) {
	gw := &gateway{script: map[string][]int{"/payments/a": {429}, "/payments/b": {429}}}
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	reader := sdkmetric.NewManualReader()
	obs, err := rail0otel.New(rail0otel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err != nil {
		t.Fatal(err)
	}
	client := func(token string) *rail0.Client {
		c, err := rail0.NewClient(srv.URL, rail0.WithToken(token), rail0.WithObserver(obs), rail0.WithRetryOn429(true),
			rail0.WithRetryAfterCap(time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if _, err := client("session-one").Payments.Get(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // the first session's 1 ms cooldown passes
	if _, err := client("session-two").Payments.Get(context.Background(), "b"); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if g, ok := m.Data.(metricdata.Gauge[float64]); ok && m.Name == "rail0.client.cooldown" && len(g.DataPoints) != 1 {
				t.Fatalf("cooldown gauge has %d partitions, want only the second session's", len(g.DataPoints))
			}
		}
	}
}

// newObserved builds a client with its own options (no fixed token) that
// reports to a fresh Observer.
func newObserved(t *testing.T, gw *gateway, opts ...rail0.Option) (*rail0.Client, *tracetest.InMemoryExporter, *sdkmetric.ManualReader) {
	t.Helper()
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	spans, reader := tracetest.NewInMemoryExporter(), sdkmetric.NewManualReader()
	obs, err := rail0otel.New(rail0otel.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))),
		rail0otel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err != nil {
		t.Fatal(err)
	}
	c, err := rail0.NewClient(srv.URL, append([]rail0.Option{rail0.WithObserver(obs)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c, spans, reader
}

// The send after a 401 and a new token is a retry: the 401's attempt event
// says so with its reason, the retries counter counts it under
// session_refused, and no wait is recorded for it, since it goes at once.
func TestSessionRefusedResendIsARetry(t *testing.T) {
	var mu sync.Mutex
	n := 0
	source := func(context.Context) (string, error) { // a new token each time it is asked
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("tok-%d", n), nil
	}
	c, spans, reader := newObserved(t, &gateway{script: map[string][]int{"/payments/p1": {http.StatusUnauthorized}}},
		rail0.WithTokenSource(source))
	if _, err := c.Payments.Get(context.Background(), "p1"); err != nil {
		t.Fatal(err)
	}
	s := spans.GetSpans()
	if len(s) != 1 || len(s[0].Events) != 2 {
		t.Fatalf("spans %v", s)
	}
	first := s[0].Events[0]
	if got, _ := attr(first.Attributes, rail0otel.AttrReason); first.Name != "rail0.attempt" || got.AsString() != string(rail0.ReasonSessionRefused) {
		t.Errorf("the 401's event %s has reason %q", first.Name, got.AsString())
	}
	if got, _ := attr(first.Attributes, rail0otel.AttrRetry); !got.AsBool() {
		t.Error("the 401's event does not say it was retried")
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	m := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, x := range sm.Metrics {
			m[x.Name] = x.Data
		}
	}
	if n := sum(t, m["rail0.client.retries"], rail0otel.AttrReason.String(string(rail0.ReasonSessionRefused))); n != 1 {
		t.Errorf("retries{session_refused} = %d, want 1", n)
	}
	if _, ok := m["rail0.client.retry.wait"]; ok {
		t.Error("a wait was recorded for a send that went at once")
	}
}

// A call the limiter refuses before any attempt: its admission event on the
// span and the refusal counted under limiter, reported when the call ends.
func TestLimiterRefusalIsReported(t *testing.T) {
	c, spans, reader := newObserved(t, &gateway{}, rail0.WithToken(secretToken),
		rail0.WithPacing(rail0.Pacing{Session: rail0.Budget{Limit: 1, Period: time.Hour}}), rail0.WithMaxRetryWait(time.Second))
	if _, err := c.Payments.Get(context.Background(), "p1"); err != nil {
		t.Fatal(err)
	}
	_, err := c.Payments.Get(context.Background(), "p2")
	var apiErr *rail0.APIError
	if !errors.As(err, &apiErr) || !apiErr.NotSent {
		t.Fatalf("err = %v, want a 429 not sent", err)
	}
	s := spans.GetSpans()
	if len(s) != 2 || len(s[1].Events) != 1 || s[1].Events[0].Name != "rail0.limiter" {
		t.Fatalf("the refused call's span: %+v", s)
	}
	if got, _ := attr(s[1].Events[0].Attributes, rail0otel.AttrRefused); !got.AsBool() {
		t.Error("the limiter event does not say refused")
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, x := range sm.Metrics {
			if x.Name == "rail0.client.refusals" {
				if n := sum(t, x.Data, rail0otel.AttrReason.String(string(rail0.ReasonLimiter))); n != 1 {
					t.Errorf("refusals{limiter} = %d, want 1", n)
				}
				return
			}
		}
	}
	t.Error("no refusal counted")
}

// url.full carries the query with its values redacted (REDACTED, as the
// semantic conventions write it), but for the contract's filters and
// pagination and the keys the client names safe: a Raw call's access_token
// never reaches a span.
func TestQueryValuesRedactedInURLFull(t *testing.T) {
	const secret = "sk_live_otel_query_7d1e"
	query := url.Values{"access_token": {secret}, "page": {"2"}}
	raw := rail0.RawRequest{Method: http.MethodGet, Path: []string{"payments", "p1"}, Query: query, Class: rail0.Idempotent}
	for _, tt := range []struct {
		name string
		opts []rail0.Option
		want string
	}{
		{"default", nil, "access_token=REDACTED&page=2"},
		{"named safe", []rail0.Option{rail0.WithSafeQueryKeys("access_token")}, "access_token=" + secret + "&page=2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil, tt.opts...)
			if _, err := h.client.Raw(context.Background(), raw, nil); err != nil {
				t.Fatal(err)
			}
			spans := h.spans.GetSpans()
			if len(spans) != 1 {
				t.Fatalf("%d spans", len(spans))
			}
			var full string
			for _, kv := range spans[0].Attributes {
				if kv.Key == "url.full" {
					full = kv.Value.AsString()
				}
			}
			if !strings.HasSuffix(full, "/payments/p1?"+tt.want) {
				t.Errorf("url.full = %q, want it to end with %q", full, tt.want)
			}
		})
	}
}

// An answer that announces its endpoint's deprecation adds a
// rail0.deprecation event to the call's span and is counted by operation.
func TestDeprecationEvent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Deprecation", "@1688169599")
		w.Header().Set("Sunset", "Wed, 11 Nov 2026 23:59:59 GMT")
		fmt.Fprint(w, `{"id":"p1","status":"authorized"}`)
	}))
	defer srv.Close()
	spans, reader := tracetest.NewInMemoryExporter(), sdkmetric.NewManualReader()
	obs, err := rail0otel.New(rail0otel.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))),
		rail0otel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))))
	if err != nil {
		t.Fatal(err)
	}
	c, err := rail0.NewClient(srv.URL, rail0.WithToken(secretToken), rail0.WithObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	// Through a labelled view: the counter carries the label, as every
	// other metric does.
	if _, err := c.With(rail0.WithLabel("job")).Payments.Get(context.Background(), "p1"); err != nil {
		t.Fatal(err)
	}
	got := spans.GetSpans()
	if len(got) != 1 {
		t.Fatalf("%d spans", len(got))
	}
	var found bool
	for _, ev := range got[0].Events {
		if ev.Name != "rail0.deprecation" {
			continue
		}
		found = true
		if v, _ := attr(ev.Attributes, rail0otel.AttrDeprecation); v.AsString() != "2023-06-30T23:59:59Z" {
			t.Errorf("rail0.deprecation = %q", v.AsString())
		}
		if v, _ := attr(ev.Attributes, rail0otel.AttrSunset); v.AsString() != "2026-11-11T23:59:59Z" {
			t.Errorf("rail0.sunset = %q", v.AsString())
		}
	}
	if !found {
		t.Errorf("no rail0.deprecation event in %v", got[0].Events)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	m := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, mm := range sm.Metrics {
			m[mm.Name] = mm.Data
		}
	}
	if n := sum(t, m["rail0.client.deprecated"], rail0otel.AttrOperation.String("getPayment")); n != 1 {
		t.Errorf("deprecated{getPayment} = %d", n)
	}
	if n := sum(t, m["rail0.client.deprecated"], rail0otel.AttrLabel.String("job")); n != 1 {
		t.Errorf("deprecated{label=job} = %d", n)
	}
}

// Issue 27 item 4: a view's label is on its calls' spans and metrics, so
// a handler's calls and a job's are told apart; a call through no
// labelled view carries none.
func TestLabelOnSpansAndMetrics(t *testing.T) {
	h := newHarness(t, map[string][]int{"/payments/j1": {429}})
	job := h.client.With(rail0.WithLabel("job"))
	handler := h.client.With(rail0.WithLabel("handler"))
	for _, call := range []struct {
		c  *rail0.Client
		id string
	}{{job, "j1"}, {handler, "h1"}, {h.client, "p1"}} {
		if _, err := call.c.Payments.Get(context.Background(), call.id); err != nil {
			t.Fatal(err)
		}
	}
	labels := map[string]string{}
	for _, s := range h.spans.GetSpans() {
		id, _ := attr(s.Attributes, rail0otel.AttrPaymentID)
		if v, ok := attr(s.Attributes, rail0otel.AttrLabel); ok {
			labels[id.AsString()] = v.AsString()
		}
	}
	if want := map[string]string{"j1": "job", "h1": "handler"}; fmt.Sprint(labels) != fmt.Sprint(want) {
		t.Errorf("span labels = %v, want %v", labels, want)
	}
	m := h.metrics(t)
	for label, want := range map[string]int64{"job": 1, "handler": 1} {
		if got := sum(t, m["rail0.client.calls"], rail0otel.AttrLabel.String(label)); got != want {
			t.Errorf("calls labelled %s = %d, want %d", label, got, want)
		}
	}
	if got := sum(t, m["rail0.client.calls"]); got != 3 {
		t.Errorf("calls = %d, want 3", got)
	}
	if got := sum(t, m["rail0.client.rate_limited"], rail0otel.AttrLabel.String("job")); got != 1 {
		t.Errorf("429s labelled job = %d, want 1", got)
	}
	if got := sum(t, m["rail0.client.retries"], rail0otel.AttrLabel.String("job")); got != 1 {
		t.Errorf("retries labelled job = %d, want 1", got)
	}
}
