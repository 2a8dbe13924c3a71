package deltalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

func addLine(path, part string, size int64, stats string) string {
	a := map[string]any{"path": path, "partitionValues": map[string]any{"p": part}, "size": size,
		"modificationTime": 1000 + size, "dataChange": true}
	if part == "" {
		a["partitionValues"] = map[string]any{"p": nil}
	}
	if stats != "" {
		a["stats"] = stats
	}
	b, _ := json.Marshal(map[string]any{"add": a})
	return string(b)
}

func removeLine(path string, ts int64) string {
	return fmt.Sprintf(`{"remove":{"path":%q,"deletionTimestamp":%d,"dataChange":true,"extendedFileMetadata":true,"partitionValues":{"p":"a"},"size":5}}`, path, ts)
}

func loadState(t *testing.T, s deltalog.Store) *deltalog.State {
	t.Helper()
	st, err := deltalog.LoadState(ctx, s, nil)
	if err != nil {
		t.Fatalf("LoadState: %v", err)
	}
	return st
}

// fileSummary is a comparable view of a state's live files.
func fileSummary(st *deltalog.State) []string {
	var out []string
	for a := range st.Files() {
		pv := make([]string, 0, len(a.PartitionValues))
		for _, k := range slices.Sorted(maps.Keys(a.PartitionValues)) {
			if v := a.PartitionValues[k]; v != nil {
				pv = append(pv, k+"="+*v)
			} else {
				pv = append(pv, k+"=<null>")
			}
		}
		out = append(out, fmt.Sprintf("%s pv=%v size=%d mt=%d stats=%s tags=%v dv=%s brid=%v drcv=%v cp=%q",
			a.Path, pv, a.Size, a.ModificationTime, normJSON(a.Stats), a.Tags, a.DeletionVector,
			ptr(a.BaseRowID), ptr(a.DefaultRowCommitVersion), a.ClusteringProvider))
	}
	slices.Sort(out)
	return out
}

func tombSummary(st *deltalog.State) []string {
	var out []string
	for r := range st.Tombstones() {
		out = append(out, fmt.Sprintf("%s ts=%v size=%v ext=%v pv=%d dv=%s", r.Path, ptr(r.DeletionTimestamp), ptr(r.Size),
			ptr(r.ExtendedFileMetadata), len(r.PartitionValues), r.DeletionVector))
	}
	slices.Sort(out)
	return out
}

