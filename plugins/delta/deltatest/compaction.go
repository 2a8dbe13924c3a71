package deltatest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/internal/testenv/sinkdriver"
)

// CompactionFacts is what TableLog finds in a table: its rows as delta-rs
// and DuckDB read them, its live files per partition value, its commits
// replayed from the JSON log, and every broken rule found on the way.
type CompactionFacts struct {
	DeltaRS     []map[string]any `json:"deltars"`
	DuckDB      []map[string]any `json:"duckdb"`
	DuckDBTypes map[string]string
	// Files counts the live data files per partition value (the
	// partitionValues JSON).
	Files map[string]int
	// Versions summarises each commit: its operation and the dataChange
	// flag of each add and remove.
	// flag of each add and remove, and how many txn actions it holds.
	Versions []struct {
		Version int64
		Op      string
		Adds    []bool
		Removes []bool
		Txns    int
	}
	// Errors: a remove of a file that is not live, a remove whose size or
	// partition values are not the file's, a live file missing from the
	// store, a live file list delta-rs does not agree with.
	Errors []string
}

// compactionFactsScript replays the JSON log (the tests' tables keep
// every commit file), reads the live files with DuckDB (copied locally:
// DuckDB reads Parquet, not Delta) and the table with delta-rs.
const compactionFactsScript = `
import duckdb, tempfile, urllib.parse
import pyarrow.fs as pafs
if uri.startswith("file://"):
    fs, root = pafs.LocalFileSystem(), uri[len("file://"):]
else:
    scheme, host = os.environ["PICOMQ_S3_ENDPOINT"].split("://")
    fs = pafs.S3FileSystem(access_key=os.environ["PICOMQ_S3_ACCESS_KEY"], secret_key=os.environ["PICOMQ_S3_SECRET_KEY"],
                           region=os.environ["PICOMQ_S3_REGION"], endpoint_override=host, scheme=scheme)
    root = uri[len("s3://"):]
def read(p):
    with fs.open_input_stream(root + "/" + p) as f:
        return f.read()
names = sorted(i.base_name for i in fs.get_file_info(pafs.FileSelector(root + "/_delta_log"))
               if i.base_name.endswith(".json") and len(i.base_name) == 25)
live, errors, versions = {}, [], []
for n in names:
    v = int(n[:20])
    s = {"Version": v, "Op": "", "Adds": [], "Removes": [], "Txns": 0}
    for line in read("_delta_log/" + n).decode().splitlines():
        if not line.strip():
            continue
        a = json.loads(line)
        if "txn" in a:
            s["Txns"] += 1
        if "commitInfo" in a:
            s["Op"] = a["commitInfo"].get("operation", "")
        if "add" in a:
            live[a["add"]["path"]] = a["add"]
            s["Adds"].append(a["add"]["dataChange"])
        if "remove" in a:
            r = a["remove"]
            f = live.pop(r["path"], None)
            if f is None:
                errors.append("version %d removes %s, which is not live" % (v, r["path"]))
            elif r.get("size") != f["size"] or r.get("partitionValues") != f["partitionValues"]:
                errors.append("version %d removes %s with size %s %s, the file has %s %s" % (
                    v, r["path"], r.get("size"), r.get("partitionValues"), f["size"], f["partitionValues"]))
            s["Removes"].append(r["dataChange"])
    versions.append(s)
files = {}
tmp = tempfile.mkdtemp()
local = []
for p, a in sorted(live.items()):
    k = json.dumps(a["partitionValues"], sort_keys=True)
    files[k] = files.get(k, 0) + 1
    rel = urllib.parse.unquote(p)
    try:
        data = read(rel)
    except Exception as e:
        errors.append("live file %s: %s" % (p, e))
        continue
    dst = os.path.join(tmp, rel)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    open(dst, "wb").write(data)
    local.append(dst)
dt = DeltaTable(uri, storage_options=opts)
theirs = sorted(urllib.parse.unquote(p) for p in dt.get_add_actions(flatten=True).column("path").to_pylist())
if theirs != sorted(urllib.parse.unquote(p) for p in live):
    errors.append("delta-rs lists %d live files, the log replay %d" % (len(theirs), len(live)))
key = sys.argv[2]
rows = dt.to_pyarrow_table().to_pylist()
rows.sort(key=lambda r: r[key])
con = duckdb.connect()
con.execute("SET TimeZone = 'UTC'")
types, drows = {}, []
if local:
    rel = con.sql("SELECT * FROM read_parquet(?, hive_partitioning = true, union_by_name = true)", params=[local])
    types = {c: str(t) for c, t in zip(rel.columns, rel.types)}
    drows = [dict(zip(rel.columns, r)) for r in rel.fetchall()]
    drows.sort(key=lambda r: r[key])
dump({"deltars": rows, "duckdb": drows, "DuckDBTypes": types, "Files": files, "Versions": versions, "Errors": errors})
`

