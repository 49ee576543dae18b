package rail0

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net/http"
	"strings"
	"time"

	"github.com/rail0/rail0-go/ratelimit"
)

// Option configures a Client. Options are validated by NewClient, which
// returns the first error.
type Option func(*config) error

// config collects the options before NewClient builds the Client.
type config struct {
	token         string
	tokenSource   func(context.Context) (string, error)
	httpClient    *http.Client
	userAgent     string
	logger        *slog.Logger
	retryOn429    bool
	retryAfterCap time.Duration
	maxRetryWait  time.Duration
	maxRetries    int
	onRetry       func(RetryEvent)
	observer      Observer
	now           func() time.Time
	rand          func() float64
	pacing        Pacing
	pacingOn      bool
	limiter       ratelimit.Limiter
	cooldown      bool
	signer        Signer
	contracts     map[int64]address
	decimals      map[tokenKey]int64
	maxGas        uint64
	maxFee        *big.Int
}

// WithToken sets a fixed bearer token (a session JWT from POST /auth). Use
// WithTokenSource instead for a long-lived client that must survive token
// expiry.
func WithToken(token string) Option {
	return func(c *config) error {
		if strings.TrimSpace(token) == "" {
			return errors.New("rail0: WithToken: empty token")
		}
		if checkHeaderValue("token", token) != nil {
			return errors.New("rail0: WithToken: token contains a control character")
		}
		c.token = token
		return nil
	}
}

// WithTokenSource sets a function that returns the bearer token. It is called
// once per call (not per retry), so one long-lived client follows a token
// refresh; it must be safe for concurrent use. An empty token sends no
// Authorization header. See LoginTokenSource for one that signs in again
// before the session expires.
//
// With a TokenSource's Token (or any function that passes the call's context
// on to it), a call answered 401 makes the client drop the session the call
// was sent with, sign in again (one sign-in for all the calls refused
// together) and send the call once more; a second 401 is returned.
func WithTokenSource(source func(context.Context) (string, error)) Option {
	return func(c *config) error {
		if source == nil {
			return errors.New("rail0: WithTokenSource: nil source")
		}
		c.tokenSource = source
		return nil
	}
}

// WithHTTPClient sets the HTTP client used for every attempt (its Transport,
// Timeout and cookie Jar). The default has a 30 s timeout per attempt and
// its own connection pool. The client is copied and its redirect policy
// replaced: the SDK never follows redirects, whatever hc.CheckRedirect says
// (a 3xx comes back as an *APIError with its Location), so the bearer token
// never travels to another origin. hc itself is not modified.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *config) error {
		if hc == nil {
			return errors.New("rail0: WithHTTPClient: nil client")
		}
		c.httpClient = hc
		return nil
	}
}

// WithUserAgent sets the User-Agent header; it is sent as given, so include
// your application's name and version.
func WithUserAgent(ua string) Option {
	return func(c *config) error {
		if strings.TrimSpace(ua) == "" || checkHeaderValue("user_agent", ua) != nil {
			return fmt.Errorf("rail0: WithUserAgent: invalid user agent %q", ua)
		}
		c.userAgent = ua
		return nil
	}
}

// WithLogger sets a structured logger. The client logs nothing by default;
// with a logger it logs, at debug, one line per attempt (method, path,
// status, duration, request id, attempt, body sizes, call id); at info, every
// retry decision (attempt, status, wait, will_retry, reason) and limiter
// refusal; at warn, what the user must act on (an unknown outcome, a
// redirect, a limiter that cannot be reached). It never logs a header, a
// body, the bearer token or any other credential.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		c.logger = l
		return nil
	}
}

// WithRetryOn429 turns automatic retrying of 429 answers on or off (off by
// default). It works on its own, without any other option. A 429 was never
// executed, so it is retried on every method, POST included. The retry sleeps
// the calling goroutine: turn it on in background jobs, and keep it off in
// request/response handlers, which should pass APIError.RetryAfter on instead.
func WithRetryOn429(on bool) Option {
	return func(c *config) error {
		c.retryOn429 = on
		return nil
	}
}

