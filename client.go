// Package rail0 is the Go client for the RAIL0 gateway: the REST API in front
// of an immutable EVM escrow contract that gives stablecoin payments a
// card-style lifecycle (authorize, capture, void, release, refund, charge,
// dispute).
//
// # Getting started
//
//	client, err := rail0.NewClient("https://api.rail0.xyz", rail0.WithToken(token))
//	payment, err := client.Payments.Get(ctx, id)
//
// NewClient does no I/O, reads no environment variable and logs nothing
// unless given WithLogger. A Client is safe for concurrent use; create one
// and share it.
//
// # Two layers
//
// The flows are for most programs: on a client created WithSigner,
// PayerSign, Authorize, Charge, Capture, Void, Release, Refund, Dispute and
// CloseDispute each run one lifecycle step (read the payment, prepare the
// step, check what the gateway prepared, sign it, submit it). Nothing the
// gateway hands over is signed before it is checked against the payment and
// the request (an *ArtifactError otherwise; see VerifyTransaction). A
// payment's terms never change, so a client reads them once: a step on a
// payment it has checked (read, polled with WaitForStatus, or created) is a
// prepare and a submit.
//
// The low-level path is for programs that sign elsewhere (a browser wallet,
// a signing service): Prepare and PrepareRefund, VerifyTransaction and
// VerifyPayload (the flows' checks, which return the digest to sign and the
// transaction or typed data, encoded by the SDK, that a wallet must sign),
// then Submit or SubmitByHash, or SubmitSignature for the payer's signature
// of a payment. Every other method is one gateway operation.
//
// # Call shapes
//
// Every method that calls the gateway takes ctx, then the path's arguments
// (the ids of what it acts on as strings, and the step of Prepare, Submit
// and SubmitByHash), then, when the operation takes anything else, one
// params value named <Resource><Method>Params (PaymentCaptureParams,
// WalletListParams; an All… iterator takes its List…'s params). It returns
// a pointer to a result that carries the call's metadata in its Response
// field, a *Page[T] or a *List[T], its bare *Response when the answer has no
// body, or, for an All… iterator, an iter.Seq2[T, error]. Params are values,
// not pointers as go-github's options are, because the zero value already
// means "no filter, the gateway's defaults": no call checks for nil, and the
// SDK can never change the caller's struct (an iterator pages on its own
// copy). They are named resource first, as go-github's and stripe-go's are,
// so that each resource's params sit beside its types in this
// documentation. The client's settings have one type, Option: NewClient
// takes them, and Client.With takes the three that apply per call.
//
// # Errors
//
// Every non-2xx answer is an *APIError carrying the status, the gateway's
// code, the request id and RetryAfter (a 3xx too: redirects are never
// followed, so the token never reaches another origin); errors.Is matches
// ErrRateLimited, ErrUnauthorized, ErrForbidden and ErrNotFound by status.
// A write that must not run twice whose outcome is unknown is an
// *OutcomeUnknownError (errors.Is(err, ErrOutcomeUnknown)), carrying its
// Idempotency-Key: the connection broke after the request was written, or
// the answer does not prove the write did not run (only a 429 and a 4xx in
// the gateway's error envelope do: a 5xx, a 408, a proxy's 401 or an
// undecodable 2xx may come after it ran).
// A call cut short by its context returns an error that matches both the
// context error and, if a 429 was being waited out or retried, the *APIError.
//
// # Rate limits and retries
//
// The gateway throttles public requests per IP (100 per 60 s) and sessions
// (300 per 60 s), answering 429 with Retry-After holding the whole throttle
// period. The retry contract, in full:
//
//  1. APIError.RetryAfter is always the server's instruction on that answer,
//     uncapped; zero when absent or unusable.
//  2. 429s are retried only with WithRetryOn429(true) (off by default), on
//     any operation, since a 429 was never executed. With it off, each 429
//     is still reported (the transcript, the observers, the logger at info)
//     with Retry false and reason retry_on_429_off.
//  3. A server-given wait (a 429's Retry-After, or a retried 503's) is
//     min(RetryAfter, RetryAfterCap) plus additive jitter U[0, 10%) of it:
//     never earlier than the instruction. The rate limiter may delay a
//     retry further, never advance it, whatever it learned about the
//     gateway's windows. An HTTP-date is read against the answer's Date
//     header. A 429 without a usable Retry-After, and any other retried
//     failure, waits a full-jitter guess U[0, min(cap, 500ms·2ⁿ)); a
//     header from an earlier answer does not pace it.
//  4. WithMaxRetryWait (default 3 min) bounds the server-given waiting of one
//     call. When the instruction, uncapped, does not fit what is left of the
//     allowance or of the context deadline, no wait is started: the answer
//     comes back at once, and the transcript says which limit refused the
//     retry (Call.NotRetried; package rail0stats counts refusals by reason).
//  5. Other failures are retried at most WithMaxRetries times (default 2),
//     while the client-wide retry budget lasts (20 retries' worth, refilled
//     by successes): a request that was never sent, on any operation; a 5xx
//     or broken connection only on an operation safe to repeat (reads, the
//     idempotent writes, payment creation with its Idempotency-Key, prepares
//     and reports by hash). Submitting a signed transaction, rotating a
//     webhook secret and the other writes that must not run twice are never
//     repeated after they may have run.
//  6. A call waits in three places only: between an answer and its retry
//     (the waits above, timed by go-retryablehttp); with the cooldown or
//     WithPacing, for its turn on its rate-limit partition just before each
//     request leaves, since another call's answer can move that turn while
//     this one waits; and, on a client WithSigner, for the sign-in its
//     token needs when another call already leads one, since two sign-ins
//     at once would spend two nonces for one session. That sign-in's own
//     requests wait in the first two places; while it waits out a rate
//     limit, a caller whose settings would not wait so long (its view does
//     not retry 429s, or the wait does not fit its allowance or deadline)
//     gets the 429 at once, not sent. Every wait ends when the context
//     does; the server-given waits and the turns count against
//     WithMaxRetryWait. The flows that poll (WaitForStatus,
//     WaitForTransaction, PayerSign) also wait between their calls, as
//     their documentation says.
//
// Client.With gives a kind of caller its own WithRetryOn429,
// WithMaxRetryWait and WithMaxRetries on the same client (a handler and a
// job share one cooldown and one learned budget), and Client.Raw sends a
// request to an endpoint the SDK does not know yet under all of the above.
//
// # What a call tells
//
// Every struct a call returns carries the call's metadata in its Response
// field: status, headers, the request id to log, attempts, rate-limit state,
// and the call's transcript (Call: every attempt, wait and decision, and the
// outcome; Call.String prints it). Every error a call returns carries the
// same transcript (CallOf). Response is set on the value the call returns,
// not on values nested in it, and a flow of several calls returns its last
// call's. This follows stripe-go's LastResponse rather than go-github's
// (T, *Response, error): the metadata sits where the result already is, so
// the common call site stays two results, and a flow need not choose which
// of its calls' responses to return beside its result.
//
// A call can be watched in three ways, and each retry decision reaches
// every one of them: the transcript above; WithLogger, which logs one line
// per attempt at debug (with WithWireLog, its headers and bodies too,
// redacted), retries and refusals at info, and what needs the user at
// warn; and WithObserver, which hands every call to a hook such as package
// rail0otel (OpenTelemetry) or package rail0stats (counters), neither of
// which this package imports.
//
// The /sync/* routes of the gateway belong to its chain indexer, not to
// merchants or buyers, and have no methods here.
package rail0

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
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
// resource. Create it with NewClient; it is safe for concurrent use.
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
	// over is what With changed, carried to the calls a call makes on its
	// behalf (a sign-in; see bearer); viewErr is an option With refused,
	// which every call of the view returns before sending.
	over    callOverrides
	viewErr error
}

