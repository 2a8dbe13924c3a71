// Package logbuf is a buffer for output a test reads while it is being
// written: a child process's stderr, or the writer behind a logger that
// other goroutines log to.
package logbuf

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/internal/testenv/poll"
)

// Buffer is safe for one writer and readers at the same time. The zero
// value is empty and ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// WaitJSON waits up to a minute for a line that is a JSON object match
// accepts (a JSON log line) and returns it; without one the test fails,
// naming the line by what.
func (l *Buffer) WaitJSON(tb testing.TB, what string, match func(map[string]any) bool) map[string]any {
	tb.Helper()
	var found map[string]any
	poll.Until(tb, time.Minute, "log line "+what, func() bool {
		for _, line := range strings.Split(l.String(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && match(m) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}
