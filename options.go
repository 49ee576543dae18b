package rail0

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/big"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/rail0/rail0-go/internal/verify"
	"github.com/rail0/rail0-go/ratelimit"
)

// Option configures a Client. Options are validated by NewClient, which
// returns the first error.
type Option func(*config) error

// The defaults of the options, and the value that turns the retry budget
// off.
const (
	// DefaultRetryAfterCap bounds a server-given wait before jitter is
	// added (WithRetryAfterCap).
	DefaultRetryAfterCap = 60 * time.Second
	// DefaultMaxRetryWait is the per-call allowance of server-given
	// waiting (WithMaxRetryWait).
	DefaultMaxRetryWait = 3 * time.Minute
	// DefaultMaxRetries bounds retries of failures other than 429
	// (WithMaxRetries).
	DefaultMaxRetries = 2
	// DefaultMaxResponseSize bounds a 2xx answer's body
	// (WithMaxResponseSize). The largest legitimate one, a page of 100
	// payments, is far smaller.
	DefaultMaxResponseSize = 32 << 20
	// RetryBudgetOff, given to WithRetryBudget, turns the client-wide retry
	// budget off. Failures are then retried within WithMaxRetries alone.
	RetryBudgetOff = -1
)

// config collects the options before NewClient builds the Client.
type config struct {
	token       string
	tokenSource func(context.Context) (string, error)
	httpClient  *http.Client
	userAgent   string
	logger      *slog.Logger
	wireLog     bool
	// call holds the settings that also apply per call (Client.With). It
	// records which options set them.
	call          callOverrides
	retryAfterCap time.Duration
	observers     []Observer
	now           func() time.Time
	rand          func() float64
	pacing        Pacing
	pacingOn      bool
	limiter       ratelimit.Limiter
	cooldown      bool
	signer        Signer
	signIn        SignIn
	contracts     map[int64]verify.Address
	decimals      map[verify.TokenKey]int64
	maxGas        uint64
	maxFee        *big.Int
	expiries      verify.ExpiryBounds
	insecureHTTP  bool
	retryBudget   int // in tokens; negative when off
	maxBody       int64
	safeQuery     map[string]bool // nil: defaultSafeQuery
	sharedReads   bool
}

// WithToken sets a fixed bearer token (a session JWT from POST /auth). Such
// a token expires. A long-lived client signs in by itself (WithSigner) or
// asks for its token (WithTokenSource).
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

// WithTokenSource sets a function that returns the bearer token. It suits
// tokens that come from elsewhere, such as a vault or another service. It is
// called once per call, not per retry, so a long-lived client follows a
// token refresh. It must be safe for concurrent use. An empty token sends no
// Authorization header. A client that holds the key signs in by itself
// instead (WithSigner).
//
// A call answered 401 asks the source once more. If the operation is safe
// to repeat and the source returns another token, the call is sent once
// more with it. A second 401 is returned. When the source returns the same
// token or none (""), the 401 is returned and nothing more is sent: a call
// made with a token never goes out again without one. A write that must not
// run twice is not sent again.
func WithTokenSource(source func(context.Context) (string, error)) Option {
	return func(c *config) error {
		if source == nil {
			return errors.New("rail0: WithTokenSource: nil source")
		}
		c.tokenSource = source
		return nil
	}
}

// WithHTTPClient sets the HTTP client used for every attempt: its
// Transport, Timeout and cookie Jar. The default has a 30 s timeout per
// attempt and its own connection pool.
//
// The client is copied and its redirect policy replaced. The SDK never
// follows redirects, whatever hc.CheckRedirect says, so the bearer token
// never travels to another origin. A 3xx comes back as an *APIError with its
// Location. hc itself is not modified. A failed call never closes the idle
// connections of its Transport (go-retryablehttp would, for the whole
// program, on every failure).
func WithHTTPClient(hc *http.Client) Option {
	return func(c *config) error {
		if hc == nil {
			return errors.New("rail0: WithHTTPClient: nil client")
		}
		c.httpClient = hc
		return nil
	}
}

