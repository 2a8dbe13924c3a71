package deltalog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

func dataFile(name string, p *string) deltalog.DataFile {
	pv := deltalog.PartitionValues{"p": p}
	dir, _ := deltalog.PartitionDir([]string{"p"}, pv)
	return deltalog.DataFile{Path: dir + name, PartitionValues: pv, Size: 100,
		Stats: `{"numRecords":1,"minValues":{"id":1},"maxValues":{"id":1},"nullCount":{"id":0}}`}
}

func TestPrepareAppendRoundTrip(t *testing.T) {
	s := newTable(t)
	snap := load(t, s)
	now := time.UnixMilli(1_700_000_000_123)
	pc, err := deltalog.PrepareAppend(snap, deltalog.AppendCommit{
		Files:      []deltalog.DataFile{dataFile("part-0.parquet", sp("a b:c")), dataFile("part-1.parquet", nil)},
		AppID:      "sink-1",
		AppVersion: 7,
		EngineInfo: "picomq-delta-sink/1.2.3",
		TxnID:      "11111111-2222-4333-8444-555555555555",
		Now:        now,
	})
	if err != nil {
		t.Fatal(err)
	}
	if pc.Version != 1 || pc.Path != "_delta_log/00000000000000000001.json" || pc.InCommitTimestamp != 0 {
		t.Errorf("prepared %+v", pc)
	}
	if !bytes.HasSuffix(pc.Data, []byte("\n")) || bytes.Count(pc.Data, []byte("\n")) != 4 {
		t.Errorf("commit is not 4 newline-terminated lines:\n%s", pc.Data)
	}
	actions, err := deltalog.ParseActions(pc.Data)
	if err != nil {
		t.Fatal(err)
	}
	ci, ok := actions[0].(*deltalog.CommitInfo)
	if !ok {
		t.Fatalf("first action is %T, want commitInfo", actions[0])
	}
	if *ci.Timestamp != now.UnixMilli() || ci.Operation != "WRITE" || ci.OperationParameters["mode"] != "Append" ||
		!*ci.IsBlindAppend || ci.EngineInfo != "picomq-delta-sink/1.2.3" || ci.TxnID != pc.TxnID || *ci.ReadVersion != 0 ||
		ci.InCommitTimestamp != nil {
		t.Errorf("commitInfo %+v", ci)
	}
	txn := actions[1].(*deltalog.Txn)
	if txn.AppID != "sink-1" || txn.Version != 7 || *txn.LastUpdated != now.UnixMilli() {
		t.Errorf("txn %+v", txn)
	}
	add := actions[2].(*deltalog.Add)
	if add.Path != "p=a%20b%253Ac/part-0.parquet" || *add.PartitionValues["p"] != "a b:c" || !add.DataChange ||
		add.ModificationTime != now.UnixMilli() || add.Size != 100 || add.Stats == "" {
		t.Errorf("add %+v", add)
	}
	if add2 := actions[3].(*deltalog.Add); add2.Path != "p=__HIVE_DEFAULT_PARTITION__/part-1.parquet" || add2.PartitionValues["p"] != nil {
		t.Errorf("null partition add %+v", add2)
	}
	if !strings.Contains(string(pc.Data), `"partitionValues":{"p":null}`) {
		t.Error("null partition value not written as JSON null")
	}
	if !deltalog.IsOurCommit(pc.Data, pc.TxnID) || deltalog.IsOurCommit(pc.Data, "other") || deltalog.IsOurCommit(pc.Data, "") {
		t.Error("IsOurCommit misjudges")
	}

	// The commit applies cleanly and a fresh load agrees.
	if err := s.PutIfAbsent(ctx, pc.Path, pc.Data); err != nil {
		t.Fatal(err)
	}
	applied, err := snap.Apply(pc.Version, pc.Actions)
	if err != nil {
		t.Fatal(err)
	}
	reloaded := load(t, s)
	if v, _ := reloaded.TxnVersion("sink-1"); v != 7 || reloaded.Version != 1 || applied.Version != 1 {
		t.Errorf("after commit: version %d txn %d", reloaded.Version, v)
	}
	// The same batch again is recognised as done.
	_, err = deltalog.PrepareAppend(reloaded, deltalog.AppendCommit{AppID: "sink-1", AppVersion: 7})
	var already *deltalog.AlreadyCommittedError
	if !errors.As(err, &already) || !errors.Is(err, deltalog.ErrAlreadyCommitted) || already.CommittedVersion != 7 {
		t.Errorf("re-commit: %v", err)
	}
}

