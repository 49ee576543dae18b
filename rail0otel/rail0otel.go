// Package rail0otel reports the calls of a rail0.Client to OpenTelemetry:
//   - a span per call;
//   - an event per attempt and per wait;
//   - trace context on every attempt;
//   - metrics.
//
// It lives apart from package rail0. So programs that do not use
// OpenTelemetry never compile or download it.
//
//	obs, err := rail0otel.New() // the global providers, or WithTracerProvider...
//	client, err := rail0.NewClient(baseURL, rail0.WithObserver(obs))
//
// # Spans
//
// Each call is one span of kind client, named "{method} {route}", for
// example "GET /payments/{id}". It carries the HTTP client semantic
// conventions: http.request.method, url.full, url.template,
// server.address, server.port, http.response.status_code,
// http.request.resend_count and error.type. It carries the RAIL0
// attributes too: rail0.operation (the contract's operationId),
// rail0.payment_id, rail0.call_id, rail0.attempts and rail0.outcome.
//
// Events are added to the span:
//   - "rail0.attempt" for every attempt: attempt, status, request id,
//     decision.
//   - "rail0.deprecation" for every answer that announced its endpoint's
//     deprecation or sunset: rail0.deprecation (a date or "true") and
//     rail0.sunset.
//   - "rail0.wait" for every wait before a retry. The send after a 401 and
//     a new sign-in goes at once: it has none.
//   - "rail0.limiter" for every limiter admission, timed when the limiter
//     answered.
//
// The traceparent of the call's span is sent on every attempt. No
// attribute carries a header, a body or a credential. url.full is
// rail0.Call.URL, whose query values are REDACTED but for the keys the
// client shows (rail0.WithSafeQueryKeys).
//
// The Observer reads the limiter's admissions, and what each answer told
// the limiter, from the call's transcript (rail0.Call). It reads them at
// the points rail0.Observer names. It reads an admission when the attempt
// it admitted leaves. It reads an admission that refused its attempt, or
// whose wait the context cut short, when the call ends.
//
// # Metrics
//
//	rail0.client.calls           counter    calls, by rail0.operation and rail0.outcome
//	rail0.client.call.duration   histogram  s, by rail0.operation and rail0.outcome
//	rail0.client.rate_limited    counter    429 answers, by rail0.operation
//	rail0.client.retries         counter    retries sent, by rail0.reason
//	rail0.client.refusals        counter    retries refused by a limit, by rail0.reason
//	rail0.client.deprecated      counter    answers with a Deprecation or Sunset header, by rail0.operation
//	rail0.client.retry.wait      histogram  s waited before a retry, by rail0.reason and rail0.wait.source (server, guess)
//	rail0.client.limiter.wait    histogram  s waited for the limiter, by rail0.limiter.kind (cooldown, pacing)
//	rail0.client.cooldown        gauge      s until each partition reopens (0 when open), by rail0.partition
//	rail0.client.budget          gauge      requests per period the limiter learned, by rail0.partition
//
// The two gauges report what the clients this Observer serves learned from
// the gateway's answers. A partition is "public", or "session:" followed
// by a hash prefix of the session token, never the token.
package rail0otel

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/rail0/rail0-go"
)

// ScopeName is the instrumentation scope of the spans and metrics.
const ScopeName = "github.com/rail0/rail0-go/rail0otel"

// The RAIL0 attribute keys.
const (
	AttrOperation   = attribute.Key("rail0.operation")
	AttrPaymentID   = attribute.Key("rail0.payment_id")
	AttrCallID      = attribute.Key("rail0.call_id")
	AttrAttempts    = attribute.Key("rail0.attempts")
	AttrOutcome     = attribute.Key("rail0.outcome")
	AttrAttempt     = attribute.Key("rail0.attempt")
	AttrRequestID   = attribute.Key("rail0.request_id")
	AttrRetry       = attribute.Key("rail0.retry")
	AttrReason      = attribute.Key("rail0.reason")
	AttrWait        = attribute.Key("rail0.wait")
	AttrWaitSource  = attribute.Key("rail0.wait.source")
	AttrRetryAfter  = attribute.Key("rail0.retry_after")
	AttrLimiterKind = attribute.Key("rail0.limiter.kind")
	AttrRefused     = attribute.Key("rail0.refused")
	AttrPartition   = attribute.Key("rail0.partition")
	AttrDeprecation = attribute.Key("rail0.deprecation")
	AttrSunset      = attribute.Key("rail0.sunset")
	// AttrLabel is the label of the view a call was made through
	// (rail0.WithLabel), on its span and its metrics. It is absent when
	// there is none.
	AttrLabel = attribute.Key("rail0.label")
)