// WithUserAgent adds your application's identity to the User-Agent header,
// after the SDK's own. WithUserAgent("shop/2.1") sends
// "rail0-go/0.1.0 shop/2.1", as stripe-go's AppInfo and aws-sdk-go-v2's
// AppID do. The gateway's operator then sees who calls and with which SDK.
// The SDK's product stays first, where the operator's tools look for it.
//
// app is one or more products ("name/version", the version optional) and
// comments ("(+https://shop.example)"), separated by spaces. It is printable
// ASCII of at most 200 bytes (RFC 9110 §10.1.5). The SDK's product cannot be
// given or replaced. Given twice, the last one counts.
func WithUserAgent(app string) Option {
	return func(c *config) error {
		if err := checkUserAgent(app); err != nil {
			return err
		}
		c.userAgent = sdkUserAgent + " " + app
		return nil
	}
}

// sdkUserAgent is the SDK's product in the User-Agent header.
const sdkUserAgent = "rail0-go/" + Version

// maxUserAgentApp bounds what WithUserAgent adds. A header that a gateway or
// a proxy refuses as too large would fail every call.
const maxUserAgentApp = 200

// checkUserAgent checks that app is a list of RFC 9110 products and
// comments, without the SDK's own product.
func checkUserAgent(app string) error {
	invalid := func(reason string) error {
		return &ValidationError{Field: "WithUserAgent", Reason: fmt.Sprintf("%q %s", clip(app), reason)}
	}
	switch {
	case strings.TrimSpace(app) == "":
		return invalid("is empty")
	case len(app) > maxUserAgentApp:
		return invalid(fmt.Sprintf("is longer than %d bytes", maxUserAgentApp))
	case app[0] == ' ' || app[0] == '\t' || app[0] == '(':
		return invalid("must start with a product such as shop/2.1")
	}
	for i := 0; i < len(app); {
		switch b := app[i]; {
		case b == ' ' || b == '\t':
			i++
		case b == '(':
			n, ok := commentLen(app[i:])
			if !ok {
				return invalid("has an unbalanced or invalid comment")
			}
			i += n
		default:
			name := tokenLen(app[i:])
			if name == 0 {
				return invalid(fmt.Sprintf("has %q where a product or a comment belongs", string(rune(b))))
			}
			if strings.EqualFold(app[i:i+name], "rail0-go") {
				return invalid("names the SDK, which adds its own product")
			}
			i += name
			if i < len(app) && app[i] == '/' {
				v := tokenLen(app[i+1:])
				if v == 0 {
					return invalid("has a product with an empty version")
				}
				i += 1 + v
			}
			if i < len(app) && app[i] != ' ' && app[i] != '\t' {
				return invalid("needs a space between products")
			}
		}
	}
	return nil
}

// tokenLen is the length of the RFC 9110 token s starts with.
func tokenLen(s string) int {
	for i := 0; i < len(s); i++ {
		if !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(s[i])) && !('0' <= s[i] && s[i] <= '9') &&
			!('a' <= s[i] && s[i] <= 'z') && !('A' <= s[i] && s[i] <= 'Z') {
			return i
		}
	}
	return len(s)
}

// commentLen is the length of the RFC 9110 comment s starts with. Nested
// comments and quoted pairs count; only printable ASCII is allowed. ok is
// false when the comment does not end.
func commentLen(s string) (n int, ok bool) {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b == '(':
			depth++
		case b == ')':
			if depth--; depth == 0 {
				return i + 1, true
			}
		case b == '\\':
			if i+1 >= len(s) || (s[i+1] < ' ' && s[i+1] != '\t') || s[i+1] > '~' {
				return 0, false
			}
			i++
		case (b < ' ' && b != '\t') || b > '~':
			return 0, false
		}
	}
	return 0, false
}

// WithLogger sets a structured logger. The client logs nothing by default.
// With a logger it logs:
//   - at debug, one line per attempt: method, path, status, duration,
//     request id, attempt, body sizes, call id;
//   - at info, every retry decision (attempt, status, wait, will_retry,
//     reason) and every limiter refusal;
//   - at warn, what the user must act on: an unknown outcome, a redirect, a
//     limiter that cannot be reached, and once per operation a Deprecation
//     or Sunset header.
//
// It logs no header and no body unless WithWireLog is on, and then
// redacted. It never logs the bearer token or any other credential.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		c.logger = l
		return nil
	}
}

// WithRetryOn429 turns automatic retrying of 429 answers on or off (off by
// default). It works on its own, without any other option. A 429 was never
// executed, so it is retried on every method, POST included.
//
// The retry sleeps the calling goroutine. Turn it on in background jobs.
// Keep it off in request/response handlers, which should pass
// APIError.RetryAfter on instead. One client serves both: given to
// Client.With, it applies to the calls of the view.
func WithRetryOn429(on bool) Option {
	return func(c *config) error {
		c.call.set |= setRetryOn429
		c.call.retryOn429 = on
		return nil
	}
}

