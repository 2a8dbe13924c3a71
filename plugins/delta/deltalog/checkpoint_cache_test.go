package deltalog_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/pyenv"
	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
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
	v2       bool // the table has the v2Checkpoint feature: sidecars
	// The commit at upgradeAt also gives the table V2 checkpoints, and
	// the one at classicAt sets delta.checkpointPolicy back to classic.
	upgradeAt, classicAt int64
}

// cachedTable is what a cacheCase wrote: the table directory and, per
// checkpoint version, the live paths a full replay of the log gives.
type cachedTable struct {
	dir    string
	live   map[int64][]string
	stats  []deltalog.CheckpointCacheStats
	states map[int64]*deltalog.State
	// paths[v] is checkpoint v's file.
	paths map[int64]string
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
	proto := &deltalog.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}
	if c.v2 {
		proto = &deltalog.Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
			ReaderFeatures: []string{"v2Checkpoint"}, WriterFeatures: []string{"v2Checkpoint"}}
		c.conf = maps.Clone(c.conf)
		if c.conf == nil {
			c.conf = map[string]string{}
		}
		c.conf["delta.checkpointPolicy"] = "v2"
	}
	v0 := []deltalog.Action{proto,
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
	out := &cachedTable{dir: dir, live: map[int64][]string{}, states: map[int64]*deltalog.State{}, paths: map[int64]string{}}
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
		switch v {
		case c.upgradeAt:
			actions = append(actions, deltalog.V2CheckpointUpgrade(st)...)
		case c.classicAt:
			md := st.Metadata
			md.Configuration = maps.Clone(md.Configuration)
			md.Configuration["delta.checkpointPolicy"] = "classic"
			actions = append(actions, &md)
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
		out.paths[v] = res.Path

		// Our reader, from the checkpoint alone (and the sidecars), finds
		// exactly the state a replay of the log gives: every add with its
		// fields, the removes, the txn, the metadata.
		only := deltalog.NewMemStore()
		files := []string{res.Path}
		sidecars, err := store.List(ctx, deltalog.SidecarDir, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range sidecars {
			files = append(files, f.Path)
		}
		for _, p := range files {
			data, err := store.Get(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			only.Put(p, data)
		}
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
	cpaths := map[string]string{}
	for v, p := range tb.paths {
		cpaths[fmt.Sprint(v)] = p
	}
	var files []string
	for _, x := range []any{want, cpaths} {
		raw, _ := json.Marshal(x)
		f := filepath.Join(t.TempDir(), "args.json")
		if err := os.WriteFile(f, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	out := pyenv.Run(t, checkpointCheckScript, tb.dir, files[0], files[1])
	if !strings.Contains(out, "ok ") {
		t.Fatalf("python: %s", out)
	}
	t.Log(strings.TrimSpace(out))
}

const checkpointCheckScript = `
import sys, json, os
import pyarrow as pa, pyarrow.parquet as pq, pyarrow.compute as pc
from deltalake import DeltaTable
d, want, cpaths = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))

def leaves(arr, name):
    # flattened leaf arrays of a struct column (parent nulls applied);
    # lists and maps are skipped
    if pa.types.is_struct(arr.type):
        for f, child in zip(arr.type, arr.flatten()):
            yield from leaves(child, name + "." + f.name)
    elif not (pa.types.is_list(arr.type) or pa.types.is_map(arr.type)):
        yield name, arr

def parquet_files(v):
    # the checkpoint's Parquet files: the classic file, or a V2 JSON
    # checkpoint's sidecars
    f = os.path.join(d, cpaths[v])
    if not f.endswith(".json"):
        return [f]
    actions = [json.loads(l) for l in open(f)]
    assert sum("checkpointMetadata" in a for a in actions) == 1, actions[:1]
    assert not any("add" in a or "remove" in a for a in actions)
    return [os.path.join(d, "_delta_log", "_sidecars", a["sidecar"]["path"]) for a in actions if "sidecar" in a]

row_groups = 0
for v, paths in want.items():
    got = []
    for f in parquet_files(v):
        pf = pq.ParquetFile(f)
        t = pf.read()
        adds = t.column("add").combine_chunks()
        got += [p for p, ok in zip(adds.field("path").to_pylist(), adds.is_valid().to_pylist()) if ok]
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
    assert sorted(got) == paths, ("pyarrow", v, len(got), len(paths))
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

// V2 checkpoints of an appended table write only the new adds' sidecar,
// merging small sidecars size-tiered: each add is encoded a few times in
// its life, and a checkpoint references few sidecars.
func TestCheckpointV2SidecarsAppends(t *testing.T) {
	tb := runCacheCase(t, cacheCase{name: "v2 appends", versions: 400, every: 2, rowGroup: 64, v2: true,
		conf: map[string]string{"delta.checkpoint.writeStatsAsStruct": "true"}})
	var encoded, adds int64
	reused := 0
	for _, s := range tb.stats {
		encoded += s.AddsEncoded
		adds = s.AddsEncoded + s.AddsCopied
		if s.AddsCopied > 0 {
			reused++
		}
	}
	if reused < len(tb.stats)*8/10 {
		t.Fatalf("%d of %d checkpoints reused a sidecar", reused, len(tb.stats))
	}
	// log4(adds / new adds per checkpoint) merges, and the first encode.
	if limit := adds * 7; encoded > limit {
		t.Fatalf("%d adds encoded for a table of %d (limit %d)", encoded, adds, limit)
	}
	t.Logf("%d adds encoded over %d checkpoints for %d adds", encoded, len(tb.stats), adds)
	checkSidecarRefs(t, tb, 12)
	checkByPython(t, tb)
}

// With removes in the middle of the log, and sidecars full at 40 adds:
// merges stop at full sidecars, sets of more adds become several.
func TestCheckpointV2SidecarsWithRemoves(t *testing.T) {
	defer deltalog.SetSidecarFullRows(40)()
	tb := runCacheCase(t, cacheCase{name: "v2 removes", versions: 300, every: 3, rowGroup: 8, removes: true, v2: true})
	copied := int64(0)
	for _, s := range tb.stats {
		copied += s.AddsCopied
	}
	if copied == 0 {
		t.Fatal("no sidecar was ever reused")
	}
	checkSidecarRefs(t, tb, 40)
	checkByPython(t, tb)
}

// One cache follows a table from classic checkpoints to V2 ones and back
// (the policy classic, as DROP FEATURE sets first): each checkpoint holds
// the replayed state, in the format the policy asks for.
func TestCheckpointCacheAcrossPolicyChanges(t *testing.T) {
	tb := runCacheCase(t, cacheCase{name: "policy", versions: 90, every: 3, rowGroup: 8, removes: true,
		upgradeAt: 31, classicAt: 61})
	for v, path := range tb.paths {
		if v2 := v > 31 && v < 61; v2 != strings.HasSuffix(path, ".json") {
			t.Fatalf("checkpoint %d is %s", v, path)
		}
	}
	checkByPython(t, tb)
}

// checkSidecarRefs checks every V2 checkpoint references at most max
// sidecars, each of them present.
func checkSidecarRefs(t *testing.T, tb *cachedTable, max int) {
	t.Helper()
	refs := func(v int64) int {
		data, err := os.ReadFile(filepath.Join(tb.dir, tb.paths[v]))
		if err != nil {
			t.Fatal(err)
		}
		actions, err := deltalog.ParseActions(data)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, a := range actions {
			if sc, ok := a.(*deltalog.Sidecar); ok {
				n++
				if _, err := os.Stat(filepath.Join(tb.dir, deltalog.SidecarDir, sc.Path)); err != nil {
					t.Fatalf("checkpoint %d: %v", v, err)
				}
			}
		}
		return n
	}
	for _, v := range slices.Sorted(maps.Keys(tb.paths)) {
		if !strings.HasSuffix(tb.paths[v], ".json") {
			t.Fatalf("checkpoint %d is %s, not a V2 JSON checkpoint", v, tb.paths[v])
		}
		if n := refs(v); n > max {
			t.Fatalf("checkpoint %d references %d sidecars", v, n)
		}
	}
}