// TableLog returns the CompactionFacts of the table at uri, rows sorted by
// the column sortBy.
func (s *Store) TableLog(uri, sortBy string) CompactionFacts {
	s.t.Helper()
	return ReadTableLog(s.t, s.env, uri, sortBy)
}

// ReadTableLog is TableLog for any file:// or s3:// table, the readers
// given env (S3ReaderEnv for an S3 store): the chaos tests read the tables
// of their private MinIO with it. Each broken rule found fails t.
func ReadTableLog(t *testing.T, env []string, uri, sortBy string) CompactionFacts {
	t.Helper()
	out := py(t, env, compactionFactsScript, uri, sortBy)
	var f CompactionFacts
	if err := json.Unmarshal([]byte(out), &f); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, e := range f.Errors {
		t.Errorf("table %s: %s", uri, e)
	}
	return f
}

// waitForMetric waits, at most 60 s, until the sum of a sink metric over
// insts reaches want, and returns it.
func waitForMetric(t *testing.T, name string, want float64, insts ...sinkdriver.Instance) float64 {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		sum := 0.0
		for _, inst := range insts {
			sum += metrics(t, inst)["sink."+name]
		}
		if sum >= want {
			return sum
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s to reach %v (at %v)", name, want, sum)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// compactionConfig turns compaction on for instances of a test: checks
// every second, partitions ripe at once.
func compactionConfig(s *Store, uri string, kv ...any) map[string]any {
	return s.Config(uri, append([]any{"compaction", true, "compaction_idle", "0s", "compaction_min_files", 2}, kv...)...)
}

// CompactionRewritesSmallFiles: after many small appends, an instance with
// compaction on rewrites each partition value's files into one; delta-rs
// and DuckDB read the same rows, of the same types, before and after; the
// compaction commits hold only removes and adds with dataChange = false,
// each remove of a live file with its size and partition values.
func CompactionRewritesSmallFiles(t *testing.T, d sinkdriver.Driver, s *Store) {
	uri := s.Create(CreateOrders, "orders")
	rt := d.Start(t, s.Secrets...)
	w := Open(t, rt, "writer", s.Config(uri))
	const batches = 8
	for n := range batches {
		var p []string
		for i := range 5 {
			id := n*5 + i
			p = append(p, fmt.Sprintf(`{"id":%d,"customer":"c%d","amount":%d.25,"paid":%v,"created_at":"2026-09-03T21:15:%02d.123456Z",`+
				`"attrs":{"k":%d},"address":{"city":"city %d","zip":%d},"tags":["a","t%d"],"region":"%s"}`,
				id, id%7, id, id%2 == 0, id%60, id, id, id*11, id, []string{"eu", "us"}[id%2]))
		}
		p = append(p, fmt.Sprintf(`{"id":%d}`, 1000+n)) // nulls everywhere, and a null partition value
		consume(t, w, JSONBatch("orders", uint64(n*6), p...))
	}
	before := s.TableLog(uri, "id")
	if got := len(before.DeltaRS); got != batches*6 || len(before.DuckDB) != got {
		t.Fatalf("before compaction: delta-rs reads %d rows, DuckDB %d, want %d", got, len(before.DuckDB), batches*6)
	}
	for pv, n := range before.Files {
		if n != batches {
			t.Fatalf("before compaction: %d files for %s, want %d", n, pv, batches)
		}
	}

	c := Open(t, rt, "compactor", compactionConfig(s, uri))
	waitForMetric(t, "compactions", 3, c) // eu, us and null
	_ = c.Close()
	after := s.TableLog(uri, "id")
	if !reflect.DeepEqual(after.DeltaRS, before.DeltaRS) {
		t.Errorf("delta-rs reads other rows after compaction:\n%v\nbefore:\n%v", after.DeltaRS, before.DeltaRS)
	}
	if !reflect.DeepEqual(after.DuckDB, before.DuckDB) || !reflect.DeepEqual(after.DuckDBTypes, before.DuckDBTypes) {
		t.Errorf("DuckDB reads other rows or types after compaction:\n%v %v\nbefore:\n%v %v", after.DuckDB, after.DuckDBTypes, before.DuckDB, before.DuckDBTypes)
	}
	t.Logf("live files per partition value: before %v, after %v; DuckDB types %v", before.Files, after.Files, after.DuckDBTypes)
	if len(after.Files) != 3 {
		t.Errorf("partition values after compaction: %v", after.Files)
	}
	for pv, n := range after.Files {
		if n != 1 {
			t.Errorf("%d live files for %s after compaction, want 1", n, pv)
		}
	}
	compactions := 0
	for _, v := range after.Versions[len(before.Versions):] {
		compactions++
		if v.Op != "OPTIMIZE" || len(v.Adds) != 1 || len(v.Removes) != batches {
			t.Errorf("version %d: %s with %d adds and %d removes, want OPTIMIZE with 1 and %d", v.Version, v.Op, len(v.Adds), len(v.Removes), batches)
		}
		for _, dc := range append(v.Adds, v.Removes...) {
			if dc {
				t.Errorf("version %d has an action with dataChange = true", v.Version)
			}
		}
	}
	if compactions != 3 {
		t.Errorf("%d commits after the appends, want 3 compactions", compactions)
	}
}

// CompactionRacesWritersAndCompactors: two instances with compaction on
// and one without append to the same table at once while both compact it:
// every record is in the table once, no commit removes a file that is not
// live, every live file is in the store, and at least one compaction
// landed.
func CompactionRacesWritersAndCompactors(t *testing.T, d sinkdriver.Driver, s *Store) {
	uri := s.Create(CreateOrders, "orders")
	rt := d.Start(t, s.Secrets...)
	insts := []sinkdriver.Instance{
		Open(t, rt, "a", compactionConfig(s, uri)),
		Open(t, rt, "b", s.Config(uri)),
		Open(t, rt, "c", compactionConfig(s, uri)),
	}
	batches, per := 12, 4
	if s.Backend == File {
		batches = 25
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(insts))
	var want []string
	for w, inst := range insts {
		want = append(want, Span(w*1000, w*1000+batches*per-1))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range batches {
				var p []string
				for i := range per {
					id := w*1000 + n*per + i
					p = append(p, fmt.Sprintf(`{"id":%d,"customer":"c","region":"%s"}`, id, []string{"eu", "us"}[id%2]))
				}
				if err := inst.Consume(JSONBatch(fmt.Sprintf("t%d", w), uint64(n*per), p...)); err != nil {
					errs <- fmt.Errorf("writer %d batch %d: %w", w, n, err)
					return
				}
				time.Sleep(50 * time.Millisecond) // spread the appends over several compaction checks
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	n := waitForMetric(t, "compactions", 1, insts[0], insts[2])
	aborts := metrics(t, insts[0])["sink.compaction_aborts"] + metrics(t, insts[2])["sink.compaction_aborts"]
	for _, inst := range insts {
		_ = inst.Close()
	}
	t.Logf("%v compactions, %v abandoned", n, aborts)
	f := s.TableLog(uri, "id")
	var got []string
	for _, r := range f.DeltaRS {
		got = append(got, fmt.Sprint(r["id"]))
	}
	// want is in id order: the writers' spans do not overlap.
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("the table holds ids %v, want each of %v once", got, want)
	}
	if len(f.DuckDB) != len(f.DeltaRS) {
		t.Fatalf("DuckDB reads %d rows of the live files, delta-rs %d", len(f.DuckDB), len(f.DeltaRS))
	}
}
