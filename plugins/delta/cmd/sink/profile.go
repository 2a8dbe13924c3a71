//go:build picomqprof

package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"sync"

	"github.com/picomq/heavy-sinks/plugins/delta"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// A profiling build (go build -tags picomqprof, see docs/delta.md,
// "Profiling") writes a pprof CPU profile of the whole host process while
// the library is loaded: the sink, the checkpointer and whatever else runs
// in the Go runtime of this library. It starts when the library loads with
// $PICOMQ_DELTA_CPUPROFILE set (the file to write) and stops when the last
// open instance closes: a shared library gets no call at process exit.
const profileEnv = "PICOMQ_DELTA_CPUPROFILE"

var prof struct {
	mu   sync.Mutex
	file *os.File // nil when not profiling (or stopped)
	open int      // instances opened and not closed
}

func init() {
	path := os.Getenv(profileEnv)
	if path == "" {
		return
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "delta sink: %s=%s: %v\n", profileEnv, path, err)
		return
	}
	prof.file = f
}

func profiled(p sdk.Plugin[delta.Config]) sdk.Plugin[delta.Config] {
	inner := p.New
	p.New = func() sdk.Sink[delta.Config] { return &profSink{Sink: inner().(*delta.Sink)} }
	return p
}

// profSink counts open instances; the last Close writes the profile.
type profSink struct{ *delta.Sink }

func (s *profSink) Open(ctx context.Context, cfg *delta.Config, host *sdk.Host) error {
	if err := s.Sink.Open(ctx, cfg, host); err != nil {
		return err // the SDK does not close an instance that failed to open
	}
	prof.mu.Lock()
	prof.open++
	prof.mu.Unlock()
	return nil
}

func (s *profSink) Close(ctx context.Context) error {
	err := s.Sink.Close(ctx)
	prof.mu.Lock()
	defer prof.mu.Unlock()
	if prof.open--; prof.open == 0 && prof.file != nil {
		pprof.StopCPUProfile()
		prof.file.Close()
		prof.file = nil
	}
	return err
}
