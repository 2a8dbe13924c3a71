package hosttest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Children returns the pids of ppid's child processes, from /proc: for a
// test that a runtime's plugin hosts are there, or gone.
func Children(ppid int) []int {
	parent := strconv.Itoa(ppid)
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		if f := strings.Fields(rest); len(f) > 1 && f[1] == parent {
			out = append(out, pid)
		}
	}
	return out
}
