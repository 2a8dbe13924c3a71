package delta_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/shared/sdk"
	"github.com/picomq/heavy-sinks/shared/sdk/sdktest"
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

// TestFileSyncRefusesAnUnknownValue; deltatest's
// FileSyncFilesystemSyncsTwicePerBatch tests the value "filesystem".
func TestFileSyncRefusesAnUnknownValue(t *testing.T) {
	def, _ := json.Marshal(map[string]any{"key": "bad", "plugin_config": map[string]any{
		"table_uri": "file:///tmp/x", "file_sync": "never"}})
	_, err := sdk.Open(def, (&sdktest.Logs{}).Log)
	if err == nil || !strings.Contains(err.Error(), `"file_sync": "never" is not one of file, filesystem`) {
		t.Errorf("open: %v", err)
	}
}
