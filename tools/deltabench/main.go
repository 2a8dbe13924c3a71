// Command deltabench measures the Delta Lake sink end to end: the real
// libpicomq_connector_delta_sink.so in the C host, appending 1000-record
// batches of ~300-byte JSON records with 20 mixed columns (timestamps as
// strings that need coercion, one partition column) to a table delta-rs
// created, on file:// and on MinIO. In the same run it appends the same
// batches with delta-rs (write_deltalake, mode append, table kept open,
// JSON parsed by pyarrow) and prints our throughput as a ratio to it.
//
//	go run ./tools/deltabench -batches 200            (make bench-delta)
//
// For file:// it also prints the host process's CPU (user+sys from
// /proc/<pid>/stat, open to close) per record and records per CPU-second,
// and the fsyncs per batch the library counted (its "fsyncs" metric).
// -cpuprofile DIR takes a CPU profile inside the library when dist/ holds a
// profiling build (docs/delta.md, "Profiling").
//
// On MinIO it prints the requests per batch by kind and, when the MinIO
// server runs on this machine, its CPU per batch for both writers: the two
// processes share the cores, so the server's CPU bounds the throughput.
//
// It also prints the checkpointer's CPU (checkpoint_cpu_ms) per checkpoint,
// per commit and as a share of the host's CPU over the measured batches.
// -preload-files N starts the file:// table at N live files (one synthetic
// checkpoint, 5 adds per version), -warmup W keeps the first checkpoint
// (file list load, every add encoded) out of the measurement, and
// -checkpoint-interval 1000000 is the same run without checkpoints:
//
//	go run ./tools/deltabench -targets file -delta-rs=false -batches 300 -warmup 20 -preload-files 150000
//
// Needs dist/ (make build; or $PICOMQ_DIST), the Python env (buildscripts/pyenv.sh) and, for
// the s3 target, the services (.services.env from buildscripts/services.sh).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/internal/testenv/workload"
	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/tools/internal/bench"
)

var (
	batches   = flag.Int("batches", 200, "batches per target")
	batchSize = flag.Int("batch-size", 1000, "records per batch")
	targets   = flag.String("targets", "file,s3", "comma-separated: file, s3")
	workDir   = flag.String("dir", "", "parent of the work directory where the file:// tables go (default $TMPDIR; make: BENCH_DIR)")
	withRS    = flag.Bool("delta-rs", true, "also run delta-rs on the same batches")
	fileSync  = flag.String("file-sync", "file", "the sink's file_sync for the file target: file, or filesystem (one syncfs per batch)")
	cpuprof   = flag.String("cpuprofile", "", "directory: a profiling build of the library (-tags picomqprof, docs/delta.md) writes DIR/<target>.pprof")
	preload   = flag.Int("preload-files", 0, "file target: before the run, give the table this many live files (a checkpoint of synthetic adds shaped like the sink's, 5 per version; no data files)")
	warmup    = flag.Int("warmup", 0, "batches consumed before measuring (the first checkpoint loads the file list and encodes every add: outside the measurement)")
	ckptEvery = flag.Int("checkpoint-interval", 0, "with -preload-files: set delta.checkpointInterval (e.g. 1000000 for a run without checkpoints, to compare)")
	v2Ckpt    = flag.Bool("v2-checkpoints", false, "file target: give the table the v2Checkpoint feature (delta.checkpointPolicy=v2), so the sink writes V2 checkpoints with sidecars")
)

// deltaRSBench appends the batches of a JSONL file (one batch per line, a
// JSON array of records) with delta-rs and prints per-batch latencies.
const deltaRSBench = `
import sys, json, time, io, os, resource
import pyarrow as pa, pyarrow.json as pj
from deltalake import DeltaTable, write_deltalake
uri, opts = sys.argv[1], json.loads(sys.argv[2]) or None
dt = DeltaTable(uri, storage_options=opts)
schema = dt.schema().to_arrow() if hasattr(dt.schema(), "to_arrow") else pa.schema(dt.schema().to_pyarrow())
ts = {f.name: f.type for f in schema}
lat = []
with open(sys.argv[3], "rb") as f:
    lines = f.read().splitlines()
start = time.perf_counter()
for line in lines:
    t0 = time.perf_counter()
    tbl = pj.read_json(io.BytesIO(line.replace(b"\x1e", b"\n")), parse_options=pj.ParseOptions(explicit_schema=pa.schema(schema), unexpected_field_behavior="ignore"))
    write_deltalake(dt, tbl, mode="append")
    lat.append(time.perf_counter() - t0)
total = time.perf_counter() - start
print(json.dumps({"seconds": total, "latencies": lat, "max_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
sys.stdout.flush(); os._exit(0)
`

