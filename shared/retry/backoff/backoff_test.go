package backoff_test

import (
	"context"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/shared/retry/backoff"
)

func TestSchedules(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name string
		s    backoff.Schedule
		want []time.Duration
	}{
		{"linear", backoff.Linear(100 * ms), []time.Duration{100 * ms, 200 * ms, 300 * ms}},
		{"doubling, capped", backoff.Exponential(200*ms, 2, 3*time.Second), []time.Duration{200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3 * time.Second, 3 * time.Second}},
		{"runtime redelivery", backoff.Between(200*ms, 5*time.Second, 4), []time.Duration{200 * ms, 585 * ms, 1710 * ms, 5 * time.Second, 5 * time.Second}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for i, want := range c.want {
				if got := c.s(i + 1); got != want {
					t.Errorf("attempt %d: %v, want %v", i+1, got, want)
				}
			}
		})
	}
}

func TestSleepEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := backoff.Sleep(ctx, time.Hour); err != context.Canceled {
		t.Fatalf("Sleep = %v, want context.Canceled", err)
	}
	if time.Since(start) > time.Second {
		t.Fatal("Sleep outlived its context")
	}
	if err := backoff.Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatal(err)
	}
}