func TestPrepareAppendValidation(t *testing.T) {
	snap := load(t, newTable(t))
	bad := []deltalog.DataFile{
		{Path: "", PartitionValues: deltalog.PartitionValues{"p": nil}},
		{Path: "/abs/f.parquet", PartitionValues: deltalog.PartitionValues{"p": nil}},
		{Path: "s3://b/f.parquet", PartitionValues: deltalog.PartitionValues{"p": nil}},
		{Path: "_delta_log/f.parquet", PartitionValues: deltalog.PartitionValues{"p": nil}},
		{Path: "a/../f.parquet", PartitionValues: deltalog.PartitionValues{"p": nil}},
		{Path: "f.parquet"}, // missing partition value
		{Path: "f.parquet", PartitionValues: deltalog.PartitionValues{"p": nil, "q": nil}},
		{Path: "f.parquet", PartitionValues: deltalog.PartitionValues{"p": nil}, Size: -1},
	}
	for _, f := range bad {
		if _, err := deltalog.PrepareAppend(snap, deltalog.AppendCommit{Files: []deltalog.DataFile{f}}); err == nil {
			t.Errorf("accepted %+v", f)
		}
	}
	dup := dataFile("x.parquet", nil)
	if _, err := deltalog.PrepareAppend(snap, deltalog.AppendCommit{Files: []deltalog.DataFile{dup, dup}}); err == nil {
		t.Error("accepted a duplicate file")
	}
	// Extra commitInfo keys are written as given; the writer's own are not
	// for the caller to set.
	f := dataFile("y.parquet", nil)
	if _, err := deltalog.PrepareAppend(snap, deltalog.AppendCommit{Files: []deltalog.DataFile{f},
		Info: map[string]json.RawMessage{"operation": json.RawMessage(`"DELETE"`)}}); err == nil {
		t.Error("accepted commitInfo.operation from the caller")
	}
	pc, err := deltalog.PrepareAppend(snap, deltalog.AppendCommit{Files: []deltalog.DataFile{f},
		Info: map[string]json.RawMessage{"engineNote": json.RawMessage(`{"a":[1]}`)}})
	if err != nil || !bytes.Contains(pc.Data, []byte(`"engineNote":{"a":[1]}`)) {
		t.Errorf("extra commitInfo key: %v\n%s", err, pc.Data)
	}
	// A refused table cannot be prepared at all.
	s := deltalog.NewMemStore()
	putCommit(s, 0, `{"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":["rowTracking"]}}`, metaDataLine(""))
	if _, err := deltalog.PrepareAppend(load(t, s), deltalog.AppendCommit{}); !errors.Is(err, deltalog.ErrNotWritable) {
		t.Errorf("refused table: %v", err)
	}
}

