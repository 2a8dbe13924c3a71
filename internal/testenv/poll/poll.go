// Package poll waits in a test for a condition it can only look at, not be
// told of: a process gone, an offset committed, a line logged.
package poll

import (
	"testing"
	"time"
)

// Until calls cond every 20 ms until it holds; when d passes first the test
// fails, saying it waited for what.
func Until(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", d, what)
		}
	}
}
