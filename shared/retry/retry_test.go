package retry_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/picomq/heavy-sinks/shared/retry"
)

var (
	errTransient = pgErr("40001", "could not serialize access")
	errPermanent = pgErr("42601", `syntax error at or near "SELEC"`)
)

// recorder is a fake op that fails with errs in turn and then succeeds, and
// a fake sleep that records waits instead of sleeping.
type recorder struct {
	errs  []error
	calls int
	waits []time.Duration
}

func (r *recorder) op(context.Context) error {
	r.calls++
	if r.calls <= len(r.errs) {
		return r.errs[r.calls-1]
	}
	return nil
}

func (r *recorder) policy(maxAttempts int, delay time.Duration) retry.Policy {
	p := retry.Policy{MaxAttempts: maxAttempts, Delay: delay}
	retry.SetSleep(&p, func(ctx context.Context, d time.Duration) error {
		r.waits = append(r.waits, d)
		return nil
	})
	return p
}

func repeat(err error, n int) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}

func assertRetryError(t *testing.T, err error, attempts int, wantMsg string) {
	t.Helper()
	var re *retry.Error
	if !errors.As(err, &re) {
		t.Fatalf("Do = %v (%T), want *retry.Error", err, err)
	}
	if re.Attempts != attempts {
		t.Errorf("Attempts = %d, want %d", re.Attempts, attempts)
	}
	if err.Error() != wantMsg {
		t.Errorf("error:\n got %s\nwant %s", err, wantMsg)
	}
}

func TestDoAttemptsAndDelays(t *testing.T) {
	const d = time.Second
	tests := []struct {
		name        string
		maxAttempts int
		errs        []error
		wantCalls   int
		wantWaits   []time.Duration
		wantErr     string // "" for success
	}{
		{"success at once", 3, nil, 1, nil, ""},
		{"success after one failure", 3, repeat(errTransient, 1), 2, []time.Duration{d}, ""},
		{"success on the last attempt", 3, repeat(errTransient, 2), 3, []time.Duration{d, 2 * d}, ""},
		{
			"exhausted", 3, repeat(errTransient, 3), 3, []time.Duration{d, 2 * d},
			"after 3 attempts: ERROR: could not serialize access (SQLSTATE 40001)",
		},
		{
			"linear up to five", 5, repeat(errTransient, 9), 5, []time.Duration{d, 2 * d, 3 * d, 4 * d},
			"after 5 attempts: ERROR: could not serialize access (SQLSTATE 40001)",
		},
		{
			"permanent stops at once", 3, []error{errPermanent}, 1, nil,
			`after 1 attempt: ERROR: syntax error at or near "SELEC" (SQLSTATE 42601)`,
		},
		{
			"permanent after transient", 3, []error{errTransient, errPermanent}, 2, []time.Duration{d},
			`after 2 attempts: ERROR: syntax error at or near "SELEC" (SQLSTATE 42601)`,
		},
		{
			"one attempt", 1, repeat(errTransient, 3), 1, nil,
			"after 1 attempt: ERROR: could not serialize access (SQLSTATE 40001)",
		},
		{
			"zero means one", 0, repeat(errTransient, 3), 1, nil,
			"after 1 attempt: ERROR: could not serialize access (SQLSTATE 40001)",
		},
		{
			"negative means one", -2, repeat(errTransient, 3), 1, nil,
			"after 1 attempt: ERROR: could not serialize access (SQLSTATE 40001)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{errs: tt.errs}
			err := retry.Do(t.Context(), r.policy(tt.maxAttempts, d), r.op)
			if r.calls != tt.wantCalls {
				t.Errorf("op ran %d times, want %d", r.calls, tt.wantCalls)
			}
			if !slices.Equal(r.waits, tt.wantWaits) {
				t.Errorf("waits = %v, want %v", r.waits, tt.wantWaits)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Do = %v, want nil", err)
				}
				return
			}
			assertRetryError(t, err, tt.wantCalls, tt.wantErr)
		})
	}
}

func TestDoKeepsTheOriginalError(t *testing.T) {
	r := &recorder{errs: repeat(errTransient, 3)}
	err := retry.Do(t.Context(), r.policy(3, time.Millisecond), r.op)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe != errTransient {
		t.Errorf("errors.As(*pgconn.PgError) did not find the op's error in %v", err)
	}
	if !errors.Is(err, errTransient) {
		t.Errorf("errors.Is(err, op's error) = false")
	}
	if got := retry.SQLState(err); got != "40001" {
		t.Errorf("SQLState = %q, want 40001", got)
	}
}