// clientState is the state of a Client that all its views share: the
// connection pool, the session, the limiter with its cooldowns and learned
// budgets, the retry budget, the counters, the pins and the record of
// created payments. A view (With) differs from its client only by the retry
// settings of its calls.
type clientState struct {
	base    *url.URL // always ends with "/"
	baseStr string
	// tokenSource yields the bearer token; a fixed token is held in a
	// closure so that no formatting of the Client can print it.
	tokenSource func(context.Context) (string, error)
	userAgent   string
	logger      *slog.Logger
	wireLog     bool // WithWireLog: headers and bodies at debug, redacted
	now         func() time.Time
	rand        func() float64
	hc          *http.Client // every call's retryablehttp.Client sends with it (see newCall)
	limiter     ratelimit.Limiter
	// sharedLimiter: the limiter came from WithLimiter, and others may
	// share it (see othersLearn).
	sharedLimiter bool
	pacing        Pacing
	pacingOn      bool
	cooldown      bool
	delays        delayLog      // recent round trips, for the pacing margin
	limitGen      atomic.Uint64 // bumped by every rate-limit news; see takeTurn

	// signer is the client's identity for the flows (WithSigner); login
	// keeps its session when the client signs in with it.
	signer Signer
	login  *tokenSource
	// signIn places the client's SIWE messages (WithSignIn).
	signIn SignIn
	// trustBase holds the pins and gas bounds; domains, the token
	// domains the checks have learned.
	trustBase verify.Trust
	domains   domainCache
	// expiries bounds the expiries the payer's signature commits to
	// (WithExpiryBounds), measured from now, the local clock.
	expiries verify.ExpiryBounds
	// created remembers what Create was asked for, for PayerSign; known,
	// the payments' terms the flows checked (flow_known.go).
	created createdLog
	known   knownPayments

	quota *retryQuota // the client-wide retry budget

	observer Observer      // nil, the one given, or all of them (observers)
	calls    atomic.Uint64 // the last call id given

	// waiters is set once any view of the client makes calls that wait for
	// the limiter (WithRetryOn429 with the cooldown, or WithPacing): from
	// then on every call tells the limiter all that its answers say (the
	// budgets they advertise). An answer that closes the partition (a 429,
	// advertised exhaustion) is told always, so that the 429 a handler's
	// call gets closes it for the calls of a job's view made later.
	waiters atomic.Bool
	// clock is the gateway's clock as its Date headers tell it.
	clock gatewayClock
	// pollSleep waits between the polls of WaitForStatus,
	// WaitForTransaction and PayerSign; nil is the real wait. Tests that
	// poll a real server record the waits here.
	pollSleep func(ctx context.Context, d time.Duration) error
}

