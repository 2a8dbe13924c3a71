package delta_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// Checkpoints and log cleanup through the real library in the C host, read
// back by delta-rs.

// createRegions creates a table partitioned by region with the given table
// properties (a JSON object), with delta-rs.
const createRegions = `
schema = pa.schema([("id", pa.int64()), ("region", pa.string()), ("body", pa.string())])
write_deltalake(uri, pa.Table.from_pylist([], schema=schema), partition_by=["region"],
                configuration=json.loads(sys.argv[2]), storage_options=opts)
`

func regionEvents(topic string, first, n int) hostclient.Batch {
	var p []string
	for i := first; i < first+n; i++ {
		p = append(p, fmt.Sprintf(`{"id":%d,"region":"r%d","body":"event %d"}`, i, i%3, i))
	}
	return jsonBatch(topic, uint64(first), p...)
}

func checkpointFile(dir string, v int64) string {
	return filepath.Join(dir, filepath.FromSlash(deltalog.CheckpointPath(v)))
}

func waitForFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkpointVersions lists the classic checkpoints in a table's log.
func checkpointVersions(t *testing.T, dir string) []int64 {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "_delta_log"))
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, e := range entries {
		if v, ok := strings.CutSuffix(e.Name(), ".checkpoint.parquet"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("checkpoint name %q", e.Name())
			}
			out = append(out, n)
		}
	}
	return out
}

// copyTable copies a table directory. The sink may still be writing to
// it: _last_checkpoint is written to a temporary file and renamed after
// the checkpoint it names exists, so a file that vanishes during the copy
// is skipped (cp -r failed on one such file in CI).
func copyTable(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatalf("copying %s: %v", src, err)
	}
	return dst
}

// tableFacts is what delta-rs reports about a table (at a version).
type tableFacts struct {
	Version int64  `json:"version"`
	IDs     []int  `json:"ids"`
	Files   int    `json:"files"`
	Txn     *int64 `json:"txn"`
}

const readFacts = `
kw = {"storage_options": opts}
if sys.argv[3] != "-1":
    kw["version"] = int(sys.argv[3])
dt = DeltaTable(uri, **kw)
ids = sorted(r["id"] for r in dt.to_pyarrow_table(columns=["id"]).to_pylist())
dump({"version": dt.version(), "ids": ids, "files": len(dt.file_uris()), "txn": dt.transaction_version(sys.argv[2])})
`

func deltaRSFacts(t *testing.T, uri, appID string, version int64) tableFacts {
	t.Helper()
	return factsBy(t, readFacts, uri, appID, version)
}

// factsBy runs script, readFacts or another reader that prints the same
// facts.
func factsBy(t *testing.T, script, uri, appID string, version int64) tableFacts {
	t.Helper()
	out := py(t, script, uri, appID, fmt.Sprint(version))
	var f tableFacts
	if err := json.Unmarshal([]byte(out), &f); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return f
}

