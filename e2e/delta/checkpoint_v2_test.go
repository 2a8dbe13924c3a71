package delta_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
)

// V2 checkpoints with sidecars through the real library in the C host, on
// a table with the v2Checkpoint feature, read back by delta-rs (its
// DataFusion reader: the pyarrow dataset refuses the v2Checkpoint reader
// feature whatever the checkpoint looks like).

// upgradeToV2Checkpoints commits the v2Checkpoint feature and
// delta.checkpointPolicy=v2 to the table in store, as Spark's ALTER TABLE
// ... SET TBLPROPERTIES ('delta.checkpointPolicy' = 'v2') does.
func upgradeToV2Checkpoints(t *testing.T, store deltalog.Store) int64 {
	t.Helper()
	ctx := context.Background()
	st, err := deltalog.LoadState(ctx, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := deltalog.EncodeActions(deltalog.V2CheckpointUpgrade(st))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.PutIfAbsent(ctx, deltalog.CommitPath(st.Version+1), data); err != nil {
		t.Fatal(err)
	}
	return st.Version + 1
}

// waitLastCheckpoint waits until _last_checkpoint names version v (or a
// later one).
func waitLastCheckpoint(t *testing.T, store deltalog.Store, v int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var lc deltalog.LastCheckpoint
		raw, err := store.Get(context.Background(), deltalog.LastCheckpointPath)
		if err == nil && json.Unmarshal(raw, &lc) == nil && lc.Version >= v {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("_last_checkpoint did not reach version %d: %s", v, raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// v2Checkpoints maps each V2 checkpoint's version to the sidecars it
// references.
func v2Checkpoints(t *testing.T, dir string) map[int64][]string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "_delta_log"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64][]string{}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".checkpoint.parquet") {
			t.Fatalf("a classic checkpoint on a v2Checkpoint table: %s", e.Name())
		}
		if !strings.Contains(e.Name(), ".checkpoint.") || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		var v int64
		if _, err := fmt.Sscanf(e.Name()[:20], "%d", &v); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(dir, "_delta_log", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		actions, err := deltalog.ParseActions(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range actions {
			switch a := a.(type) {
			case *deltalog.Sidecar:
				out[v] = append(out[v], a.Path)
			case *deltalog.Add, *deltalog.Remove:
				t.Fatalf("checkpoint %d has a file action inline", v)
			}
		}
	}
	return out
}

const readFactsSQL = `
from deltalake import QueryBuilder
kw = {"storage_options": opts}
if sys.argv[3] != "-1":
    kw["version"] = int(sys.argv[3])
dt = DeltaTable(uri, **kw)
rows = pa.table(QueryBuilder().register("t", dt).execute("select id from t").read_all()).to_pylist()
dump({"version": dt.version(), "ids": sorted(r["id"] for r in rows), "files": len(dt.file_uris()),
      "txn": dt.transaction_version(sys.argv[2])})
`

func deltaRSFactsSQL(t *testing.T, uri, appID string, version int64) tableFacts {
	t.Helper()
	return factsBy(t, readFactsSQL, uri, appID, version)
}

// The sink driven past many checkpoint intervals on a v2Checkpoint table
// writes UUID-named JSON checkpoints whose adds are in sidecars, later
// checkpoints referencing earlier sidecars again; delta-rs reads every row
// and the txn from the newest checkpoint alone and at an older checkpoint's
// version, and so does our loader.
func TestV2CheckpointsWithSidecarsReadByDeltaRS(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "regions")
	uri := fileURI(dir)
	py(t, createRegions, uri, `{"delta.checkpointInterval": "3"}`)
	local, err := objstore.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	base := upgradeToV2Checkpoints(t, local)
	inst := newHarness(t).open("v2", map[string]any{"table_uri": uri})
	const batches, per = 40, 4
	for n := range batches {
		consume(t, inst, regionEvents("v2", n*per, per))
		// Wait for each checkpoint, so none is coalesced into the next.
		if v := base + int64(n) + 1; v%3 == 0 {
			waitLastCheckpoint(t, local, v)
		}
	}
	latest := base + batches
	last := latest - latest%3
	waitLastCheckpoint(t, local, last)

	cps := v2Checkpoints(t, dir)
	if len(cps) != int(batches/3) || cps[last] == nil {
		t.Fatalf("V2 checkpoints at %v, want %d up to %d", slices.Sorted(maps.Keys(cps)), batches/3, last)
	}
	// Sidecars are reused: some sidecar is referenced by several
	// checkpoints, and each exists.
	refs := map[string]int{}
	for _, names := range cps {
		for _, n := range names {
			refs[n]++
			if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(deltalog.SidecarDir), n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if slices.Max(slices.Collect(maps.Values(refs))) < 2 {
		t.Fatalf("no sidecar referenced by two checkpoints: %v", cps)
	}

	appID := "picomq-delta-sink/v2/v2/0"
	lastID := batches*per - 1
	// Only the newest checkpoint and the commits after it: every row, the
	// txn, through the sidecars.
	cp := copyTable(t, dir)
	for v := int64(0); v < last; v++ {
		if err := os.Remove(filepath.Join(cp, filepath.FromSlash(deltalog.CommitPath(v)))); err != nil {
			t.Fatal(err)
		}
	}
	f := deltaRSFactsSQL(t, fileURI(cp), appID, -1)
	if f.Version != latest || !slices.Equal(f.IDs, seq(0, lastID)) || f.Files != batches*3 || f.Txn == nil || *f.Txn != int64(lastID) {
		t.Fatalf("delta-rs from our checkpoint: version %d, %d ids, %d files, txn %v", f.Version, len(f.IDs), f.Files, f.Txn)
	}
	// An older checkpoint's version, from the full log's checkpoints.
	mid := last - 15
	n := int(mid - base)
	f = deltaRSFactsSQL(t, uri, appID, mid)
	if f.Version != mid || !slices.Equal(f.IDs, seq(0, n*per-1)) || f.Files != n*3 || f.Txn == nil || *f.Txn != int64(n*per-1) {
		t.Fatalf("delta-rs at version %d: %d ids, %d files, txn %v", mid, len(f.IDs), f.Files, f.Txn)
	}

	store, err := objstore.NewLocal(cp)
	if err != nil {
		t.Fatal(err)
	}
	st, err := deltalog.LoadState(context.Background(), store, nil)
	if err != nil || st.CheckpointVersion != last || st.NumFiles() != batches*3 {
		t.Fatalf("our state: %v", err)
	}
	if v, _ := st.TxnVersion(appID); v != int64(lastID) {
		t.Fatalf("our state: txn %d", v)
	}

	if m := sinkMetrics(t, inst); m["checkpoint_failures"] != float64(0) || m["checkpoint_adds_copied"].(float64) == 0 {
		t.Fatalf("metrics %v", m)
	}
}

// The same on MinIO: sidecars and UUID-named checkpoints through the S3
// store, read back by delta-rs and by our loader.
func TestV2CheckpointsOnS3(t *testing.T) {
	svc := services.Require(t)
	bucket := svc.NewBucket(t)
	cfg := minio(t, svc)
	uri := "s3://" + bucket + "/v2"
	py(t, createRegions, uri, `{"delta.checkpointInterval": "3"}`)
	ctx := context.Background()
	store := minioStore(t, svc, uri)
	base := upgradeToV2Checkpoints(t, store)
	inst := newHarness(t).open("s3v2", with(cfg, "table_uri", uri))
	const batches, per = 14, 4
	for n := range batches {
		consume(t, inst, regionEvents("s3v2", n*per, per))
	}
	latest := base + batches
	last := latest - latest%3
	waitLastCheckpoint(t, store, last)
	sidecars, err := store.List(ctx, deltalog.SidecarDir, "")
	if err != nil || len(sidecars) == 0 {
		t.Fatalf("sidecars %v %v", sidecars, err)
	}
	appID := "picomq-delta-sink/s3v2/s3v2/0"
	lastID := batches*per - 1
	f := deltaRSFactsSQL(t, uri, appID, -1)
	if f.Version != latest || !slices.Equal(f.IDs, seq(0, lastID)) || f.Files != batches*3 || f.Txn == nil || *f.Txn != int64(lastID) {
		t.Fatalf("delta-rs: version %d, %d ids, %d files, txn %v", f.Version, len(f.IDs), f.Files, f.Txn)
	}
	st, err := deltalog.LoadState(ctx, store, nil)
	if err != nil || st.CheckpointVersion != last || st.NumFiles() != batches*3 {
		t.Fatalf("our state: %v", err)
	}
}
