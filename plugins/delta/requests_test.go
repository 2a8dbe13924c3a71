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
// commits, the lost race reads the winner, and the next batch also reads by
// name what others committed since before its put, until a batch finds
// nobody else wrote.
func TestSteadyStateRequestsPerBatch(t *testing.T) {
	dir := smallTable(t, nil)
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

	// Another writer commits version 6 behind the sink's back.
	store, err := objstore.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := deltalog.Load(ctx, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := deltalog.CommitAppend(ctx, store, snap, deltalog.AppendCommit{AppID: "peer", AppVersion: 1}, nil); err != nil {
		t.Fatal(err)
	}
	// Lost race: the put of 6 fails, the winner and the free name after
	// it are read, the commit lands at 7.
	if got, want := batch(15), (requestCounts{get: 3, put: 5}); got != want {
		t.Errorf("batch after another writer's commit: %+v, want %+v", got, want)
	}
	if c := sinkMetrics(t, h)["commit_conflicts"].(float64); c != 1 {
		t.Errorf("commit_conflicts = %v, want 1", c)
	}
	// Another writer was seen: catch up before the put once more.
	if got, want := batch(18), (requestCounts{get: 2, put: 4}); got != want {
		t.Errorf("batch after the lost race: %+v, want %+v", got, want)
	}
	if got, want := batch(21), (requestCounts{get: 1, put: 4}); got != want {
		t.Errorf("batch alone again: %+v, want %+v", got, want)
	}
	final, err := deltalog.Load(ctx, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	if final.Version != 9 {
		t.Errorf("table at version %d, want 9 (8 batches and the peer's commit)", final.Version)
	}
	if v, _ := final.TxnVersion("picomq-delta-sink/req/req/0"); v != 23 {
		t.Errorf("txn version %d, want 23", v)
	}
}
