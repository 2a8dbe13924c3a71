package gomaxprocs

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	s := time.Second
	for _, c := range []struct {
		name       string
		raised     bool
		busy       float64
		quiet      time.Duration
		wantRaised bool
		wantQuiet  time.Duration
	}{
		{"quiet stays at one", false, lowerAt, 0, false, 0},
		{"just below raiseAt stays at one", false, raiseAt - 0.01, 0, false, 0},
		{"raiseAt raises", false, raiseAt, 0, true, 0},
		{"busy stays raised", true, raiseAt, 0, true, 0},
		{"between the thresholds stays raised, quiet restarts", true, lowerAt, 20 * s, true, 0},
		{"below lowerAt counts quiet time", true, lowerAt - 0.01, 5 * s, true, 6 * s},
		{"quiet short of quietFor stays raised", true, lowerAt - 0.01, quietFor - 2*s, true, quietFor - s},
		{"quietFor of quiet lowers", true, lowerAt - 0.01, quietFor - s, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			raised, quiet := decide(c.raised, c.busy, c.quiet, s)
			if raised != c.wantRaised || quiet != c.wantQuiet {
				t.Fatalf("decide(%v, %v, %v) = %v, %v; want %v, %v", c.raised, c.busy, c.quiet, raised, quiet, c.wantRaised, c.wantQuiet)
			}
		})
	}
}

// TestGovernLive runs Govern in this process: one processor while the
// test is idle (for a few of its steps), Go's default once two goroutines
// burn CPU, and Go's default again when it returns.
func TestGovernLive(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	// Go's default, which is what Govern raises to, whatever GOMAXPROCS
	// or go test -cpu set for this process.
	runtime.SetDefaultGOMAXPROCS()
	full := runtime.GOMAXPROCS(0)
	if full < 2 {
		t.Skipf("Go's default is %d processor: Govern has nothing to change on this machine", full)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Govern(ctx, func(string) string { return "" }, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	defer func() { cancel(); <-done }()

	waitProcs(t, func(n int) bool { return n == 1 }, "one processor at the start")
	time.Sleep(every*2 + every/2) // idle for two steps and a half
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("GOMAXPROCS %d while the test was idle, want 1", n)
	}
	var stop atomic.Bool
	defer stop.Store(true)
	for range 2 {
		go func() {
			for !stop.Load() {
			}
		}()
	}
	waitProcs(t, func(n int) bool { return n == full }, "every processor under load")
	stop.Store(true)

	cancel()
	<-done
	if n := runtime.GOMAXPROCS(0); n != full {
		t.Fatalf("GOMAXPROCS %d after Govern returned, want Go's default %d", n, full)
	}
}

func TestGovernLeavesAnOperatorsChoice(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	if before < 2 {
		t.Skipf("GOMAXPROCS is %d: Govern would return at once anyway", before)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	returned := make(chan struct{})
	go func() {
		Govern(ctx, func(k string) string {
			if k == "GOMAXPROCS" {
				return "3"
			}
			return ""
		}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("Govern did not return with GOMAXPROCS set")
	}
	if got := runtime.GOMAXPROCS(0); got != before {
		t.Fatalf("GOMAXPROCS changed from %d to %d", before, got)
	}
}

func waitProcs(t *testing.T, ok func(int) bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(runtime.GOMAXPROCS(0)) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: GOMAXPROCS still %d after 10 s", what, runtime.GOMAXPROCS(0))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