// WithRetryAfterCap bounds a server-given Retry-After before jitter is added
// (default 60 s). An over-long or hostile value then cannot park a call. It
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

// WithMaxRetryWait sets the per-call allowance of server-given waiting
// (default 3 min). It counts 429s, 503s with Retry-After, cooldowns and
// pacing, summed over the call's attempts. When the server asks, uncapped,
// for longer than what is left, the call returns its answer at once. It does
// not hold the caller for a window the server said stays closed. Zero means
// never wait. Given to Client.With, it applies to the calls of the view.
func WithMaxRetryWait(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return &ValidationError{Field: "max_retry_wait", Reason: fmt.Sprintf("must not be negative, got %v", d)}
		}
		c.call.set |= setMaxRetryWait
		c.call.maxRetryWait = d
		return nil
	}
}

// WithMaxRetries bounds retries of failures other than 429 (default 2):
// 5xx answers and connection failures. These retries also draw on a
// client-wide retry budget, so that an outage does not multiply the load.
// The budget holds 20 retries' worth and each success refills a fifth of a
// retry. When it is empty, such failures come back at once (Call.NotRetried
// says retry_budget_empty). WithRetryBudget sizes that budget.
//
// WithMaxRetries does not limit 429 retries, which WithMaxRetryWait bounds.
// Given to Client.With, it applies to the calls of the view.
func WithMaxRetries(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return &ValidationError{Field: "max_retries", Reason: fmt.Sprintf("must not be negative, got %d", n)}
		}
		c.call.set |= setMaxRetries
		c.call.maxRetries = n
		return nil
	}
}

// WithRetryBudget sizes the client-wide retry budget in retries (default
// 20). A burst of failures other than 429 gets that many retries across the
// client. A retry after a timeout counts twice. Each answer that is not a
// failure gives a fifth of a retry back. Zero retries no such failure.
// RetryBudgetOff turns the budget off and leaves WithMaxRetries alone to
// bound them (aws-sdk-go-v2's ratelimit.None). The budget is the client's,
// shared by its views, so Client.With refuses it.
func WithRetryBudget(retries int) Option {
	return func(c *config) error {
		switch {
		case retries == RetryBudgetOff:
			c.retryBudget = RetryBudgetOff
		case retries < 0:
			return &ValidationError{Field: "retry_budget", Reason: fmt.Sprintf("must not be negative (RetryBudgetOff turns it off), got %d", retries)}
		case retries > math.MaxInt/retryCost:
			return &ValidationError{Field: "retry_budget", Reason: fmt.Sprintf("%d retries is too many; RetryBudgetOff turns it off", retries)}
		default:
			c.retryBudget = retries * retryCost
		}
		return nil
	}
}

// WithLabel names the calls of a view. Each kind of caller can then be
// watched on its own: client.With(rail0.WithLabel("handler")). The label is
// in the transcript (Call.Label), hence in every observer's events. It is on
// every log line of the call (key "label"). Package rail0stats counts per
// label. A sign-in that a call triggers carries its label.
//
// label is 1 to 64 letters, digits and "._:/-". Labels are a bounded set of
// names chosen in code. One per request or per user would grow every metric
// without bound. Given to NewClient, it labels the calls made outside any
// view.
func WithLabel(label string) Option {
	return func(c *config) error {
		if err := checkLabel(label); err != nil {
			return err
		}
		c.call.set |= setLabel
		c.call.label = label
		return nil
	}
}

// maxLabel bounds a label, which goes on every log line and metric of a call.
const maxLabel = 64

// checkLabel refuses a label that is empty, too long, or has a character
// a log search or a metric backend would have to quote.
func checkLabel(label string) error {
	if label == "" || len(label) > maxLabel {
		return &ValidationError{Field: "label", Reason: fmt.Sprintf("must be 1 to %d bytes, got %d", maxLabel, len(label))}
	}
	for i := 0; i < len(label); i++ {
		b := label[i]
		if !('a' <= b && b <= 'z') && !('A' <= b && b <= 'Z') && !('0' <= b && b <= '9') && !strings.ContainsRune("._:/-", rune(b)) {
			return &ValidationError{Field: "label", Reason: fmt.Sprintf("%q has %q; use letters, digits and ._:/-", clip(label), label[i:i+1])}
		}
	}
	return nil
}

