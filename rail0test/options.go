package rail0test

import (
	"log/slog"
	"time"
)

// Limit is one rate-limit budget: at most Requests per window of Period.
type Limit struct {
	// Requests is how many requests a window admits. Zero (or less) admits
	// none: every request of the surface is throttled. That is what
	// rail0-gateway's -public-limit 0 does. It is not "the default".
	Requests int
	// Period is the window's length. Zero means the WithRateLimitPeriod
	// value (default 60 s). Each surface may have its own, as Rack::Attack
	// throttles do.
	Period time.Duration
}

// Option configures a Server.
type Option func(*config)

type config struct {
	clock             Clock
	seed              *uint64
	jwtSecret         []byte
	confirmationDelay time.Duration
	rateLimits        bool
	publicLimit       Limit
	sessionLimit      Limit
	ratePeriod        time.Duration
	rateHeaders       bool
	siweDomains       []string
	signInChainID     int64
	logger            *slog.Logger
	sessionTTL        time.Duration
	nonceTTL          time.Duration
	authorizeWindow   time.Duration
	refundWindow      time.Duration
	webhookAttempts   int
	webhookBackoff    time.Duration
	webhookTimeout    time.Duration
	circuitThreshold  int
	faults            []Fault
	control           bool
}

func defaultConfig() config {
	return config{
		clock:            realClock{},
		rateLimits:       true,
		publicLimit:      Limit{Requests: 100},
		sessionLimit:     Limit{Requests: 300},
		ratePeriod:       60 * time.Second,
		signInChainID:    1,
		sessionTTL:       24 * time.Hour,
		nonceTTL:         5 * time.Minute,
		authorizeWindow:  7 * 24 * time.Hour,
		refundWindow:     30 * 24 * time.Hour,
		webhookAttempts:  3,
		webhookBackoff:   20 * time.Millisecond,
		webhookTimeout:   5 * time.Second,
		circuitThreshold: 5,
	}
}

// WithClock makes the server read time from c instead of the system clock.
// SIWE issued-at freshness (5 minutes either way) is checked against c too.
// So a client that stamps its sign-in messages with the real time needs c
// near it. Start a ManualClock at time.Now() in that case.
func WithClock(c Clock) Option {
	return func(cfg *config) {
		if c != nil {
			cfg.clock = c
		}
	}
}

// WithSeed makes every generated value reproducible. That covers UUIDs,
// nonces, request ids, webhook secrets and the fault injector's random
// draws. The demo keys are always deterministic. The JWT signing secret is
// not derived from the seed. So knowing the seed does not let anyone mint
// session tokens. The secret stays random unless WithJWTSecret fixes it.
func WithSeed(seed uint64) Option {
	return func(cfg *config) { cfg.seed = &seed }
}

// WithJWTSecret sets the HS256 key that signs session tokens.
// It is for tests that mint or check tokens themselves. Anyone who knows it
// can sign in as any address. By default the key is random (from
// crypto/rand), and Reset draws a new one.
func WithJWTSecret(secret []byte) Option {
	return func(cfg *config) { cfg.jwtSecret = append([]byte(nil), secret...) }
}

// WithConfirmationDelay sets how long a submitted transaction stays
// "submitted", on the server's Clock. It is then confirmed and its effect
// applied. Zero (the default) confirms it on the next request that reads
// state.
func WithConfirmationDelay(d time.Duration) Option {
	return func(cfg *config) {
		if d >= 0 {
			cfg.confirmationDelay = d
		}
	}
}

// WithRateLimits sets the per-window budgets of both surfaces: public and
// session. WithPublicRateLimit and WithSessionRateLimit set one and keep
// the other. The defaults are 100 and 300 per 60 s, as on the hosted
// gateway. No window ever admits more than its Requests. That holds under
// concurrency too, and with a clock that jumps.
func WithRateLimits(public, session Limit) Option {
	return func(cfg *config) {
		cfg.rateLimits = true
		cfg.publicLimit = public
		cfg.sessionLimit = session
	}
}

// WithPublicRateLimit sets the budget of the public surface only.
// That surface is keyed by client IP (default 100 per 60 s). The session
// surface keeps its budget.
func WithPublicRateLimit(l Limit) Option {
	return func(cfg *config) {
		cfg.rateLimits = true
		cfg.publicLimit = l
	}
}

