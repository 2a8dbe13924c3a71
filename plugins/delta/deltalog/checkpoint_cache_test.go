package deltalog_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
	"github.com/picomq/heavy-sinks/shared/testenv/pyenv"
)

// cacheCase drives a table through versions of random appends (and, with
// removes, removes and re-adds of files in the middle of the log),
// checkpointing with one CheckpointCache every `every` versions.
type cacheCase struct {
	name     string
	conf     map[string]string
	versions int
	every    int
	rowGroup int
	maxBytes int64
	removes  bool
}

// cachedTable is what a cacheCase wrote: the table directory and, per
// checkpoint version, the live paths a full replay of the log gives.
type cachedTable struct {
	dir    string
	live   map[int64][]string
	stats  []deltalog.CheckpointCacheStats
	states map[int64]*deltalog.State
}

func runCacheCase(t *testing.T, c cacheCase) *cachedTable {
	t.Helper()
	dir := t.TempDir()
	store, err := objstore.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	schema := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},` +
		`{"name":"name","type":"string","nullable":true,"metadata":{}},{"name":"p","type":"string","nullable":true,"metadata":{}}]}`
	created := int64(1)
	v0 := []deltalog.Action{&deltalog.Protocol{MinReaderVersion: 1, MinWriterVersion: 2},
		&deltalog.Metadata{ID: "cache-test", Format: deltalog.Format{Provider: "parquet", Options: map[string]string{}},
			SchemaString: schema, PartitionColumns: []string{"p"}, Configuration: c.conf, CreatedTime: &created}}
	put := func(v int64, actions []deltalog.Action) {
		data, err := deltalog.EncodeActions(actions)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.PutIfAbsent(ctx, deltalog.CommitPath(v), data); err != nil {
			t.Fatal(err)
		}
	}
	put(0, v0)
	st, err := deltalog.LoadState(ctx, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	cache := &deltalog.CheckpointCache{MaxBytes: c.maxBytes}
	rng := rand.New(rand.NewPCG(7, uint64(len(c.name))))
	out := &cachedTable{dir: dir, live: map[int64][]string{}, states: map[int64]*deltalog.State{}}
	var live []string
	n := 0
	for v := int64(1); v <= int64(c.versions); v++ {
		var actions []deltalog.Action
		for range 1 + rng.IntN(4) {
			part := []string{"a", "b", "c"}[rng.IntN(3)]
			path := fmt.Sprintf("p=%s/part-%05d.parquet", part, n)
			if c.removes && len(live) > 0 && rng.IntN(20) == 0 {
				path = live[rng.IntN(len(live))] // re-added: replaces the live add
				part = strings.TrimPrefix(strings.Split(path, "/")[0], "p=")
			}
			n++
			lo, hi := rng.IntN(1000), 1000+rng.IntN(1000)
			stats := fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":%d,"name":"n%03d"},"maxValues":{"id":%d,"name":"z%03d"},"nullCount":{"id":0,"name":%d}}`,
				1+rng.IntN(100), lo, lo%1000, hi, hi%1000, rng.IntN(3))
			actions = append(actions, &deltalog.Add{Path: path, PartitionValues: deltalog.PartitionValues{"p": &part},
				Size: int64(100 + rng.IntN(1000)), ModificationTime: 1700000000000 + v, DataChange: true, Stats: stats})
			if !slices.Contains(live, path) {
				live = append(live, path)
			}
		}
		if c.removes && len(live) > 4 && rng.IntN(3) == 0 {
			for range 1 + rng.IntN(3) {
				i := rng.IntN(len(live) - 2) // not the newest: removes in the middle
				ts := clock.UnixMilli()
				actions = append(actions, &deltalog.Remove{Path: live[i], DeletionTimestamp: &ts, DataChange: true})
				live = slices.Delete(live, i, i+1)
			}
		}
		actions = append(actions, &deltalog.Txn{AppID: "app", Version: v})
		put(v, actions)
		if err := st.Apply(v, actions); err != nil {
			t.Fatal(err)
		}
		if v%int64(c.every) != 0 {
			continue
		}
		res, err := deltalog.WriteCheckpoint(ctx, store, st, &deltalog.CheckpointOptions{
			Cache: cache, RowGroupRows: c.rowGroup, Now: clockNow})
		if err != nil {
			t.Fatalf("checkpoint %d: %v", v, err)
		}
		if res.Adds != int64(len(live)) || res.Cache.AddsEncoded+res.Cache.AddsCopied != res.Adds {
			t.Fatalf("checkpoint %d: %d adds (%+v), %d live", v, res.Adds, res.Cache, len(live))
		}
		out.stats = append(out.stats, res.Cache)
		out.live[v] = slices.Sorted(slices.Values(live))

		// Our reader, from the checkpoint alone, finds exactly the state a
		// replay of the log gives: every add with its fields, the removes,
		// the txn, the metadata.
		data, err := store.Get(ctx, deltalog.CheckpointPath(v))
		if err != nil {
			t.Fatal(err)
		}
		only := deltalog.NewMemStore()
		only.Put(deltalog.CheckpointPath(v), data)
		got, err := deltalog.LoadState(ctx, only, nil)
		if err != nil {
			t.Fatalf("reading checkpoint %d: %v", v, err)
		}
		sameState(t, v, got, st)
	}
	return out
}