// WithAttemptTimeout bounds each attempt of a call, from sending the request
// to reading the answer's body. The call's context deadline bounds the whole
// call apart from it.
//
// An attempt it cuts is a timeout: a *TransportError whose cause is a
// net.Error with Timeout true, not context.DeadlineExceeded. It is retried
// only where a broken connection would be. A read is, a submit never is, and
// a keyed create is, with its key.
//
// Zero (the default) leaves each attempt to the HTTP client's Timeout: 30 s
// unless WithHTTPClient. Given to NewClient without WithHTTPClient, it
// replaces those 30 s. The Timeout of a client given with WithHTTPClient
// still applies too. Given to Client.With, it applies to the calls of the
// view.
func WithAttemptTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return &ValidationError{Field: "attempt_timeout", Reason: fmt.Sprintf("must not be negative, got %v", d)}
		}
		c.call.set |= setAttemptTimeout
		c.call.attemptTimeout = d
		return nil
	}
}

// WithPacing keeps each rate-limit partition under a budget from the first
// request. The gateway's limit is then never reached. It is off by
// default. At most Limit requests are sent in any interval of Period, on the
// public surface and on each session. A margin measured from recent round
// trips stretches the Period. PublishedLimits returns the hosted gateway's
// budgets.
//
// Without it, a client that retries 429s paces at the budget it learns from
// the first 429. With it, a 429 while paced still lowers the budget.
//
// With pacing, calls take their turn first in, first out and wait out
// cooldowns. A call whose turn does not come within its allowance
// (WithMaxRetryWait) or its context deadline gets a 429 at once, without
// sending (APIError.NotSent). A call with RetryOn429 off (a handler's) goes
// ahead of the calls waiting their turn, within the budget.
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

// WithCooldown turns the client-wide cooldown on or off, and with it the
// budget learned from 429s. It is on by default and acts only with
// WithRetryOn429 or WithPacing.
//
// When any call on a partition gets a 429 with a usable Retry-After, the
// partition is closed until min(Retry-After, RetryAfterCap) after that
// answer. Calls that would retry 429s wait for it to reopen. They do not
// send a request the gateway would refuse. The partition then reopens for
// at most the learned budget, retried calls first.
//
// Calls with RetryOn429 off and no pacing never wait for it: they go to the
// server. While the gateway's own instruction has not run out, they get its
// rest at once instead, not sent.
func WithCooldown(on bool) Option {
	return func(c *config) error {
		c.cooldown = on
		return nil
	}
}

// WithLimiter sets where the pacing, cooldown and learned-budget state
// lives. The default is in memory, per Client. A shared Limiter (see package
// redislimit) makes several processes respect one budget: those behind one
// egress IP, or sharing one session.
func WithLimiter(l ratelimit.Limiter) Option {
	return func(c *config) error {
		if l == nil {
			return errors.New("rail0: WithLimiter: nil limiter")
		}
		c.limiter = l
		return nil
	}
}

// WithSigner gives the client an identity. The flows (PayerSign,
// Authorize, Capture, Refund, ...) sign with signer.
//
// Unless WithToken or WithTokenSource is also given, the client signs in
// with signer too. It signs in with SIWE on first use, its messages placed
// by WithSignIn, and signs in again before the session expires.
// Client.Session returns the session. Concurrent calls that find no fresh
// session share one sign-in. A session the gateway refuses with a 401 is
// dropped and replaced once for all the calls it refused.
//
// One client per identity: a buyer and a merchant are two clients.
func WithSigner(signer Signer) Option {
	return func(c *config) error {
		if signer == nil {
			return errors.New("rail0: WithSigner: nil signer")
		}
		if _, err := verify.ParseAddress(signer.Address()); err != nil {
			return fmt.Errorf("rail0: WithSigner: address: %w", err)
		}
		c.signer = signer
		return nil
	}
}

// WithSignIn places the SIWE messages the client signs: its own sign-in
// (WithSigner) and its wallet proofs (Auth.WalletProof). The defaults are
// the base URL's host and origin and chain DefaultSIWEChainID. They suit a
// client that talks to the gateway directly. Set Domain and URI for a
// gateway that accepts another domain. Set ChainID for one whose operator
// chose another sign-in chain. NewClient checks them.
func WithSignIn(p SignIn) Option {
	return func(c *config) error {
		c.signIn = p
		return nil
	}
}