// Option configures New.
type Option func(*config)

type config struct {
	tp   trace.TracerProvider
	mp   metric.MeterProvider
	prop propagation.TextMapPropagator
}

// WithTracerProvider sets where spans go (default: otel.GetTracerProvider
// at New).
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tp = tp } }

// WithMeterProvider sets where metrics go (default: otel.GetMeterProvider
// at New).
func WithMeterProvider(mp metric.MeterProvider) Option { return func(c *config) { c.mp = mp } }

// WithPropagator sets how trace context is sent to the gateway. The
// default is W3C trace context only. Pass otel.GetTextMapPropagator() to
// send baggage too.
func WithPropagator(p propagation.TextMapPropagator) Option {
	return func(c *config) { c.prop = p }
}

// Observer is a rail0.Observer that reports to OpenTelemetry. Install it
// with rail0.WithObserver. One Observer may serve several clients.
type Observer struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator

	calls, rateLimited, retries, refusals, deprecated metric.Int64Counter
	callDuration, retryWait, limiterWait              metric.Float64Histogram

	mu         sync.Mutex
	partitions map[string]rail0.PartitionState
	now        func() time.Time
}

var _ rail0.Observer = (*Observer)(nil)

// New returns an Observer. An error comes only from creating the
// instruments.
func New(opts ...Option) (*Observer, error) {
	var c config
	for _, opt := range opts {
		if opt != nil {
			opt(&c)
		}
	}
	if c.tp == nil {
		c.tp = otel.GetTracerProvider()
	}
	if c.mp == nil {
		c.mp = otel.GetMeterProvider()
	}
	if c.prop == nil {
		// Only the trace context. The global propagator usually carries
		// baggage too: the application's own data, which is not the
		// payment gateway's to receive.
		c.prop = propagation.TraceContext{}
	}
	o := &Observer{tracer: c.tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL)), prop: c.prop,
		partitions: map[string]rail0.PartitionState{}, now: time.Now}
	m := c.mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))
	var err error
	counter := func(name, unit, desc string) metric.Int64Counter {
		if err != nil {
			return nil
		}
		var ctr metric.Int64Counter
		ctr, err = m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		return ctr
	}
	histogram := func(name, desc string) metric.Float64Histogram {
		if err != nil {
			return nil
		}
		var h metric.Float64Histogram
		h, err = m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc))
		return h
	}
	o.calls = counter("rail0.client.calls", "{call}", "Calls to the RAIL0 gateway, by operation and outcome.")
	o.rateLimited = counter("rail0.client.rate_limited", "{response}", "429 answers, by operation.")
	o.retries = counter("rail0.client.retries", "{retry}", "Retries sent, by reason.")
	o.refusals = counter("rail0.client.refusals", "{refusal}", "Retries a limit refused, by reason.")
	o.deprecated = counter("rail0.client.deprecated", "{response}", "Answers that announced their endpoint's deprecation or sunset, by operation.")
	o.callDuration = histogram("rail0.client.call.duration", "Duration of calls, retries and waits included.")
	o.retryWait = histogram("rail0.client.retry.wait", "Time waited before a retry, by reason and source.")
	o.limiterWait = histogram("rail0.client.limiter.wait", "Time waited for the client's limiter, by kind.")
	if err != nil {
		return nil, err
	}
	cooldown, err := m.Float64ObservableGauge("rail0.client.cooldown", metric.WithUnit("s"),
		metric.WithDescription("Time until each rate-limit partition reopens; 0 when open."))
	if err != nil {
		return nil, err
	}
	budget, err := m.Int64ObservableGauge("rail0.client.budget", metric.WithUnit("{request}"),
		metric.WithDescription("Requests per period the limiter learned for each partition."))
	if err != nil {
		return nil, err
	}
	if _, err := m.RegisterCallback(func(_ context.Context, ob metric.Observer) error {
		o.mu.Lock()
		defer o.mu.Unlock()
		now := o.now()
		for p, s := range o.partitions {
			attrs := metric.WithAttributes(AttrPartition.String(p))
			ob.ObserveFloat64(cooldown, max(s.CooldownUntil.Sub(now), 0).Seconds(), attrs)
			if s.Budget.Limit > 0 {
				ob.ObserveInt64(budget, int64(s.Budget.Limit), attrs)
			}
		}
		return nil
	}, cooldown, budget); err != nil {
		return nil, err
	}
	return o, nil
}