// sameState compares two states' files, tombstones, txns and metadata.
func sameState(t *testing.T, v int64, got, want *deltalog.State) {
	t.Helper()
	if got.NumFiles() != want.NumFiles() || got.Version != want.Version || !sameDefinition(got, want) {
		t.Fatalf("checkpoint %d: %d files at version %d, want %d at %d", v, got.NumFiles(), got.Version, want.NumFiles(), want.Version)
	}
	for a := range want.Files() {
		g, ok := got.File(a.Path)
		if !ok {
			t.Fatalf("checkpoint %d: %s missing", v, a.Path)
		}
		a.DataChange = false
		if gj, wj := mustMarshal(t, g), mustMarshal(t, a); gj != wj {
			t.Fatalf("checkpoint %d: add\n%s\nwant\n%s", v, gj, wj)
		}
	}
	if got.NumTombstones() != want.NumTombstones() {
		t.Fatalf("checkpoint %d: %d tombstones, want %d", v, got.NumTombstones(), want.NumTombstones())
	}
	if gv, _ := got.TxnVersion("app"); gv != v {
		t.Fatalf("checkpoint %d: txn %d", v, gv)
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkByPython has pyarrow read every checkpoint (the add paths, and each
// row group's statistics against its values) and delta-rs load every
// checkpointed version from its checkpoint alone (the commits up to the
// last checkpoint are deleted first).
func checkByPython(t *testing.T, tb *cachedTable) {
	t.Helper()
	last := slices.Max(slices.Collect(func(yield func(int64) bool) {
		for v := range tb.live {
			if !yield(v) {
				return
			}
		}
	}))
	for v := int64(0); v <= last; v++ {
		if err := os.Remove(filepath.Join(tb.dir, filepath.FromSlash(deltalog.CommitPath(v)))); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string][]string{}
	for v, paths := range tb.live {
		want[fmt.Sprint(v)] = paths
	}
	raw, _ := json.Marshal(want)
	wantFile := filepath.Join(t.TempDir(), "want.json")
	if err := os.WriteFile(wantFile, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	out := pyenv.Run(t, checkpointCheckScript, tb.dir, wantFile)
	if !strings.Contains(out, "ok ") {
		t.Fatalf("python: %s", out)
	}
	t.Log(strings.TrimSpace(out))
}

const checkpointCheckScript = `
import sys, json, os
import pyarrow as pa, pyarrow.parquet as pq, pyarrow.compute as pc
from deltalake import DeltaTable
d, want = sys.argv[1], json.load(open(sys.argv[2]))

def leaves(arr, name):
    # flattened leaf arrays of a struct column (parent nulls applied);
    # lists and maps are skipped
    if pa.types.is_struct(arr.type):
        for f, child in zip(arr.type, arr.flatten()):
            yield from leaves(child, name + "." + f.name)
    elif not (pa.types.is_list(arr.type) or pa.types.is_map(arr.type)):
        yield name, arr

row_groups = 0
for v, paths in want.items():
    f = os.path.join(d, "_delta_log", "%020d.checkpoint.parquet" % int(v))
    pf = pq.ParquetFile(f)
    t = pf.read()
    adds = t.column("add").combine_chunks()
    got = sorted(p for p, ok in zip(adds.field("path").to_pylist(), adds.is_valid().to_pylist()) if ok)
    assert got == paths, ("pyarrow", v, len(got), len(paths))
    md = pf.metadata
    row_groups += md.num_row_groups
    index = {md.row_group(0).column(j).path_in_schema: j for j in range(md.num_columns)}
    for i in range(md.num_row_groups):
        rg = pf.read_row_group(i)
        for top in rg.column_names:
            for name, arr in leaves(rg.column(top).combine_chunks(), top):
                j = index.get(name)
                if j is None:
                    continue
                s = md.row_group(i).column(j).statistics
                if s is None:
                    continue
                assert s.null_count == arr.null_count, (v, i, name, s.null_count, arr.null_count)
                if s.has_min_max and arr.null_count < len(arr):
                    mm = pc.min_max(arr).as_py()
                    assert (s.min, s.max) == (mm["min"], mm["max"]), (v, i, name, s.min, s.max, mm)
    dt = DeltaTable("file://" + d, version=int(v))
    files = sorted(u.removeprefix("file://") for u in dt.file_uris())
    assert files == sorted(os.path.join(d, p) for p in paths), ("delta-rs", v, files[:2], paths[:2])
print("ok %d checkpoints, %d row groups" % (len(want), row_groups))
`

func TestCheckpointCacheManyRowGroupsWithRemoves(t *testing.T) {
	tb := runCacheCase(t, cacheCase{name: "removes", versions: 150, every: 3, rowGroup: 8, removes: true})
	copied := int64(0)
	for _, s := range tb.stats {
		copied += s.AddsCopied
	}
	if copied == 0 {
		t.Fatal("no add was ever copied from the cache")
	}
	checkByPython(t, tb)
}

func TestCheckpointCacheAppendsEncodeOnlyNewAdds(t *testing.T) {
	const rowGroup = 16
	tb := runCacheCase(t, cacheCase{name: "appends", versions: 200, every: 5, rowGroup: rowGroup,
		conf: map[string]string{"delta.checkpoint.writeStatsAsStruct": "true"}})
	prev := int64(0)
	for i, s := range tb.stats {
		total := s.AddsEncoded + s.AddsCopied
		// New adds, plus at most the last group's when it filled up.
		if i > 0 && s.AddsEncoded > total-prev+rowGroup+rowGroup {
			t.Fatalf("checkpoint %d encoded %d adds for %d new", i, s.AddsEncoded, total-prev)
		}
		prev = total
	}
	checkByPython(t, tb)
}

func TestCheckpointCacheFallsBackOverItsBound(t *testing.T) {
	tb := runCacheCase(t, cacheCase{name: "fallback", versions: 40, every: 4, rowGroup: 8, maxBytes: 1, removes: true})
	for i, s := range tb.stats {
		if !s.Dropped || s.AddsCopied != 0 {
			t.Fatalf("checkpoint %d: %+v, want dropped and nothing copied", i, s)
		}
	}
	checkByPython(t, tb)
}
