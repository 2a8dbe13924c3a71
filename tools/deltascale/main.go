// Command deltascale drives a Delta table to many versions through the
// real libpicomq_connector_delta_sink.so in the C host and shows that the
// sink stays flat as the log grows: small batches (10 records), one commit
// each, file://, checkpoints every 10 versions (the default). At 100, 1,000
// and the final version count it reports
//
//   - open: the time to open a fresh sink instance on the table (snapshot
//     load from the newest checkpoint);
//   - consume() p50/p99 over the last batches;
//   - the host's current and peak RSS;
//   - checkpoint write time (the sink's "wrote Delta checkpoint" log lines
//     since the previous milestone) and the number of checkpoint files;
//   - delta-rs open time: DeltaTable(uri) + version(), timed in Python.
//
// Then it loads 300k-add-files-100-col-partitioned (unpacked to a temporary
// directory) in child processes, each reporting its time and peak RSS:
// Load (what appends need: no file list), LoadState (what the
// checkpointer needs: every add), the checkpoint write, and both loads again
// from that checkpoint.
//
//	go run ./tools/deltascale                  (10,000 versions)
//	go run ./tools/deltascale -versions 2000
//
// Needs dist/ (buildscripts/build.sh; or -dist / PICOMQ_DIST) and the
// Python env (buildscripts/pyenv.sh).
package main

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/picomq/heavy-sinks/internal/testenv"
	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/shared/sdk"
	"github.com/picomq/heavy-sinks/tools/internal/bench"
)

const sdkLogLevel = sdk.LogLevelEnv

var (
	versions    = flag.Int("versions", 10000, "versions to drive the table to")
	batchSize   = flag.Int("batch", 10, "records per batch (one version each)")
	window      = flag.Int("window", 500, "consume() latency percentiles over the last N batches before each milestone")
	partitioned = flag.Bool("partitioned", true, "partition the table by region (3 values): 3 data files per commit")
	distFlag    = flag.String("dist", "", "directory with the built library and host (default $PICOMQ_DIST or <repo>/dist)")
	testdata    = flag.String("testdata", "", "delta test tables (default $PICOMQ_DELTA_TABLES or <repo>/../shared/testdata/delta-tables)")
	skip300k    = flag.Bool("skip-300k", false, "skip the 300k-file table")
	v2Ckpt      = flag.Bool("v2-checkpoints", false, "give the table the v2Checkpoint feature (delta.checkpointPolicy=v2) at version 1: the sink writes V2 checkpoints with sidecars")
	keep        = flag.Bool("keep", false, "keep the work directory")

	probe     = flag.String("probe", "", "internal: child mode (load, state, checkpoint)")
	probeDir  = flag.String("probe-dir", "", "internal: table directory of -probe")
	probeHide = flag.Bool("probe-json-only", false, "internal: ignore checkpoints in -probe")
)

func main() {
	flag.Parse()
	if *probe != "" {
		bench.Exit("deltascale probe", runProbe())
		return
	}
	bench.Exit("deltascale", run())
}

const createTable = `
import sys, json, pyarrow as pa
from deltalake import write_deltalake
schema = pa.schema([("id", pa.int64()), ("region", pa.string()), ("body", pa.string()), ("ts", pa.timestamp("us", tz="UTC"))])
write_deltalake(sys.argv[1], pa.Table.from_pylist([], schema=schema), partition_by=json.loads(sys.argv[2]))
`

const deltaRSOpen = `
import sys, json, time, os
from deltalake import DeltaTable
t0 = time.perf_counter()
dt = DeltaTable(sys.argv[1])
v = dt.version()
ms = (time.perf_counter() - t0) * 1000
print(json.dumps({"ms": ms, "version": v}))
sys.stdout.flush(); os._exit(0)
`

type checkpointLog struct {
	mu      sync.Mutex
	version []int64
	ms      []int64
}

