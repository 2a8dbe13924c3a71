package delta_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
	"github.com/picomq/heavy-sinks/shared/sdk"
	"github.com/picomq/heavy-sinks/shared/sdk/sdktest"
)

// smallTable creates a table (id long, region string, partitioned by
// region) with the given table properties and returns its directory.
func smallTable(t *testing.T, conf map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	schema := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"region","type":"string","nullable":true,"metadata":{}}]}`
	if conf == nil {
		conf = map[string]string{}
	}
	md, _ := json.Marshal(map[string]any{"metaData": map[string]any{"id": "small", "format": map[string]any{"provider": "parquet", "options": map[string]any{}},
		"schemaString": schema, "partitionColumns": []string{"region"}, "configuration": conf, "createdTime": 0}})
	log := `{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}` + "\n" + string(md) + "\n"
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "_delta_log", "00000000000000000000.json"), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func openSink(t *testing.T, key, dir string) (uint64, *sdktest.Logs) {
	t.Helper()
	def, _ := json.Marshal(map[string]any{"key": key, "plugin_config": map[string]any{"table_uri": "file://" + dir}})
	logs := &sdktest.Logs{}
	h, err := sdk.Open(def, logs.Log)
	if err != nil {
		t.Fatal(err)
	}
	return h, logs
}

func smallBatch(topic string, first, n int) *sdk.Batch {
	b := &sdk.Batch{Topic: topic, Schema: "json", Attempt: 1}
	for i := first; i < first+n; i++ {
		b.Records = append(b.Records, sdk.Record{Offset: uint64(i), Payload: []byte(fmt.Sprintf(`{"id":%d,"region":"r%d"}`, i, i%3))})
	}
	return b
}

func sinkMetrics(t *testing.T, h uint64) map[string]any {
	t.Helper()
	raw, err := sdk.Metrics(h)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Sink map[string]any `json:"sink"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m.Sink
}

// waitFor polls cond for up to 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var ctx = context.Background()

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

func ckptFile(dir string, v int64) string {
	return filepath.Join(dir, filepath.FromSlash(deltalog.CheckpointPath(v)))
}

