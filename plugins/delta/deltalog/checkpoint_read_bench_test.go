package deltalog_test

import (
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// BenchmarkCheckpointRead150k loads a table from a Parquet checkpoint of
// 150k files (the shape of BenchmarkCheckpoint150k's): "snapshot" reads the
// non-file actions only (what an appender opens), "state" every action
// (what a checkpointer opens).
func BenchmarkCheckpointRead150k(b *testing.B) {
	st := benchState(b, 150000, false)
	data, _, _, err := deltalog.EncodeCheckpoint(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	store := deltalog.NewMemStore()
	store.Put(deltalog.CheckpointPath(st.Version), data)
	b.Run("snapshot", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			snap, err := deltalog.Load(ctx, store, nil)
			if err != nil || snap.Version != st.Version {
				b.Fatal(snap, err)
			}
		}
	})
	b.Run("state", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			got, err := deltalog.LoadState(ctx, store, nil)
			if err != nil || got.NumFiles() != st.NumFiles() {
				b.Fatal(err)
			}
		}
	})
}