func TestInCommitTimestampMonotonic(t *testing.T) {
	s := deltalog.NewMemStore()
	putCommit(s, 0, `{"commitInfo":{"timestamp":5,"inCommitTimestamp":5000}}`, ictProtocol, metaDataLine(ictConf))
	snap := load(t, s)
	// Clock behind the previous ICT: the new one is previous+1.
	pc, err := deltalog.PrepareAppend(snap, deltalog.AppendCommit{Now: time.UnixMilli(1000)})
	if err != nil {
		t.Fatal(err)
	}
	if pc.InCommitTimestamp != 5001 {
		t.Errorf("ICT = %d, want 5001", pc.InCommitTimestamp)
	}
	ci := pc.Actions[0].(*deltalog.CommitInfo)
	if *ci.InCommitTimestamp != 5001 || *ci.Timestamp != 5001 {
		t.Errorf("commitInfo %+v", ci)
	}
	if !bytes.HasPrefix(pc.Data, []byte(`{"commitInfo":{"timestamp":5001,"inCommitTimestamp":5001`)) {
		t.Errorf("commitInfo must come first:\n%s", pc.Data)
	}
	// Clock ahead: the clock wins. Chained commits stay strictly increasing.
	prev := int64(5000)
	for i, now := range []int64{9000, 9000, 8000, 12000} {
		pc, err := deltalog.PrepareAppend(snap, deltalog.AppendCommit{Now: time.UnixMilli(now)})
		if err != nil {
			t.Fatal(err)
		}
		if pc.InCommitTimestamp <= prev || pc.InCommitTimestamp < now {
			t.Errorf("step %d: ICT %d after %d at clock %d", i, pc.InCommitTimestamp, prev, now)
		}
		if snap, err = snap.Apply(pc.Version, pc.Actions); err != nil {
			t.Fatal(err)
		}
		prev = pc.InCommitTimestamp
	}
	if snap.InCommitTimestamp != prev {
		t.Errorf("snapshot ICT %d, want %d", snap.InCommitTimestamp, prev)
	}
}

func TestResolveConflict(t *testing.T) {
	commit := func(v int64, lines ...string) deltalog.Commit {
		a, err := deltalog.ParseActions([]byte(strings.Join(lines, "\n")))
		if err != nil {
			t.Fatal(err)
		}
		return deltalog.Commit{Version: v, Actions: a}
	}
	blind := commit(5, `{"commitInfo":{"txnId":"other"}}`, `{"add":{"path":"x","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}`)
	cases := []struct {
		name    string
		winners []deltalog.Commit
		want    deltalog.Resolution
		version int64
		action  string
	}{
		{"blind append wins", []deltalog.Commit{blind}, deltalog.ResolutionRetry, 5, ""},
		{"removes and domains do not conflict", []deltalog.Commit{blind,
			commit(6, `{"remove":{"path":"x","dataChange":true}}`, `{"domainMetadata":{"domain":"d","configuration":"","removed":false}}`,
				`{"cdc":{"path":"c","partitionValues":{},"size":1,"dataChange":false}}`, `{"newThing":{}}`)},
			deltalog.ResolutionRetry, 6, ""},
		{"other app txn", []deltalog.Commit{commit(5, `{"txn":{"appId":"other","version":99}}`)}, deltalog.ResolutionRetry, 5, ""},
		// A replay re-batched by the runtime: the winner holds part of our
		// records, so retrying blindly would append the overlap twice.
		{"our app older version", []deltalog.Commit{commit(5, `{"txn":{"appId":"me","version":9}}`)}, deltalog.ResolutionAbort, 5, "txn"},
		{"our app same version", []deltalog.Commit{blind, commit(6, `{"txn":{"appId":"me","version":10}}`)}, deltalog.ResolutionAlreadyCommitted, 6, ""},
		{"our app later version", []deltalog.Commit{commit(5, `{"txn":{"appId":"me","version":11}}`)}, deltalog.ResolutionAlreadyCommitted, 5, ""},
		{"our own commit", []deltalog.Commit{blind, commit(6, `{"commitInfo":{"txnId":"mine"}}`, `{"txn":{"appId":"me","version":10}}`)}, deltalog.ResolutionCommitted, 6, ""},
		{"metadata change", []deltalog.Commit{blind, commit(6, metaDataLine(""))}, deltalog.ResolutionAbort, 6, "metaData"},
		{"protocol change", []deltalog.Commit{commit(5, protocolLine)}, deltalog.ResolutionAbort, 5, "protocol"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := deltalog.ResolveConflict("me", 10, "mine", c.winners)
			if res.Resolution != c.want || res.Version != c.version {
				t.Errorf("got %v at %d, want %v at %d (%v)", res.Resolution, res.Version, c.want, c.version, res.Err)
			}
			var cme *deltalog.ConcurrentModificationError
			var cte *deltalog.ConcurrentTxnError
			if c.action == "txn" {
				if !errors.As(res.Err, &cte) || cte.AppVersion != 9 || !errors.Is(res.Err, deltalog.ErrConcurrentModification) {
					t.Errorf("abort error %v, want a ConcurrentTxnError", res.Err)
				}
			} else if c.action != "" {
				if !errors.As(res.Err, &cme) || cme.Action != c.action || !errors.Is(res.Err, deltalog.ErrConcurrentModification) ||
					!strings.Contains(res.Err.Error(), c.action) {
					t.Errorf("abort error %v, want one naming %s", res.Err, c.action)
				}
			} else if res.Err != nil {
				t.Errorf("unexpected error %v", res.Err)
			}
		})
	}
}

