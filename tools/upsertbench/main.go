// Command upsertbench measures the Delta sink's write_mode = "upsert": the
// real libpicomq_connector_delta_sink.so in the C host builds a table of
// -rows rows (key id, long; 100k-row inserts, one file each, ids in order),
// then applies -batches batches of -batch-size changes with 1 %, 10 % and
// 50 % updates of random existing keys (the rest inserts of new keys), on
// file:// and MinIO. Per ratio it prints records/s, the host's CPU per
// record and the files read and rewritten per commit. In the same run,
// delta-rs builds the same table and applies the same changes with
// DeltaTable.merge (update when matched, insert when not), the peer.
//
//	go run ./tools/upsertbench            (make bench-upsert)
//
// Needs dist/ (make build), the Python env and, for s3, the services.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/picomq/heavy-sinks/internal/testenv/hosttest"
	"github.com/picomq/heavy-sinks/internal/testenv/workload"
	"github.com/picomq/heavy-sinks/shared/hostclient"
	"github.com/picomq/heavy-sinks/tools/internal/bench"
)

var (
	rows      = flag.Int("rows", 1_000_000, "rows of the table before the changes")
	batches   = flag.Int("batches", 3, "batches per update ratio")
	batchSize = flag.Int("batch-size", 10_000, "changes per batch")
	ratios    = flag.String("ratios", "1,10,50", "update percentages, comma-separated")
	targets   = flag.String("targets", "file,s3", "comma-separated: file, s3")
	workDir   = flag.String("dir", "", "parent of the work directory (default $TMPDIR)")
	withRS    = flag.Bool("delta-rs", true, "also run delta-rs merge on the same changes")
)

const schema = `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},` +
	`{"name":"name","type":"string","nullable":true,"metadata":{}},{"name":"amount","type":"long","nullable":true,"metadata":{}},` +
	`{"name":"region","type":"string","nullable":true,"metadata":{}}]}`

const loadChunk = 100_000

// deltaRSMerge builds the table with delta-rs (the same rows, 100k per
// append) and merges each batch of the JSONL file (a batch a line, records
// separated by \x1e), printing the seconds of each merge.
const deltaRSMerge = `
import sys, json, time, io, os
import pyarrow as pa, pyarrow.json as pj
from deltalake import DeltaTable, write_deltalake
uri, opts, rows, chunk = sys.argv[1], json.loads(sys.argv[2]) or None, int(sys.argv[3]), int(sys.argv[4])
schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.int64()), ("region", pa.string())])
for lo in range(0, rows, chunk):
    ids = list(range(lo, min(rows, lo + chunk)))
    t = pa.table({"id": ids, "name": ["name %d" % i for i in ids], "amount": ids, "region": ["eu"] * len(ids)}, schema=schema)
    write_deltalake(uri, t, mode="append", storage_options=opts)
dt = DeltaTable(uri, storage_options=opts)
out = []
for line in open(sys.argv[5], "rb").read().splitlines():
    src = pj.read_json(io.BytesIO(line.replace(b"\x1e", b"\n")), parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"))
    t0 = time.perf_counter()
    m = (dt.merge(src, predicate="t.id = s.id", source_alias="s", target_alias="t")
         .when_matched_update_all().when_not_matched_insert_all().execute())
    out.append({"seconds": time.perf_counter() - t0, "files_removed": m.get("num_target_files_removed", -1),
                "files_added": m.get("num_target_files_added", -1)})
print(json.dumps(out))
sys.stdout.flush(); os._exit(0)
`

func main() { bench.Main("upsertbench", run) }

func record(id int, amount int64) hostclient.Record {
	return hostclient.Record{Payload: fmt.Appendf(nil, `{"id":%d,"name":"name %d","amount":%d,"region":"eu","_op":"u"}`, id, id, amount)}
}

// changes is the measured workload: per ratio, its batches.
type changes struct {
	ratio   int
	batches [][]hostclient.Record
}

func workloadOf(rng *rand.Rand) []changes {
	var out []changes
	next := *rows
	for _, r := range strings.Split(*ratios, ",") {
		var pct int
		fmt.Sscan(r, &pct)
		c := changes{ratio: pct}
		for range *batches {
			var b []hostclient.Record
			seen := map[int]bool{} // delta-rs merge refuses two source rows for one key
			for i := range *batchSize {
				if i*100 < pct**batchSize {
					id := rng.IntN(*rows)
					for seen[id] {
						id = rng.IntN(*rows)
					}
					seen[id] = true
					b = append(b, record(id, rng.Int64N(1<<40)))
				} else {
					b = append(b, record(next, int64(next)))
					next++
				}
			}
			c.batches = append(c.batches, b)
		}
		out = append(out, c)
	}
	return out
}

