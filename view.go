package rail0

import (
	"context"
	"errors"
	"strings"
	"time"
)

// With returns a view of c whose calls use the retry settings opts give.
// For the rest they use c's. The options are NewClient's. WithRetryOn429,
// WithMaxRetryWait, WithMaxRetries, WithAttemptTimeout and WithLabel apply
// per call. Every other option sets what the view shares with c. Given
// here, it makes every call of the view return a *ValidationError (Field
// "option") before sending, as an invalid value does (a negative
// WithMaxRetries, say).
//
// The view is c in every other way. It has one connection pool, one
// session and one limiter, so one cooldown and one learned budget per
// rate-limit partition. It has one retry budget, one set of counters and
// pins, and one record of created payments. It costs one allocation. Make
// one per kind of caller and keep it, or make one per call:
//
//	handler := client.With(rail0.WithRetryOn429(false)) // pass RetryAfter on
//	job := client.With(rail0.WithRetryOn429(true), rail0.WithMaxRetryWait(10*time.Minute))
//
// Every request a method of the view sends honours its settings: each
// request of a flow, each page of an iterator, and the sign-in a call
// triggers. A call may need the session while a call of another view leads
// the sign-in. It then waits only as long as its own settings would (item 6
// of the retry contract, docs/retries.md). A view of a view applies both,
// the later one winning.
//
// The Idempotency-Key is not a setting of a view. It stays in the params of
// the one request it protects. docs/configuration.md says why, and why a
// view rather than per-call options or the context.
func (c *Client) With(opts ...Option) *Client {
	w := &struct {
		view
		probe config // where each option is tried (see callOption)
	}{}
	v := initView(&w.view, c.clientState, c.policy, c.over, c.viewErr)
	for _, opt := range opts {
		if v.viewErr != nil {
			break
		}
		v.viewErr = callOption(opt, &w.probe, &v.over)
	}
	v.policy = v.over.apply(c.policy)
	v.noteWaiters()
	return v
}

// errNotPerCall is the refusal of an option that sets what a view shares
// with its client.
var errNotPerCall = &ValidationError{Field: "option",
	Reason: "only WithRetryOn429, WithMaxRetryWait, WithMaxRetries, WithAttemptTimeout and WithLabel apply to the calls of a view (Client.With); give the others to NewClient"}

// callOption applies opt, an option given to With, to the overrides of a
// view. It runs opt on probe, cleared first, and takes the retry settings
// it set. The per-call options record what they set in config.call. An
// option that sets none of them is refused, as is a nil one. An invalid
// value is refused with opt's own reason, as a *ValidationError whatever
// opt returned. NewClient's options report in several forms, and With
// promises one.
func callOption(opt Option, probe *config, over *callOverrides) error {
	if opt == nil {
		return &ValidationError{Field: "option", Reason: "must not be nil"}
	}
	*probe = config{}
	if err := opt(probe); err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			return ve
		}
		return &ValidationError{Field: "option", Reason: strings.TrimPrefix(err.Error(), "rail0: ")}
	}
	if probe.call.set == 0 {
		return errNotPerCall
	}
	*over = over.under(probe.call) // the later setting wins
	return nil
}

// callOverrides is what the options of a view set, and which of them.
type callOverrides struct {
	set            uint8
	retryOn429     bool
	maxRetryWait   time.Duration
	maxRetries     int
	attemptTimeout time.Duration
	label          string
}

const (
	setRetryOn429 uint8 = 1 << iota
	setMaxRetryWait
	setMaxRetries
	setAttemptTimeout
	setLabel
)

// apply returns p with the overridden settings replaced.
func (o callOverrides) apply(p policy) policy {
	if o.set&setRetryOn429 != 0 {
		p.retryOn429 = o.retryOn429
	}
	if o.set&setMaxRetryWait != 0 {
		p.maxRetryWait = o.maxRetryWait
	}
	if o.set&setMaxRetries != 0 {
		p.maxRetries = o.maxRetries
	}
	if o.set&setAttemptTimeout != 0 {
		p.attemptTimeout = o.attemptTimeout
	}
	if o.set&setLabel != 0 {
		p.label = o.label
	}
	return p
}

