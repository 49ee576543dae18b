package rail0

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rail0/rail0-go/internal/verify"
	"github.com/rail0/rail0-go/ratelimit"
	"github.com/rail0/rail0-go/registry"
)

// Version is the SDK version, sent in the User-Agent (see WithUserAgent).
const Version = "0.1.0"

const defaultTimeout = 30 * time.Second

// Client talks to one RAIL0 gateway. Its services group the operations by
// resource. Create it with NewClient. It is safe for concurrent use.
type Client struct {
	// Auth signs in with Ethereum (nonce, verify, logout).
	Auth *AuthService
	// Chains lists the catalog's blockchains.
	Chains *ChainsService
	// Tokens lists the catalog's tokens.
	Tokens *TokensService
	// Health reports the gateway's health.
	Health *HealthService
	// PaymentMethods discovers where a merchant can be paid.
	PaymentMethods *PaymentMethodsService
	// Wallets manages a merchant account's wallets and accepted tokens.
	Wallets *WalletsService
	// Payments creates payments and drives their on-chain lifecycle.
	Payments *PaymentsService
	// Disputes lists disputes across the caller's payments.
	Disputes *DisputesService
	// Analytics reports on a merchant's payments.
	Analytics *AnalyticsService
	// Webhooks manages webhook subscriptions and their delivery log.
	Webhooks *WebhooksService
	// Discovery reads the gateway's service descriptor and contract.
	Discovery *DiscoveryService

	// clientState is what every view of the client shares (see With).
	*clientState
	// policy is the retry settings of this view's calls: the client's
	// options with the view's overrides applied.
	policy policy
	// over is what With changed. It is carried to the calls a call makes on
	// its behalf, such as a sign-in (see bearer). viewErr is an option With
	// refused, which every call of the view returns before sending.
	over    callOverrides
	viewErr error
	// record, when set, keeps the transcript of every call the view makes.
	// A flow makes its calls through such a view (flow.calls).
	record *callRecord
}

// clientState is the state of a Client that all its views share. It holds
// the connection pool and the session. It holds the limiter with its
// cooldowns and learned budgets, and the retry budget. It holds the
// counters, the pins and the record of created payments. A view (With)
// differs from its client only by the retry settings of its calls.
type clientState struct {
	base    *url.URL // always ends with "/"
	baseStr string
	// tokenSource yields the bearer token. A fixed token is held in a
	// closure, so that no formatting of the Client can print it.
	tokenSource func(context.Context) (string, error)
	userAgent   string
	logger      *slog.Logger
	wireLog     bool // WithWireLog: headers and bodies at debug, redacted
	// shownQuery are the query keys whose values Call.URL and the logs
	// show (WithSafeQueryKeys). Every other value is redacted.
	shownQuery map[string]bool
	now        func() time.Time
	rand       func() float64
	hc         *http.Client // every call's retryablehttp.Client sends with it (see newCall)
	limiter    ratelimit.Limiter
	// sharedLimiter: the limiter came from WithLimiter, and others may share
	// it (see othersLearn).
	sharedLimiter bool
	pacing        Pacing
	pacingOn      bool
	cooldown      bool
	delays        delayLog      // recent round trips, for the pacing margin
	limitGen      atomic.Uint64 // bumped by every rate-limit news; see takeTurn
	limits        knownLimits   // what the client itself knows per partition (limiter_known.go)

	// signer is the client's identity for the flows (WithSigner). login
	// keeps its session when the client signs in with it.
	signer Signer
	login  *tokenSource
	// signIn places the client's SIWE messages (WithSignIn).
	signIn SignIn
	// trustBase holds the pins and gas bounds. domains holds the token
	// domains the checks have learned.
	trustBase verify.Trust
	domains   domainCache
	// expiries bounds the expiries the payer's signature commits to
	// (WithExpiryBounds). They are measured from now, the local clock.
	expiries verify.ExpiryBounds
	// created remembers what Create was asked for, for PayerSign. known
	// holds the payments' terms the flows checked (payments_known.go).
	created createdLog
	known   knownPayments
	// payloads are the payer payloads VerifyPayload checked.
	// SubmitSignature reconciles a signature on file with them.
	payloads checkedPayloads

	quota   *retryQuota // the client-wide retry budget
	maxBody int64       // the most read of a 2xx body (WithMaxResponseSize)
	// deprecations are the operations whose deprecation was logged.
	deprecations deprecationNotes
	// sharedReads lets identical reads share one request (WithSharedReads).
	// flights are those in flight.
	sharedReads bool
	flights     flights

	observer Observer      // nil, the one given, or all of them (observers)
	calls    atomic.Uint64 // the last call id given

	// waiters is set once any view of the client makes calls that wait for
	// the limiter: WithRetryOn429 with the cooldown, or WithPacing. From
	// then on every call tells the limiter all that its answers say, such
	// as the budgets they advertise. An answer that closes the partition (a
	// 429, advertised exhaustion) is told always. So the 429 a handler's
	// call gets closes it for the calls of a job's view made later.
	waiters atomic.Bool
	// clock is the gateway's clock as its Date headers tell it.
	clock gatewayClock
	// pollSleep waits between the polls of WaitForStatus,
	// WaitForTransaction and PayerSign. nil is the real wait. Tests that
	// poll a real server record the waits here.
	pollSleep func(ctx context.Context, d time.Duration) error
}

