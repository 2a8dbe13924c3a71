// Command deltabench measures the Delta Lake sink end to end: the real
// libpicomq_connector_delta_sink.so in the C host, appending 1000-record
// batches of ~300-byte JSON records with 20 mixed columns (timestamps as
// strings that need coercion, one partition column) to a table delta-rs
// created, on file:// and on MinIO. In the same run it appends the same
// batches with delta-rs (write_deltalake, mode append, table kept open,
// JSON parsed by pyarrow) and prints our throughput as a ratio to it.
//
//	go run ./cmd/deltabench -batches 200            (make bench-delta)
//
// Needs dist/ (make build; or $PICOMQ_DIST), the Python env (buildscripts/pyenv.sh) and, for
// the s3 target, the services (.services.env from buildscripts/services.sh).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/picomq/heavy-sinks/shared/hostdriver"
	"github.com/picomq/heavy-sinks/shared/testenv"
	"github.com/picomq/heavy-sinks/shared/testenv/services"
)

var (
	batches   = flag.Int("batches", 200, "batches per target")
	batchSize = flag.Int("batch-size", 1000, "records per batch")
	targets   = flag.String("targets", "file,s3", "comma-separated: file, s3")
	withRS    = flag.Bool("delta-rs", true, "also run delta-rs on the same batches")
)

const createTable = `
import sys, json, pyarrow as pa
from deltalake import write_deltalake
schema = pa.schema([
    ("event_id", pa.int64()), ("user_id", pa.int64()), ("session", pa.string()), ("event", pa.string()),
    ("page", pa.string()), ("referrer", pa.string()), ("country", pa.string()), ("device", pa.string()),
    ("browser", pa.string()), ("amount", pa.float64()), ("discount", pa.float64()), ("score", pa.float64()),
    ("quantity", pa.int32()), ("items", pa.int32()), ("is_new", pa.bool_()), ("is_paid", pa.bool_()),
    ("created_at", pa.timestamp("us", tz="UTC")), ("updated_at", pa.timestamp("us", tz="UTC")),
    ("note", pa.string()), ("region", pa.string()),
])
write_deltalake(sys.argv[1], pa.Table.from_pylist([], schema=schema), partition_by=["region"], storage_options=json.loads(sys.argv[2]) or None)
`

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

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "deltabench:", err)
		os.Exit(1)
	}
}

func run() error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	dist, err := testenv.DistDir()
	if err != nil {
		return err
	}
	py, err := exec.Command(filepath.Join(root, "buildscripts", "pyenv.sh")).Output()
	if err != nil {
		return fmt.Errorf("pyenv: %w", err)
	}
	python := strings.TrimSpace(string(py))
	work, err := os.MkdirTemp("", "deltabench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	data, rawBytes := generate(*batches, *batchSize)
	jsonl := filepath.Join(work, "batches.jsonl")
	if err := writeJSONL(jsonl, data); err != nil {
		return err
	}
	fmt.Printf("workload: %d batches x %d records, %.0f bytes/record, 20 columns (2 timestamp strings), partitioned by region\n",
		*batches, *batchSize, float64(rawBytes)/float64(*batches**batchSize))

	for _, target := range strings.Split(*targets, ",") {
		var uri string
		opts := map[string]string{}
		cfg := map[string]any{}
		switch target {
		case "file":
			uri = "file://" + filepath.Join(work, "ours")
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
		default:
			return fmt.Errorf("unknown target %q", target)
		}
		optsJSON, _ := json.Marshal(opts)
		if out, err := exec.Command(python, "-c", createTable, uri, string(optsJSON)).CombinedOutput(); err != nil {
			return fmt.Errorf("create table: %v\n%s", err, out)
		}
		cfg["table_uri"] = uri
		ours, err := runOurs(dist, cfg, data)
		if err != nil {
			return err
		}
		ours.print("picomq delta sink", target, rawBytes)
		if !*withRS {
			continue
		}
		rsURI := strings.TrimSuffix(uri, "/ours") + "/delta-rs"
		if out, err := exec.Command(python, "-c", createTable, rsURI, string(optsJSON)).CombinedOutput(); err != nil {
			return fmt.Errorf("create table: %v\n%s", err, out)
		}
		cmd := exec.Command(python, "-c", deltaRSBench, rsURI, string(optsJSON), jsonl)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("delta-rs: %v", err)
		}
		var rs struct {
			Seconds   float64   `json:"seconds"`
			Latencies []float64 `json:"latencies"`
			MaxRSSKB  int64     `json:"max_rss_kb"`
		}
		if err := json.Unmarshal(out, &rs); err != nil {
			return fmt.Errorf("delta-rs output %q: %v", out, err)
		}
		theirs := result{elapsed: time.Duration(rs.Seconds * float64(time.Second)), rssKB: rs.MaxRSSKB, records: *batches * *batchSize}
		for _, l := range rs.Latencies {
			theirs.latencies = append(theirs.latencies, time.Duration(l*float64(time.Second)))
		}
		theirs.print("delta-rs write_deltalake", target, rawBytes)
		fmt.Printf("  ratio (%s): picomq / delta-rs throughput = %.2fx\n", target, theirs.elapsed.Seconds()/ours.elapsed.Seconds())
	}
	return nil
}