// WithTrustedContracts pins the RAIL0 contract address per chain id. The
// pins add to the published deployments the SDK trusts by default (package
// registry).
//
// A chain pinned here is the caller's. Its published contract, if any, is no
// longer trusted. Every payment, payload and transaction on it must name the
// pinned contract. Any token the registry publishes for that chain keeps its
// decimals; pin other tokens with WithTrustedTokens.
//
// A payment on a chain that neither the registry nor a pin covers is
// refused (*UntrustedError) before anything is prepared or signed, whatever
// the gateway lists. Pin a mainnet contract this way (none is published
// yet). On a chain the registry does not know, give a fee bound with
// WithFeeCap too: NewClient refuses the pin otherwise. Pins add up across
// calls. A chain pinned to two contracts is an error.
func WithTrustedContracts(contracts map[int64]string) Option {
	return func(c *config) error {
		if c.contracts == nil {
			c.contracts = make(map[int64]verify.Address, len(contracts))
		}
		for chain, addr := range contracts {
			a, err := verify.ParseAddress(addr)
			if err != nil || chain <= 0 {
				return fmt.Errorf("rail0: WithTrustedContracts: chain %d: invalid pin %q", chain, clip(addr))
			}
			if b, dup := c.contracts[chain]; dup && b != a {
				return fmt.Errorf("rail0: WithTrustedContracts: chain %d pinned to %s and %s", chain, b, a)
			}
			c.contracts[chain] = a
		}
		return nil
	}
}

// WithTrustedTokens pins tokens and their decimals. Each is given by
// ChainID, Address and Decimals; the other fields are ignored. The pins add
// to the published stablecoins the SDK trusts by default (package
// registry). A pin of a published token replaces its decimals.
//
// The SDK turns the caller's human amounts ("1.00") into base units with
// these decimals only, never with the gateway's GET /tokens. An artifact
// must carry those base units. So a gateway cannot get ten times (or a tenth
// of) the amount asked for signed.
//
// A payment in a token that neither the registry nor a pin covers is
// refused (*UntrustedError) before anything is prepared or signed. The
// registry covers a token only where the chain's contract accepts it. Pin
// the tokens of a deployment whose token addresses are not published (Celo
// Sepolia's) or of your own contract this way.
func WithTrustedTokens(tokens ...Token) Option {
	return func(c *config) error {
		if c.decimals == nil {
			c.decimals = make(map[verify.TokenKey]int64, len(tokens))
		}
		for _, t := range tokens {
			a, err := verify.ParseAddress(t.Address)
			if err != nil || t.ChainID <= 0 || t.Decimals < 0 || t.Decimals > MaxDecimals {
				return fmt.Errorf("rail0: WithTrustedTokens: chain %d: invalid pin %q (%d decimals)", t.ChainID, clip(t.Address), t.Decimals)
			}
			k := verify.TokenKey{ChainID: t.ChainID, Token: a}
			if d, dup := c.decimals[k]; dup && d != t.Decimals {
				return fmt.Errorf("rail0: WithTrustedTokens: chain %d: %s pinned with %d and %d decimals", t.ChainID, a, d, t.Decimals)
			}
			c.decimals[k] = t.Decimals
		}
		return nil
	}
}

// WithFeeCap bounds the gas of every transaction the client signs. A
// gateway then cannot spend the signer's gas money. gas_limit is at most
// maxGas. gas_limit × max_fee_per_gas is at most maxFee base units of the
// chain's native currency: wei of ETH, POL, CELO or AVAX. On Arc it is USDC,
// counted with its native 18 decimals. Both bounds apply to every chain and
// every operation alike.
//
// Without it, the SDK bounds each transaction by default:
//   - gas_limit per operation, at twice what the RAIL0 contract was measured
//     to use (authorize 1,018,000 … dispute 86,000);
//   - no gas bound on Arbitrum, whose limit also pays for L1 data;
//   - the fee per chain of package registry, in the chain's own unit. Each
//     bound is far above what a RAIL0 call costs there: 0.002 ETH on the
//     rollups and their testnets, 0.03 ETH on Ethereum, 1 POL, 0.2 CELO,
//     0.1 AVAX, 0.2 USDC on Arc.
//
// A chain the registry does not know has no fee bound. So pinning one
// (WithTrustedContracts) requires this option.
func WithFeeCap(maxGas uint64, maxFee *big.Int) Option {
	return func(c *config) error {
		if maxGas == 0 || maxFee == nil || maxFee.Sign() <= 0 {
			return errors.New("rail0: WithFeeCap: bounds must be positive")
		}
		c.maxGas, c.maxFee = maxGas, new(big.Int).Set(maxFee)
		return nil
	}
}

