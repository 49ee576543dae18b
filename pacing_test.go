package rail0

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPartitionHidesTheToken(t *testing.T) {
	assert.Equal(t, "public", partitionFor(""))
	p := partitionFor("eyJhbGciOiJIUzI1NiJ9.secret.sig")
	assert.True(t, strings.HasPrefix(p, "session:"))
	assert.NotContains(t, p, "secret")
	assert.Equal(t, p, partitionFor("eyJhbGciOiJIUzI1NiJ9.secret.sig"))
	assert.NotEqual(t, p, partitionFor("another"))
}

func TestPacingValidation(t *testing.T) {
	for _, p := range []Pacing{
		{Public: Budget{Limit: 0, Period: time.Second}},
		{Session: Budget{Limit: 5}},
		{Public: Budget{Limit: -1, Period: time.Second}},
		{Public: Budget{Limit: 1, Period: time.Second}, Margin: -time.Second},
	} {
		_, err := NewClient("https://api.rail0.xyz", WithPacing(p))
		assert.Error(t, err, "%+v", p)
	}
	_, err := NewClient("https://api.rail0.xyz", WithLimiter(nil))
	assert.Error(t, err)
	c, err := NewClient("https://api.rail0.xyz", WithPacing(PublishedLimits()))
	require.NoError(t, err)
	assert.True(t, c.pacingOn)
}