func main() { bench.Main("deltabench", run) }

func run() error {
	env, err := bench.Setup("")
	if err != nil {
		return err
	}
	dist, python := env.Dist, env.Python
	work, err := workload.WorkDir(*workDir, "deltabench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	data, rawBytes := workload.Delta(*warmup+*batches, *batchSize)
	warm := data[:*warmup]
	data = data[*warmup:]
	for _, recs := range warm {
		for _, r := range recs {
			rawBytes -= len(r.Payload)
		}
	}
	jsonl := filepath.Join(work, "batches.jsonl")
	if err := writeJSONL(jsonl, data); err != nil {
		return err
	}
	fmt.Printf("workload: %d batches x %d records, %.0f bytes/record, 20 columns (2 timestamp strings), partitioned by region\n",
		*batches, *batchSize, float64(rawBytes)/float64(*batches**batchSize))

	for _, target := range strings.Split(*targets, ",") {
		var uri string
		server := 0 // the store's server process, when local (MinIO)
		opts := map[string]string{}
		cfg := map[string]any{}
		switch target {
		case "file":
			uri = "file://" + filepath.Join(work, "ours")
			cfg = map[string]any{"file_sync": *fileSync}
		case "s3":
			svc, err := services.Lookup()
			if err != nil {
				return fmt.Errorf("s3 target: %w (run buildscripts/services.sh start)", err)
			}
			bucket := fmt.Sprintf("deltabench-%d", time.Now().UnixNano())
			if err := makeBucket(svc, bucket); err != nil {
				return err
			}
			uri = "s3://" + bucket + "/ours"
			opts = map[string]string{"AWS_ENDPOINT_URL": svc.S3Endpoint, "AWS_ACCESS_KEY_ID": svc.S3AccessKey, "AWS_SECRET_ACCESS_KEY": svc.S3SecretKey,
				"AWS_REGION": svc.S3Region, "AWS_ALLOW_HTTP": "true", "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}
			cfg = map[string]any{"storage_backend_type": "s3", "aws_s3_access_key": svc.S3AccessKey, "aws_s3_secret_key": svc.S3SecretKey,
				"aws_s3_region": svc.S3Region, "aws_s3_endpoint_url": svc.S3Endpoint, "aws_s3_allow_http": true}
			server = minioServer(svc.S3Endpoint)
		default:
			return fmt.Errorf("unknown target %q", target)
		}
		optsJSON, _ := json.Marshal(opts)
		if out, err := exec.Command(python, "-c", workload.CreateDeltaTable, uri, string(optsJSON)).CombinedOutput(); err != nil {
			return fmt.Errorf("create table: %v\n%s", err, out)
		}
		cfg["table_uri"] = uri
		base := int64(0)
		if *preload > 0 || *ckptEvery > 0 || *v2Ckpt {
			if target != "file" || (*ckptEvery > 0 && *preload <= 0) {
				return fmt.Errorf("-preload-files, -checkpoint-interval and -v2-checkpoints are for the file target, -checkpoint-interval with -preload-files")
			}
			t0 := time.Now()
			if base, err = preloadTable(filepath.Join(work, "ours"), *preload, *ckptEvery, *v2Ckpt); err != nil {
				return fmt.Errorf("preload: %w", err)
			}
			fmt.Printf("preloaded %d live files: checkpoint at version %d (%.1f s)\n", *preload, base, time.Since(t0).Seconds())
		}
		var hostOpts []hostclient.Option
		if *cpuprof != "" {
			hostOpts = append(hostOpts, hostclient.Env("PICOMQ_DELTA_CPUPROFILE="+filepath.Join(*cpuprof, target+".pprof")))
		}
		ours, err := runOurs(dist, cfg, warm, data, base, server, hostOpts...)
		if err != nil {
			return err
		}
		label := target
		if target == "file" && *fileSync != "file" {
			label = "file, file_sync=" + *fileSync
		}
		ours.print("picomq delta sink", label, rawBytes)
		ours.printCPU(label)
		ours.printCheckpoints()
		if target == "s3" {
			ours.printRequests()
			ours.printServerCPU()
		}
		if !*withRS {
			continue
		}
		rsURI := strings.TrimSuffix(uri, "/ours") + "/delta-rs"
		if out, err := exec.Command(python, "-c", workload.CreateDeltaTable, rsURI, string(optsJSON)).CombinedOutput(); err != nil {
			return fmt.Errorf("create table: %v\n%s", err, out)
		}
		cmd := exec.Command(python, "-c", deltaRSBench, rsURI, string(optsJSON), jsonl)
		cmd.Stderr = os.Stderr
		serverCPU := cpuMeter(server)
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("delta-rs: %v", err)
		}
		rsServerCPU := serverCPU()
		var rs struct {
			Seconds   float64   `json:"seconds"`
			Latencies []float64 `json:"latencies"`
			MaxRSSKB  int64     `json:"max_rss_kb"`
		}
		if err := json.Unmarshal(out, &rs); err != nil {
			return fmt.Errorf("delta-rs output %q: %v", out, err)
		}
		theirs := result{elapsed: time.Duration(rs.Seconds * float64(time.Second)), rssKB: rs.MaxRSSKB, records: *batches * *batchSize,
			batches: *batches, serverCPU: rsServerCPU}
		for _, l := range rs.Latencies {
			theirs.latencies = append(theirs.latencies, time.Duration(l*float64(time.Second)))
		}
		theirs.print("delta-rs write_deltalake", target, rawBytes)
		theirs.printServerCPU()
		fmt.Printf("  ratio (%s): picomq / delta-rs throughput = %.2fx\n", target, theirs.elapsed.Seconds()/ours.elapsed.Seconds())
	}
	return nil
}

type result struct {
	elapsed   time.Duration
	latencies []time.Duration
	rssKB     int64
	records   int

	// Ours only: the host process's CPU (user+sys, all threads, from open
	// to close, the background checkpointer included) and the plugin's
	// "fsyncs" metric (-1 when the library does not report it).
	hostCPU           time.Duration // hostUser + hostSys
	hostUser, hostSys time.Duration
	fsyncs            int64
	batches           int
	// requests: the sink's storage_*_requests metrics over the batches
	// (table open excluded), with its commits and files_written.
	requests map[string]float64
	// The checkpointer over the measured batches (after the warm-up, up
	// to the last due checkpoint written): the checkpoint_* metrics'
	// differences, and the host process's CPU over the same window.
	ckpt        map[string]float64
	ckptHostCPU time.Duration
	// The store's server process (MinIO on this machine), over the
	// measured batches; -1 when it is not local or not found. For
	// delta-rs: over its whole run, table load included.
	serverCPU time.Duration
}

func (r result) print(who, target string, rawBytes int) {
	fmt.Printf("%-26s %-4s %9.0f records/s %7.1f MB/s  p50 %7.2f ms  p99 %7.2f ms  peak RSS %6.1f MiB\n",
		who, target, float64(r.records)/r.elapsed.Seconds(), float64(rawBytes)/r.elapsed.Seconds()/1e6,
		bench.MS(bench.Percentile(r.latencies, 0.50)), bench.MS(bench.Percentile(r.latencies, 0.99)), float64(r.rssKB)/1024)
}

// printCPU prints the host process's CPU per record and, where the store
// counts them (file://), the fsyncs per batch.
func (r result) printCPU(target string) {
	if r.hostCPU <= 0 {
		return
	}
	perRecord := func(d time.Duration) float64 { return bench.US(d) / float64(r.records) }
	fmt.Printf("  host CPU (%s): %.2f µs/record (user %.2f, system %.2f), %.0f records per CPU-second", target,
		perRecord(r.hostCPU), perRecord(r.hostUser), perRecord(r.hostSys), float64(r.records)/r.hostCPU.Seconds())
	if r.fsyncs >= 0 {
		fmt.Printf(", %.2f fsyncs/batch", float64(r.fsyncs)/float64(r.batches))
	}
	fmt.Println()
}

func runOurs(dist string, cfg map[string]any, warm, data [][]hostclient.Record, base int64, server int, opts ...hostclient.Option) (result, error) {
	h, err := bench.StartHost(dist, 1, opts...)
	if err != nil {
		return result{}, err
	}
	defer h.Close()
	lib, err := h.Load(filepath.Join(dist, "libpicomq_connector_delta_sink.so"))
	if err != nil {
		return result{}, err
	}
	inst, err := lib.Open(bench.Definition("bench", cfg))
	if err != nil {
		return result{}, err
	}
	r := result{records: len(data) * len(data[0]), batches: len(data), fsyncs: -1}
	for _, recs := range warm {
		if err := inst.Consume(hostclient.Batch{Attempt: 1, Topic: "bench", Schema: "json", Records: recs}); err != nil {
			return r, err
		}
	}
	if err := settleCheckpoints(inst, base, len(warm)); err != nil {
		return r, err
	}
	before, err := bench.SinkMetrics(inst)
	if err != nil {
		return r, err
	}
	user0, sys0, err := hosttest.ProcessUserSys(h.Pid())
	if err != nil {
		return r, err
	}
	serverCPU := cpuMeter(server)
	start := time.Now()
	for _, recs := range data {
		t0 := time.Now()
		if err := inst.Consume(hostclient.Batch{Attempt: 1, Topic: "bench", Schema: "json", Records: recs}); err != nil {
			return r, err
		}
		r.latencies = append(r.latencies, time.Since(t0))
	}
	r.elapsed = time.Since(start)
	_, r.rssKB = hosttest.ProcessMemory(h.Pid())
	// The checkpoint due at the last batch is written in the background:
	// wait for it, so that the window holds whole checkpoints.
	if err := settleCheckpoints(inst, base, len(warm)+len(data)); err != nil {
		return r, err
	}
	r.serverCPU = serverCPU()
	after, err := bench.SinkMetrics(inst)
	if err != nil {
		return r, err
	}
	user2, sys2, err := hosttest.ProcessUserSys(h.Pid())
	if err != nil {
		return r, err
	}
	r.ckptHostCPU = user2 + sys2 - user0 - sys0
	r.ckpt = map[string]float64{}
	for k, v := range after {
		if strings.HasPrefix(k, "checkpoint") || k == "commits" {
			r.ckpt[k] = v - before[k]
		}
	}
	if n, ok := after["fsyncs"]; ok {
		r.fsyncs = int64(n - before["fsyncs"])
	}
	r.requests = map[string]float64{}
	for k, v := range after {
		r.requests[k] = v - before[k]
	}
	// Close stops the background checkpointer; its CPU counts too.
	if err := inst.Close(); err != nil {
		return r, err
	}
	user1, sys1, err := hosttest.ProcessUserSys(h.Pid())
	if err != nil {
		return r, err
	}
	r.hostUser, r.hostSys = user1-user0, sys1-sys0
	r.hostCPU = r.hostUser + r.hostSys
	return r, nil
}

// printRequests prints the store requests per batch by kind: the puts
// split into data files, commits and the rest (checkpoints).
func (r result) printRequests() {
	m, n := r.requests, float64(r.batches)
	get, put, list, del := m["storage_get_requests"], m["storage_put_requests"], m["storage_list_requests"], m["storage_delete_requests"]
	files, commits := m["files_written"], m["commits"]
	fmt.Printf("  requests per batch: %.2f = put %.2f (data files %.2f, commits %.2f, other %.2f) + get %.2f + list %.2f + delete %.2f\n",
		(get+put+list+del)/n, put/n, files/n, commits/n, (put-files-commits)/n, get/n, list/n, del/n)
}

// printServerCPU prints the store server's CPU per batch, and the
// throughput that it and the host's CPU together allow on this machine's
// cores when nothing else runs: a ceiling no overlap of the two can pass.
func (r result) printServerCPU() {
	if r.serverCPU < 0 {
		return
	}
	n := float64(r.batches)
	fmt.Printf("  MinIO server CPU: %.2f ms/batch", bench.MS(r.serverCPU)/n)
	if r.hostCPU > 0 {
		both := (r.hostCPU + r.serverCPU).Seconds() / float64(r.records)
		fmt.Printf("; host + server %.2f µs/record, at most %.0f records/s on %d cores", both*1e6, float64(runtime.NumCPU())/both, runtime.NumCPU())
	}
	fmt.Println()
}

// minioServer returns the pid of the MinIO server on this machine that
// listens at endpoint's host:port (its --address), or 0.
func minioServer(endpoint string) int {
	u, err := url.Parse(endpoint)
	if err != nil || u.Port() == "" {
		return 0
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		raw, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if len(args) < 2 || filepath.Base(args[0]) != "minio" || args[1] != "server" {
			continue
		}
		for i, a := range args {
			addr, ok := strings.CutPrefix(a, "--address=")
			if !ok && a == "--address" && i+1 < len(args) {
				addr, ok = args[i+1], true
			}
			if ok && (addr == u.Host || addr == ":"+u.Port()) {
				pid, _ := strconv.Atoi(filepath.Base(d))
				return pid
			}
		}
	}
	return 0
}

// cpuMeter starts measuring process pid's CPU; the function it returns
// gives the CPU used since, or -1 when pid is 0 or unreadable.
func cpuMeter(pid int) func() time.Duration {
	if pid == 0 {
		return func() time.Duration { return -1 }
	}
	c0, err := hosttest.ProcessCPU(pid)
	return func() time.Duration {
		c1, err1 := hosttest.ProcessCPU(pid)
		if err != nil || err1 != nil {
			return -1
		}
		return c1 - c0
	}
}

func writeJSONL(path string, data [][]hostclient.Record) error {
	var b strings.Builder
	for _, recs := range data {
		// One batch per line, its records separated by \x1e; the script
		// turns a line back into newline-delimited JSON for pyarrow.
		for i, r := range recs {
			if i > 0 {
				b.WriteByte('\x1e')
			}
			b.Write(r.Payload)
		}
		b.WriteByte('\n')
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func makeBucket(svc services.Services, bucket string) error {
	client := services.NewS3Client(svc.S3Endpoint, svc.S3AccessKey, svc.S3SecretKey, svc.S3Region)
	_, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: &bucket})
	return err
}

// settleCheckpoints waits until the checkpoint due at the table's version
// (base plus the batches consumed, one commit each) is written or failed.
func settleCheckpoints(inst *hostclient.Instance, base int64, consumed int) error {
	interval := int64(10)
	if *ckptEvery > 0 {
		interval = int64(*ckptEvery)
	}
	v := base + int64(consumed)
	due := v - v%interval
	if due <= base {
		return nil
	}
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		m, err := bench.SinkMetrics(inst)
		if err != nil {
			return err
		}
		if int64(m["last_checkpoint_version"]) >= due {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("the checkpoint at version %d was not written within 2 minutes", due)
}

// printCheckpoints prints the checkpointer's CPU (its thread's, the
// checkpoint_cpu_ms metric) over the measured window, per checkpoint, per
// commit, and as a share of the host process's CPU in the same window.
func (r result) printCheckpoints() {
	c := r.ckpt
	if c == nil {
		return
	}
	n, commits, cpu := c["checkpoints_written"], c["commits"], c["checkpoint_cpu_ms"]
	perCkpt := 0.0
	if n > 0 {
		perCkpt = cpu / n
	}
	host := float64(r.ckptHostCPU.Microseconds()) / 1000
	fmt.Printf("  checkpoints: %.0f written over %.0f commits, checkpoint CPU %.0f ms = %.2f ms/checkpoint, %.3f ms/commit; host CPU %.0f ms; checkpoint share %.2f %%"+
		" (adds encoded %.0f, copied %.0f, cache fallbacks %.0f, failures %.0f)\n",
		n, commits, cpu, perCkpt, cpu/max(commits, 1), host, 100*cpu/max(host, 1),
		c["checkpoint_adds_encoded"], c["checkpoint_adds_copied"], c["checkpoint_cache_fallbacks"], c["checkpoint_failures"])
}

// preloadTable gives the table at dir (version 0, as CreateDeltaTable made
// it) n live files: adds shaped like the sink's on this workload (5
// partitions, stats of 19 columns), 5 per version as 1000-record batches
// make them, written as one checkpoint (and _last_checkpoint) at the last
// of those versions, with no commit files before it and no data files. It
// returns that version. interval > 0 sets delta.checkpointInterval; v2
// upgrades the protocol to the v2Checkpoint feature, as Spark's
// delta.checkpointPolicy=v2 does.
func preloadTable(dir string, n, interval int, v2 bool) (int64, error) {
	ctx := context.Background()
	store, err := objstore.NewLocal(dir)
	if err != nil {
		return 0, err
	}
	st, err := deltalog.LoadState(ctx, store, nil)
	if err != nil {
		return 0, err
	}
	if v2 {
		if err := st.Apply(st.Version+1, deltalog.V2CheckpointUpgrade(st)); err != nil {
			return 0, err
		}
	}
	if interval > 0 {
		md := st.Metadata
		md.Configuration = maps.Clone(md.Configuration)
		if md.Configuration == nil {
			md.Configuration = map[string]string{}
		}
		md.Configuration["delta.checkpointInterval"] = strconv.Itoa(interval)
		if err := st.Apply(st.Version+1, []deltalog.Action{&md}); err != nil {
			return 0, err
		}
	}
	regions := []string{"eu", "us", "apac", "latam", "mea"}
	now := time.Now().UnixMilli()
	for first := 0; first < n; first += 5 {
		var actions []deltalog.Action
		for i := first; i < min(first+5, n); i++ {
			r := regions[i%5]
			stats := fmt.Sprintf(`{"numRecords":200,"minValues":{"event_id":%d,"user_id":%d,"session":"0000%04x","event":"alpha","page":"/alpha/%d","referrer":"alpha","country":"BR","device":"desktop","browser":"chrome","amount":0.%d,"discount":0.001,"score":0.0%d,"quantity":0,"items":0,"created_at":"2026-09-03T21:15:04.%03dZ","updated_at":"2026-09-03T21:15:05.%03dZ","note":"alpha alpha"},"maxValues":{"event_id":%d,"user_id":99%04d,"session":"ffff%04x","event":"hotel","page":"/hotel/99%d","referrer":"hotel","country":"US","device":"tablet","browser":"safari","amount":499.%d,"discount":0.999,"score":99.9%d,"quantity":19,"items":9,"created_at":"2026-09-03T21:15:05.%03dZ","updated_at":"2026-09-03T21:15:06.%03dZ","note":"hotel hotel"},"nullCount":{"event_id":0,"user_id":0,"session":0,"event":0,"page":0,"referrer":0,"country":0,"device":0,"browser":0,"amount":0,"discount":0,"score":0,"quantity":0,"items":0,"is_new":0,"is_paid":0,"created_at":0,"updated_at":0,"note":0}}`,
				i*200, i%9999, i%65536, i%1000, i%100, i%10, i%1000, i%1000, i*200+199, i%9999, i%65536, i%100, i%100, i%10, i%1000, i%1000)
			actions = append(actions, &deltalog.Add{Path: fmt.Sprintf("region=%s/part-00000-%08x-5f60-4718-9a0b-%012d.c000.snappy.parquet", r, i, i),
				PartitionValues: deltalog.PartitionValues{"region": &r}, Size: 20000 + int64(i%5000), ModificationTime: now, DataChange: true, Stats: stats})
		}
		if err := st.Apply(st.Version+1, actions); err != nil {
			return 0, err
		}
	}
	if _, err := deltalog.WriteCheckpoint(ctx, store, st, nil); err != nil {
		return 0, err
	}
	return st.Version, nil
}