// under returns o with the settings of inner in place of its own. A call
// may be made on behalf of another, from inner's view. The settings of the
// other call then yield to those its own view set explicitly.
func (o callOverrides) under(inner callOverrides) callOverrides {
	own := inner.set
	inner.set |= o.set
	if own&setRetryOn429 == 0 {
		inner.retryOn429 = o.retryOn429
	}
	if own&setMaxRetryWait == 0 {
		inner.maxRetryWait = o.maxRetryWait
	}
	if own&setMaxRetries == 0 {
		inner.maxRetries = o.maxRetries
	}
	if own&setAttemptTimeout == 0 {
		inner.attemptTimeout = o.attemptTimeout
	}
	if own&setLabel == 0 {
		inner.label = o.label
	}
	return inner
}

// callerOverridesKey carries the overrides of the view a call was made
// through. They reach the calls the client's token source makes on its
// behalf (a sign-in), as a read-only value (callerOverrides). The token
// source's client is not the view. Only bearer sets it.
type callerOverridesKey struct{}

// callerOverrides is what a view changed, and whose views they apply to:
// the views of one client (one clientState). The context handed to a token
// source reaches whatever that source calls with it. That includes another
// rail0 client, say in a WithTokenSource function that asks a vault
// through one. A client built with other settings must not take this
// one's.
type callerOverrides struct {
	state *clientState
	over  callOverrides
}

// forCaller returns the view the calls made on behalf of ctx's caller use.
// It is c itself, unless that caller, a view of c's client, set something c
// did not.
func (c *Client) forCaller(ctx context.Context) *Client {
	caller, ok := ctx.Value(callerOverridesKey{}).(callerOverrides)
	if !ok || caller.state != c.clientState || caller.over.set&^c.over.set == 0 {
		return c
	}
	over := caller.over.under(c.over)
	v := newView(c.clientState, over.apply(c.policy), over, c.viewErr)
	v.noteWaiters()
	return v
}

// withCaller returns ctx carrying c's overrides to the calls a token
// source makes for it.
func (c *Client) withCaller(ctx context.Context) context.Context {
	if c.over.set == 0 {
		return ctx
	}
	return context.WithValue(ctx, callerOverridesKey{}, callerOverrides{state: c.clientState, over: c.over})
}

// serviceSet holds one of each service, allocated with the Client they
// serve. So a view costs one allocation.
type serviceSet struct {
	auth           AuthService
	chains         ChainsService
	tokens         TokensService
	health         HealthService
	paymentMethods PaymentMethodsService
	wallets        WalletsService
	payments       PaymentsService
	disputes       DisputesService
	analytics      AnalyticsService
	webhooks       WebhooksService
	discovery      DiscoveryService
}

// view is a Client with its services, allocated together. So a view costs
// one allocation.
type view struct {
	Client
	svc serviceSet
}

// newView returns a Client on state with the given retry settings, its
// services bound to it.
func newView(state *clientState, p policy, over callOverrides, err error) *Client {
	return initView(&view{}, state, p, over, err)
}

// initView makes v a Client on state with the given retry settings, its
// services bound to it, and returns it.
func initView(v *view, state *clientState, p policy, over callOverrides, err error) *Client {
	c := &v.Client
	c.clientState, c.policy, c.over, c.viewErr = state, p, over, err
	v.svc = serviceSet{
		auth: AuthService{c}, chains: ChainsService{c}, tokens: TokensService{c}, health: HealthService{c},
		paymentMethods: PaymentMethodsService{c}, wallets: WalletsService{c}, payments: PaymentsService{c},
		disputes: DisputesService{c}, analytics: AnalyticsService{c}, webhooks: WebhooksService{c},
		discovery: DiscoveryService{c},
	}
	s := &v.svc
	c.Auth, c.Chains, c.Tokens, c.Health = &s.auth, &s.chains, &s.tokens, &s.health
	c.PaymentMethods, c.Wallets, c.Payments, c.Disputes = &s.paymentMethods, &s.wallets, &s.payments, &s.disputes
	c.Analytics, c.Webhooks, c.Discovery = &s.analytics, &s.webhooks, &s.discovery
	return c
}

// noteWaiters records that the client has calls that wait for the limiter,
// when c's calls do. Then every call tells the limiter what its answers say
// (see clientState.waiters).
func (c *Client) noteWaiters() {
	if c.policy.retryOn429 && c.cooldown || c.pacingOn {
		c.waiters.Store(true)
	}
}
