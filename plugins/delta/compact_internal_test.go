package delta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// compactTable is a file:// table partitioned by p with n batches of
// 3 records written through the sink (each batch one file per p value of
// "a" and "b").
func compactTable(t *testing.T, conf string, n int) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	if conf == "" {
		conf = "{}"
	}
	v0 := `{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}` + "\n" +
		`{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[` +
		`{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}},{\"name\":\"p\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}}]}",` +
		`"partitionColumns":["p"],"configuration":` + conf + `,"createdTime":0}}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "_delta_log", "00000000000000000000.json"), []byte(v0), 0o644); err != nil {
		t.Fatal(err)
	}
	store, err := objstore.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	var sp spawner
	env := &tableEnv{
		open:  func(context.Context, objstore.Location) (objstore.Store, error) { return store, nil },
		log:   slog.New(slog.DiscardHandler),
		spawn: sp.spawn,
		opts:  tableOptions{exactlyOnce: true},
		stats: &counters{}, ckpt: newCheckpointStats(), requests: &objstore.Requests{},
	}
	tb := newTable("file://"+dir, env)
	ctx := context.Background()
	tb.mu.Lock()
	err = tb.load(ctx, nil)
	tb.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	for b := range n {
		batch := &sdk.Batch{Topic: "t", Schema: sdk.SchemaJSON, Attempt: 1}
		for i := range 3 {
			id := b*3 + i
			batch.Records = append(batch.Records, sdk.Record{Offset: uint64(id),
				Payload: []byte(fmt.Sprintf(`{"id":%d,"p":"%s"}`, id, []string{"a", "b"}[id%2]))})
		}
		if err := tb.write(ctx, batch, "app"); err != nil {
			t.Fatal(err)
		}
	}
	tb.close()
	sp.wg.Wait()
	return dir
}

// newTestCompactor is a compactor of the table in dir that compacts
// whatever qualifies (min 2 files, no idle time), run by calling check.
func newTestCompactor(t *testing.T, store objstore.Store) *compactor {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return &compactor{uri: store.URI(), store: store, log: slog.New(slog.DiscardHandler),
		opts: compactOptions{target: 64 << 20, minFiles: 2}, stats: newCompactStats(), ctx: ctx, cancel: cancel}
}

// tableFacts reads the table in dir: rows per its adds' stats, live files
// per partition value, and the data files on disk no commit names live
// or removed (orphans). A live file missing on disk fails the test.
func tableFacts(t *testing.T, dir string) (rows int, files map[string]int, orphans []string, st *deltalog.State) {
	t.Helper()
	store, _ := objstore.NewLocal(dir)
	st, err := deltalog.LoadState(context.Background(), store, nil)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	files = map[string]int{}
	for a := range st.Files() {
		p, _ := deltalog.FilePath(a.Path)
		known[p] = true
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("live file %s: %v", p, err)
		}
		var s struct{ NumRecords int }
		if err := json.Unmarshal([]byte(a.Stats), &s); err != nil {
			t.Fatal(err)
		}
		rows += s.NumRecords
		files[*a.PartitionValues["p"]]++
	}
	for r := range st.Tombstones() {
		p, _ := deltalog.FilePath(r.Path)
		known[p] = true
	}
	disk, _ := filepath.Glob(filepath.Join(dir, "p=*", "*.parquet"))
	for _, f := range disk {
		rel, _ := filepath.Rel(dir, f)
		if !known[filepath.ToSlash(rel)] {
			orphans = append(orphans, rel)
		}
	}
	return rows, files, orphans, st
}

// delta.appendOnly tables are compacted: PROTOCOL.md "Append-only Tables"
// allows add and remove actions with dataChange = false.
func TestCompactionOnAppendOnlyTable(t *testing.T) {
	dir := compactTable(t, `{"delta.appendOnly":"true"}`, 6)
	store, _ := objstore.NewLocal(dir)
	c := newTestCompactor(t, store)
	if err := c.check(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows, files, orphans, st := tableFacts(t, dir)
	if rows != 18 || files["a"] != 1 || files["b"] != 1 || len(orphans) != 0 || st.NumTombstones() != 12 {
		t.Fatalf("%d rows, files %v, orphans %v, %d tombstones; want 18 rows in one file per value, 12 tombstones",
			rows, files, orphans, st.NumTombstones())
	}
	if n := c.stats.commits.Load(); n != 2 {
		t.Fatalf("%d compaction commits, want 2", n)
	}
}

// A compaction that fails before its commit deletes the files it wrote;
// one whose commit outcome is unknown keeps them.
func TestCompactionFailureDeletesItsFiles(t *testing.T) {
	dir := compactTable(t, "", 4)
	store, _ := objstore.NewLocal(dir)
	c := newTestCompactor(t, store)
	c.stats.beforeCommit = func(context.Context) error { return errors.New("injected") }
	if err := c.check(context.Background()); err == nil {
		t.Fatal("no error")
	}
	rows, files, orphans, _ := tableFacts(t, dir)
	if rows != 12 || files["a"] != 4 || len(orphans) != 0 {
		t.Fatalf("%d rows, files %v, orphans %v: want the table untouched and no file left", rows, files, orphans)
	}
}

// lateStore fails the put of a commit as a timed-out request does, and
// keeps it: the test lands it afterwards, as a store that took the request
// after all would.
type lateStore struct {
	*objstore.Local
	path string
	data []byte
}

func (l *lateStore) PutIfAbsent(ctx context.Context, p string, data []byte) error {
	if strings.HasPrefix(p, "_delta_log/") && l.data == nil {
		l.path, l.data = p, data
		return errors.New("injected: request timed out")
	}
	return l.Local.PutIfAbsent(ctx, p, data)
}

// A compaction whose commit put failed may still land (a timeout, a 5xx):
// its new files must stay, or the table would name a file that is gone.
func TestCompactionWhosePutFailedKeepsItsFiles(t *testing.T) {
	dir := compactTable(t, "", 4)
	local, _ := objstore.NewLocal(dir)
	store := &lateStore{Local: local}
	c := newTestCompactor(t, store)
	if err := c.check(context.Background()); err == nil {
		t.Fatal("no error")
	}
	if store.data == nil {
		t.Fatal("the compaction put no commit")
	}
	if err := local.PutIfAbsent(context.Background(), store.path, store.data); err != nil {
		t.Fatal(err)
	}
	if rows, files, _, _ := tableFacts(t, dir); rows != 12 || files["a"] != 1 {
		t.Fatalf("%d rows, files %v after the late commit landed: want 12 rows, one file for a", rows, files)
	}
}

// compactChildEnv names the table a child process compacts and where it
// kills itself.
const compactChildEnv = "PICOMQ_TEST_COMPACT_CHILD"

// killingStore kills its own process (SIGKILL, as kill -9) at one step.
type killingStore struct {
	*objstore.Local
	step string
	puts atomic.Int32
}

func (k *killingStore) Put(ctx context.Context, p string, data []byte) error {
	err := k.Local.Put(ctx, p, data)
	if k.step == "second-file" && k.puts.Add(1) == 2 {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	return err
}

func (k *killingStore) PutIfAbsent(ctx context.Context, p string, data []byte) error {
	err := k.Local.PutIfAbsent(ctx, p, data)
	if k.step == "after-commit" && strings.HasPrefix(p, "_delta_log/") {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	return err
}

// TestCompactionChild is the child process of
// TestCompactionKilledLeavesOrphansOnly; it does nothing otherwise.
func TestCompactionChild(t *testing.T) {
	arg := os.Getenv(compactChildEnv)
	if arg == "" {
		return
	}
	dir, step, _ := strings.Cut(arg, "|")
	local, err := objstore.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := newTestCompactor(t, &killingStore{Local: local, step: step})
	if step == "before-commit" {
		c.stats.beforeCommit = func(context.Context) error { return syscall.Kill(os.Getpid(), syscall.SIGKILL) }
	}
	_ = c.check(context.Background())
	time.Sleep(10 * time.Second) // the kill is asynchronous; never get past it
	t.Fatal("not killed")
}

// A compactor killed (SIGKILL) after writing its second file (the second
// partition value's), before its first commit, or right after it landed, leaves the table
// consistent: every row once, every live file present; what it wrote but
// did not commit is orphans only. A compactor started afterwards compacts
// the table.
func TestCompactionKilledLeavesOrphansOnly(t *testing.T) {
	for _, step := range []string{"second-file", "before-commit", "after-commit"} {
		t.Run(step, func(t *testing.T) {
			dir := compactTable(t, "", 4)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCompactionChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), compactChildEnv+"="+dir+"|"+step)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("child: %v, want killed by SIGKILL\n%s", err, out)
			}
			rows, files, orphans, st := tableFacts(t, dir)
			if rows != 12 {
				t.Fatalf("%d rows after the kill, want 12", rows)
			}
			switch step {
			case "second-file":
				// a's compaction landed; b's file was written, not committed.
				if st.Version != 5 || files["a"] != 1 || files["b"] != 4 || len(orphans) != 1 {
					t.Fatalf("version %d, files %v, orphans %v: want a compacted and b's new file an orphan", st.Version, files, orphans)
				}
			case "after-commit":
				// The first partition value's commit landed.
				if st.Version != 5 || files["a"] != 1 || len(orphans) != 0 {
					t.Fatalf("version %d, files %v, orphans %v: want a's compaction committed and no orphan", st.Version, files, orphans)
				}
			default:
				if st.Version != 4 || files["a"] != 4 || files["b"] != 4 || len(orphans) == 0 {
					t.Fatalf("version %d, files %v, orphans %v: want the table untouched and the new files orphans", st.Version, files, orphans)
				}
			}
			store, _ := objstore.NewLocal(dir)
			if err := newTestCompactor(t, store).check(context.Background()); err != nil {
				t.Fatal(err)
			}
			if rows, files, _, _ := tableFacts(t, dir); rows != 12 || files["a"] != 1 || files["b"] != 1 {
				t.Fatalf("after a new compactor: %d rows, files %v", rows, files)
			}
		})
	}
}

// Files whose stats do not cover the columns the table indexes now (here:
// written with no column indexed) cannot have their stats combined: they
// are rewritten value by value, and the new file's stats are complete.
func TestCompactionReencodesWhenStatsDoNotCombine(t *testing.T) {
	dir := compactTable(t, `{"delta.dataSkippingNumIndexedCols":"0"}`, 3)
	v0, err := os.ReadFile(filepath.Join(dir, "_delta_log", "00000000000000000000.json"))
	if err != nil {
		t.Fatal(err)
	}
	md := strings.Split(string(v0), "\n")[1]
	md = strings.Replace(md, `{"delta.dataSkippingNumIndexedCols":"0"}`, `{}`, 1)
	if err := os.WriteFile(filepath.Join(dir, "_delta_log", "00000000000000000004.json"), []byte(md+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	store, _ := objstore.NewLocal(dir)
	c := newTestCompactor(t, store)
	if err := c.check(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows, files, _, st := tableFacts(t, dir)
	if rows != 9 || files["a"] != 1 || files["b"] != 1 || c.stats.merged.Load() != 2 {
		t.Fatalf("%d rows, files %v, %d re-encoded; want 9 rows, one file each, both re-encoded", rows, files, c.stats.merged.Load())
	}
	for a := range st.Files() {
		if !strings.Contains(a.Stats, `"minValues":{"id":`) || !strings.Contains(a.Stats, `"nullCount":{"id":0}`) {
			t.Errorf("stats of the re-encoded file: %s", a.Stats)
		}
	}
}

// A file of the second partition value deleted by a commit that wins the
// race against the first partition value's compaction is not compacted
// (nor brought back) with the second: each partition value is planned
// from the log as of the commit before it. No commit removes a file that
// is not live, and every row but the deleted file's is there once.
func TestCompactionPlansEachPartitionAfresh(t *testing.T) {
	dir := compactTable(t, "", 4)
	store, _ := objstore.NewLocal(dir)
	_, _, _, st := tableFacts(t, dir)
	var victim *deltalog.Add
	for a := range st.Files() {
		if *a.PartitionValues["p"] == "b" && (victim == nil || a.Path < victim.Path) {
			victim = a
		}
	}
	c := newTestCompactor(t, store)
	deleted := false
	c.stats.beforeCommit = func(ctx context.Context) error {
		if deleted {
			return nil
		}
		deleted = true
		del := fmt.Sprintf(`{"commitInfo":{"timestamp":1,"operation":"DELETE"}}`+"\n"+
			`{"remove":{"path":%q,"dataChange":true,"deletionTimestamp":1,"size":%d,"partitionValues":{"p":"b"}}}`+"\n", victim.Path, victim.Size)
		return store.PutIfAbsent(ctx, deltalog.CommitPath(5), []byte(del))
	}
	if err := c.check(context.Background()); err != nil {
		t.Fatal(err)
	}
	var gone struct{ NumRecords int }
	_ = json.Unmarshal([]byte(victim.Stats), &gone)
	rows, files, _, st := tableFacts(t, dir)
	if rows != 12-gone.NumRecords || files["a"] != 1 || files["b"] != 1 || st.Version != 7 {
		t.Fatalf("%d rows (want %d), files %v, version %d (want 7: delete, a, b)", rows, 12-gone.NumRecords, files, st.Version)
	}
	live := map[string]bool{}
	for v := int64(1); v <= st.Version; v++ {
		cm, err := deltalog.ReadCommit(context.Background(), store, v)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range cm.Actions {
			switch a := a.(type) {
			case *deltalog.Add:
				live[a.Path] = true
			case *deltalog.Remove:
				if !live[a.Path] {
					t.Errorf("version %d removes %s, which is not live", v, a.Path)
				}
				delete(live, a.Path)
			}
		}
	}
}

// A compaction commit at a checkpoint version gets its checkpoint from the
// table's checkpointer, which hears of compaction commits as of batches';
// the checkpoint lists the compacted file and the removed ones as
// tombstones.
func TestCompactionCommitIsCheckpointed(t *testing.T) {
	dir := compactTable(t, `{"delta.checkpointInterval":"5"}`, 4) // versions 1-4: 4 files for each of a, b
	store, _ := objstore.NewLocal(dir)
	var sp spawner
	defer sp.wg.Wait()
	stats := newCompactStats()
	stats.checkEvery = 20 * time.Millisecond
	env := &tableEnv{
		open:  func(context.Context, objstore.Location) (objstore.Store, error) { return store, nil },
		log:   slog.New(slog.DiscardHandler),
		spawn: sp.spawn,
		opts:  tableOptions{exactlyOnce: true},
		stats: &counters{}, ckpt: newCheckpointStats(), requests: &objstore.Requests{},
		compact: &compactOptions{target: 64 << 20, minFiles: 2}, compactStats: stats,
	}
	tb := newTable("file://"+dir, env)
	defer tb.close()
	tb.mu.Lock()
	err := tb.load(context.Background(), nil)
	tb.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the checkpoint at version 5", func() bool { return env.ckpt.lastVersion.Load() == 5 })
	st, err := deltalog.LoadStateAt(context.Background(), store, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.CheckpointVersion != 5 || st.NumFiles() != 5 || st.NumTombstones() != 4 {
		t.Fatalf("checkpoint %d: %d files, %d tombstones; want a's one file and b's four, a's four removed",
			st.CheckpointVersion, st.NumFiles(), st.NumTombstones())
	}
}