// partitionState records what a client's limiter holds about a partition,
// for the rail0.client.cooldown and rail0.client.budget gauges. A
// partition that has reopened and holds no learned budget says nothing
// more. It is dropped, so that one entry per session does not accumulate.
// The state just reported is kept until the next report, even if its
// cooldown has already passed. On a loaded machine a short cooldown can
// end before the attempt reaches the observer. The gauge must still show
// the partition the 429 closed.
func (o *Observer) partitionState(s rail0.PartitionState) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	o.partitions[s.Partition] = s
	for p, st := range o.partitions {
		if p != s.Partition && !st.CooldownUntil.After(now) && st.Budget.Limit == 0 {
			delete(o.partitions, p)
		}
	}
}

// labelled returns attrs with the call's label, when it has one. So each
// view's calls can be told apart in every metric.
func labelled(call *rail0.Call, attrs ...attribute.KeyValue) metric.MeasurementOption {
	if call.Label != "" {
		attrs = append(attrs, AttrLabel.String(call.Label))
	}
	return metric.WithAttributes(attrs...)
}

func operation(call *rail0.Call) string {
	if call.Operation != "" {
		return call.Operation
	}
	return "unknown"
}

// StartCall starts the call's span.
func (o *Observer) StartCall(ctx context.Context, call *rail0.Call) context.Context {
	attrs := []attribute.KeyValue{
		semconv.HTTPRequestMethodKey.String(call.Method),
		semconv.URLTemplateKey.String(call.Route),
		AttrOperation.String(operation(call)),
		AttrCallID.Int64(int64(call.ID)),
	}
	if u, err := url.Parse(call.URL); err == nil {
		u.User = nil
		attrs = append(attrs, semconv.URLFullKey.String(u.String()), semconv.ServerAddressKey.String(u.Hostname()))
		if port := portOf(u); port > 0 {
			attrs = append(attrs, semconv.ServerPortKey.Int(port))
		}
	}
	if call.PaymentID != "" {
		attrs = append(attrs, AttrPaymentID.String(call.PaymentID))
	}
	if call.Label != "" {
		attrs = append(attrs, AttrLabel.String(call.Label))
	}
	ctx, _ = o.tracer.Start(ctx, call.Method+" "+call.Route,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...), trace.WithTimestamp(call.Start))
	return ctx
}

func portOf(u *url.URL) int {
	if p := u.Port(); p != "" {
		n, _ := strconv.Atoi(p)
		return n
	}
	switch u.Scheme {
	case "https":
		return 443
	case "http":
		return 80
	}
	return 0
}

// SendAttempt reports the limiter's admissions of the attempt. It counts
// the attempt when it is a retry, under the reason its predecessor was
// retried for. It sends the span's trace context with it.
func (o *Observer) SendAttempt(ctx context.Context, call *rail0.Call, h rail0.AttemptHeader) {
	n := len(call.Attempts)
	for i := range call.Limiter {
		if w := &call.Limiter[i]; w.Before == n {
			o.admission(ctx, call, w)
		}
	}
	if n > 1 {
		o.retries.Add(ctx, 1, labelled(call, AttrReason.String(string(call.Attempts[n-2].Reason))))
	}
	o.prop.Inject(ctx, carrier{h})
}

// carrier lets a propagator write an attempt's headers; it reads none.
type carrier struct{ h rail0.AttemptHeader }

func (c carrier) Get(string) string     { return "" }
func (c carrier) Set(key, value string) { c.h.Set(key, value) }
func (c carrier) Keys() []string        { return nil }

// EndAttempt adds the attempt's event and counts its 429 or refusal. It
// records the wait before its retry, and what the answer told the limiter.
func (o *Observer) EndAttempt(ctx context.Context, call *rail0.Call, a *rail0.Attempt) {
	span := trace.SpanFromContext(ctx)
	attrs := []attribute.KeyValue{
		AttrAttempt.Int(a.N),
		semconv.HTTPResponseStatusCodeKey.Int(a.StatusCode),
		AttrRetry.Bool(a.Retry),
	}
	if a.RequestID != "" {
		attrs = append(attrs, AttrRequestID.String(a.RequestID))
	}
	if a.Reason != "" {
		attrs = append(attrs, AttrReason.String(string(a.Reason)))
	}
	if a.RetryAfter > 0 {
		attrs = append(attrs, AttrRetryAfter.Float64(a.RetryAfter.Seconds()))
	}
	if a.Err != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String("transport"))
	}
	span.AddEvent("rail0.attempt", trace.WithAttributes(attrs...), trace.WithTimestamp(a.Sent.Add(a.Duration)))
	op := AttrOperation.String(operation(call))
	if a.StatusCode == 429 {
		o.rateLimited.Add(ctx, 1, labelled(call, op))
	}
	reason := AttrReason.String(string(a.Reason))
	switch {
	case a.Retry && a.Reason == rail0.ReasonSessionRefused:
		// Sent again at once with a new token: no wait to report.
	case a.Retry:
		source := "guess"
		if a.ServerWait {
			source = "server"
		}
		o.retryWait.Record(ctx, a.Wait.Seconds(), labelled(call, reason, AttrWaitSource.String(source)))
		span.AddEvent("rail0.wait", trace.WithAttributes(AttrAttempt.Int(a.N), reason,
			AttrWait.Float64(a.Wait.Seconds()), AttrWaitSource.String(source)))
	case a.Refused:
		o.refusals.Add(ctx, 1, labelled(call, reason))
	}
	if a.PartitionState != nil {
		o.partitionState(*a.PartitionState)
	}
	if d := a.Deprecation; d != nil {
		o.deprecation(ctx, span, call, op, a.N, d)
	}
}

