package deltalog_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// compactionTable is a table (partitioned by p) with n appends of one
// file each to p=a, and its state.
func compactionTable(t *testing.T, conf string, n int) (*deltalog.MemStore, *deltalog.Snapshot, *deltalog.State) {
	t.Helper()
	s := deltalog.NewMemStore()
	putCommit(s, 0, `{"commitInfo":{"timestamp":1,"operation":"CREATE TABLE"}}`, protocolLine, metaDataLine(conf))
	snap := load(t, s)
	for i := range n {
		res, err := deltalog.CommitAppend(ctx, s, snap, deltalog.AppendCommit{
			Files: []deltalog.DataFile{dataFile(fmt.Sprintf("part-%d.parquet", i), sp("a"))}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		snap = res.Snapshot
	}
	st, err := deltalog.LoadState(ctx, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, snap, st
}

func liveFiles(st *deltalog.State) []*deltalog.Add {
	files := slices.Collect(st.Files())
	slices.SortFunc(files, func(a, b *deltalog.Add) int { return strings.Compare(a.Path, b.Path) })
	return files
}

func compaction(read []*deltalog.Add) deltalog.Compaction {
	return deltalog.Compaction{Removed: read, Added: []deltalog.DataFile{dataFile("part-big.parquet", sp("a"))},
		Now: time.UnixMilli(1_800_000_000_000)}
}

// A compaction commit removes the files read and adds the file written,
// every action with dataChange = false, each remove with the file's size
// and partition values; on an append-only table too (PROTOCOL.md
// "Append-only Tables": dataChange = false actions only rearrange data).
// A checkpoint written after it carries the removes as tombstones.
func TestCompactionCommit(t *testing.T) {
	for _, conf := range []string{"", `{"delta.appendOnly":"true"}`} {
		t.Run("conf="+conf, func(t *testing.T) {
			s, snap, st := compactionTable(t, conf, 3)
			read := liveFiles(st)
			res, err := deltalog.CommitCompaction(ctx, s, snap, compaction(read), nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Version != 4 || res.Snapshot.Version != 4 {
				t.Fatalf("committed at %d", res.Version)
			}
			c, err := deltalog.ReadCommit(ctx, s, 4)
			if err != nil {
				t.Fatal(err)
			}
			var removes, adds int
			for _, a := range c.Actions {
				switch a := a.(type) {
				case *deltalog.CommitInfo:
					if a.Operation != "OPTIMIZE" || *a.ReadVersion != 3 || *a.IsBlindAppend {
						t.Errorf("commitInfo %+v", a)
					}
				case *deltalog.Remove:
					removes++
					if a.DataChange || a.Size == nil || *a.Size != 100 || a.PartitionValues["p"] == nil || *a.PartitionValues["p"] != "a" ||
						a.DeletionTimestamp == nil || *a.DeletionTimestamp != 1_800_000_000_000 || a.ExtendedFileMetadata == nil || !*a.ExtendedFileMetadata {
						t.Errorf("remove %+v", a)
					}
				case *deltalog.Add:
					adds++
					if a.DataChange || a.Path != "p=a/part-big.parquet" || a.Stats == "" {
						t.Errorf("add %+v", a)
					}
				default:
					t.Errorf("unexpected action %T", a)
				}
			}
			if removes != 3 || adds != 1 {
				t.Fatalf("%d removes, %d adds", removes, adds)
			}

			if _, err := st.Update(ctx, s, -1); err != nil {
				t.Fatal(err)
			}
			if _, err := deltalog.WriteCheckpoint(ctx, s, st, &deltalog.CheckpointOptions{Now: func() time.Time { return time.UnixMilli(1_800_000_000_000) }}); err != nil {
				t.Fatal(err)
			}
			fromCkpt, err := deltalog.LoadState(ctx, s, nil)
			if err != nil {
				t.Fatal(err)
			}
			if fromCkpt.CheckpointVersion != 4 || fromCkpt.NumFiles() != 1 || fromCkpt.NumTombstones() != 3 {
				t.Fatalf("checkpoint at %d: %d files, %d tombstones; want 1 and 3 at 4",
					fromCkpt.CheckpointVersion, fromCkpt.NumFiles(), fromCkpt.NumTombstones())
			}
			for r := range fromCkpt.Tombstones() {
				if r.Size == nil || *r.Size != 100 || r.PartitionValues["p"] == nil || r.DeletionTimestamp == nil {
					t.Errorf("checkpoint tombstone %+v", r)
				}
			}
		})
	}
}

// A winner that removed a file the compaction read aborts it, whether a
// delete (dataChange = true) or another compaction; nothing is committed.
func TestCompactionAbortsWhenAWinnerRemovedAFileItRead(t *testing.T) {
	for _, dataChange := range []bool{true, false} {
		t.Run(fmt.Sprintf("dataChange=%v", dataChange), func(t *testing.T) {
			s, snap, st := compactionTable(t, "", 3)
			read := liveFiles(st)
			putCommit(s, 4, `{"commitInfo":{"timestamp":2,"operation":"DELETE"}}`,
				fmt.Sprintf(`{"remove":{"path":%q,"dataChange":%v,"deletionTimestamp":2}}`, read[1].Path, dataChange))
			_, err := deltalog.CommitCompaction(ctx, s, snap, compaction(read), nil)
			var ce *deltalog.CompactionConflictError
			if !errors.As(err, &ce) || !errors.Is(err, deltalog.ErrCompactionConflict) || ce.Version != 4 || ce.Path != read[1].Path {
				t.Fatalf("err %v, want a conflict on %s at 4", err, read[1].Path)
			}
			if _, err := s.Get(ctx, deltalog.CommitPath(5)); !errors.Is(err, deltalog.ErrNotFound) {
				t.Fatalf("version 5 exists after an abandoned compaction: %v", err)
			}
		})
	}
}

// Winning blind appends (and removes of other files) leave the files read
// alone: the compaction commits after them.
func TestCompactionCommitsAfterWinningAppends(t *testing.T) {
	s, snap, st := compactionTable(t, "", 3)
	read := liveFiles(st)
	later := snap
	for i := range 2 {
		res, err := deltalog.CommitAppend(ctx, s, later, deltalog.AppendCommit{AppID: "other", AppVersion: int64(i),
			Files: []deltalog.DataFile{dataFile(fmt.Sprintf("late-%d.parquet", i), sp("a"))}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		later = res.Snapshot
	}
	res, err := deltalog.CommitCompaction(ctx, s, snap, compaction(read), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 6 {
		t.Fatalf("committed at %d, want 6", res.Version)
	}
	if _, err := st.Update(ctx, s, -1); err != nil {
		t.Fatal(err)
	}
	var live []string
	for _, a := range liveFiles(st) {
		live = append(live, a.Path)
	}
	if want := []string{"p=a/late-0.parquet", "p=a/late-1.parquet", "p=a/part-big.parquet"}; !slices.Equal(live, want) {
		t.Fatalf("live files %v, want %v", live, want)
	}
}

// An append that loses the race to a compaction commit retries at the next
// version: the compaction's removes (dataChange = false, of files the
// append did not read) are no conflict for a blind append.
func TestAppendRetriesAfterACompactionWinner(t *testing.T) {
	s, snap, st := compactionTable(t, "", 3)
	if _, err := deltalog.CommitCompaction(ctx, s, snap, compaction(liveFiles(st)), nil); err != nil {
		t.Fatal(err)
	}
	lost := 0
	res, err := deltalog.CommitAppend(ctx, s, snap, deltalog.AppendCommit{AppID: "app", AppVersion: 9,
		Files: []deltalog.DataFile{dataFile("next.parquet", sp("a"))}},
		&deltalog.CommitOptions{SkipCatchUp: true, LostRace: func(int64) { lost++ }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 5 || lost != 1 {
		t.Fatalf("append at %d after %d lost races, want 5 after 1", res.Version, lost)
	}
	c, err := deltalog.ReadCommit(ctx, s, 4)
	if err != nil {
		t.Fatal(err)
	}
	if r := deltalog.ResolveConflict("app", 9, "", []deltalog.Commit{c}); r.Resolution != deltalog.ResolutionRetry {
		t.Fatalf("a compaction winner resolves as %v for an append", r.Resolution)
	}
}

// Files with a deletion vector or row ids are not rewritten: their rows
// are not the file's rows, or carry ids a rewrite would have to keep.
func TestPrepareCompactionRefusesDeletionVectors(t *testing.T) {
	_, snap, st := compactionTable(t, "", 2)
	read := liveFiles(st)
	read[0].DeletionVector = json.RawMessage(`{"storageType":"i","pathOrInlineDv":"x","sizeInBytes":1,"cardinality":1}`)
	if _, err := deltalog.PrepareCompaction(snap, compaction(read)); err == nil {
		t.Fatal("a file with a deletion vector was compacted")
	}
}

func TestFilePath(t *testing.T) {
	for in, want := range map[string]string{"p=a%20b%253Ac/part-0.parquet": "p=a b%3Ac/part-0.parquet", "x.parquet": "x.parquet"} {
		if got, err := deltalog.FilePath(in); err != nil || got != want {
			t.Errorf("FilePath(%q) = %q, %v; want %q", in, got, err, want)
		}
		if got := deltalog.AddPath(want); got != in {
			t.Errorf("AddPath(%q) = %q, want %q", want, got, in)
		}
	}
	for _, bad := range []string{"s3://b/x.parquet", "/abs/x.parquet", "bad%zz"} {
		if _, err := deltalog.FilePath(bad); err == nil {
			t.Errorf("FilePath(%q) accepted", bad)
		}
	}
}