func seq(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// A partitioned table with the sink's txns driven past several checkpoint
// intervals: checkpoints appear at the interval, delta-rs reads the table
// and the txn, and it reads them from our checkpoint when the commits
// before it are gone. Our own loader agrees.
func TestCheckpointsReadByDeltaRS(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "regions")
	uri := fileURI(dir)
	py(t, createRegions, uri, `{"delta.checkpointInterval": "5"}`)
	inst := newHarness(t).open("ck", map[string]any{"table_uri": uri})
	const batches, per = 23, 5
	for n := range batches {
		consume(t, inst, regionEvents("ck", n*per, per))
		if v := int64(n + 1); v%5 == 0 {
			waitForFile(t, checkpointFile(dir, v))
		}
	}
	got := slices.DeleteFunc(checkpointVersions(t, dir), func(v int64) bool { return v == 0 })
	if !slices.Equal(got, []int64{5, 10, 15, 20}) {
		t.Fatalf("checkpoints %v, want 5 10 15 20", got)
	}
	appID := "picomq-delta-sink/ck/ck/0"
	last := batches*per - 1
	f := deltaRSFacts(t, uri, appID, -1)
	if f.Version != batches || !slices.Equal(f.IDs, seq(0, last)) || f.Files != batches*3 || f.Txn == nil || *f.Txn != int64(last) {
		t.Fatalf("delta-rs: version %d, %d ids, %d files, txn %v", f.Version, len(f.IDs), f.Files, f.Txn)
	}

	// Without the commits before checkpoint 20 the table can only be read
	// through it.
	cp := copyTable(t, dir)
	for v := int64(0); v < 20; v++ {
		if err := os.Remove(filepath.Join(cp, filepath.FromSlash(deltalog.CommitPath(v)))); err != nil {
			t.Fatal(err)
		}
	}
	f = deltaRSFacts(t, fileURI(cp), appID, -1)
	if f.Version != batches || !slices.Equal(f.IDs, seq(0, last)) || f.Files != batches*3 || f.Txn == nil || *f.Txn != int64(last) {
		t.Fatalf("delta-rs from our checkpoint: version %d, %d ids, %d files, txn %v", f.Version, len(f.IDs), f.Files, f.Txn)
	}
	f = deltaRSFacts(t, fileURI(cp), appID, 20)
	if f.Version != 20 || !slices.Equal(f.IDs, seq(0, 20*per-1)) || f.Txn == nil || *f.Txn != int64(20*per-1) {
		t.Fatalf("delta-rs at version 20: %d ids, txn %v", len(f.IDs), f.Txn)
	}

	store, err := objstore.NewLocal(cp)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := deltalog.Load(context.Background(), store, nil)
	if err != nil || snap.CheckpointVersion != 20 || snap.Version != batches {
		t.Fatalf("our loader: %+v %v", snap, err)
	}
	if v, ok := snap.TxnVersion(appID); !ok || v != int64(last) {
		t.Fatalf("our loader: txn %d", v)
	}
	st, err := deltalog.LoadStateAt(context.Background(), store, 20, nil)
	if err != nil || st.NumFiles() != 20*3 {
		t.Fatalf("our state at 20: %v", err)
	}
	if v, _ := st.TxnVersion(appID); v != int64(20*per-1) {
		t.Fatalf("our state at 20: txn %d", v)
	}

	waitForMetric(t, inst, "checkpoints_written", 4)
	if m := sinkMetrics(t, inst); m["checkpoints_written"] != float64(4) ||
		m["last_checkpoint_version"] != float64(20) || m["checkpoint_failures"] != float64(0) {
		t.Fatalf("metrics %v", m)
	}
}