var ckptLine = regexp.MustCompile(`wrote Delta checkpoint .*version=(\d+) .*duration_ms=(\d+)`)

func (c *checkpointLog) onLog(l hostclient.LogLine) {
	m := ckptLine.FindStringSubmatch(l.Message)
	if m == nil {
		return
	}
	v, _ := strconv.ParseInt(m[1], 10, 64)
	ms, _ := strconv.ParseInt(m[2], 10, 64)
	c.mu.Lock()
	c.version = append(c.version, v)
	c.ms = append(c.ms, ms)
	c.mu.Unlock()
}

// since returns the write times of checkpoints at versions > from.
func (c *checkpointLog) since(from int64) []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int64
	for i, v := range c.version {
		if v > from {
			out = append(out, c.ms[i])
		}
	}
	return out
}

func run() error {
	env, err := bench.Setup(*distFlag)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "deltascale")
	if err != nil {
		return err
	}
	if *keep {
		fmt.Println("work directory:", work)
	} else {
		defer os.RemoveAll(work)
	}

	fmt.Printf("deltascale: %d versions, %d records per batch, %s, file://, GOMAXPROCS %d\n", *versions, *batchSize,
		map[bool]string{true: "partitioned by region (3 files per commit)", false: "unpartitioned (1 file per commit)"}[*partitioned], runtime.GOMAXPROCS(0))
	if err := driveTable(env.Dist, env.Python, work); err != nil {
		return err
	}
	if *skip300k {
		return nil
	}
	return table300k(work)
}