// WithRetryAfterCap bounds a server-given Retry-After before jitter is added
// (default 60 s), so an over-long or hostile value cannot park a call. It
// also caps guessed waits.
func WithRetryAfterCap(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("rail0: WithRetryAfterCap: must be positive, got %v", d)
		}
		c.retryAfterCap = d
		return nil
	}
}

// WithMaxRetryWait sets the per-call allowance of server-given waiting (429s,
// 503s with Retry-After, cooldowns and pacing), summed over the call's
// attempts (default 3 min). When the server asks for longer than what is
// left, uncapped, the call returns its answer at once rather than holding
// the caller for a window the server said stays closed. Zero means never
// wait.
func WithMaxRetryWait(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("rail0: WithMaxRetryWait: must not be negative, got %v", d)
		}
		c.maxRetryWait = d
		return nil
	}
}

// WithMaxRetries bounds retries of failures other than 429: 5xx answers and
// connection failures (default 2). These retries also draw on a client-wide
// retry budget (20 retries' worth, refilled one fifth of a retry per
// success), so that an outage does not multiply the load; when it is empty
// such failures come back at once (RetryStats().Refusals.RetryBudget). It
// does not limit 429 retries, which MaxRetryWait bounds.
func WithMaxRetries(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("rail0: WithMaxRetries: must not be negative, got %d", n)
		}
		c.maxRetries = n
		return nil
	}
}

// WithOnRetry sets a function called on every retry decision, before the
// wait, from the calling goroutine; it must not block.
func WithOnRetry(fn func(RetryEvent)) Option {
	return func(c *config) error {
		if fn == nil {
			return errors.New("rail0: WithOnRetry: nil function")
		}
		c.onRetry = fn
		return nil
	}
}

// WithPacing keeps each rate-limit partition under a budget from the first
// request, so that the gateway's limit is never reached: at most Limit
// requests are sent in any interval of Period (stretched by a margin
// measured from recent round trips), on the public surface and on each
// session. PublishedLimits returns the hosted gateway's budgets. Without it,
// a client that retries 429s paces at the budget it learns from the first
// 429; with it, a 429 while paced still lowers the budget. With pacing,
// calls take their turn first in, first out and wait out cooldowns; a call
// whose turn does not come within its allowance (WithMaxRetryWait) or its
// context deadline gets a 429 at once, without sending (APIError.NotSent).
// Off by default.
func WithPacing(p Pacing) Option {
	return func(c *config) error {
		if err := validateBudget("public", p.Public); err != nil {
			return err
		}
		if err := validateBudget("session", p.Session); err != nil {
			return err
		}
		if p.Margin < 0 {
			return fmt.Errorf("rail0: WithPacing: negative margin %v", p.Margin)
		}
		c.pacing, c.pacingOn = p, paced(p.Public) || paced(p.Session)
		return nil
	}
}

// WithCooldown turns the client-wide cooldown, and with it the budget
// learned from 429s, on or off (on by default; it only acts with
// WithRetryOn429 or WithPacing). When any call on a partition gets a 429
// with a usable Retry-After, the partition is closed until
// min(Retry-After, RetryAfterCap) after that answer, and calls that would
// retry 429s wait for it to reopen instead of sending a request the gateway
// would refuse; it then reopens for at most the learned budget, retried
// calls first. Calls with RetryOn429 off and no pacing still go to the
// server, as a request/response app expects.
func WithCooldown(on bool) Option {
	return func(c *config) error {
		c.cooldown = on
		return nil
	}
}

// WithLimiter sets where the pacing, cooldown and learned-budget state
// lives. The default is in memory, per Client; a shared Limiter (see package
// redislimit) makes several processes behind one egress IP, or sharing one
// session, respect one budget.
func WithLimiter(l ratelimit.Limiter) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("rail0: WithLimiter: nil limiter")
		}
		c.limiter = l
		return nil
	}
}

