package hostdriver

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