// racingStore lets another writer commit just before each of our puts.
type racingStore struct {
	*deltalog.MemStore
	races atomic.Int32
	rival func(version int64)
}

func (r *racingStore) PutIfAbsent(ctx context.Context, path string, data []byte) error {
	if r.races.Add(-1) >= 0 {
		var v int64
		fmt.Sscanf(strings.TrimPrefix(path, deltalog.LogDir), "%020d.json", &v)
		r.rival(v)
	}
	return r.MemStore.PutIfAbsent(ctx, path, data)
}

func TestCommitAppendRetriesAfterBlindAppends(t *testing.T) {
	base := newTable(t)
	rs := &racingStore{MemStore: base}
	rs.races.Store(2)
	rs.rival = func(v int64) {
		putCommit(base, v, `{"commitInfo":{"txnId":"rival"}}`, `{"txn":{"appId":"rival","version":1}}`)
	}
	snap := load(t, base)
	res, err := deltalog.CommitAppend(ctx, rs, snap, deltalog.AppendCommit{
		Files: []deltalog.DataFile{dataFile("f.parquet", sp("x"))}, AppID: "me", AppVersion: 1,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 3 || res.Attempts != 3 || res.AlreadyCommitted || res.Snapshot.Version != 3 {
		t.Errorf("result %+v", res)
	}
	final := load(t, base)
	if v, _ := final.TxnVersion("me"); v != 1 || final.Version != 3 {
		t.Errorf("table: version %d, txn %d", final.Version, v)
	}
	data, _ := base.Get(ctx, deltalog.CommitPath(3))
	if !deltalog.IsOurCommit(data, res.TxnID) {
		t.Error("version 3 is not our commit")
	}
}

func TestCommitAppendOutcomes(t *testing.T) {
	t.Run("rival recorded our batch", func(t *testing.T) {
		base := newTable(t)
		rs := &racingStore{MemStore: base}
		rs.races.Store(1)
		rs.rival = func(v int64) { putCommit(base, v, `{"txn":{"appId":"me","version":4}}`) }
		res, err := deltalog.CommitAppend(ctx, rs, load(t, base), deltalog.AppendCommit{AppID: "me", AppVersion: 4}, nil)
		if err != nil || !res.AlreadyCommitted || res.Version != 1 {
			t.Errorf("result %+v, %v", res, err)
		}
	})
	t.Run("rival changed the schema", func(t *testing.T) {
		base := newTable(t)
		rs := &racingStore{MemStore: base}
		rs.races.Store(1)
		rs.rival = func(v int64) { putCommit(base, v, metaDataLine(`{"x":"y"}`)) }
		_, err := deltalog.CommitAppend(ctx, rs, load(t, base), deltalog.AppendCommit{AppID: "me", AppVersion: 4}, nil)
		if !errors.Is(err, deltalog.ErrConcurrentModification) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("already in snapshot", func(t *testing.T) {
		base := newTable(t)
		putCommit(base, 1, `{"txn":{"appId":"me","version":4}}`)
		res, err := deltalog.CommitAppend(ctx, base, load(t, base), deltalog.AppendCommit{AppID: "me", AppVersion: 3}, nil)
		if err != nil || !res.AlreadyCommitted || res.Version != 1 {
			t.Errorf("result %+v, %v", res, err)
		}
	})
	t.Run("gives up", func(t *testing.T) {
		base := newTable(t)
		rs := &racingStore{MemStore: base}
		rs.races.Store(100)
		rs.rival = func(v int64) { putCommit(base, v, `{"commitInfo":{}}`) }
		_, err := deltalog.CommitAppend(ctx, rs, load(t, base), deltalog.AppendCommit{}, &deltalog.CommitOptions{MaxAttempts: 3})
		if err == nil || !strings.Contains(err.Error(), "3 commit attempts") {
			t.Errorf("err = %v", err)
		}
	})
}

// flakyStore lands (or not) the object and then reports a timeout: the
// ambiguous failure PutCommit must resolve by reading the version back.
type flakyStore struct {
	*deltalog.MemStore
	land    bool
	readErr error
}

func (f *flakyStore) PutIfAbsent(ctx context.Context, path string, data []byte) error {
	if f.land {
		if err := f.MemStore.PutIfAbsent(ctx, path, data); err != nil {
			return err
		}
	}
	return fmt.Errorf("put %s: timeout: %w", path, deltalog.ErrTransient)
}

func (f *flakyStore) Get(ctx context.Context, path string) ([]byte, error) {
	if f.readErr != nil {
		return nil, f.readErr
	}
	return f.MemStore.Get(ctx, path)
}

func TestPutCommitAmbiguousFailures(t *testing.T) {
	prepare := func(s *deltalog.MemStore) *deltalog.PreparedCommit {
		pc, err := deltalog.PrepareAppend(load(t, s), deltalog.AppendCommit{AppID: "me", AppVersion: 1})
		if err != nil {
			t.Fatal(err)
		}
		return pc
	}
	t.Run("landed", func(t *testing.T) {
		base := newTable(t)
		pc := prepare(base)
		out, err := deltalog.PutCommit(ctx, &flakyStore{MemStore: base, land: true}, pc)
		if out != deltalog.Committed || err != nil {
			t.Errorf("%v, %v", out, err)
		}
	})
	t.Run("did not land", func(t *testing.T) {
		base := newTable(t)
		pc := prepare(base)
		out, err := deltalog.PutCommit(ctx, &flakyStore{MemStore: base}, pc)
		if out != deltalog.Retryable || !deltalog.IsTransient(err) {
			t.Errorf("%v, %v", out, err)
		}
	})
	t.Run("someone else's commit is there", func(t *testing.T) {
		base := newTable(t)
		pc := prepare(base)
		putCommit(base, 1, `{"commitInfo":{"txnId":"x"}}`)
		out, err := deltalog.PutCommit(ctx, &flakyStore{MemStore: base}, pc)
		if out != deltalog.Conflict || err != nil {
			t.Errorf("%v, %v", out, err)
		}
	})
	t.Run("read-back fails", func(t *testing.T) {
		base := newTable(t)
		pc := prepare(base)
		out, err := deltalog.PutCommit(ctx, &flakyStore{MemStore: base, readErr: errors.New("network down")}, pc)
		if out != 0 || err == nil {
			t.Errorf("%v, %v", out, err)
		}
	})
	t.Run("earlier attempt landed", func(t *testing.T) {
		base := newTable(t)
		pc := prepare(base)
		if err := base.PutIfAbsent(ctx, pc.Path, pc.Data); err != nil {
			t.Fatal(err)
		}
		out, err := deltalog.PutCommit(ctx, base, pc)
		if out != deltalog.Committed || err != nil {
			t.Errorf("%v, %v", out, err)
		}
	})
}

func TestNewUUID(t *testing.T) {
	a, b := deltalog.NewUUID(), deltalog.NewUUID()
	if a == b || len(a) != 36 || a[14] != '4' || !strings.ContainsRune("89ab", rune(a[19])) {
		t.Errorf("uuids %s %s", a, b)
	}
}