// Service types, each grouping the operations of one resource. Their
// methods live in the resource's file.
type (
	// AuthService signs in with Ethereum (SIWE).
	AuthService struct{ client *Client }
	// ChainsService lists blockchains.
	ChainsService struct{ client *Client }
	// TokensService lists tokens.
	TokensService struct{ client *Client }
	// HealthService reads the gateway's health.
	HealthService struct{ client *Client }
	// PaymentMethodsService discovers merchants' payment methods.
	PaymentMethodsService struct{ client *Client }
	// WalletsService manages an account's wallets.
	WalletsService struct{ client *Client }
	// PaymentsService creates and drives payments.
	PaymentsService struct{ client *Client }
	// DisputesService lists disputes.
	DisputesService struct{ client *Client }
	// AnalyticsService reports on payments.
	AnalyticsService struct{ client *Client }
	// WebhooksService manages webhook subscriptions.
	WebhooksService struct{ client *Client }
	// DiscoveryService reads the gateway's descriptor and contract.
	DiscoveryService struct{ client *Client }
)

// NewClient returns a client for the gateway at baseURL. baseURL is, for
// example, "https://api.rail0.xyz", or a self-hosted origin, possibly with
// a path prefix. NewClient does no I/O and reads no environment. An invalid
// URL or option is an error.
func NewClient(baseURL string, opts ...Option) (*Client, error) {
	base, err := parseBaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	cfg := config{
		retryAfterCap: DefaultRetryAfterCap,
		userAgent:     sdkUserAgent,
		now:           time.Now,
		rand:          rand.Float64,
		cooldown:      true,
		expiries:      verify.DefaultExpiryBounds,
		retryBudget:   retryBudgetSize,
		maxBody:       DefaultMaxResponseSize,
	}
	for _, opt := range opts {
		if opt == nil {
			return nil, errors.New("rail0: nil Option")
		}
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	if err := checkBaseScheme(base, cfg.insecureHTTP); err != nil {
		return nil, err
	}
	if cfg.token != "" && cfg.tokenSource != nil {
		return nil, errors.New("rail0: WithToken and WithTokenSource are exclusive")
	}
	if cfg.wireLog && cfg.logger == nil {
		return nil, errors.New("rail0: WithWireLog needs WithLogger: the wire log is written at debug level to that logger")
	}
	// Without WithFeeCap, maxGas stays zero: gas_limit is bounded per
	// operation. maxFee stays nil: the fee is bounded per chain, in its
	// native unit.
	if err := verify.CheckFeeBounds(cfg.contracts, cfg.maxFee); err != nil {
		return nil, err
	}
	if cfg.token != "" {
		token := cfg.token
		cfg.tokenSource = func(context.Context) (string, error) { return token, nil }
	}
	// The caller's client is not modified. The one the SDK sends with
	// shares its Transport, Jar and Timeout (see sendingClient).
	hc := cfg.httpClient
	if hc == nil {
		hc = &http.Client{
			Transport: http.DefaultTransport.(*http.Transport).Clone(),
			Timeout:   defaultTimeout,
		}
		if cfg.call.set&setAttemptTimeout != 0 && cfg.call.attemptTimeout > 0 {
			hc.Timeout = 0 // WithAttemptTimeout bounds each attempt instead
		}
	}
	hc = sendingClient(hc)
	state := &clientState{
		base:        base,
		hc:          hc,
		baseStr:     base.String(),
		tokenSource: cfg.tokenSource,
		userAgent:   cfg.userAgent,
		logger:      cfg.logger,
		wireLog:     cfg.wireLog,
		observer:    observerOf(cfg.observers),
		limiter:     cfg.limiter,
		pacing:      cfg.pacing,
		pacingOn:    cfg.pacingOn,
		cooldown:    cfg.cooldown,
		now:         cfg.now,
		rand:        cfg.rand,
		signer:      cfg.signer,
		signIn:      cfg.signIn,
		trustBase:   verify.Trust{Pins: verify.NewPins(registry.Deployments(), registry.Stablecoins(), cfg.contracts, cfg.decimals), MaxGas: cfg.maxGas, MaxFee: cfg.maxFee},
		expiries:    cfg.expiries,
		quota:       newRetryQuota(cfg.retryBudget),
		maxBody:     cfg.maxBody,
		shownQuery:  cfg.safeQuery,
		sharedReads: cfg.sharedReads,
	}
	if state.shownQuery == nil {
		state.shownQuery = defaultSafeQuery
	}
	state.sharedLimiter = state.limiter != nil
	if state.limiter == nil {
		state.limiter = ratelimit.NewMemory()
	}
	c := newView(state, cfg.call.apply(policy{
		retryAfterCap: cfg.retryAfterCap,
		maxRetryWait:  DefaultMaxRetryWait,
		maxRetries:    DefaultMaxRetries,
		base:          defaultBackoffBase,
	}), callOverrides{}, nil)
	c.noteWaiters()
	// The SIWE messages' place is checked now, not at the first sign-in.
	// Without a signer or WithSignIn there is no sign-in to place: a host
	// SIWE cannot name (an IPv6 literal, loopback's [::1]) is no reason to refuse.
	if _, err := c.Auth.message(cfg.signIn, StatementLogin, zeroAddress, "00000000"); err != nil && (cfg.signer != nil || cfg.signIn != (SignIn{})) {
		return nil, fmt.Errorf("rail0: WithSignIn: %w", err)
	}
	if c.signer != nil && c.tokenSource == nil {
		ts, err := loginTokenSource(c.Auth, c.signer, cfg.signIn)
		if err != nil {
			return nil, err
		}
		c.login, c.tokenSource = ts, ts.Token
	}
	return c, nil
}

// zeroAddress is a well-formed address. It checks a SIWE message's place
// before any signer is at hand.
const zeroAddress = "0x0000000000000000000000000000000000000000"

// Session returns a copy of the session of a client created WithSigner. It
// signs in first when there is none or it is about to expire. The session
// holds the address, the merchant account (AccountID, which the wallet
// endpoints take) and the expiry. Its Token is the bearer token, for a
// program that hands the session to another: a browser, a process in
// another language. Never log it.
//
// When another call's sign-in is under way, Session waits for it (or for
// ctx). That sign-in may fail on its own caller's limits. Its caller's
// context may cut it short. Its 429 may be refused because the wait did not
// fit its caller's allowance or deadline, while it fits this caller's (see
// Client.With). In both cases the waiting callers sign in again with their
// own context and allowance. They do not inherit a failure that was about
// another caller's budget.
func (c *Client) Session(ctx context.Context) (*Session, error) {
	if c.viewErr != nil {
		return nil, c.viewErr // a view With refused signs in no more than it sends
	}
	if c.login == nil {
		return nil, ErrNoSession
	}
	return c.login.Session(c.withCaller(ctx))
}

func parseBaseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("rail0: invalid base URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("rail0: base URL %q must be http or https", raw)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("rail0: base URL %q has no host", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("rail0: base URL %q must not carry a query, fragment or user info", raw)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
		if u.RawPath != "" {
			u.RawPath += "/"
		}
	}
	return u, nil
}

