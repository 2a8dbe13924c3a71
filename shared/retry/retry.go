package retry

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/picomq/heavy-sinks/shared/retry/backoff"
)

// Policy says how often and how patiently Do retries. The zero Policy runs
// op once.
type Policy struct {
	// MaxAttempts is the total number of times op may run, first try
	// included; it is what the sink specs call max_retries. Values below 1
	// count as 1.
	MaxAttempts int

	// Delay is the base of the linear backoff: after failed attempt n, Do
	// waits Delay*n before attempt n+1. Zero or negative retries at once.
	Delay time.Duration

	// OnRetry, if set, is called after each failed attempt that will be
	// retried, before the wait, with the attempt number (from 1), its error
	// and the wait to come. It is meant for logging and runs on Do's
	// goroutine. It is not called for the last attempt.
	OnRetry func(attempt int, err error, wait time.Duration)

	// sleep waits d or until ctx is done; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
}

// Error is returned by Do when op did not succeed. It unwraps to op's last
// error and, if ctx ended the retries, to ctx.Err() as well.
type Error struct {
	Attempts int   // how many times op ran
	Err      error // op's last error
	CtxErr   error // ctx.Err() if ctx was done before the attempts ran out, else nil
}

func (e *Error) Error() string {
	noun := "attempts"
	if e.Attempts == 1 {
		noun = "attempt"
	}
	// Saying "context canceled" twice helps nobody.
	if e.CtxErr == nil || errors.Is(e.Err, e.CtxErr) {
		return fmt.Sprintf("after %d %s: %v", e.Attempts, noun, e.Err)
	}
	return fmt.Sprintf("after %d %s: %v (last error: %v)", e.Attempts, noun, e.CtxErr, e.Err)
}

func (e *Error) Unwrap() []error {
	if e.CtxErr == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.CtxErr}
}

// Do runs op until it succeeds, fails with an error IsTransient rejects,
// has run p.MaxAttempts times, or ctx is done. It returns nil or an *Error.
//
// op gets ctx unchanged; an op that sets its own deadline (for example on
// acquiring a pooled connection) is retried when that deadline passes,
// while ctx's own deadline or cancellation stops Do without another try.
func Do(ctx context.Context, p Policy, op func(ctx context.Context) error) error {
	sleep := p.sleep
	if sleep == nil {
		sleep = backoff.Sleep
	}
	maxAttempts := max(p.MaxAttempts, 1)
	for attempt := 1; ; attempt++ {
		err := op(ctx)
		if err == nil {
			return nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return &Error{Attempts: attempt, Err: err, CtxErr: ctxErr}
		}
		if attempt >= maxAttempts || !IsTransient(err) {
			return &Error{Attempts: attempt, Err: err}
		}
		wait := backoff.Linear(p.Delay)(attempt)
		if p.OnRetry != nil {
			p.OnRetry(attempt, err, wait)
		}
		if ctxErr := sleep(ctx, wait); ctxErr != nil {
			return &Error{Attempts: attempt, Err: err, CtxErr: ctxErr}
		}
	}
}
