package hostclient

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
)

// LogLine is one line a plugin emitted through the log callback.
type LogLine struct {
	// Ctx is the log context of the open that created the instance:
	// Instance.Ctx.
	Ctx uint64
	// Lib is the library id, 0 for a late line.
	Lib uint32
	// Level uses the header's values, which are log/slog's.
	Level   slog.Level
	Message string
	// Late marks a line logged when Ctx was neither an open in progress nor
	// an open instance: after close returned or a failed open, which the
	// header forbids.
	Late bool
	// NullMessage marks a call with msg == NULL.
	NullMessage bool
}

func (l LogLine) String() string {
	late := ""
	if l.Late {
		late = " LATE"
	}
	return fmt.Sprintf("[lib %d ctx %d%s] %s %s", l.Lib, l.Ctx, late, l.Level, l.Message)
}

func levelOf(v int32) slog.Level { return slog.Level(v) }

// logBook keeps the last max log lines and wakes waiters on each new one.
type logBook struct {
	mu      sync.Mutex
	lines   []LogLine
	max     int
	dropped int
	notify  chan struct{} // closed and replaced on every add
}

func (b *logBook) add(l LogLine) {
	b.mu.Lock()
	b.lines = append(b.lines, l)
	if b.max > 0 && len(b.lines) > 2*b.max {
		n := len(b.lines) - b.max
		b.dropped += n
		b.lines = append(b.lines[:0], b.lines[n:]...)
	}
	close(b.notify)
	b.notify = make(chan struct{})
	b.mu.Unlock()
}

// snapshot returns the kept lines that match, and a channel closed on the
// next add.
func (b *logBook) snapshot(match func(LogLine) bool) ([]LogLine, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := b.lines
	if b.max > 0 && len(lines) > b.max {
		lines = lines[len(lines)-b.max:]
	}
	var out []LogLine
	for _, l := range lines {
		if match == nil || match(l) {
			out = append(out, l)
		}
	}
	return out, b.notify
}

// Logs returns the log lines captured so far, oldest first (at most the last
// KeepLogs lines). Lines a call logged before returning are there once the
// call has returned.
func (h *Host) Logs() []LogLine {
	l, _ := h.logs.snapshot(nil)
	return l
}

// WaitLog returns the first captured line for which match returns true,
// waiting for one until ctx is done or the host exits.
func (h *Host) WaitLog(ctx context.Context, match func(LogLine) bool) (LogLine, error) {
	for {
		lines, next := h.logs.snapshot(match)
		if len(lines) > 0 {
			return lines[0], nil
		}
		select {
		case <-next:
		case <-ctx.Done():
			return LogLine{}, fmt.Errorf("hostclient: waiting for a log line: %w", ctx.Err())
		case <-h.done:
			if lines, _ := h.logs.snapshot(match); len(lines) > 0 {
				return lines[0], nil
			}
			return LogLine{}, h.exitErr
		}
	}
}