func driveTable(dist, python, work string) error {
	dir := filepath.Join(work, "scale")
	uri := "file://" + dir
	parts := "[]"
	if *partitioned {
		parts = `["region"]`
	}
	if out, err := exec.Command(python, "-c", createTable, uri, parts).CombinedOutput(); err != nil {
		return fmt.Errorf("create table: %v\n%s", err, out)
	}
	ckpts := &checkpointLog{}
	ctx := context.Background()
	first := 0 // the version before the first batch's
	if *v2Ckpt {
		if err := upgradeToV2Checkpoints(ctx, dir); err != nil {
			return err
		}
		first = 1
	}
	h, err := bench.StartHost(dist, 2,
		hostclient.OnLog(ckpts.onLog), hostclient.KeepLogs(1000),
		// "wrote Delta checkpoint" lines, with their duration, are debug.
		hostclient.Env(sdkLogLevel+"=debug"))
	if err != nil {
		return err
	}
	defer h.Close()
	lib, err := h.Load(filepath.Join(dist, "libpicomq_connector_delta_sink.so"))
	if err != nil {
		return err
	}
	cfg := map[string]any{"table_uri": uri}
	inst, err := lib.Open(bench.Definition("scale", cfg))
	if err != nil {
		return err
	}
	milestones := []int{100, 1000, *versions - *window, *versions}
	milestones = slices.DeleteFunc(milestones, func(m int) bool { return m <= 0 || m > *versions })
	slices.Sort(milestones)
	milestones = slices.Compact(milestones)

	fmt.Printf("\n%8s %9s %9s %9s %9s %9s %12s %10s %9s %11s\n", "version", "open ms", "p50 ms", "p99 ms", "RSS MiB", "peak MiB",
		"ckpt ms avg", "ckpt max", "ckpts", "delta-rs ms")
	// The checkpointer's CPU (checkpoint_cpu_ms) against the host
	// process's, over the batches since the previous milestone (the
	// milestone's own probes excluded), printed after the table.
	var cpuRows []string
	segStart, err := cpuMark(h.Pid(), inst)
	if err != nil {
		return err
	}
	lat := make([]time.Duration, 0, *versions)
	start := time.Now()
	prevMilestone := int64(0)
	base := time.Date(2026, 9, 3, 0, 0, 0, 0, time.UTC)
	for v := 1; v <= *versions; v++ {
		b := hostclient.Batch{Attempt: 1, Topic: "scale", Schema: "json"}
		for i := range *batchSize {
			n := (v-1)**batchSize + i
			ts := base.Add(time.Duration(n) * time.Millisecond)
			b.Records = append(b.Records, hostclient.Record{Offset: uint64(n), TimestampMs: ts.UnixMilli(),
				Payload: []byte(fmt.Sprintf(`{"id":%d,"region":"r%d","body":"event number %d","ts":"%s"}`, n, n%3, n, ts.Format(time.RFC3339Nano)))})
		}
		t0 := time.Now()
		if err := inst.Consume(b); err != nil {
			return fmt.Errorf("version %d: %w", v, err)
		}
		lat = append(lat, time.Since(t0))
		if !slices.Contains(milestones, v) {
			continue
		}
		// Let the checkpoint due at this version finish before measuring.
		waitCheckpoint(dir, int64(first+v-(first+v)%10), 30*time.Second)
		segEnd, err := cpuMark(h.Pid(), inst)
		if err != nil {
			return err
		}
		cpuRows = append(cpuRows, segEnd.since(segStart, prevMilestone, int64(v)))
		last := lat[max(0, len(lat)-*window):]
		p50, p99 := bench.Percentile(last, 0.50), bench.Percentile(last, 0.99)
		rss, peak := hosttest.ProcessMemory(h.Pid())
		t0 = time.Now()
		probeInst, err := lib.Open(bench.Definition(fmt.Sprintf("probe-%d", v), cfg))
		if err != nil {
			return fmt.Errorf("open at %d: %w", v, err)
		}
		openMS := bench.MS(time.Since(t0))
		_ = probeInst.Close()
		ck := ckpts.since(prevMilestone)
		var sum, mx int64
		for _, x := range ck {
			sum += x
			mx = max(mx, x)
		}
		avg := 0.0
		if len(ck) > 0 {
			avg = float64(sum) / float64(len(ck))
		}
		out, err := exec.Command(python, "-c", deltaRSOpen, uri).Output()
		if err != nil {
			return fmt.Errorf("delta-rs open: %w", err)
		}
		var rs struct {
			MS      float64 `json:"ms"`
			Version int     `json:"version"`
		}
		if err := json.Unmarshal(out, &rs); err != nil || rs.Version != first+v {
			return fmt.Errorf("delta-rs open: %s (%v)", out, err)
		}
		fmt.Printf("%8d %9.1f %9.2f %9.2f %9.1f %9.1f %12.1f %10d %9d %11.1f\n", v, openMS, bench.MS(p50), bench.MS(p99),
			float64(rss)/1024, float64(peak)/1024, avg, mx, countCheckpoints(dir), rs.MS)
		prevMilestone = int64(v)
		if segStart, err = cpuMark(h.Pid(), inst); err != nil {
			return err
		}
	}
	fmt.Printf("\ncheckpoint CPU (the checkpointer thread's checkpoint_cpu_ms) against the host process's CPU (user+sys, all threads):\n")
	for _, r := range cpuRows {
		fmt.Println(r)
	}
	elapsed := time.Since(start)
	m, _ := inst.Metrics()
	fmt.Printf("\n%d versions in %.1f s (%.0f commits/s incl. measurements)\nsink metrics: %s\n", *versions, elapsed.Seconds(),
		float64(*versions)/elapsed.Seconds(), sinkMetrics(m))
	return inst.Close()
}

// upgradeToV2Checkpoints commits version 1 of the table at dir: the
// v2Checkpoint feature and delta.checkpointPolicy=v2, as Spark's ALTER
// TABLE ... SET TBLPROPERTIES ('delta.checkpointPolicy' = 'v2') does.
func upgradeToV2Checkpoints(ctx context.Context, dir string) error {
	store, err := objstore.NewLocal(dir)
	if err != nil {
		return err
	}
	st, err := deltalog.LoadState(ctx, store, nil)
	if err != nil {
		return err
	}
	data, err := deltalog.EncodeActions(deltalog.V2CheckpointUpgrade(st))
	if err != nil {
		return err
	}
	return store.PutIfAbsent(ctx, deltalog.CommitPath(st.Version+1), data)
}

