//go:build linux

package delta

import (
	"runtime"
	"sync/atomic"
	"syscall"
)

// threadCPU pins the calling goroutine to its OS thread and returns a
// function that unpins it and adds the thread's CPU time (user+sys) spent
// in between to total, in µs. Work the Go runtime does elsewhere on its
// behalf (part of garbage collection) is not counted.
func threadCPU(total *atomic.Int64) func() {
	runtime.LockOSThread()
	start, ok := threadTime()
	return func() {
		if end, ok2 := threadTime(); ok && ok2 {
			total.Add(end - start)
		}
		runtime.UnlockOSThread()
	}
}

func threadTime() (int64, bool) {
	const rusageThread = 1 // RUSAGE_THREAD
	var ru syscall.Rusage
	if syscall.Getrusage(rusageThread, &ru) != nil {
		return 0, false
	}
	return ru.Utime.Nano()/1000 + ru.Stime.Nano()/1000, true
}
