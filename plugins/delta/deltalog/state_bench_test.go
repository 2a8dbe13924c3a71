package deltalog_test

import (
	"runtime"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// BenchmarkLoadState300k loads the full state (file list included) of the
// 300k-add table from its JSON commits and from our checkpoint of it, and
// reports the heap the state keeps.
func BenchmarkLoadState300k(b *testing.B) {
	dir := tableDir(b, "300k-add-files-100-col-partitioned")
	store := newDirStore(dir)
	st, err := deltalog.LoadState(ctx, store, nil)
	if err != nil {
		b.Fatal(err)
	}
	data, _, _, err := deltalog.EncodeCheckpoint(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	withCheckpoint := newDirStore(dir)
	withCheckpoint.overlay.Put(deltalog.CheckpointPath(st.Version), data)
	for _, c := range []struct {
		name  string
		store deltalog.Store
	}{{"json", store}, {"checkpoint", withCheckpoint}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var kept float64
			for b.Loop() {
				var m0, m1 runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&m0)
				st, err := deltalog.LoadState(ctx, c.store, nil)
				if err != nil || st.NumFiles() != 300000 {
					b.Fatal(err)
				}
				runtime.GC()
				runtime.ReadMemStats(&m1)
				kept = float64(m1.HeapAlloc-m0.HeapAlloc) / (1 << 20)
				runtime.KeepAlive(st)
			}
			b.ReportMetric(kept, "MiB-kept")
		})
	}
}

// BenchmarkEncodeCheckpoint300k encodes the 300k-file state as a checkpoint.
func BenchmarkEncodeCheckpoint300k(b *testing.B) {
	st, err := deltalog.LoadState(ctx, newDirStore(tableDir(b, "300k-add-files-100-col-partitioned")), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var size int
	for b.Loop() {
		data, _, _, err := deltalog.EncodeCheckpoint(ctx, st, nil)
		if err != nil {
			b.Fatal(err)
		}
		size = len(data)
	}
	b.ReportMetric(float64(size)/(1<<20), "MiB-file")
}