// deprecation adds the event of an answer that announced its endpoint's
// retirement, and counts it.
func (o *Observer) deprecation(ctx context.Context, span trace.Span, call *rail0.Call, op attribute.KeyValue, n int, d *rail0.Deprecation) {
	attrs := []attribute.KeyValue{AttrAttempt.Int(n)}
	switch {
	case !d.Date.IsZero():
		attrs = append(attrs, AttrDeprecation.String(d.Date.Format(time.RFC3339)))
	case d.Deprecated:
		attrs = append(attrs, AttrDeprecation.String("true"))
	}
	if !d.Sunset.IsZero() {
		attrs = append(attrs, AttrSunset.String(d.Sunset.Format(time.RFC3339)))
	}
	span.AddEvent("rail0.deprecation", trace.WithAttributes(attrs...))
	o.deprecated.Add(ctx, 1, labelled(call, op))
}

// admission adds an admission's event and records its wait. Or it counts
// its refusal under its reason: the limiter's, or the client's own answer
// on a partition the gateway said is closed.
func (o *Observer) admission(ctx context.Context, call *rail0.Call, w *rail0.LimiterWait) {
	kind := "pacing"
	if w.Cooldown {
		kind = "cooldown"
	}
	partition, _, _ := strings.Cut(w.Partition, ":") // "public" or "session", never the hash
	trace.SpanFromContext(ctx).AddEvent("rail0.limiter", trace.WithAttributes(
		AttrAttempt.Int(w.Before), AttrWait.Float64(w.Wait.Seconds()), AttrLimiterKind.String(kind),
		AttrRefused.Bool(w.Refused), AttrPartition.String(partition)), trace.WithTimestamp(w.At))
	if w.Refused {
		reason := w.Reason
		if reason == "" {
			reason = rail0.ReasonLimiter
		}
		o.refusals.Add(ctx, 1, labelled(call, AttrReason.String(string(reason))))
		return
	}
	if w.Wait > 0 {
		o.limiterWait.Record(ctx, w.Wait.Seconds(), labelled(call, AttrLimiterKind.String(kind)))
	}
}

// EndCall reports the limiter's admissions that no attempt followed: a
// refusal, a wait the context cut short. It ends the call's span and
// counts the call.
func (o *Observer) EndCall(ctx context.Context, call *rail0.Call, err error) {
	for i := range call.Limiter {
		if w := &call.Limiter[i]; w.Before > len(call.Attempts) {
			o.admission(ctx, call, w)
		}
	}
	span := trace.SpanFromContext(ctx)
	attrs := []attribute.KeyValue{
		AttrAttempts.Int(len(call.Attempts)),
		AttrOutcome.String(string(call.Outcome)),
	}
	if status := call.StatusCode(); status != 0 {
		attrs = append(attrs, semconv.HTTPResponseStatusCodeKey.Int(status))
	}
	if n := len(call.Attempts); n > 1 {
		attrs = append(attrs, semconv.HTTPRequestResendCountKey.Int(n-1))
	}
	if err != nil {
		errType := string(call.Outcome)
		if status := call.StatusCode(); status >= 400 {
			errType = strconv.Itoa(status)
		}
		attrs = append(attrs, semconv.ErrorTypeKey.String(errType))
		// The outcome, not err's text: the span keeps no server-given detail.
		span.SetStatus(codes.Error, string(call.Outcome))
	}
	span.SetAttributes(attrs...)
	span.End(trace.WithTimestamp(call.Start.Add(call.Duration)))
	set := labelled(call, AttrOperation.String(operation(call)), AttrOutcome.String(string(call.Outcome)))
	o.calls.Add(ctx, 1, set)
	o.callDuration.Record(ctx, call.Duration.Seconds(), set)
}