// WithSigner gives the client an identity: flows (PayerSign, Authorize,
// Capture, Refund, ...) sign with signer, and, unless WithToken or
// WithTokenSource is also given, the client signs in with it (SIWE, on
// first use, with LoginParams' defaults) and signs in again before the
// session expires. One client per identity: a buyer and a merchant are two
// clients.
func WithSigner(signer Signer) Option {
	return func(c *config) error {
		if signer == nil {
			return errors.New("rail0: WithSigner: nil signer")
		}
		if _, err := parseAddress(signer.Address()); err != nil {
			return fmt.Errorf("rail0: WithSigner: address: %w", err)
		}
		c.signer = signer
		return nil
	}
}

// WithTrustedContracts pins the RAIL0 contract address per chain id. The
// flows and the Verify methods then refuse any payment, payload or
// transaction that names another contract on a pinned chain. Without a pin,
// the contract is the one the payment names, accepted only when the payment,
// its config_hash, the payload and the transaction all agree with it and the
// chain is one GET /blockchains lists: that stops a gateway bug or a
// tampered field, but not a gateway that lies consistently, which only a pin
// stops. Pin the addresses published for your chains in production.
func WithTrustedContracts(contracts map[int64]string) Option {
	return func(c *config) error {
		c.contracts = make(map[int64]address, len(contracts))
		for chain, addr := range contracts {
			a, err := parseAddress(addr)
			if err != nil || chain <= 0 {
				return fmt.Errorf("rail0: WithTrustedContracts: chain %d: invalid pin %q", chain, clip(addr))
			}
			c.contracts[chain] = a
		}
		return nil
	}
}

// WithTrustedTokens pins the decimals of tokens, given by ChainID, Address
// and Decimals (the other fields are ignored). The SDK turns the caller's
// human amounts ("1.00") into the base units an artifact must carry with
// the decimals GET /tokens lists; a gateway that lies about them
// consistently, in the list and in every artifact, would otherwise get a
// signature for ten times (or a tenth of) the amount asked for. With a pin,
// a listing that disagrees is refused (*ArtifactError on the token's
// decimals) before anything is signed. Pin the tokens you accept in
// production, as you pin contracts (WithTrustedContracts).
func WithTrustedTokens(tokens ...Token) Option {
	return func(c *config) error {
		if c.decimals == nil {
			c.decimals = make(map[tokenKey]int64, len(tokens))
		}
		for _, t := range tokens {
			a, err := parseAddress(t.Address)
			if err != nil || t.ChainID <= 0 || t.Decimals < 0 || t.Decimals > MaxDecimals {
				return fmt.Errorf("rail0: WithTrustedTokens: chain %d: invalid pin %q (%d decimals)", t.ChainID, clip(t.Address), t.Decimals)
			}
			k := tokenKey{t.ChainID, a}
			if d, dup := c.decimals[k]; dup && d != t.Decimals {
				return fmt.Errorf("rail0: WithTrustedTokens: chain %d: %s pinned with %d and %d decimals", t.ChainID, a, d, t.Decimals)
			}
			c.decimals[k] = t.Decimals
		}
		return nil
	}
}

// WithFeeCap bounds the gas of every transaction the client signs:
// gas_limit at most maxGas and gas_limit × max_fee_per_gas at most maxFee
// wei, so a gateway cannot spend the signer's ETH on gas. The defaults,
// DefaultMaxGasLimit and DefaultMaxFeeWei (0.05 ETH), are far above what a
// RAIL0 call costs.
func WithFeeCap(maxGas uint64, maxFee *big.Int) Option {
	return func(c *config) error {
		if maxGas == 0 || maxFee == nil || maxFee.Sign() <= 0 {
			return errors.New("rail0: WithFeeCap: bounds must be positive")
		}
		c.maxGas, c.maxFee = maxGas, new(big.Int).Set(maxFee)
		return nil
	}
}
