package deltalog_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// merge rewrites read[0] and adds one new file, recording app "m" at 7;
// its keys may be in files whose path contains "hot".
func merge(read []*deltalog.Add) deltalog.Merge {
	return deltalog.Merge{
		Append: deltalog.AppendCommit{AppID: "m", AppVersion: 7,
			Files: []deltalog.DataFile{dataFile("new.parquet", sp("a")), dataFile("rewritten.parquet", sp("a"))}},
		Removed: read[:1],
		MayHold: func(a *deltalog.Add) bool { return a.Path == "p=a/hot.parquet" },
	}
}

// A merge commit: commitInfo MERGE, removes with dataChange = true and the
// file's size and partition values, the txn, the adds.
func TestMergeCommit(t *testing.T) {
	s, snap, st := compactionTable(t, "", 3)
	res, err := deltalog.CommitMerge(ctx, s, snap, merge(liveFiles(st)), nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := deltalog.ReadCommit(ctx, s, res.Version)
	if err != nil {
		t.Fatal(err)
	}
	var removes, adds, txns int
	for _, a := range c.Actions {
		switch a := a.(type) {
		case *deltalog.CommitInfo:
			if a.Operation != "MERGE" || *a.IsBlindAppend {
				t.Errorf("commitInfo %+v", a)
			}
		case *deltalog.Remove:
			removes++
			if !a.DataChange || a.Size == nil || *a.Size != 100 || *a.PartitionValues["p"] != "a" || !*a.ExtendedFileMetadata {
				t.Errorf("remove %+v", a)
			}
		case *deltalog.Add:
			adds++
			if !a.DataChange {
				t.Errorf("add %+v", a)
			}
		case *deltalog.Txn:
			txns++
			if a.AppID != "m" || a.Version != 7 {
				t.Errorf("txn %+v", a)
			}
		}
	}
	if removes != 1 || adds != 2 || txns != 1 {
		t.Fatalf("%d removes, %d adds, %d txns", removes, adds, txns)
	}
	// Nothing removed: a WRITE.
	m := merge(liveFiles(st))
	m.Removed, m.Append.AppVersion = nil, 8
	m.Append.Files = m.Append.Files[:0]
	res, err = deltalog.CommitMerge(ctx, s, res.Snapshot, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, _ = deltalog.ReadCommit(ctx, s, res.Version)
	if ci := c.Actions[0].(*deltalog.CommitInfo); ci.Operation != "WRITE" {
		t.Errorf("a merge that removes nothing: %s", ci.Operation)
	}
}

// After a lost race: a winner that removed the file the merge rewrote, or
// added a file (dataChange = true) that may hold its keys, or changed the
// metadata, makes it re-plan (ErrConcurrentModification); adds of other
// keys, a compaction's adds, removes of other files and other apps' txns
// move it to the next version; a winner recording its txn means done.
func TestMergeConflicts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		winner func(read []*deltalog.Add) string
		replan bool
		done   bool
	}{
		{"removed the file rewritten", func(r []*deltalog.Add) string {
			return fmt.Sprintf(`{"remove":{"path":%q,"dataChange":false,"deletionTimestamp":2}}`, r[0].Path)
		}, true, false},
		{"added a file that may hold a key", func([]*deltalog.Add) string {
			return `{"add":{"path":"p=a/hot.parquet","partitionValues":{"p":"a"},"size":1,"modificationTime":1,"dataChange":true}}`
		}, true, false},
		{"metadata", func([]*deltalog.Add) string { return metaDataLine(`{"x":"y"}`) }, true, false},
		{"added a file of other keys", func([]*deltalog.Add) string {
			return `{"add":{"path":"p=a/cold.parquet","partitionValues":{"p":"a"},"size":1,"modificationTime":1,"dataChange":true}}`
		}, false, false},
		{"compaction add", func([]*deltalog.Add) string {
			return `{"add":{"path":"p=a/hot.parquet","partitionValues":{"p":"a"},"size":1,"modificationTime":1,"dataChange":false}}`
		}, false, false},
		{"removed another file", func(r []*deltalog.Add) string {
			return fmt.Sprintf(`{"remove":{"path":%q,"dataChange":true,"deletionTimestamp":2}}`, r[1].Path)
		}, false, false},
		{"recorded our txn", func([]*deltalog.Add) string { return `{"txn":{"appId":"m","version":7}}` }, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, snap, st := compactionTable(t, "", 3)
			read := liveFiles(st)
			putCommit(s, 4, `{"commitInfo":{"timestamp":2,"operation":"X"}}`, tc.winner(read))
			res, err := deltalog.CommitMerge(ctx, s, snap, merge(read), nil)
			switch {
			case tc.replan:
				if !errors.Is(err, deltalog.ErrConcurrentModification) {
					t.Fatalf("err %v, want a re-plan", err)
				}
				if _, err := s.Get(ctx, deltalog.CommitPath(5)); !errors.Is(err, deltalog.ErrNotFound) {
					t.Fatalf("version 5 exists: %v", err)
				}
			case tc.done:
				if err != nil || !res.AlreadyCommitted {
					t.Fatalf("res %+v, err %v: want already committed", res, err)
				}
			default:
				if err != nil || res.Version != 5 {
					t.Fatalf("res %+v, err %v: want committed at 5", res, err)
				}
			}
		})
	}
}
