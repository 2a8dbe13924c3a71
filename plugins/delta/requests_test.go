package delta_test

import (
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/objstore"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// requestCounts is the instance's storage_*_requests metrics.
type requestCounts struct{ get, put, list, del int64 }

func storageRequests(t *testing.T, h uint64) requestCounts {
	t.Helper()
	m := sinkMetrics(t, h)
	n := func(kind string) int64 { return int64(m["storage_"+kind+"_requests"].(float64)) }
	return requestCounts{n("get"), n("put"), n("list"), n("delete")}
}

// A batch written by the only writer costs its data files and one
// conditional put of the commit, plus one get: the check that the log still
// holds the commit the snapshot ended on (a table replaced under the sink),
// made after the files are stored. Nothing lists the log. When another writer
// commits, the lost race reads the winner, and the batches after it also
// read by name what others committed since before their put, until no
// other writer's commit was seen for a while (aloneAfter: alone_internal_test.go).
func TestSteadyStateRequestsPerBatch(t *testing.T) {
	// No checkpoint within the test's versions: its reads are not a batch's.
	dir := smallTable(t, map[string]string{"delta.checkpointInterval": "100"})
	h, _ := openSink(t, "req", dir)
	defer sdk.Close(h)
	batch := func(first int) requestCounts {
		t.Helper()
		before := storageRequests(t, h)
		if err := sdk.Consume(h, smallBatch("req", first, 3)); err != nil { // 3 regions: 3 files
			t.Fatal(err)
		}
		after := storageRequests(t, h)
		return requestCounts{after.get - before.get, after.put - before.put, after.list - before.list, after.del - before.del}
	}
	// The first batch after the table was opened reads what others
	// committed since: it has seen no other writer yet.
	if got, want := batch(0), (requestCounts{get: 2, put: 4}); got != want {
		t.Errorf("first batch: %+v, want %+v", got, want)
	}
	for n := 1; n <= 4; n++ {
		if got, want := batch(n*3), (requestCounts{get: 1, put: 4}); got != want {
			t.Errorf("batch %d: %+v, want %+v", n, got, want)
		}
	}

	store, err := objstore.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	// peer is another writer committing behind the sink's back.
	peer := func(appVersion int64) {
		t.Helper()
		snap, err := deltalog.Load(ctx, store, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := deltalog.CommitAppend(ctx, store, snap, deltalog.AppendCommit{AppID: "peer", AppVersion: appVersion}, nil); err != nil {
			t.Fatal(err)
		}
	}
	peer(1) // version 6
	// Lost race: the put of 6 fails, the winner and the free name after
	// it are read, the commit lands at 7.
	if got, want := batch(15), (requestCounts{get: 3, put: 5}); got != want {
		t.Errorf("batch after another writer's commit: %+v, want %+v", got, want)
	}
	if c := sinkMetrics(t, h)["commit_conflicts"].(float64); c != 1 {
		t.Errorf("commit_conflicts = %v, want 1", c)
	}
	// Another writer was seen: catch up before the put, also after a
	// batch that went in right after our previous one (the other writer
	// may just not have committed in between).
	if got, want := batch(18), (requestCounts{get: 2, put: 4}); got != want {
		t.Errorf("batch after the lost race: %+v, want %+v", got, want)
	}
	// The other writer commits version 9 between two of our commits: the
	// next batch reads it by name before its put and loses no race.
	peer(2)
	if got, want := batch(21), (requestCounts{get: 3, put: 4}); got != want {
		t.Errorf("batch after the other writer's second commit: %+v, want %+v", got, want)
	}
	if c := sinkMetrics(t, h)["commit_conflicts"].(float64); c != 1 {
		t.Errorf("commit_conflicts = %v, want still 1: a batch put without reading the other writer's commit", c)
	}
	if got, want := batch(24), (requestCounts{get: 2, put: 4}); got != want {
		t.Errorf("batch within aloneAfter of the other writer's commit: %+v, want %+v", got, want)
	}
	final, err := deltalog.Load(ctx, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if final.Version != 11 {
		t.Errorf("table at version %d, want 11 (9 batches and the peer's 2 commits)", final.Version)
	}
	if v, _ := final.TxnVersion("picomq-delta-sink/req/req/0"); v != 26 {
		t.Errorf("txn version %d, want 26", v)
	}
}
