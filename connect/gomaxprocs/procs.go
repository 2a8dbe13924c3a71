package gomaxprocs

import (
	"context"
	"log/slog"
	"runtime"
	"syscall"
	"time"
)

// The thresholds are in cores: CPU seconds of the whole process per second.
const (
	// raiseAt: a tenth of a core is about 50,000 records/s through the
	// runtime, a backlog being drained. With one processor, a goroutine
	// that has work waits while another runs (the loop handing the child
	// its next batch behind a fetch being decompressed), and a drain is
	// where the child must not wait; with more, the drain costs the same
	// CPU per record (docs/runtime.md, "Processors").
	raiseAt = 0.1
	// lowerAt and quietFor: back to one processor only after a long quiet
	// spell well below raiseAt, so a load near the threshold does not make
	// the processors go up and down (each change stops the world briefly).
	lowerAt  = 0.05
	quietFor = 30 * time.Second
	// every: how often the process CPU is read.
	every = time.Second
)

// Govern sizes GOMAXPROCS to the process's load until ctx ends: one
// processor while the process is quiet, Go's default (every CPU, or the
// container's limit) while it is busy. It returns at once, changing
// nothing, when getenv("GOMAXPROCS") is set or Go's default is already one
// processor. log gets one debug line (event "processors") per change.
// When ctx ends, Go's default is restored.
func Govern(ctx context.Context, getenv func(string) string, log *slog.Logger) {
	if getenv("GOMAXPROCS") != "" || runtime.GOMAXPROCS(0) <= 1 {
		return
	}
	runtime.GOMAXPROCS(1)
	defer runtime.SetDefaultGOMAXPROCS()
	tick := time.NewTicker(every)
	defer tick.Stop()
	var raised bool
	var quiet time.Duration
	lastCPU, lastAt := cpuTime(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		used, at := cpuTime(), time.Now()
		step := at.Sub(lastAt)
		if step <= 0 || used < lastCPU {
			lastCPU, lastAt = used, at
			continue
		}
		busy := (used - lastCPU).Seconds() / step.Seconds()
		lastCPU, lastAt = used, at
		var now bool
		now, quiet = decide(raised, busy, quiet, step)
		if now == raised {
			continue
		}
		raised = now
		if raised {
			// Go's own default, which also follows a container's CPU
			// limit as it changes.
			runtime.SetDefaultGOMAXPROCS()
		} else {
			runtime.GOMAXPROCS(1)
		}
		log.Debug("processors", "event", "processors", "gomaxprocs", runtime.GOMAXPROCS(0), "cores_used", busy)
	}
}

// decide is one step of Govern: whether the processors are raised after a
// step in which the process used busy cores, and for how long it has been
// quiet (below lowerAt) while raised.
func decide(raised bool, busy float64, quiet, step time.Duration) (bool, time.Duration) {
	if !raised {
		return busy >= raiseAt, 0
	}
	if busy >= lowerAt {
		return true, 0
	}
	quiet += step
	if quiet >= quietFor {
		return false, 0
	}
	return true, quiet
}

// cpuTime is the CPU the process used so far (user and system, every
// thread; not its children, the plugin hosts); 0 if it cannot be read.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
