package rail0

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// WithRetryBudget sizes the client-wide retry budget in retries, and
// RetryBudgetOff turns it off: fifteen reads in a 503 outage, each allowed
// two retries, send 15 requests plus the retries the budget allows.
func TestRetryBudgetIsSizedOrOff(t *testing.T) {
	tests := []struct {
		name     string
		opts     []Option
		requests int
		last     RetryReason // why the last call's answer came back
	}{
		{"default: 20 retries", nil, 15 + 20, ReasonRetryBudget},
		{"three retries", []Option{WithRetryBudget(3)}, 15 + 3, ReasonRetryBudget},
		{"none", []Option{WithRetryBudget(0)}, 15, ReasonRetryBudget},
		{"off", []Option{WithRetryBudget(RetryBudgetOff)}, 15 * 3, ReasonMaxRetries},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newMemScript(step{status: 503})
				c := newTestClient(t, memURL, append([]Option{memClient(srv)}, tt.opts...)...)
				var err error
				for i := range 15 {
					_, err = c.Payments.Get(context.Background(), fmt.Sprintf("p%d", i))
					var apiErr *APIError
					require.ErrorAs(t, err, &apiErr)
					require.Equal(t, 503, apiErr.StatusCode)
				}
				assert.Len(t, srv.requests(), tt.requests)
				assert.Equal(t, tt.last, CallOf(err).NotRetried())
			})
		})
	}
}

// The budget is the client's: a view refuses it, and a negative size other
// than RetryBudgetOff is refused.
func TestRetryBudgetOptionIsValidated(t *testing.T) {
	for _, n := range []int{-2, -100} {
		_, err := NewClient("https://api.rail0.xyz", WithRetryBudget(n))
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, n)
		assert.Equal(t, "retry_budget", ve.Field)
	}
	c := newTestClient(t, "https://api.rail0.xyz")
	_, err := c.With(WithRetryBudget(5)).Payments.Get(context.Background(), "p1")
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "option", ve.Field)
}
