package hosttest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ProcessMemory reads a process's resident set (VmRSS) and its peak (VmHWM)
// in KiB from /proc; zeros when they cannot be read. Benchmarks use it on
// Host.Pid() to report the host's memory.
func ProcessMemory(pid int) (rssKB, peakKB int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, value, ok := strings.Cut(line, ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if name == "VmRSS" {
			rssKB = n
		} else {
			peakKB = n
		}
	}
	return rssKB, peakKB
}

// ResetPeakMemory sets a process's peak resident set (VmHWM) back to its
// current resident set, so that a later ProcessMemory reports the peak of
// what the process did in between. Linux only (/proc/<pid>/clear_refs).
func ResetPeakMemory(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}