// WithSessionRateLimit sets the budget of the session surface only
// (default 300 per 60 s). It is keyed by the bearer token of a valid
// session. A request whose token is invented, expired or revoked counts as
// public. The public surface keeps its budget.
func WithSessionRateLimit(l Limit) Option {
	return func(cfg *config) {
		cfg.rateLimits = true
		cfg.sessionLimit = l
	}
}

// WithRateLimitPeriod sets the length of the fixed throttle window
// (default 60 s). It applies to each surface whose Limit has no Period.
// Windows are aligned on multiples of the period since the Unix epoch.
// Retry-After carries the whole period, rounded up to whole seconds.
func WithRateLimitPeriod(d time.Duration) Option {
	return func(cfg *config) {
		if d > 0 {
			cfg.ratePeriod = d
		}
	}
}

// WithoutRateLimits turns throttling off.
func WithoutRateLimits() Option {
	return func(cfg *config) { cfg.rateLimits = false }
}

// WithRateLimitHeaders makes every rate-limited response carry rate-limit
// headers. These are the IETF RateLimit-Policy and RateLimit headers. They
// are also the older RateLimit-Limit, RateLimit-Remaining and
// RateLimit-Reset. The hosted gateway does not send them, so they are off
// by default. Turn them on to test a client's handling of them.
func WithRateLimitHeaders() Option {
	return func(cfg *config) { cfg.rateHeaders = true }
}

// WithSIWEDomain replaces the hosts accepted as the SIWE domain.
// By default they are the server's own host and "localhost". The host of
// the message's URI must equal its domain.
func WithSIWEDomain(domains ...string) Option {
	return func(cfg *config) { cfg.siweDomains = append([]string(nil), domains...) }
}

// WithSignInChainID sets the chain id SIWE messages must name (default 1).
func WithSignInChainID(id int64) Option {
	return func(cfg *config) { cfg.signInChainID = id }
}

// WithLogger makes the server log each request and webhook delivery at
// debug level. Tokens, keys and secrets are never logged. By default
// nothing is logged.
func WithLogger(l *slog.Logger) Option {
	return func(cfg *config) { cfg.logger = l }
}

// WithSessionTTL sets how long a session token stays valid (default 24 h).
func WithSessionTTL(d time.Duration) Option {
	return func(cfg *config) {
		if d > 0 {
			cfg.sessionTTL = d
		}
	}
}

// WithPaymentWindows sets a payment's two expiries, relative to creation.
// The authorization expiry defaults to 7 days. Capture and void come
// before it, release after it. The refund expiry defaults to 30 days.
func WithPaymentWindows(authorize, refund time.Duration) Option {
	return func(cfg *config) {
		if authorize > 0 {
			cfg.authorizeWindow = authorize
		}
		if refund > 0 {
			cfg.refundWindow = refund
		}
	}
}

// WithFaults installs faults when the server starts, as Faults.Add would.
// They are part of the server's initial state. Reset installs them again,
// with their hit counts at zero.
func WithFaults(faults ...Fault) Option {
	return func(cfg *config) { cfg.faults = append(cfg.faults, faults...) }
}

// WithControl turns on the control surface under /_rail0test/ (see the
// package documentation). It is for clients that cannot call Go. Over
// HTTP, they move the clock forward, reset the server, read the ledger, and
// add and clear faults.
//
// It answers only requests from a loopback address whose Host is a
// loopback name. It refuses those a browser makes for a page of another
// origin, by Sec-Fetch-Site and Origin. It is off by default.
//
// The server's Clock may be unable to move: it has no Advance method, like
// the system clock. Server.Clock then becomes that clock plus the offset
// the control surface adds.
func WithControl() Option {
	return func(cfg *config) { cfg.control = true }
}

// WithWebhookRetry sets how many times a delivery is attempted (default 3).
// backoff is the real-time pause before the second attempt (default 20
// ms). It doubles before each further one.
func WithWebhookRetry(attempts int, backoff time.Duration) Option {
	return func(cfg *config) {
		if attempts > 0 {
			cfg.webhookAttempts = attempts
		}
		if backoff >= 0 {
			cfg.webhookBackoff = backoff
		}
	}
}

// WithCircuitThreshold sets when a webhook's circuit opens: after this many
// consecutive failed delivery attempts (default 5).
func WithCircuitThreshold(n int) Option {
	return func(cfg *config) {
		if n > 0 {
			cfg.circuitThreshold = n
		}
	}
}
