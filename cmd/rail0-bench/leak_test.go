package main

import (
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine outlives them. The bench
// runs its own executable again as its gateway and client processes; in
// the tests that executable is this test binary, which then runs the bench
// instead of the tests.
func TestMain(m *testing.M) {
	if os.Getenv("RAIL0_BENCH_CHILD") == "1" {
		main()
		return
	}
	redis.SetLogger(quietLogger{})
	goleak.VerifyTestMain(m)
}
