package rail0

import (
	"math"
	"sync"
)

// The client-wide retry budget keeps an outage from multiplying the load.
// It is a token bucket, after the retry quota of the AWS SDKs:
//   - each retry of a failure other than a 429 takes retryCost tokens;
//   - a retry after a timeout takes timeoutRetryCost, since a timeout holds
//     a connection the longest;
//   - each answer that is not a failure (a 2xx, or a 4xx other than 429)
//     gives successCredit back, up to the budget's size.
//
// An empty budget makes failures come back at once. At 100 tokens a burst
// of failures gets 20 retries client-wide. In the long run, retries keep
// going as long as fewer than about one answer in six fails. 429s are not
// counted, since MaxRetryWait and the cooldown govern them. The size is
// retryBudgetSize unless WithRetryBudget says. RetryBudgetOff turns it off
// (aws-sdk-go-v2's ratelimit.None).
const (
	retryBudgetSize  = 100
	retryCost        = 5
	timeoutRetryCost = 10
	successCredit    = 1
)

// retryQuota is the client-wide retry budget, safe for concurrent use. A nil
// *retryQuota is a budget that is off: it never runs out.
type retryQuota struct {
	mu     sync.Mutex
	size   int
	tokens int
}

// newRetryQuota returns a full budget of size tokens. It returns nil when
// size is negative (RetryBudgetOff).
func newRetryQuota(size int) *retryQuota {
	if size < 0 {
		return nil
	}
	return &retryQuota{size: size, tokens: size}
}

// spend runs a decision against the tokens left and takes what it costs. It
// does both in one step, so that concurrent calls cannot spend the same
// tokens.
func (q *retryQuota) spend(decide func(tokens int) decision) decision {
	if q == nil {
		return decide(math.MaxInt)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	d := decide(q.tokens)
	q.tokens -= min(d.cost, q.tokens)
	return d
}

// credit gives n tokens back, up to the budget's size.
func (q *retryQuota) credit(n int) {
	if q == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.tokens = min(q.tokens+n, q.size)
}

// left returns the tokens left, or math.MaxInt when the budget is off.
func (q *retryQuota) left() int {
	if q == nil {
		return math.MaxInt
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.tokens
}
