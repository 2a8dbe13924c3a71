package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
)

// ProcStat is what Linux counted for a process, all its threads: CPU time
// split into user and system, minor page faults, and context switches,
// voluntary (it waited: a pipe, a futex, a sleep) and involuntary (it was
// preempted). To explain a CPU difference between two runs of the same
// code: the kernel's share, memory first touched, and waking up.
type ProcStat struct {
	User, Sys              time.Duration
	MinorFaults            int64
	Voluntary, Involuntary int64 // context switches
}

// ReadProcStat reads pid's ProcStat from /proc/<pid>/stat and the status
// of each of its threads (a thread gone is no longer counted).
func ReadProcStat(pid int) (ProcStat, error) {
	var s ProcStat
	var err error
	if s.User, s.Sys, err = hosttest.ProcessUserSys(pid); err != nil {
		return s, err
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	text := string(b)
	f := strings.Fields(text[strings.LastIndexByte(text, ')')+1:])
	if len(f) < 8 {
		return s, fmt.Errorf("short /proc/%d/stat", pid)
	}
	s.MinorFaults, _ = strconv.ParseInt(f[7], 10, 64) // field 10, minflt
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			name, value, _ := strings.Cut(line, ":")
			n, _ := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
			switch name {
			case "voluntary_ctxt_switches":
				s.Voluntary += n
			case "nonvoluntary_ctxt_switches":
				s.Involuntary += n
			}
		}
	}
	return s, nil
}

// Sub is what happened between earlier and s.
func (s ProcStat) Sub(earlier ProcStat) ProcStat {
	return ProcStat{User: s.User - earlier.User, Sys: s.Sys - earlier.Sys, MinorFaults: s.MinorFaults - earlier.MinorFaults,
		Voluntary: s.Voluntary - earlier.Voluntary, Involuntary: s.Involuntary - earlier.Involuntary}
}

// PerBatch prints user and system µs per record, and minor faults and
// voluntary/involuntary switches per batch.
func (s ProcStat) PerBatch(records, batches int) string {
	r, b := float64(records), float64(max(batches, 1))
	return fmt.Sprintf("user %.2f + sys %.2f µs/record, %.0f faults, %.0f/%.0f switches per batch",
		US(s.User)/r, US(s.Sys)/r, float64(s.MinorFaults)/b, float64(s.Voluntary)/b, float64(s.Involuntary)/b)
}
