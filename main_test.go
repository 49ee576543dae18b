package rail0

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain fails the package's tests if a goroutine started by this package
// outlives them. It is a small stand-in for goleak, which the root package's
// tests do not import: a user's go mod tidy loads them, and they must cost
// nothing beyond the standard library, testify and httpmock.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := leakedGoroutines(5 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines of package rail0 outlived the tests:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// leakedGoroutines waits up to patience for every goroutine running code of
// this module (other than the test runner's) to end, and returns the stacks
// of those that did not.
func leakedGoroutines(patience time.Duration) string {
	deadline := time.Now().Add(patience)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var leaked []string
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "github.com/rail0/rail0-go") && !strings.Contains(g, "rail0-go.TestMain") &&
				!strings.Contains(g, "rail0-go.leakedGoroutines") {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