// ExpiryBounds bound the expiries the payer's signature commits to. Each is
// a duration from the moment PayerSign or VerifyPayload checks the payment.
// It runs on the local clock, never on the gateway's clock learned from its
// Date headers. A zero field keeps its default.
type ExpiryBounds struct {
	// MaxAuthorization is how far ahead authorization_expiry may be
	// (default 30 days). The payer can release an escrow only after it.
	MaxAuthorization time.Duration
	// MinRefund is how far ahead refund_expiry must be (default 1 day).
	// Refunds and disputes end at it.
	MinRefund time.Duration
	// MaxRefund is how far ahead refund_expiry may be (default 365 days).
	MaxRefund time.Duration
}

// WithExpiryBounds replaces the bounds on the expiries the payer signs.
//
// The payment's windows are the gateway's choice. config_hash proves only
// that they are consistent. Without a bound, a gateway could have the payer
// sign an escrow that never expires, the funds locked for good. It could
// also have them sign a refund window that closes at once.
//
// The defaults are 30 days of authorization and 1 to 365 days of refund
// window. They are generous multiples of the usual 7 and 30 days. Set wider
// ones only for a gateway configured for longer windows. An expiry outside
// them is an *ArtifactError on the payment's authorization_expiry or
// refund_expiry, and nothing is signed. Expectation.LatestAuthorizationExpiry
// and EarliestRefundExpiry state the order's own windows.
func WithExpiryBounds(b ExpiryBounds) Option {
	return func(c *config) error {
		if b.MaxAuthorization < 0 || b.MinRefund < 0 || b.MaxRefund < 0 {
			return errors.New("rail0: WithExpiryBounds: bounds must not be negative")
		}
		if b.MaxAuthorization != 0 {
			c.expiries.MaxAuthorization = b.MaxAuthorization
		}
		if b.MinRefund != 0 {
			c.expiries.MinRefund = b.MinRefund
		}
		if b.MaxRefund != 0 {
			c.expiries.MaxRefund = b.MaxRefund
		}
		if c.expiries.MinRefund > c.expiries.MaxRefund {
			return fmt.Errorf("rail0: WithExpiryBounds: MinRefund %s is above MaxRefund %s", c.expiries.MinRefund, c.expiries.MaxRefund)
		}
		return nil
	}
}

// WithInsecureHTTP lets NewClient take a plain http:// base URL on a host
// other than loopback. Without it such a URL is refused. The bearer token
// and signed transactions would cross the network in clear text. Loopback
// (localhost, 127.0.0.0/8, ::1) is always allowed, for rail0test and a local
// rail0-gateway. Use it only on a network you trust, such as a sidecar
// reached over a private link.
func WithInsecureHTTP() Option {
	return func(c *config) error {
		c.insecureHTTP = true
		return nil
	}
}

// checkBaseScheme refuses a plain http:// base URL on a host other than
// loopback. The bearer token, signed transactions and webhook secrets would
// cross the network in clear text. The caller may opt in by name
// (WithInsecureHTTP). Loopback stays allowed, where rail0test and
// rail0-gateway serve plain HTTP.
func checkBaseScheme(base *url.URL, insecure bool) error {
	if base.Scheme != "http" || insecure || isLoopback(base.Hostname()) {
		return nil
	}
	return &ValidationError{Field: "base_url", Reason: fmt.Sprintf(
		"%s is plain http on a host that is not loopback, so the bearer token and signed transactions would cross the network in clear text; use https, or WithInsecureHTTP() on a network you trust",
		strconv.Quote(base.Redacted()))}
}

// isLoopback reports whether host is "localhost" or a loopback address
// (127.0.0.0/8, ::1). Other names are not resolved, since NewClient does no
// I/O.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// WithMaxResponseSize bounds the body of a 2xx answer, in bytes (default
// DefaultMaxResponseSize). A larger one is not read past the bound, and not
// at all when its Content-Length says so. It comes back as a *DecodeError
// wrapping a *ResponseTooLargeError, without a retry: the same request would
// get the same answer. An error answer's body is cut at 1 MiB, or at this
// bound if lower, and kept.
func WithMaxResponseSize(n int64) Option {
	return func(c *config) error {
		if n <= 0 {
			return &ValidationError{Field: "max_response_size", Reason: fmt.Sprintf("must be positive, got %d", n)}
		}
		c.maxBody = n
		return nil
	}
}
