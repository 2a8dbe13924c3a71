package deltalog_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// recreate empties store and creates another table (metaData.id t2) at
// version `to`, as deleting a table directory and creating it again does.
func recreate(store *deltalog.MemStore, to int64) {
	files, _ := store.List(ctx, "", "")
	for _, f := range files {
		_ = store.Delete(ctx, f.Path)
	}
	md := strings.Replace(metaDataLine(""), `"id":"t1"`, `"id":"t2"`, 1)
	putCommit(store, 0, `{"commitInfo":{"timestamp":1,"operation":"CREATE TABLE"}}`, protocolLine, md)
	for v := int64(1); v <= to; v++ {
		putCommit(store, v, `{"commitInfo":{"txnId":"other"}}`)
	}
}

// A commit never lands on a log that is not the one the snapshot was read
// from: the table replaced behind it (shorter, equal or longer) is a
// *TableReplacedError carrying the new table, and nothing is written.
func TestCommitAppendRefusesReplacedTable(t *testing.T) {
	for _, to := range []int64{0, 2, 5} {
		t.Run(fmt.Sprintf("new table at %d", to), func(t *testing.T) {
			testRefusesReplacedTable(t, to, func(deltalog.Store, *deltalog.Snapshot) *deltalog.CommitOptions { return nil })
		})
		// The same with no catch-up before the put.
		t.Run(fmt.Sprintf("new table at %d, no catch-up", to), func(t *testing.T) {
			testRefusesReplacedTable(t, to, func(deltalog.Store, *deltalog.Snapshot) *deltalog.CommitOptions {
				return &deltalog.CommitOptions{SkipCatchUp: true}
			})
		})
	}
	t.Run("table gone", func(t *testing.T) {
		store := newTable(t)
		snap := load(t, store)
		_ = store.Delete(ctx, deltalog.CommitPath(0))
		_, err := deltalog.CommitAppend(ctx, store, snap, deltalog.AppendCommit{}, nil)
		if !errors.Is(err, deltalog.ErrNoTable) {
			t.Fatalf("err = %v", err)
		}
	})
}

func testRefusesReplacedTable(t *testing.T, to int64, opts func(deltalog.Store, *deltalog.Snapshot) *deltalog.CommitOptions) {
	t.Helper()
	store := newTable(t)
	putCommit(store, 1, `{"commitInfo":{"txnId":"a"}}`)
	putCommit(store, 2, `{"commitInfo":{"txnId":"b"}}`)
	snap := load(t, store)
	recreate(store, to)
	before, _ := store.List(ctx, "", "")
	_, err := deltalog.CommitAppend(ctx, store, snap, deltalog.AppendCommit{AppID: "me", AppVersion: 1}, opts(store, snap))
	var re *deltalog.TableReplacedError
	if !errors.As(err, &re) || !errors.Is(err, deltalog.ErrTableReplaced) || re.OldID != "t1" || re.NewID != "t2" ||
		re.OldVersion != 2 || re.NewVersion != to || re.Snapshot == nil || re.Snapshot.Version != to {
		t.Fatalf("new table at %d: err = %v (%+v)", to, err, re)
	}
	if after, _ := store.List(ctx, "", ""); len(after) != len(before) {
		t.Fatalf("new table at %d: something was written: %v", to, after)
	}
	// Update reports it too rather than mixing the two tables.
	if _, err := snap.Update(ctx, store); !errors.As(err, &re) {
		t.Fatalf("Update: %v", err)
	}
}

// A winning commit that carries another table's metaData.id is not a
// concurrent append: the table was created anew between our read and put.
func TestCommitAppendWinnerFromAnotherTable(t *testing.T) {
	base := newTable(t)
	rs := &racingStore{MemStore: base}
	rs.races.Store(1)
	rs.rival = func(v int64) {
		putCommit(base, v, strings.Replace(metaDataLine(""), `"id":"t1"`, `"id":"t9"`, 1))
	}
	_, err := deltalog.CommitAppend(ctx, rs, load(t, base), deltalog.AppendCommit{}, nil)
	var re *deltalog.TableReplacedError
	if !errors.As(err, &re) || re.NewID != "t9" || re.NewVersion != 1 {
		t.Fatalf("err = %v", err)
	}
}

// lateStore makes a commit written by a rival invisible to the next few
// reads of its name, and hides it from listings: what some object stores
// do right after another client's write.
type lateStore struct {
	*racingStore
	hidden atomic.Value // path
	misses atomic.Int32
	listed atomic.Int32
}

func (l *lateStore) Get(ctx context.Context, path string) ([]byte, error) {
	if p, _ := l.hidden.Load().(string); p == path && l.misses.Add(-1) >= 0 {
		return nil, deltalog.ErrNotFound
	}
	return l.racingStore.Get(ctx, path)
}

func (l *lateStore) List(ctx context.Context, prefix, startAfter string) ([]deltalog.FileInfo, error) {
	l.listed.Add(1)
	files, err := l.racingStore.List(ctx, prefix, startAfter)
	p, _ := l.hidden.Load().(string)
	out := files[:0:0]
	for _, f := range files {
		if f.Path != p {
			out = append(out, f)
		}
	}
	return out, err
}

// A lost race reads the winners by name, without listing the log, and a
// winner that reads as missing for a moment is read again, not a gap.
func TestCommitAppendReadsWinnersByName(t *testing.T) {
	base := newTable(t)
	ls := &lateStore{racingStore: &racingStore{MemStore: base}}
	ls.races.Store(1)
	ls.rival = func(v int64) {
		putCommit(base, v, `{"commitInfo":{"txnId":"rival"}}`)
		putCommit(base, v+1, `{"commitInfo":{"txnId":"rival2"}}`)
		ls.hidden.Store(deltalog.CommitPath(v))
		ls.misses.Store(3)
	}
	snap := load(t, base)
	var lost []int64
	res, err := deltalog.CommitAppend(ctx, ls, snap, deltalog.AppendCommit{AppID: "me", AppVersion: 1},
		&deltalog.CommitOptions{LostRace: func(v int64) { lost = append(lost, v) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 3 || res.Attempts != 2 || len(lost) != 1 || lost[0] != 1 {
		t.Fatalf("result %+v, lost %v", res, lost)
	}
	if n := ls.listed.Load(); n != 0 {
		t.Fatalf("the log was listed %d times", n)
	}
	// A listing that misses version 1 (shown 2 but not 1) is no gap either.
	ls.hidden.Store(deltalog.CommitPath(1))
	ls.misses.Store(0)
	if s, err := deltalog.Load(ctx, ls, nil); err != nil || s.Version != 3 {
		t.Fatalf("Load over a listing hole: %v", err)
	}
	if cs, err := deltalog.ReadCommits(ctx, ls, 1); err != nil || len(cs) != 3 {
		t.Fatalf("ReadCommits over a listing hole: %d, %v", len(cs), err)
	}
}
