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
// # Errors
//
// Every non-2xx answer is an *APIError carrying the status, the gateway's
// code, the request id and RetryAfter; errors.Is matches ErrRateLimited,
// ErrUnauthorized, ErrForbidden and ErrNotFound by status. A write whose
// outcome is unknown (the connection broke after the request was written,
// or a 5xx) is an *OutcomeUnknownError (errors.Is(err, ErrOutcomeUnknown)).
// A call cut short by its context returns an error that matches both the
// context error and, if a 429 was being waited out, the *APIError.
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
//     any method, since a 429 was never executed.
//  3. A server-given wait is min(RetryAfter, RetryAfterCap) plus additive
//     jitter U[0, 10%) of it: never earlier than the instruction. A 429
//     without a usable Retry-After, and any other retried failure, waits a
//     full-jitter guess U[0, min(cap, 500ms·2ⁿ)).
//  4. WithMaxRetryWait (default 3 min) bounds the rate-limit waiting of one
//     call. A wait that does not fit the allowance or the context deadline is
//     not started: the 429 comes back at once (APIError.RetryRefused).
//  5. Other failures are retried at most WithMaxRetries times (default 2): a
//     request that was never sent on any method; a 5xx or broken connection
//     only for GET, HEAD, PUT, DELETE and for POSTs carrying an
//     Idempotency-Key (payment creation always does).
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

	"github.com/hashicorp/go-retryablehttp"
)

// Version is the SDK version, sent in the default User-Agent.
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

	base    *url.URL // always ends with "/"
	baseStr string
	// tokenSource yields the bearer token; a fixed token is held in a
	// closure so that no formatting of the Client can print it.
	tokenSource func(context.Context) (string, error)
	userAgent   string
	logger      *slog.Logger
	onRetry     func(RetryEvent)
	policy      policy
	now         func() time.Time
	rand        func() float64
	rc          *retryablehttp.Client
	limiter     Limiter
	pacing      Pacing
	pacingOn    bool
	cooldown    bool
	delays      delayLog      // recent round trips, for the pacing margin
	limitGen    atomic.Uint64 // bumped by every rate-limit news; see takeTurn

	retries  atomic.Uint64
	refusals atomic.Uint64
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
		maxRetryWait:  DefaultMaxRetryWait,
		maxRetries:    DefaultMaxRetries,
		userAgent:     "rail0-go/" + Version,
		now:           time.Now,
		rand:          rand.Float64,
		cooldown:      true,
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
	if cfg.token != "" {
		token := cfg.token
		cfg.tokenSource = func(context.Context) (string, error) { return token, nil }
	}
	hc := cfg.httpClient
	if hc == nil {
		hc = &http.Client{
			Transport: http.DefaultTransport.(*http.Transport).Clone(),
			Timeout:   defaultTimeout,
		}
	}
	c := &Client{
		base:        base,
		baseStr:     base.String(),
		tokenSource: cfg.tokenSource,
		userAgent:   cfg.userAgent,
		logger:      cfg.logger,
		onRetry:     cfg.onRetry,
		limiter:     cfg.limiter,
		pacing:      cfg.pacing,
		pacingOn:    cfg.pacingOn,
		cooldown:    cfg.cooldown,
		now:         cfg.now,
		rand:        cfg.rand,
		policy: policy{
			retryOn429:    cfg.retryOn429,
			retryAfterCap: cfg.retryAfterCap,
			maxRetryWait:  cfg.maxRetryWait,
			maxRetries:    cfg.maxRetries,
			base:          defaultBackoffBase,
		},
	}
	// One retryablehttp.Client for the life of the Client, built as a
	// literal: its defaults would drop the final response on exhaustion and
	// use Retry-After uncapped. Our CheckRetry enforces every limit, so its
	// own RetryMax is only a ceiling never reached.
	c.rc = &retryablehttp.Client{
		HTTPClient:   hc,
		RetryMax:     maxAttempts,
		CheckRetry:   c.checkRetry,
		Backoff:      c.backoff,
		ErrorHandler: passthroughErrorHandler,
		PrepareRetry: c.prepareRetry,
	}
	if c.limiter == nil {
		c.limiter = NewMemoryLimiter(c.now)
	}
	c.Auth = &AuthService{c}
	c.Chains = &ChainsService{c}
	c.Tokens = &TokensService{c}
	c.Health = &HealthService{c}
	c.PaymentMethods = &PaymentMethodsService{c}
	c.Wallets = &WalletsService{c}
	c.Payments = &PaymentsService{c}
	c.Disputes = &DisputesService{c}
	c.Analytics = &AnalyticsService{c}
	c.Webhooks = &WebhooksService{c}
	c.Discovery = &DiscoveryService{c}
	return c, nil
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

// BaseURL returns the gateway URL the client sends to.
func (c *Client) BaseURL() string { return c.base.String() }

// RetryStats counts the client's retry decisions since it was created.
type RetryStats struct {
	// Retries is the number of retries sent.
	Retries uint64
	// Refusals is the number of 429s returned at once because the wait did
	// not fit the call's allowance or its context deadline.
	Refusals uint64
}

// RetryStats returns the client's retry counters.
func (c *Client) RetryStats() RetryStats {
	return RetryStats{Retries: c.retries.Load(), Refusals: c.refusals.Load()}
}

// Response is the metadata of a call's final response; the body has been
// read and closed.
type Response struct {
	StatusCode int
	Header     http.Header
	// RequestID is the X-Request-Id header.
	RequestID string
	// Attempts is how many requests the call sent, retries included.
	Attempts int
	// RateLimit is the rate-limit state the response advertised, if any.
	RateLimit *RateLimitInfo
}

type responseHookKey struct{}

// WithResponseHook returns a context that makes every call made with it
// report its final response's metadata (status, headers, request id,
// attempts, rate-limit state) to fn, on success and on error alike, before
// the call returns. A call whose last attempt got no answer (a broken
// connection) reports nothing.
func WithResponseHook(ctx context.Context, fn func(*Response)) context.Context {
	return context.WithValue(ctx, responseHookKey{}, fn)
}

// request is one logical API call.
type request struct {
	method string
	// path is relative to the base URL: no leading slash, segments escaped.
	path  string
	query url.Values
	// body is JSON-encoded once and replayed on every attempt; nil sends none.
	body any
	// idempotencyKey is sent as Idempotency-Key, the same on every attempt.
	idempotencyKey string
	// anonymous calls never resolve or send the bearer token (sign-in itself
	// must not call a token source that signs in).
	anonymous bool
}

// resolve builds the absolute URL of a path relative to the base URL. The
// path's segments are already escaped by the caller (url.PathEscape).
func (c *Client) resolve(path string, query url.Values) string {
	u := c.baseStr + strings.TrimLeft(path, "/")
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	return u
}

func (c *Client) bearer(ctx context.Context) (string, error) {
	if c.tokenSource == nil {
		return "", nil
	}
	tok, err := c.tokenSource(ctx)
	if err != nil {
		return "", fmt.Errorf("rail0: token source: %w", err)
	}
	if strings.ContainsAny(tok, "\r\n") {
		return "", errors.New("rail0: token source returned a token with a line break")
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
