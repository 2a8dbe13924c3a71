package proccpu_test

import (
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/internal/proccpu"
)

// Burning 200 ms of CPU on this goroutine shows as at least most of it.
func TestSelfCountsWork(t *testing.T) {
	before, err := proccpu.Self()
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for start := time.Now(); time.Since(start) < 200*time.Millisecond; {
		x++
	}
	after, err := proccpu.Self()
	if err != nil {
		t.Fatal(err)
	}
	// Wall time on a loaded machine can outrun CPU time: ask for half.
	if used := after - before; used < 100*time.Millisecond || used > 10*time.Second {
		t.Fatalf("200 ms of busy work used %v of CPU (x=%d)", used, x)
	}
}
