// Package backoff is the project's one way to wait between attempts: a
// Schedule says how long to wait after failed attempt n, and Sleep waits
// that long unless the context ends first.
//
// Use it wherever the project tries something again: the Redshift sink's
// SQL statements (shared/retry.Do, linear as its spec defines retry_delay),
// the runtime's redelivery of a batch (connect/pipeline), the Delta sink's
// GCS requests and its re-read of a commit a store has just said exists
// (deltalog, which may import nothing that does I/O: this package imports
// only the standard library, and that is why it lives apart from
// shared/retry, whose SQLSTATE classifier needs pgconn).
package backoff

import (
	"context"
	"math"
	"time"
)

// Schedule is the wait after failed attempt n (1-based) before attempt
// n+1.
type Schedule func(attempt int) time.Duration

// Linear waits step × n after attempt n: step, 2·step, 3·step, …
func Linear(step time.Duration) Schedule {
	return func(attempt int) time.Duration {
		return step * time.Duration(max(attempt, 1))
	}
}

// Exponential waits first after attempt 1 and factor times longer after
// each further attempt, never more than limit: first, first·factor, …,
// limit.
func Exponential(first time.Duration, factor float64, limit time.Duration) Schedule {
	return func(attempt int) time.Duration {
		d := float64(first) * math.Pow(factor, float64(max(attempt, 1)-1))
		if d >= float64(limit) {
			return limit
		}
		return time.Duration(math.Round(d))
	}
}

// Between waits first after attempt 1 and last after attempt steps, growing
// by the same factor each time, and last after any later attempt. The
// factor is seldom a round number, so each wait is rounded to the
// millisecond (200 ms to 5 s in 4 steps: 200 ms, 585 ms, 1.71 s, 5 s).
func Between(first, last time.Duration, steps int) Schedule {
	if steps < 2 {
		return Exponential(last, 1, last)
	}
	exp := Exponential(first, math.Pow(float64(last)/float64(first), 1/float64(steps-1)), last)
	return func(attempt int) time.Duration { return exp(attempt).Round(time.Millisecond) }
}

// Sleep waits d, or until ctx is done, and then returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