// Response is the metadata of a call's final response. The body has been
// read and closed. Every struct a call returns carries it in its Response
// field, like stripe-go's LastResponse and go-github's *Response. Only the
// value the call itself returns carries it, not the values nested in it:
// the Transactions of a PaymentDetail, the Items of a page. The value a
// flow of several calls returns carries its last call's Response, with
// every call in Calls.
type Response struct {
	StatusCode int
	Header     http.Header
	// RequestID is the X-Request-Id header: the id to log and to quote to
	// support.
	RequestID string
	// Attempts is how many requests the call sent, retries included.
	Attempts int
	// RateLimit is the rate-limit state the response advertised, if any.
	RateLimit *RateLimitInfo
	// Deprecation is what the answer said of the endpoint's retirement
	// (its Deprecation and Sunset headers), or nil.
	Deprecation *Deprecation
	// Call is the call's transcript: every attempt, wait and decision.
	Call *Call
	// Calls holds the transcript of every call a flow made, in order, for
	// the value the flow returns (Authorize, Capture, PayerSign, Refund,
	// ...). Call is the last of them. It is nil for a single call.
	Calls []*Call
	// Reconciled is set when a write's own answer did not report its
	// success, but a read of the payment showed this call's work done. The
	// answer was lost, unreadable, or a refusal as done already. The
	// Response is then the read's.
	Reconciled *Reconciliation
}

// Reconciliation says how a write ended before a read showed its work
// done. A checkout can log it, and must not report the step failed.
type Reconciliation struct {
	// Err is the write's failure: the refusal as done already (an
	// *APIError such as 422 already_signed), the unknown outcome or the
	// unreadable answer. CallOf(Err) is the write's transcript.
	Err error
}