func sinkMetrics(raw string) string {
	var m struct {
		Sink map[string]any `json:"sink"`
	}
	if json.Unmarshal([]byte(raw), &m) != nil {
		return raw
	}
	keys := []string{"commits", "commit_conflicts", "checkpoints_written", "checkpoint_failures", "last_checkpoint_version", "last_checkpoint_write_ms", "log_files_deleted", "checkpoint_cpu_ms"}
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%v", k, m.Sink[k]))
	}
	return strings.Join(parts, " ")
}

// cpuPoint is the host process's CPU and the sink's checkpoint metrics at
// one moment.
type cpuPoint struct {
	host            time.Duration
	ckptMs, written float64
}

func cpuMark(pid int, inst *hostclient.Instance) (cpuPoint, error) {
	m, err := bench.SinkMetrics(inst)
	if err != nil {
		return cpuPoint{}, err
	}
	user, sys, err := hosttest.ProcessUserSys(pid)
	if err != nil {
		return cpuPoint{}, err
	}
	return cpuPoint{host: user + sys, ckptMs: m["checkpoint_cpu_ms"], written: m["checkpoints_written"]}, nil
}

// since describes the window from p0 (at version from) to p (at to).
func (p cpuPoint) since(p0 cpuPoint, from, to int64) string {
	host := float64((p.host - p0.host).Microseconds()) / 1000
	ck, n, commits := p.ckptMs-p0.ckptMs, p.written-p0.written, float64(to-from)
	return fmt.Sprintf("  versions %5d-%-5d: %3.0f checkpoints, %6.0f ms = %6.2f ms/checkpoint, %6.3f ms/commit; host %7.0f ms = %6.3f ms/commit; checkpoint share %5.1f %%",
		from, to, n, ck, ck/max(n, 1), ck/commits, host, host/commits, 100*ck/max(host, 1))
}

func waitCheckpoint(dir string, v int64, timeout time.Duration) {
	if v <= 0 {
		return
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		// _last_checkpoint is written after the checkpoint (of either kind).
		var lc deltalog.LastCheckpoint
		raw, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(deltalog.LastCheckpointPath)))
		if err == nil && json.Unmarshal(raw, &lc) == nil && lc.Version >= v {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func countCheckpoints(dir string) int {
	entries, _ := os.ReadDir(filepath.Join(dir, "_delta_log"))
	n := 0
	for _, e := range entries {
		if strings.Contains(e.Name(), ".checkpoint.") {
			n++
		}
	}
	return n
}

// ---- the 300k-file table ---------------------------------------------------

func table300k(work string) error {
	td := *testdata
	if td == "" {
		var err error
		if td, err = testenv.DeltaTablesDir(); err != nil {
			return err
		}
	}
	archive := filepath.Join(td, "300k-add-files-100-col-partitioned.tar.zst")
	dest := filepath.Join(work, "300k")
	if err := untarZstd(archive, dest); err != nil {
		return err
	}
	dir := filepath.Join(dest, "300k-add-files-100-col-partitioned")
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Printf("\n300k-add-files-100-col-partitioned (300,000 adds in 3 JSON commits, 46 MB of log), each step in a fresh process:\n")
	fmt.Printf("%-58s %9s %9s %10s\n", "step", "ms", "peak MiB", "files")
	steps := []struct {
		label, mode string
		jsonOnly    bool
	}{
		{"Load (appender snapshot, no file list) from JSON", "load", true},
		{"LoadState (checkpointer, every add) from JSON", "state", true},
		{"LoadState + write checkpoint (checkpoint write alone)", "checkpoint", true},
		{"Load from our checkpoint", "load", false},
		{"LoadState from our checkpoint", "state", false},
	}
	for _, s := range steps {
		args := []string{"-probe", s.mode, "-probe-dir", dir}
		if s.jsonOnly {
			args = append(args, "-probe-json-only")
		}
		out, err := exec.Command(self, args...).Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return fmt.Errorf("%s: %v\n%s", s.label, err, ee.Stderr)
			}
			return err
		}
		var r probeResult
		if err := json.Unmarshal(out, &r); err != nil {
			return fmt.Errorf("%s: %q: %v", s.label, out, err)
		}
		extra := ""
		if r.WriteMS > 0 {
			extra = fmt.Sprintf("  (write %.0f ms, %.1f MiB file)", r.WriteMS, float64(r.Bytes)/(1<<20))
		}
		files := "-"
		if r.Files >= 0 {
			files = strconv.Itoa(r.Files)
		}
		fmt.Printf("%-58s %9.0f %9.1f %10s%s\n", s.label, r.MS, float64(r.PeakKB)/1024, files, extra)
	}
	return nil
}