// With a zero log retention, each checkpoint deletes the commits behind it;
// delta-rs still reads every row, and the sink keeps appending.
func TestLogCleanupKeepsTableReadable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cleaned")
	uri := fileURI(dir)
	py(t, createRegions, uri, `{"delta.checkpointInterval": "5", "delta.logRetentionDuration": "interval 0 seconds"}`)
	h := newHarness(t)
	inst := h.open("cl", map[string]any{"table_uri": uri})
	for n := range 12 {
		consume(t, inst, regionEvents("cl", n*4, 4))
		if v := int64(n + 1); v%5 == 0 {
			waitForFile(t, checkpointFile(dir, v))
		}
	}
	// Cleanup runs right after checkpoint 10 and deletes file by file,
	// checkpoint 5 after the commits: wait for the whole log to settle.
	want := []string{"00000000000000000010.checkpoint.parquet", "00000000000000000010.json", "00000000000000000011.json",
		"00000000000000000012.json", "_last_checkpoint"}
	var names []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		names = names[:0]
		entries, _ := os.ReadDir(filepath.Join(dir, "_delta_log"))
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".crc") {
				names = append(names, e.Name())
			}
		}
		if slices.Equal(names, want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("log after cleanup %v, want %v", names, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	appID := "picomq-delta-sink/cl/cl/0"
	f := deltaRSFacts(t, uri, appID, -1)
	if f.Version != 12 || !slices.Equal(f.IDs, seq(0, 47)) || f.Txn == nil || *f.Txn != 47 {
		t.Fatalf("delta-rs after cleanup: version %d ids %d txn %v", f.Version, len(f.IDs), f.Txn)
	}
	waitForMetric(t, inst, "log_files_deleted", 1)
	// A new instance opens the cleaned table from its checkpoint and goes on.
	_ = inst.Close()
	inst2 := h.open("cl", map[string]any{"table_uri": uri})
	consume(t, inst2, regionEvents("cl", 40, 12)) // 40..47 replayed, 48..51 new
	if f := deltaRSFacts(t, uri, appID, -1); !slices.Equal(f.IDs, seq(0, 51)) || f.Version != 13 {
		t.Fatalf("after reopen: version %d ids %d", f.Version, len(f.IDs))
	}
}

// Two sink instances (different keys) write one table at once for a
// sustained run: every record lands exactly once, and every checkpoint
// either of them wrote gives delta-rs the same table at its version as
// the JSON commits alone do.
func TestTwoSinksCheckpointOneTable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shared")
	uri := fileURI(dir)
	py(t, createRegions, uri, `{}`) // default interval: 10
	h := newHarness(t, hostclient.Workers(4))
	const batches, per = 150, 4
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	var insts []*hostclient.Instance
	for w, key := range []string{"left", "right"} {
		inst := h.open(key, map[string]any{"table_uri": uri})
		insts = append(insts, inst)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range batches {
				first := w*100000 + n*per
				if err := inst.Consume(regionEvents(key, first, per)); err != nil {
					errs <- fmt.Errorf("%s batch %d: %w", key, n, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	final := int64(2 * batches)
	// The last multiple of 10 is checkpointed by whichever sink committed it.
	waitForFile(t, checkpointFile(dir, final-final%10))
	time.Sleep(200 * time.Millisecond) // let a checkpoint in flight finish

	want := append(seq(0, batches*per-1), seq(100000, 100000+batches*per-1)...)
	f := deltaRSFacts(t, uri, "picomq-delta-sink/left/left/0", -1)
	if f.Version != final || !slices.Equal(f.IDs, want) || f.Txn == nil || *f.Txn != int64(batches*per-1) {
		t.Fatalf("delta-rs: version %d, %d ids (want %d), txn %v", f.Version, len(f.IDs), len(want), f.Txn)
	}
	cps := slices.DeleteFunc(checkpointVersions(t, dir), func(v int64) bool { return v == 0 })
	if len(cps) < 10 {
		t.Fatalf("only %d checkpoints: %v", len(cps), cps)
	}
	for _, v := range cps {
		if v%10 != 0 {
			t.Fatalf("checkpoint off the interval: %d", v)
		}
	}
	// Every checkpoint against a JSON-only replay, one delta-rs run for all.
	jsonOnly := copyTable(t, dir)
	entries, _ := os.ReadDir(filepath.Join(jsonOnly, "_delta_log"))
	for _, e := range entries {
		if strings.Contains(e.Name(), "checkpoint") {
			os.Remove(filepath.Join(jsonOnly, "_delta_log", e.Name()))
		}
	}
	// And a copy where each checkpoint must be used: commits before the
	// newest checkpoint removed.
	out := py(t, `
versions = json.loads(sys.argv[3])
bad = []
for v in versions:
    a = DeltaTable(uri, version=v)
    b = DeltaTable(sys.argv[2], version=v)
    ia = sorted(r["id"] for r in a.to_pyarrow_table(columns=["id"]).to_pylist())
    ib = sorted(r["id"] for r in b.to_pyarrow_table(columns=["id"]).to_pylist())
    if ia != ib or len(a.file_uris()) != len(b.file_uris()):
        bad.append(v)
dump(bad)
`, uri, fileURI(jsonOnly), mustJSON(cps))
	if strings.TrimSpace(out) != "[]" {
		t.Fatalf("checkpoints that read differently from the JSON log: %s", out)
	}
	onlyLast := copyTable(t, dir)
	lastCP := cps[len(cps)-1]
	for v := int64(0); v < lastCP; v++ {
		os.Remove(filepath.Join(onlyLast, filepath.FromSlash(deltalog.CommitPath(v))))
	}
	if g := deltaRSFacts(t, fileURI(onlyLast), "picomq-delta-sink/right/right/0", -1); !slices.Equal(g.IDs, want) || g.Txn == nil || *g.Txn != 100000+int64(batches*per-1) {
		t.Fatalf("delta-rs from checkpoint %d alone: %d ids, txn %v", lastCP, len(g.IDs), g.Txn)
	}
	// Between them the two sinks wrote every checkpoint, and none failed.
	// They count a checkpoint after writing it: wait for the counts.
	deadline := time.Now().Add(30 * time.Second)
	for {
		written := 0.0
		for _, inst := range insts {
			m := sinkMetrics(t, inst)
			if m["checkpoint_failures"] != float64(0) {
				t.Fatalf("metrics %v", m)
			}
			written += m["checkpoints_written"].(float64)
		}
		if int(written) >= len(cps) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v checkpoints written for %d files", written, len(cps))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Our loader reads every checkpoint too.
	store, _ := objstore.NewLocal(dir)
	for _, v := range cps {
		st, err := deltalog.LoadStateAt(context.Background(), store, v, nil)
		if err != nil || st.CheckpointVersion != v || st.NumFiles() != int(v)*3 {
			t.Fatalf("our state at checkpoint %d: %v", v, err)
		}
	}
}

// minioStore opens the table at uri (s3://) on the test MinIO, as the
// sink's store, for the test to look at it.
func minioStore(t *testing.T, svc services.Services, uri string) objstore.Store {
	t.Helper()
	loc, err := objstore.ParseLocation(uri)
	if err != nil {
		t.Fatal(err)
	}
	store, err := objstore.Open(context.Background(), loc, objstore.Options{S3: objstore.S3Options{AccessKey: svc.S3AccessKey,
		SecretKey: svc.S3SecretKey, Region: svc.S3Region, Endpoint: svc.S3Endpoint, AllowHTTP: true}})
	if err != nil {
		t.Fatal(err)
	}
	return store
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// The same on MinIO: checkpoints, _last_checkpoint replaced in place, the
// log cleaned up, and delta-rs reading the table through it.
func TestCheckpointsOnS3(t *testing.T) {
	svc := services.Require(t)
	bucket := svc.NewBucket(t)
	cfg := minio(t, svc)
	uri := "s3://" + bucket + "/ck"
	py(t, createRegions, uri, `{"delta.checkpointInterval": "5", "delta.logRetentionDuration": "interval 0 seconds"}`)
	inst := newHarness(t).open("s3ck", with(cfg, "table_uri", uri))
	ctx := context.Background()
	store := minioStore(t, svc, uri)
	waitCheckpoint := func(v int64) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			if files, err := store.List(ctx, deltalog.CheckpointPath(v), ""); err == nil && len(files) == 1 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("checkpoint %d did not appear", v)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for n := range 12 {
		consume(t, inst, regionEvents("s3ck", n*4, 4))
		if v := int64(n + 1); v%5 == 0 {
			waitCheckpoint(v)
		}
	}
	// Cleanup behind checkpoint 10 leaves commits 10.. only.
	deadline := time.Now().Add(30 * time.Second)
	for {
		files, err := store.List(ctx, deltalog.LogDir, "")
		if err != nil {
			t.Fatal(err)
		}
		var commits []string
		for _, f := range files {
			if strings.HasSuffix(f.Path, ".json") && !strings.Contains(f.Path, "/_") {
				commits = append(commits, strings.TrimPrefix(f.Path, deltalog.LogDir))
			}
		}
		if len(commits) > 0 && commits[0] == "00000000000000000010.json" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("log not cleaned up: %v", commits)
		}
		time.Sleep(50 * time.Millisecond)
	}
	raw, err := store.Get(ctx, deltalog.LastCheckpointPath)
	var lc deltalog.LastCheckpoint
	if err != nil || json.Unmarshal(raw, &lc) != nil || lc.Version != 10 {
		t.Fatalf("_last_checkpoint %s %v", raw, err)
	}
	appID := "picomq-delta-sink/s3ck/s3ck/0"
	f := deltaRSFacts(t, uri, appID, -1)
	if f.Version != 12 || !slices.Equal(f.IDs, seq(0, 47)) || f.Txn == nil || *f.Txn != 47 {
		t.Fatalf("delta-rs: version %d ids %d txn %v", f.Version, len(f.IDs), f.Txn)
	}
	snap, err := deltalog.Load(ctx, store, nil)
	if err != nil || snap.CheckpointVersion != 10 || snap.Version != 12 {
		t.Fatalf("our loader: %+v %v", snap, err)
	}
}