// Service types: each groups the operations of one resource. Their methods
// live in the resource's file.
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

// NewClient returns a client for the gateway at baseURL (for example
// "https://api.rail0.xyz", or a self-hosted origin, possibly with a path
// prefix). It does no I/O and reads no environment; an invalid URL or option
// is an error.
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
	}
	for _, opt := range opts {
		if opt == nil {
			return nil, errors.New("rail0: nil Option")
		}
		if err := opt(&cfg); err != nil {
			return nil, err
		}
	}
	if cfg.token != "" && cfg.tokenSource != nil {
		return nil, errors.New("rail0: WithToken and WithTokenSource are exclusive")
	}
	if cfg.wireLog && cfg.logger == nil {
		return nil, errors.New("rail0: WithWireLog needs WithLogger: the wire log is written at debug level to that logger")
	}
	// Without WithFeeCap, maxGas stays zero (gas_limit bounded per
	// operation) and maxFee nil (a fee bound per chain, in its native unit).
	if err := verify.CheckFeeBounds(cfg.contracts, cfg.maxFee); err != nil {
		return nil, err
	}
	if cfg.token != "" {
		token := cfg.token
		cfg.tokenSource = func(context.Context) (string, error) { return token, nil }
	}
	// The caller's client is not modified: the one the SDK sends with
	// shares its Transport, Jar and Timeout (see sendingClient).
	hc := cfg.httpClient
	if hc == nil {
		hc = &http.Client{
			Transport: http.DefaultTransport.(*http.Transport).Clone(),
			Timeout:   defaultTimeout,
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
		quota:       newRetryQuota(),
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
	if _, err := c.Auth.message(cfg.signIn, StatementLogin, zeroAddress, "00000000"); err != nil {
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

// zeroAddress is a well-formed address, for checking a SIWE message's place
// before any signer is at hand.
const zeroAddress = "0x0000000000000000000000000000000000000000"

// ErrNoSession is returned by Client.Session for a client that does not sign
// in by itself (no WithSigner, or a WithToken/WithTokenSource given).
var ErrNoSession = errors.New("rail0: the client does not sign in by itself (WithSigner)")

// Session returns a copy of the session of a client created WithSigner,
// signing in first when there is none or it is about to expire: the
// address, the merchant account (AccountID, which the wallet endpoints take)
// and the expiry. Its Token is the bearer token, for a program that hands
// the session to another (a browser, a process in another language); never
// log it.
//
// When another call's sign-in is under way, Session waits for it (or for
// ctx). If that sign-in was cut short by its caller's context, or its 429
// was refused because the wait did not fit its caller's allowance or
// deadline while it fits this caller's (see Client.With), the waiting
// callers sign in again with their own context and allowance instead of
// inheriting a failure that was about another caller's budget.
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

// Response is the metadata of a call's final response; the body has been
// read and closed. Every struct a call returns carries it in its Response
// field (stripe-go's LastResponse, go-github's *Response): the value the
// call itself returns, not the values nested in it (the Transactions of a
// PaymentDetail, the Items of a page), and not the values a flow of several
// calls builds from them, whose Response is that of the flow's last call.
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
	// Call is the call's transcript: every attempt, wait and decision.
	Call *Call
}

// request is one logical API call.
type request struct {
	// op is the contract operation the call performs, declared beside its
	// method (operation); args fill its path template. do sets method and
	// path from them. A request without op (one the contract does not name)
	// gives its own method and path.
	op     *operation
	args   pathArgs
	method string
	// path is relative to the base URL: no leading slash, segments escaped
	// (ids through pathSegment).
	path  string
	query url.Values
	// body is JSON-encoded once and replayed on every attempt; nil sends
	// none. A json.RawMessage is JSON already (Raw's body, encoded before
	// the call starts) and is sent as it is.
	body any
	// idempotencyKey is sent as Idempotency-Key, the same on every attempt.
	idempotencyKey string
	// anonymous calls never resolve or send the bearer token: the public
	// operations (security: [] in the contract), and sign-in itself, which
	// must not call a token source that signs in. They count against the
	// public rate-limit partition.
	anonymous bool
	// secretAnswer marks an operation whose answer carries a credential (a
	// session token, a webhook secret): error values built from that answer
	// keep none of its body.
	secretAnswer bool
	// identify, when set, reports why the decoded 2xx answer is not the
	// resource the operation promises, "" when it is (notTheTransaction,
	// notThePayment): a write that must not run twice is not a success on
	// a body that merely decodes.
	identify func() string
	// keep401 returns a 401 as it is, without signing in again: logging out
	// a session the gateway already refuses needs no new session.
	keep401 bool
	// raw marks a RawRequest, whose retry class is the caller's (class)
	// rather than the contract table's.
	raw   bool
	class opClass
	// onRateWait, when not nil, hears of every wait for a rate limit the
	// call starts (a 429's backoff, a cooldown): the sign-in a token source
	// leads tells the callers waiting for it (see tokenSource.await).
	onRateWait func(rateWait)
}

// do sends r and decodes a 2xx JSON answer into out (see send). It refuses
// a request that could not be sent as given before anything goes out.
//
// A call sent with a token and answered 401 tells the client's token source
// which token the gateway refused (see bearer): the tokenSource of a client
// created WithSigner drops that session (that one only: a newer session
// that another call obtained meanwhile is kept, so late 401s for an old
// token do not discard a fresh one). When the operation is safe to repeat (its declaration's class), do
// asks the source for a token at once, which makes its tokenSource sign in
// again (one sign-in shared by all callers), and sends the call once more
// if the token is a new one. A source that answers the refused token again,
// or none (""), has no other session to offer, and the 401 stands, as it
// does for a fixed token: the call was made as the caller, and sent again
// without a token it would act as nobody, on the public partition. A source
// that fails returns its error. The gateway answers a 401 before it runs
// anything, but a proxy or a broken gateway might not: a write that must not
// run twice (a submit, a secret rotation) comes back with its 401 instead
// (an *OutcomeUnknownError unless the 401 is in the gateway's envelope: see
// provesNotRun), and the caller's next call signs in.
func (c *Client) do(ctx context.Context, r *request, out any) (*Response, error) {
	if c.viewErr != nil {
		return nil, c.viewErr
	}
	if r.op != nil {
		path, err := r.op.path(r.args)
		if err != nil {
			return nil, err
		}
		r.method, r.path = r.op.method, path
	}
	if err := checkHeaderValue("idempotency_key", r.idempotencyKey); err != nil {
		return nil, err
	}
	c = c.forCaller(ctx)
	ctx, call := c.startCall(ctx, r)
	if r.raw && (call.Operation == "" || r.class.stricter(call.class)) {
		// The caller's word, for an operation the contract does not name;
		// for one it names, the stricter of the caller's and the table's.
		call.class = r.class
	}
	st := c.newCall(r, call)
	st.resendOn401 = c.tokenSource != nil && !r.anonymous && !r.keep401 && call.class.repeatable(r.idempotencyKey != "")
	resp, err := st.send(ctx, r, out, "")
	if refused := st.token; refused != "" && !r.keep401 && errors.Is(err, ErrUnauthorized) {
		if !call.class.repeatable(r.idempotencyKey != "") {
			_, _ = c.bearer(ctx, refused, false) // the session is dropped; the answer is not used
		} else if tok, srcErr := c.bearer(ctx, refused, true); srcErr != nil {
			err = srcErr
		} else if tok != refused && tok != "" {
			// The send after a sign-in is a retry like any other: in the
			// transcript, logged and observed as one, and within the
			// call's attempts and allowance. Its attempt is reported only
			// now that the decision is taken (see checkRetry).
			if n := len(call.Attempts); n > 0 {
				a := &call.Attempts[n-1]
				a.Retry, a.Reason = true, ReasonSessionRefused
			}
			c.tellUntold(ctx, st)
			st.resendOn401 = false // a second 401 is returned as it is
			resp, err = st.send(ctx, r, out, tok)
		}
	}
	c.tellUntold(ctx, st)
	if err == nil && r.identify != nil && resp != nil {
		if why := r.identify(); why != "" {
			err = st.undecodable(resp, fmt.Errorf("not the resource the operation promises: the answer %s", why))
		}
	}
	if r.secretAnswer {
		var decodeErr *DecodeError
		if errors.As(err, &decodeErr) {
			decodeErr.Body = nil // it holds the credential
		}
	}
	c.endCall(ctx, call, resp, err)
	if err != nil {
		resp = nil // the error carries the answer and the transcript
	}
	return resp, err
}

// tellUntold reports the call's last attempt when its report waited for the
// decision after a 401.
func (c *Client) tellUntold(ctx context.Context, st *callState) {
	if !st.untold {
		return
	}
	st.untold = false
	if n := len(st.call.Attempts); n > 0 {
		c.tellAttempt(ctx, st.call, &st.call.Attempts[n-1])
	}
}

// pathSegment validates an id that goes into a request path and returns it
// escaped. Empty, "." and ".." are refused: escaping leaves the dots as they
// are, and a dot segment would address another resource (GET /payments/..
// is GET /).
func pathSegment(field, id string) (string, error) {
	switch id {
	case "":
		return "", &ValidationError{Field: field, Reason: "is required"}
	case ".", "..":
		return "", &ValidationError{Field: field, Reason: fmt.Sprintf("%q is a dot segment, not an id", id)}
	}
	return url.PathEscape(id), nil
}

// checkHeaderValue refuses a header value that net/http would not send (a
// control character such as CR or LF, or DEL), so that such a call fails at
// once with a *ValidationError instead of as a transport error after
// retries.
func checkHeaderValue(field, v string) error {
	for i := 0; i < len(v); i++ {
		if b := v[i]; (b < ' ' && b != '\t') || b == 0x7f {
			return &ValidationError{Field: field, Reason: fmt.Sprintf("contains the control character %#04x, which cannot be sent in a header", b)}
		}
	}
	return nil
}

// noRedirects is the CheckRedirect of every HTTP client the SDK sends with:
// the gateway never redirects, and following a redirect would carry the
// bearer token (and a signed transaction) to wherever it points. The 3xx
// comes back as an *APIError with its Location.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// resolve builds the absolute URL of a path relative to the base URL. The
// path's segments are already escaped by the caller (url.PathEscape).
func (c *Client) resolve(path string, query url.Values) string {
	u := c.baseStr + strings.TrimLeft(path, "/")
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	return u
}

// bearer asks the client's token source for a token. refused, when not
// empty, is the token a 401 just refused: it reaches the source in the
// context, as a read-only value (sessionRefusal), and a tokenSource's Token
// drops that session, then (renew) returns a token of a fresh one, or
// (!renew) returns at once without signing in; the caller does not use that
// answer. Nothing else rides in the context: the answer is the token, which
// itself names the session.
func (c *Client) bearer(ctx context.Context, refused string, renew bool) (string, error) {
	if c.tokenSource == nil {
		return "", nil
	}
	if refused != "" {
		ctx = context.WithValue(ctx, sessionRefusalKey{}, sessionRefusal{token: refused, renew: renew})
	} else if n, ok := ctx.Value(sessionRefusalKey{}).(sessionRefusal); ok && n.token != "" {
		// ctx is that of a call made inside another client's token source
		// after a 401 of its own: that refusal is not about this client.
		ctx = context.WithValue(ctx, sessionRefusalKey{}, sessionRefusal{})
	}
	tok, err := c.tokenSource(c.withCaller(ctx))
	if err != nil {
		if c.login != nil {
			return "", err // the client's own sign-in, which names itself
		}
		return "", fmt.Errorf("rail0: token source: %w", err)
	}
	if err := checkHeaderValue("token", tok); err != nil {
		return "", err
	}
	return tok, nil
}

// isNotSent reports whether a transport error proves the request never left
// the client: the connection could not be opened or the name not resolved.
func isNotSent(err error) bool {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return true
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return true
	}
	return false
}