type result struct {
	elapsed   time.Duration
	latencies []time.Duration
	rssKB     int64
	records   int
}

func (r result) print(who, target string, rawBytes int) {
	slices.Sort(r.latencies)
	pct := func(p float64) time.Duration {
		return r.latencies[min(len(r.latencies)-1, int(p*float64(len(r.latencies))))]
	}
	fmt.Printf("%-26s %-4s %9.0f records/s %7.1f MB/s  p50 %7.2f ms  p99 %7.2f ms  peak RSS %6.1f MiB\n",
		who, target, float64(r.records)/r.elapsed.Seconds(), float64(rawBytes)/r.elapsed.Seconds()/1e6,
		ms(pct(0.50)), ms(pct(0.99)), float64(r.rssKB)/1024)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func runOurs(dist string, cfg map[string]any, data [][]hostdriver.Record) (result, error) {
	ctx := context.Background()
	h, err := hostdriver.Start(ctx, filepath.Join(dist, "picomq-host"), hostdriver.Workers(1), hostdriver.Quarantine(0))
	if err != nil {
		return result{}, err
	}
	defer h.Close()
	lib, err := h.Load(filepath.Join(dist, "libpicomq_connector_delta_sink.so"))
	if err != nil {
		return result{}, err
	}
	def, _ := json.Marshal(map[string]any{"key": "bench", "name": "bench", "version": 0, "plugin_config": cfg})
	inst, err := lib.Open(string(def))
	if err != nil {
		return result{}, err
	}
	r := result{records: len(data) * len(data[0])}
	start := time.Now()
	for _, recs := range data {
		t0 := time.Now()
		if err := inst.Consume(hostdriver.Batch{Attempt: 1, Topic: "bench", Schema: "json", Records: recs}); err != nil {
			return r, err
		}
		r.latencies = append(r.latencies, time.Since(t0))
	}
	r.elapsed = time.Since(start)
	_, r.rssKB = hostdriver.ProcessMemory(h.Pid())
	return r, inst.Close()
}

func generate(nb, size int) ([][]hostdriver.Record, int) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}
	regions := []string{"eu", "us", "apac", "latam", "mea"}
	base := time.Date(2026, 9, 3, 21, 15, 4, 0, time.UTC)
	total := 0
	out := make([][]hostdriver.Record, nb)
	for b := range nb {
		recs := make([]hostdriver.Record, size)
		for i := range size {
			n := b*size + i
			ts := base.Add(time.Duration(n) * time.Millisecond)
			p := fmt.Sprintf(`{"event_id":%d,"user_id":%d,"session":"%08x","event":"%s","page":"/%s/%d","referrer":"%s","country":"%s","device":"%s","browser":"%s","amount":%.2f,"discount":%.3f,"score":%.4f,"quantity":%d,"items":%d,"is_new":%t,"is_paid":%t,"created_at":"%s","updated_at":"%s","note":"%s %s","region":"%s"}`,
				n, rng.IntN(1_000_000), rng.Uint32(), words[rng.IntN(8)], words[rng.IntN(8)], rng.IntN(1000), words[rng.IntN(8)],
				[]string{"NO", "DE", "US", "BR", "JP"}[rng.IntN(5)], []string{"mobile", "desktop", "tablet"}[rng.IntN(3)],
				[]string{"firefox", "chrome", "safari"}[rng.IntN(3)], rng.Float64()*500, rng.Float64(), rng.Float64()*100,
				rng.IntN(20), rng.IntN(10), rng.IntN(2) == 0, rng.IntN(3) > 0,
				ts.Format(time.RFC3339Nano), ts.Add(time.Second).Format("2006-01-02 15:04:05.000"),
				words[rng.IntN(8)], words[rng.IntN(8)], regions[rng.IntN(len(regions))])
			recs[i] = hostdriver.Record{Offset: uint64(n), TimestampMs: ts.UnixMilli(), Payload: []byte(p)}
			total += len(p)
		}
		out[b] = recs
	}
	return out, total
}

func writeJSONL(path string, data [][]hostdriver.Record) error {
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
