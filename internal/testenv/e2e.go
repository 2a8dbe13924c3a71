package testenv

import (
	"os"
	"testing"
)

// E2ELibrary is Library for the end-to-end cases of packages whose other
// tests run in `make unit` (under the race detector, with nothing built):
// it skips tb unless $PICOMQ_DIST is set, as `make e2e` sets it, and then
// fails tb, like Library, when the file is missing there.
func E2ELibrary(tb testing.TB, name string) string {
	tb.Helper()
	if os.Getenv(DistEnv) == "" {
		tb.Skipf("needs the built %s in the C host: set %s (make e2e does)", name, DistEnv)
	}
	return Library(tb, name)
}
