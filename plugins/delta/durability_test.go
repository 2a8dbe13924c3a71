package delta_test

import (
	"testing"

	"github.com/picomq/heavy-sinks/shared/sdk"
)

// TestBatchIsSyncedBeforeOK counts the sink's fsyncs on a file:// table
// (the "fsyncs" metric): every batch of a partitioned table syncs each data
// file and its partition directory, then the commit file and the log
// directory, before Consume returns. A change that drops one of them (or
// adds one) fails here; objstore's TestLocalSyncsWhatItWrites checks which
// names are synced.
func TestBatchIsSyncedBeforeOK(t *testing.T) {
	dir := smallTable(t, map[string]string{"delta.checkpointInterval": "1000"})
	h, _ := openSink(t, "durable", dir)
	defer sdk.Close(h)
	fsyncs := func() int64 { return int64(sinkMetrics(t, h)["fsyncs"].(float64)) }

	// The first batch creates the three partition directories: each new
	// directory's parent (the table root) is synced too.
	if err := sdk.Consume(h, smallBatch("t", 0, 30)); err != nil {
		t.Fatal(err)
	}
	if got, want := fsyncs(), int64(3+3+3+2); got != want {
		t.Errorf("first batch: %d fsyncs, want %d (3 new directories, 3 files, 3 directories, the commit file and the log)", got, want)
	}
	for i := 1; i <= 3; i++ {
		before := fsyncs()
		if err := sdk.Consume(h, smallBatch("t", 30*i, 30)); err != nil {
			t.Fatal(err)
		}
		if got, want := fsyncs()-before, int64(3+3+2); got != want {
			t.Errorf("batch %d: %d fsyncs, want %d (3 files, their 3 directories, the commit file and the log)", i, got, want)
		}
	}
}