func ptr[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// normJSON re-renders JSON with sorted keys, so stats compare by content.
func normJSON(s string) string {
	if s == "" {
		return ""
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return "!" + s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestStateReconciliation(t *testing.T) {
	s := newTable(t)
	putCommit(s, 1, addLine("p=a/1.parquet", "a", 1, ""), addLine("p=a/2.parquet", "a", 2, ""),
		`{"txn":{"appId":"app","version":5,"lastUpdated":100}}`,
		`{"domainMetadata":{"domain":"d1","configuration":"{}","removed":false}}`,
		`{"domainMetadata":{"domain":"d2","configuration":"{\"x\":1}","removed":false}}`)
	putCommit(s, 2, removeLine("p=a/1.parquet", 5000), addLine("p=a/3.parquet", "a", 3, `{"numRecords":3}`),
		`{"txn":{"appId":"app","version":7,"lastUpdated":200}}`,
		`{"domainMetadata":{"domain":"d1","configuration":"","removed":true}}`,
		`{"commitInfo":{"operation":"DELETE"}}`, `{"cdc":{"path":"_change_data/x.parquet","partitionValues":{},"size":1,"dataChange":false}}`)
	// A removed file added back: the tombstone goes, the new add wins.
	putCommit(s, 3, addLine("p=a/1.parquet", "a", 11, ""), addLine("p=b/4.parquet", "", 4, ""))
	// Same path with a deletion vector: a different logical file; the commit
	// removes the old one (path, no DV).
	putCommit(s, 4, removeLine("p=a/2.parquet", 6000),
		`{"add":{"path":"p=a/2.parquet","partitionValues":{"p":"a"},"size":2,"modificationTime":1002,"dataChange":true,`+
			`"deletionVector":{"storageType":"u","pathOrInlineDv":"ab^-aqEH.-t@S}K{vb[*k^","offset":4,"sizeInBytes":40,"cardinality":6},`+
			`"tags":{"k":"v"},"baseRowId":10,"defaultRowCommitVersion":4}}`)

	st := loadState(t, s)
	if st.Version != 4 || st.CheckpointVersion != -1 {
		t.Fatalf("version %d checkpoint %d", st.Version, st.CheckpointVersion)
	}
	want := []string{
		`p=a/1.parquet pv=[p=a] size=11 mt=1011 stats= tags=map[] dv= brid=<nil> drcv=<nil> cp=""`,
		`p=a/2.parquet pv=[p=a] size=2 mt=1002 stats= tags=map[k:v] dv={"storageType":"u","pathOrInlineDv":"ab^-aqEH.-t@S}K{vb[*k^","offset":4,"sizeInBytes":40,"cardinality":6} brid=10 drcv=4 cp=""`,
		`p=a/3.parquet pv=[p=a] size=3 mt=1003 stats={"numRecords":3} tags=map[] dv= brid=<nil> drcv=<nil> cp=""`,
		`p=b/4.parquet pv=[p=<null>] size=4 mt=1004 stats= tags=map[] dv= brid=<nil> drcv=<nil> cp=""`,
	}
	if got := fileSummary(st); !reflect.DeepEqual(got, want) {
		t.Fatalf("files:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := tombSummary(st); !reflect.DeepEqual(got, []string{`p=a/2.parquet ts=6000 size=5 ext=true pv=1 dv=`}) {
		t.Fatalf("tombstones %v", got)
	}
	if v, ok := st.TxnVersion("app"); !ok || v != 7 {
		t.Fatalf("txn %d %v", v, ok)
	}
	if d := st.Domains(); len(d) != 1 || d["d2"].Configuration != `{"x":1}` {
		t.Fatalf("domains %v", d)
	}
	// The same file list whichever version the state is loaded at and
	// advanced from.
	for from := int64(0); from <= 4; from++ {
		old, err := deltalog.LoadStateAt(ctx, s, from, nil)
		if err != nil {
			t.Fatal(err)
		}
		if old.Version != from {
			t.Fatalf("LoadStateAt(%d) gave version %d", from, old.Version)
		}
		n, err := old.Update(ctx, s, -1)
		if err != nil || n != int(4-from) {
			t.Fatalf("Update from %d: %d, %v", from, n, err)
		}
		if !reflect.DeepEqual(fileSummary(old), fileSummary(st)) || !reflect.DeepEqual(tombSummary(old), tombSummary(st)) {
			t.Fatalf("state advanced from %d differs", from)
		}
	}
	if _, err := deltalog.LoadStateAt(ctx, s, 9, nil); err == nil {
		t.Fatal("LoadStateAt a missing version succeeded")
	}
}

func TestStateApplyAndUpdate(t *testing.T) {
	s := newTable(t)
	st := loadState(t, s)
	if err := st.Apply(2, nil); err == nil {
		t.Fatal("Apply skipped a version")
	}
	if err := st.Apply(1, []deltalog.Action{&deltalog.Add{Path: "x", Size: 1}}); err != nil || st.NumFiles() != 1 || st.Version != 1 {
		t.Fatalf("Apply: %v, %d files", err, st.NumFiles())
	}
	// Update bounded by a version reads no further.
	putCommit(s, 1, addLine("a", "a", 1, ""))
	putCommit(s, 2, addLine("b", "a", 1, ""))
	putCommit(s, 3, addLine("c", "a", 1, ""))
	st = loadState(t, newTableAt(t, s, 0))
	if n, err := st.Update(ctx, s, 2); err != nil || n != 2 || st.Version != 2 || st.NumFiles() != 2 {
		t.Fatalf("Update to 2: %d %v v%d %d files", n, err, st.Version, st.NumFiles())
	}
	if n, err := st.Update(ctx, s, 2); err != nil || n != 0 {
		t.Fatalf("second Update: %d %v", n, err)
	}
	// A gap (commits cleaned up behind a newer checkpoint) is reported.
	s.Delete(ctx, deltalog.CommitPath(3))
	putCommit(s, 4, addLine("d", "a", 1, ""))
	var gap *deltalog.LogGapError
	if _, err := st.Update(ctx, s, -1); !errors.As(err, &gap) || gap.Missing != 3 {
		t.Fatalf("Update over a gap: %v", err)
	}
}

// newTableAt copies versions 0..v of s into a fresh store.
func newTableAt(t *testing.T, s *deltalog.MemStore, v int64) *deltalog.MemStore {
	t.Helper()
	out := deltalog.NewMemStore()
	for i := int64(0); i <= v; i++ {
		data, err := s.Get(ctx, deltalog.CommitPath(i))
		if err != nil {
			t.Fatal(err)
		}
		out.Put(deltalog.CommitPath(i), data)
	}
	return out
}

// hideCheckpoints is a store without checkpoints or _last_checkpoint: the
// log replayed from the JSON commits alone.
type hideCheckpoints struct{ deltalog.Store }

func (h hideCheckpoints) List(c2 context.Context, prefix, startAfter string) ([]deltalog.FileInfo, error) {
	files, err := h.Store.List(c2, prefix, startAfter)
	return slices.DeleteFunc(files, func(f deltalog.FileInfo) bool {
		return strings.Contains(f.Path, ".checkpoint.") || strings.HasSuffix(f.Path, "_last_checkpoint")
	}), err
}

func (h hideCheckpoints) Get(c2 context.Context, path string) ([]byte, error) {
	if strings.HasSuffix(path, "_last_checkpoint") {
		return nil, deltalog.ErrNotFound
	}
	return h.Store.Get(c2, path)
}

// Every fixture table loads with the file list delta-rs reports, and for
// tables that keep every commit, a state read from the checkpoint (Spark's
// classic, multi-part, V2 with sidecars, stats only as stats_parsed) has
// the same files, stats included, as one replayed from the JSON commits.
func TestLoadStateFixtures(t *testing.T) {
	counts := map[string]int{ // delta-rs 1.6 len(file_uris()) where it reads the table
		"basic_partitioned": 6, "app-txn-checkpoint": 4, "with_checkpoint_no_last_checkpoint": 1,
		"v1-single-part-struct-stats-only": 5, "v1-multi-part-partitioned-struct-stats-only": 5, "mixed-nulls": 3,
		"compacted-log-files-table": 2, "v2-checkpoints-json-with-sidecars": 101, "v2-checkpoints-parquet-with-sidecars": 101,
		"table-with-dv-small": 1,
	}
	for _, tw := range conformanceTables {
		if strings.HasPrefix(tw.name, "300k") {
			continue
		}
		t.Run(tw.name, func(t *testing.T) {
			store := newDirStore(tableDir(t, tw.name))
			st := loadState(t, store)
			if st.Version != tw.version || st.CheckpointVersion != tw.checkpoint {
				t.Fatalf("version %d checkpoint %d, want %d %d", st.Version, st.CheckpointVersion, tw.version, tw.checkpoint)
			}
			if n, ok := counts[tw.name]; ok && st.NumFiles() != n {
				t.Fatalf("%d files, want %d", st.NumFiles(), n)
			}
			for a := range st.Files() {
				if a.Stats != "" && normJSON(a.Stats)[0] == '!' {
					t.Fatalf("%s: stats %q are not JSON", a.Path, a.Stats)
				}
			}
			if tw.checkpoint < 0 {
				return
			}
			replayed, err := deltalog.LoadState(ctx, hideCheckpoints{store}, nil)
			if errors.As(err, new(*deltalog.LogGapError)) || errors.Is(err, deltalog.ErrNoTable) {
				return // the commits before the checkpoint are gone
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("compared %d files with the replayed log", replayed.NumFiles())
			if got, want := fileSummary(st), fileSummary(replayed); !reflect.DeepEqual(got, want) {
				t.Fatalf("from checkpoint:\n%s\nreplayed:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if !reflect.DeepEqual(st.Txns(), replayed.Txns()) || !reflect.DeepEqual(st.Domains(), replayed.Domains()) {
				t.Fatalf("txns/domains differ: %v %v / %v %v", st.Txns(), st.Domains(), replayed.Txns(), replayed.Domains())
			}
		})
	}
}

// The 300k-file table loads with every file and little memory per file.
func TestLoadState300k(t *testing.T) {
	if testing.Short() {
		t.Skip("large table")
	}
	st := loadState(t, newDirStore(tableDir(t, "300k-add-files-100-col-partitioned")))
	if st.NumFiles() != 300000 || st.Version != 4 {
		t.Fatalf("%d files at version %d", st.NumFiles(), st.Version)
	}
	a, ok := st.File("part_99/file_299999.parquet")
	if !ok || a.Size != 1048576 || *a.PartitionValues["partition_col"] != "part_99" {
		t.Fatalf("file: %+v", a)
	}
}

func TestTombstoneExpiry(t *testing.T) {
	s := deltalog.NewMemStore()
	putCommit(s, 0, protocolLine, metaDataLine(`{"delta.deletedFileRetentionDuration":"interval 1 hour"}`))
	now := time.UnixMilli(10 * 3600 * 1000)
	putCommit(s, 1, removeLine("old", now.Add(-2*time.Hour).UnixMilli()), removeLine("new", now.Add(-30*time.Minute).UnixMilli()),
		`{"remove":{"path":"no-timestamp","dataChange":true}}`)
	st := loadState(t, s)
	if st.NumTombstones() != 3 {
		t.Fatalf("%d tombstones", st.NumTombstones())
	}
	if n := st.ExpireTombstones(now); n != 2 || st.NumTombstones() != 1 {
		t.Fatalf("expired %d, left %d", n, st.NumTombstones())
	}
}

func TestSidecarCheckpoints(t *testing.T) {
	for _, name := range []string{"v2-checkpoints-json-with-sidecars", "v2-checkpoints-parquet-with-sidecars"} {
		st := loadState(t, newDirStore(tableDir(t, name)))
		if st.NumFiles() != 101 {
			t.Fatalf("%s: %d files", name, st.NumFiles())
		}
	}
}
