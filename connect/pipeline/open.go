package pipeline

import (
	"context"
	"errors"
	"time"

	"github.com/picomq/heavy-sinks/connect/child"
	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/shared/retry/backoff"
)

// Opener is a Deliverer that must be opened before its first batch (a
// child.Instance). Run opens it before any consumer joins its group, and
// again after a RETRY, for as long as it takes.
type Opener interface {
	Open(ctx context.Context) error
}

// OpenBackoff is the wait after failed open attempt n: 200 ms, doubling,
// at most 30 s (200 ms, 400 ms, 800 ms … 25.6 s, then 30 s each time). A
// destination back after an outage is found within 30 s, and a runtime
// waiting for one costs an open call every 30 s.
var OpenBackoff = backoff.Exponential(200*time.Millisecond, 2, 30*time.Second)

// RefusedError is an open that cannot succeed by trying again: the plugin
// refused its configuration (BAD_CONFIG), its library could not be loaded
// (ABI_MISMATCH, a failed dlopen) or its host not started. The runtime
// exits 2 for it, as for a bad definition.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// open opens o, attempt after attempt while the plugin answers RETRY or its
// child dies, each failure logged with the wait before the next. It
// returns nil once open; ctx's error when ctx ended first; a
// *RefusedError; or, for FATAL and a broken contract, the plugin's error:
// the sink stops as it would on FATAL at consume.
func (s *Sink) open(ctx context.Context, o Opener) error {
	for attempt := 1; ; attempt++ {
		err := o.Open(ctx)
		if err == nil {
			s.log.Info("sink opened", "event", "sink_opened", "attempt", attempt)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch {
		case errors.Is(err, child.ErrExited), hostclient.CodeOf(err) == hostclient.StatusRetry:
			// The environment failed (a destination unreachable) or the
			// child died (a kill, the OOM killer): either may pass.
		case hostclient.CodeOf(err) == hostclient.StatusFatal, hostclient.CodeOf(err) == hostclient.StatusContract:
			return err
		default:
			return &RefusedError{Err: err}
		}
		wait := s.cfg.OpenBackoff(attempt)
		s.log.Warn("sink not opened; opening again", "event", "open_retry", "attempt", attempt,
			"backoff_seconds", wait.Seconds(), "err", err)
		if err := backoff.Sleep(ctx, wait); err != nil {
			return err
		}
	}
}