func TestSinkWritesCheckpointsAtTheInterval(t *testing.T) {
	t.Setenv(sdk.LogLevelEnv, "debug")
	dir := smallTable(t, map[string]string{"delta.checkpointInterval": "5"})
	h, logs := openSink(t, "ck", dir)
	defer sdk.Close(h)
	for i := range 17 {
		if err := sdk.Consume(h, smallBatch("t", i*4, 4)); err != nil {
			t.Fatal(err)
		}
		// Wait for each checkpoint, so none is coalesced into the next.
		if v := int64(i + 1); v%5 == 0 {
			waitFor(t, fmt.Sprintf("checkpoint %d", v), func() bool { return exists(ckptFile(dir, v)) })
		}
	}
	waitFor(t, "metrics", func() bool {
		m := sinkMetrics(t, h)
		return m["checkpoints_written"] == float64(3) && m["last_checkpoint_version"] == float64(15)
	})
	if m := sinkMetrics(t, h); m["checkpoint_failures"] != float64(0) || m["log_files_deleted"] != float64(0) {
		t.Fatalf("metrics %v", m)
	}
	for v := int64(1); v <= 17; v++ {
		if v%5 != 0 && exists(ckptFile(dir, v)) {
			t.Fatalf("unexpected checkpoint at %d", v)
		}
	}
	if !logs.Contains("wrote Delta checkpoint") {
		t.Fatalf("no checkpoint log line: %v", logs.Lines())
	}

	// The checkpoint holds the whole table: read from it alone (commits
	// before it hidden), the state and the txn match the full log.
	store, _ := objstore.NewLocal(dir)
	full, err := deltalog.LoadState(ctx, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := deltalog.Load(ctx, store, nil)
	if err != nil || snap.CheckpointVersion != 15 || snap.Version != 17 {
		t.Fatalf("snapshot %+v %v", snap, err)
	}
	appID := "picomq-delta-sink/ck/t/0"
	if v, ok := snap.TxnVersion(appID); !ok || v != 67 {
		t.Fatalf("txn %d %v", v, ok)
	}
	cp, err := deltalog.LoadStateAt(ctx, store, 15, nil)
	if err != nil || cp.CheckpointVersion != 15 {
		t.Fatalf("state at 15: %v", err)
	}
	if v, _ := cp.TxnVersion(appID); v != 59 {
		t.Fatalf("txn at 15: %d", v)
	}
	if full.NumFiles() != 17*3 {
		t.Fatalf("%d files", full.NumFiles())
	}
}

// A sink opened on a table that missed a checkpoint writes one at once.
func TestSinkCatchesUpAMissedCheckpoint(t *testing.T) {
	dir := smallTable(t, nil)
	store, _ := objstore.NewLocal(dir)
	snap, err := deltalog.Load(ctx, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		p := "r0"
		res, err := deltalog.CommitAppend(ctx, store, snap, deltalog.AppendCommit{Files: []deltalog.DataFile{
			{Path: fmt.Sprintf("region=r0/%d.parquet", i), PartitionValues: deltalog.PartitionValues{"region": &p}, Size: 1}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		snap = res.Snapshot
	}
	h, logs := openSink(t, "late", dir)
	defer sdk.Close(h)
	waitFor(t, "checkpoint 12", func() bool { return exists(ckptFile(dir, 12)) })
	if !logs.Contains("missed a checkpoint") {
		t.Fatalf("logs %v", logs.Lines())
	}
	// Up to date now: nothing is scheduled on the next open.
	h2, logs2 := openSink(t, "late2", dir)
	sdk.Close(h2)
	if logs2.Contains("missed a checkpoint") {
		t.Fatal("a checkpointed table reported as missing one")
	}
}

// With a zero log retention the commits behind each checkpoint go, and the
// table keeps loading.
func TestSinkCleansUpTheLog(t *testing.T) {
	dir := smallTable(t, map[string]string{"delta.checkpointInterval": "4", "delta.logRetentionDuration": "interval 0 seconds"})
	h, _ := openSink(t, "clean", dir)
	for i := range 9 {
		if err := sdk.Consume(h, smallBatch("t", i*2, 2)); err != nil {
			t.Fatal(err)
		}
	}
	// Checkpoint 4 may be coalesced into 8 (both due while the first
	// runs); either way the log ends the same.
	want := []string{"00000000000000000008.checkpoint.parquet", "00000000000000000008.json", "00000000000000000009.json", "_last_checkpoint"}
	var names []string
	// The checkpointer counts a cleanup's deletions when the cleanup
	// returns, a moment after the last file went: wait for both.
	waitFor(t, "cleanup", func() bool {
		entries, _ := os.ReadDir(filepath.Join(dir, "_delta_log"))
		names = names[:0]
		for _, e := range entries {
			names = append(names, e.Name())
		}
		n, _ := sinkMetrics(t, h)["log_files_deleted"].(float64)
		return slices.Equal(names, want) && n >= 8
	})
	if n := sinkMetrics(t, h)["log_files_deleted"]; n != float64(8) && n != float64(9) {
		t.Fatalf("log_files_deleted %v", n)
	}
	sdk.Close(h)
	store, _ := objstore.NewLocal(dir)
	st, err := deltalog.LoadState(ctx, store, nil)
	if err != nil || st.NumFiles() != 9*2 || st.Version != 9 {
		t.Fatalf("after cleanup: %v", err)
	}
	// A new instance continues the table.
	h, _ = openSink(t, "clean", dir)
	defer sdk.Close(h)
	if err := sdk.Consume(h, smallBatch("t", 18, 2)); err != nil {
		t.Fatal(err)
	}
}

// Close stops the checkpointer promptly even when a checkpoint was due.
func TestSinkCloseStopsCheckpointer(t *testing.T) {
	dir := smallTable(t, map[string]string{"delta.checkpointInterval": "1"})
	h, _ := openSink(t, "stop", dir)
	for i := range 3 {
		if err := sdk.Consume(h, smallBatch("t", i, 1)); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	if err := sdk.Close(h); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("close took %v", d)
	}
}
