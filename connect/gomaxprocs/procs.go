package gomaxprocs

import (
	"context"
	"log/slog"
	"runtime"
	"time"

	"github.com/picomq/heavy-sinks/internal/proccpu"
)

// The thresholds are in cores: CPU seconds of the whole process per second.
const (
	// raiseAt: a twentieth of a core is about 25,000 records/s through the
	// runtime at a backlog drain's 2 µs per record, or a few thousand at a
	// many-partition stream's 15-20. With one processor, a goroutine that
	// has work waits while another runs (the loop handing the child its
	// next batch behind a fetch being decompressed); one processor is for
	// the light, steady traffic where waking idle processors is most of
	// what the runtime spends.
	raiseAt = 0.05
	// lowerAt and quietFor: back to one processor only after a long quiet
	// spell well below raiseAt, so a load near the threshold does not make
	// the processors go up and down (each change stops the world briefly).
	lowerAt  = 0.025
	quietFor = 30 * time.Second
	// every: how often the process CPU is read.
	every = time.Second
)

// Govern sizes GOMAXPROCS to the process's load until ctx ends: one
// processor while the process is quiet, Go's default (every CPU, or the
// container's limit) while it is busy. It returns at once, changing
// nothing, when getenv("GOMAXPROCS") is set or Go's default is already one
// processor. log gets one debug line (event "processors") per change.
func Govern(ctx context.Context, getenv func(string) string, log *slog.Logger) {
	if getenv("GOMAXPROCS") != "" || runtime.GOMAXPROCS(0) <= 1 {
		return
	}
	lastCPU, err := proccpu.Self()
	if err != nil {
		return // nothing to go by: Go's default
	}
	runtime.GOMAXPROCS(1)
	// Go's default again once governing ends: the shutdown flush that
	// follows is work, and a caller that governs again starts afresh.
	defer runtime.SetDefaultGOMAXPROCS()
	tick := time.NewTicker(every)
	defer tick.Stop()
	var raised bool
	var quiet time.Duration
	lastAt := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		used, err := proccpu.Self()
		if err != nil {
			continue // the next step measures from the last good reading
		}
		at := time.Now()
		step := at.Sub(lastAt)
		if step <= 0 {
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
		log.Debug("Go processors changed", "event", "processors", "gomaxprocs", runtime.GOMAXPROCS(0), "cores_used", busy)
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