type probeResult struct {
	MS      float64 `json:"ms"`
	WriteMS float64 `json:"write_ms,omitempty"`
	Bytes   int64   `json:"bytes,omitempty"`
	Files   int     `json:"files"`
	PeakKB  int64   `json:"peak_kb"`
}

// jsonOnly hides checkpoints and _last_checkpoint.
type jsonOnly struct{ objstore.Store }

func (j jsonOnly) List(ctx context.Context, prefix, startAfter string) ([]deltalog.FileInfo, error) {
	files, err := j.Store.List(ctx, prefix, startAfter)
	return slices.DeleteFunc(files, func(f deltalog.FileInfo) bool {
		return strings.Contains(f.Path, ".checkpoint.") || strings.HasSuffix(f.Path, "_last_checkpoint")
	}), err
}

func (j jsonOnly) Get(ctx context.Context, path string) ([]byte, error) {
	if strings.HasSuffix(path, "_last_checkpoint") {
		return nil, deltalog.ErrNotFound
	}
	return j.Store.Get(ctx, path)
}

func runProbe() error {
	ctx := context.Background()
	local, err := objstore.NewLocal(*probeDir)
	if err != nil {
		return err
	}
	var store deltalog.Store = local
	if *probeHide {
		store = jsonOnly{local}
	}
	var r probeResult
	t0 := time.Now()
	switch *probe {
	case "load":
		snap, err := deltalog.Load(ctx, store, nil)
		if err != nil {
			return err
		}
		r.MS = bench.MS(time.Since(t0))
		r.Files = -1
		_ = snap
	case "state", "checkpoint":
		st, err := deltalog.LoadState(ctx, store, nil)
		if err != nil {
			return err
		}
		r.MS, r.Files = bench.MS(time.Since(t0)), st.NumFiles()
		if *probe == "checkpoint" {
			_ = local.Delete(ctx, deltalog.CheckpointPath(st.Version))
			_ = local.Delete(ctx, deltalog.LastCheckpointPath)
			t1 := time.Now()
			res, err := deltalog.WriteCheckpoint(ctx, local, st, nil)
			if err != nil {
				return err
			}
			r.WriteMS, r.Bytes = bench.MS(time.Since(t1)), res.SizeInBytes
			r.MS = bench.MS(time.Since(t0))
		}
	default:
		return fmt.Errorf("unknown probe %q", *probe)
	}
	_, r.PeakKB = hosttest.ProcessMemory(os.Getpid())
	return json.NewEncoder(os.Stdout).Encode(r)
}

func untarZstd(archive, dest string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := zstd.NewReader(f)
	if err != nil {
		return err
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(h.Name)
		if filepath.IsAbs(name) || strings.HasPrefix(name, "..") {
			return fmt.Errorf("unsafe path %q in %s", h.Name, archive)
		}
		target := filepath.Join(dest, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, tr); err != nil {
				out.Close()
				return err
			}
			if err := out.Close(); err != nil {
				return err
			}
		}
	}
}
