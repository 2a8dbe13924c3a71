package hosttest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ProcessCPU returns the user+system CPU time of process pid, all its
// threads (utime+stime of /proc/<pid>/stat). Benchmarks use it on a host
// or runtime process to report CPU per record.
func ProcessCPU(pid int) (time.Duration, error) {
	user, sys, err := ProcessUserSys(pid)
	return user + sys, err
}

// ProcessUserSys returns the user and the system CPU time of process pid,
// all its threads: the system part is the kernel's work for it (file
// creation, writes, fsync, pipes), which depends on the machine's
// filesystem more than on the code.
func ProcessUserSys(pid int) (user, sys time.Duration, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The command name (field 2) may hold spaces; the fields after its
	// closing parenthesis start with field 3, state.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, 0, fmt.Errorf("short /proc/%d/stat: %q", pid, s)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(fields[12], 10, 64) // field 15
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, err
	}
	tick := float64(time.Second) / clockTicks()
	return time.Duration(float64(utime) * tick), time.Duration(float64(stime) * tick), nil
}

var (
	ticksOnce sync.Once
	ticks     float64
)

// clockTicks is sysconf(_SC_CLK_TCK), the unit of utime and stime.
func clockTicks() float64 {
	ticksOnce.Do(func() {
		ticks = 100
		if out, err := exec.Command("getconf", "CLK_TCK").Output(); err == nil {
			if v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64); err == nil && v > 0 {
				ticks = v
			}
		}
	})
	return ticks
}