func run() error {
	env, err := bench.Setup("")
	if err != nil {
		return err
	}
	work, err := workload.WorkDir(*workDir, "upsertbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	load := make([][]hostclient.Record, 0, *rows/loadChunk+1)
	for lo := 0; lo < *rows; lo += loadChunk {
		var b []hostclient.Record
		for id := lo; id < min(*rows, lo+loadChunk); id++ {
			b = append(b, record(id, int64(id)))
		}
		load = append(load, b)
	}
	work2 := workloadOf(rand.New(rand.NewPCG(1, 2)))
	jsonl := filepath.Join(work, "changes.jsonl")
	if err := writeJSONL(jsonl, work2); err != nil {
		return err
	}
	fmt.Printf("workload: a %d-row table (key id, 4 columns, %d-row files), then %d batches x %d changes per update ratio %s%%\n",
		*rows, loadChunk, *batches, *batchSize, *ratios)
	for _, name := range strings.Split(*targets, ",") {
		tgt, err := bench.NewDeltaTarget(name, work, fmt.Sprintf("upsert-%d", time.Now().UnixNano()))
		if err != nil {
			return err
		}
		cfg := tgt.PluginConfig("ours", true)
		for k, v := range map[string]any{"write_mode": "upsert", "key_columns": "id", "create_table": true, "table_schema": schema} {
			cfg[k] = v
		}
		if err := runOurs(env.Dist, name, cfg, load, work2); err != nil {
			return err
		}
		if !*withRS {
			continue
		}
		opts, _ := json.Marshal(tgt.Storage)
		cmd := exec.Command(env.Python, "-c", deltaRSMerge, tgt.URI+"/delta-rs", string(opts), fmt.Sprint(*rows), fmt.Sprint(loadChunk), jsonl)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("delta-rs: %v", err)
		}
		var res []struct {
			Seconds      float64 `json:"seconds"`
			FilesRemoved float64 `json:"files_removed"`
			FilesAdded   float64 `json:"files_added"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			return fmt.Errorf("delta-rs output %q: %v", out, err)
		}
		i := 0
		for _, c := range work2 {
			var secs, removed float64
			for range c.batches {
				secs += res[i].Seconds
				removed += res[i].FilesRemoved
				i++
			}
			n := float64(len(c.batches) * *batchSize)
			fmt.Printf("%-22s %-4s %3d%% updates: %9.0f records/s  %7.2f s/batch  files rewritten/commit %5.1f\n",
				"delta-rs merge", name, c.ratio, n/secs, secs/float64(len(c.batches)), removed/float64(len(c.batches)))
		}
	}
	return nil
}

func runOurs(dist, target string, cfg map[string]any, load [][]hostclient.Record, work []changes) error {
	h, err := bench.StartHost(dist, 1)
	if err != nil {
		return err
	}
	defer h.Close()
	lib, err := h.Load(filepath.Join(dist, "libpicomq_connector_delta_sink.so"))
	if err != nil {
		return err
	}
	inst, err := lib.Open(bench.Definition("upsertbench", cfg))
	if err != nil {
		return err
	}
	defer inst.Close()
	var offset uint64
	consume := func(recs []hostclient.Record) error {
		for i := range recs {
			recs[i].Offset = offset
			offset++
		}
		return inst.Consume(hostclient.Batch{Attempt: 1, Topic: "upsertbench", Schema: "json", Records: recs})
	}
	t0 := time.Now()
	for _, b := range load {
		if err := consume(b); err != nil {
			return err
		}
	}
	fmt.Printf("picomq upsert          %-4s built %d rows in %.1f s\n", target, *rows, time.Since(t0).Seconds())
	for _, c := range work {
		before, err := bench.SinkMetrics(inst)
		if err != nil {
			return err
		}
		u0, s0, err := hosttest.ProcessUserSys(h.Pid())
		if err != nil {
			return err
		}
		start := time.Now()
		for _, b := range c.batches {
			if err := consume(b); err != nil {
				return err
			}
		}
		elapsed := time.Since(start)
		u1, s1, err := hosttest.ProcessUserSys(h.Pid())
		if err != nil {
			return err
		}
		after, err := bench.SinkMetrics(inst)
		if err != nil {
			return err
		}
		d := func(k string) float64 { return after[k] - before[k] }
		n := float64(len(c.batches) * *batchSize)
		commits := max(1, d("commits"))
		fmt.Printf("%-22s %-4s %3d%% updates: %9.0f records/s  %7.2f s/batch  host CPU %6.2f µs/record  files read/commit %5.1f  rewritten/commit %5.1f  old rows dropped/commit %7.0f\n",
			"picomq upsert", target, c.ratio, n/elapsed.Seconds(), elapsed.Seconds()/float64(len(c.batches)),
			bench.US(u1+s1-u0-s0)/n, d("upsert_files_read")/commits, d("upsert_files_rewritten")/commits, d("upsert_rows_dropped")/commits)
	}
	return nil
}

func writeJSONL(path string, work []changes) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, c := range work {
		for _, b := range c.batches {
			for i, r := range b {
				if i > 0 {
					w.WriteByte('\x1e')
				}
				w.Write(r.Payload)
			}
			w.WriteByte('\n')
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}
