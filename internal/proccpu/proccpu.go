// Package proccpu reads the CPU time the calling process has used: user
// and system, every thread, not its children. It is what the runtime's
// processor governor (connect/gomaxprocs) and the benchmarks that measure
// themselves read, through getrusage(2), which counts to the microsecond
// (/proc's figures, which internal/testenv/hosttest reads for other
// processes, count in 10 ms ticks). Only the standard library.
//
// File map: proccpu.go (Self).
package proccpu

import (
	"syscall"
	"time"
)

// Self is the CPU time this process has used so far.
func Self() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
