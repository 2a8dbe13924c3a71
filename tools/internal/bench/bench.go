// Package bench holds what the benchmark programs under tools/ (deltabench,
// deltascale, partitionbench, pipelinebench, rsbench) share: the start and
// exit of main, finding the repository, dist/ and the Python env, the
// sink's metrics, and latency and time figures printed the same way
// everywhere. It is internal to tools/: shipped code never imports it.
//
// File map: bench.go (main, the environment, a host, figures),
// connect.go (a picomq-connect process: start, CPU, memory, /metrics),
// procstat.go (a process's user/system CPU, faults and context switches),
// target.go (the file:// and MinIO Delta targets, tables and their
// versions), definition.go (a sink definition's TOML, -topic-key values,
// sums from /metrics), kafka.go (flags for brokers and compression, the
// lag trend), postgres.go (a fresh database for the Redshift emulator).
package bench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/picomq/heavy-sinks/internal/testenv"
	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// Main parses the flags and runs run; a failure prints "name: error" to
// stderr and exits 1.
func Main(name string, run func() error) {
	flag.Parse()
	Exit(name, run())
}

// Exit prints "name: err" to stderr and exits 1 when err is not nil.
func Exit(name string, err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// Env is where a bench finds its inputs.
type Env struct {
	Root   string // the repository
	Dist   string // the built host, libraries and picomq-connect
	Python string // the virtualenv's python (delta-rs, pyarrow)
}

// Setup finds the repository root and dist/ (dist when not empty, else
// $PICOMQ_DIST or <root>/dist) and the Python env, creating it on first
// use with buildscripts/pyenv.sh.
func Setup(dist string) (Env, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return Env{}, err
	}
	if dist == "" {
		if dist, err = testenv.DistDir(); err != nil {
			return Env{}, err
		}
	}
	py, err := exec.Command(filepath.Join(root, "buildscripts", "pyenv.sh")).Output()
	if err != nil {
		return Env{}, fmt.Errorf("pyenv: %w", err)
	}
	return Env{Root: root, Dist: dist, Python: strings.TrimSpace(string(py))}, nil
}

// Built checks that the programs and libraries at paths exist, so that a
// bench stops before its work when dist/ is not built.
func Built(paths ...string) error {
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%v: run `make build` first", err)
		}
	}
	return nil
}

// StartHost starts dist/picomq-host with workers workers and no
// quarantine (a slow batch is measured, never cut short), then opts.
func StartHost(dist string, workers int, opts ...hostclient.Option) (*hostclient.Host, error) {
	return hostclient.Start(context.Background(), filepath.Join(dist, "picomq-host"),
		append([]hostclient.Option{hostclient.Workers(workers), hosttest.Quarantine(0)}, opts...)...)
}

// Definition is the JSON definition a bench opens an instance with: key
// as key and name, version 0, cfg as plugin_config.
func Definition(key string, cfg map[string]any) string {
	b, _ := json.Marshal(map[string]any{"key": key, "name": key, "version": 0, "plugin_config": cfg})
	return string(b)
}

// SinkMetrics returns the numeric entries of an instance's "sink" metrics,
// the plugin's own counters.
func SinkMetrics(inst *hostclient.Instance) (map[string]float64, error) {
	raw, err := inst.Metrics()
	if err != nil {
		return nil, err
	}
	var m struct {
		Sink map[string]any `json:"sink"`
	}
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, fmt.Errorf("metrics %q: %w", raw, err)
	}
	out := map[string]float64{}
	for k, v := range m.Sink {
		if f, ok := v.(float64); ok {
			out[k] = f
		}
	}
	return out, nil
}

// Percentile returns the p-quantile (0 to 1) of d, nearest rank below:
// the element at index p*len(d) of d sorted, the largest for p = 1; 0 for
// no samples. d itself is left as it is.
func Percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// MS is d in milliseconds, to the microsecond.
func MS(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// US is d in microseconds.
func US(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }

// Median is the middle of v (the mean of the two middle values for an even
// count), 0 for none; v itself is left as it is.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