func TestDoOnRetry(t *testing.T) {
	type call struct {
		attempt int
		err     error
		wait    time.Duration
	}
	var calls []call
	r := &recorder{errs: repeat(errTransient, 3)}
	p := r.policy(3, 250*time.Millisecond)
	p.OnRetry = func(attempt int, err error, wait time.Duration) {
		calls = append(calls, call{attempt, err, wait})
	}
	_ = retry.Do(t.Context(), p, r.op)
	want := []call{
		{1, errTransient, 250 * time.Millisecond},
		{2, errTransient, 500 * time.Millisecond},
	}
	if !slices.Equal(calls, want) {
		t.Errorf("OnRetry calls = %v, want %v", calls, want)
	}
}

func TestDoContextCanceledDuringWait(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r := &recorder{errs: repeat(errTransient, 3)}
	// The real sleep, with a wait no test would survive: only ctx ends it.
	p := retry.Policy{MaxAttempts: 3, Delay: time.Hour, OnRetry: func(int, error, time.Duration) { cancel() }}

	err := retry.Do(ctx, p, r.op)
	if r.calls != 1 {
		t.Errorf("op ran %d times, want 1", r.calls)
	}
	if !errors.Is(err, context.Canceled) || !errors.Is(err, errTransient) {
		t.Errorf("Do = %v, want it to wrap both context.Canceled and the op's error", err)
	}
	assertRetryError(t, err, 1,
		"after 1 attempt: context canceled (last error: ERROR: could not serialize access (SQLSTATE 40001))")
}

func TestDoRealSleep(t *testing.T) {
	r := &recorder{errs: repeat(errTransient, 2)}
	start := time.Now()
	err := retry.Do(t.Context(), retry.Policy{MaxAttempts: 3, Delay: 5 * time.Millisecond}, r.op)
	if err != nil {
		t.Fatalf("Do = %v", err)
	}
	if elapsed := time.Since(start); elapsed < 15*time.Millisecond {
		t.Errorf("Do took %v, want at least 5ms+10ms of waiting", elapsed)
	}
}

// A deadline that belongs to Do's caller ends the retries even though a
// deadline error is otherwise transient (it is how a pool timeout looks).
func TestDoParentDeadlineIsNotRetried(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Millisecond)
	defer cancel()
	r := &recorder{}
	err := retry.Do(ctx, r.policy(5, time.Millisecond), func(ctx context.Context) error {
		r.calls++
		<-ctx.Done()
		return ctx.Err() // what pgxpool.Acquire returns when ctx expires
	})
	if r.calls != 1 {
		t.Errorf("op ran %d times, want 1", r.calls)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Do = %v, want it to wrap context.DeadlineExceeded", err)
	}
	assertRetryError(t, err, 1, "after 1 attempt: context deadline exceeded")
}

// A deadline the op set for itself (say, on acquiring a connection) is a
// transient failure: the caller still wants the work done.
func TestDoOwnDeadlineIsRetried(t *testing.T) {
	r := &recorder{}
	err := retry.Do(t.Context(), r.policy(3, time.Millisecond), func(ctx context.Context) error {
		r.calls++
		acquireCtx, cancel := context.WithTimeout(ctx, 0)
		defer cancel()
		<-acquireCtx.Done()
		return acquireCtx.Err()
	})
	if r.calls != 3 {
		t.Errorf("op ran %d times, want 3", r.calls)
	}
	assertRetryError(t, err, 3, "after 3 attempts: context deadline exceeded")
}

func TestDoContextCanceledDuringAttempt(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	r := &recorder{}
	err := retry.Do(ctx, r.policy(3, time.Millisecond), func(context.Context) error {
		r.calls++
		cancel()
		return errTransient
	})
	if r.calls != 1 || len(r.waits) != 0 {
		t.Errorf("op ran %d times and waited %v, want once and never", r.calls, r.waits)
	}
	assertRetryError(t, err, 1,
		"after 1 attempt: context canceled (last error: ERROR: could not serialize access (SQLSTATE 40001))")
}

func TestDoContextAlreadyDone(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := &recorder{}
	err := retry.Do(ctx, r.policy(3, time.Millisecond), func(ctx context.Context) error {
		r.calls++
		return ctx.Err()
	})
	if r.calls != 1 || len(r.waits) != 0 {
		t.Errorf("op ran %d times and waited %v, want once and never", r.calls, r.waits)
	}
	assertRetryError(t, err, 1, "after 1 attempt: context canceled")
}
