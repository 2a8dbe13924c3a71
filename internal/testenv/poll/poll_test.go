package poll

import (
	"strings"
	"testing"
	"time"
)

// fakeTB records a Fatalf instead of ending the test.
type fakeTB struct {
	testing.TB
	failed string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = format
}

// Until returns once cond holds, and fails the test when d passes first.
func TestUntil(t *testing.T) {
	n := 0
	Until(t, time.Minute, "the third call", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Errorf("cond called %d times, want 3", n)
	}
	f := &fakeTB{}
	Until(f, 50*time.Millisecond, "never", func() bool { return f.failed != "" })
	if !strings.HasPrefix(f.failed, "timed out after") {
		t.Errorf("no failure after the deadline: %q", f.failed)
	}
}
