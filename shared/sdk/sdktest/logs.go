package sdktest

import (
	"log/slog"
	"slices"
	"strings"
	"sync"
)

// Logs collects what an instance logs: pass its Log method to sdk.Open as
// the log function. Each line is kept as "LEVEL line". Safe for concurrent
// use, as the SDK logs from the instance's goroutines.
type Logs struct {
	mu    sync.Mutex
	lines []string
}

// Log records one line; it has the signature of sdk.LogFunc.
func (l *Logs) Log(level slog.Level, line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, level.String()+" "+line)
}

// Lines returns a copy of the lines logged so far.
func (l *Logs) Lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

// String returns the lines logged so far, one per line.
func (l *Logs) String() string {
	return strings.Join(l.Lines(), "\n")
}

// Contains reports whether any line logged so far contains s.
func (l *Logs) Contains(s string) bool {
	return slices.ContainsFunc(l.Lines(), func(x string) bool { return strings.Contains(x, s) })
}
