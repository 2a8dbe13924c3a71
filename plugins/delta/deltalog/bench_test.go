package deltalog_test

import (
	"context"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// BenchmarkLoad300k loads the 300k-add-file table (three ~15 MB commits of
// add actions, no checkpoint): "mem" measures replay alone from a MemStore,
// "disk" adds reading the 46 MB of JSON from the filesystem each time.
func BenchmarkLoad300k(b *testing.B) {
	dir := tableDir(b, "300k-add-files-100-col-partitioned")
	stores := []struct {
		name  string
		store deltalog.Store
	}{
		{"mem", memStoreFromDir(b, dir)},
		{"disk", newDirStore(dir)},
	}
	for _, s := range stores {
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				snap, err := deltalog.Load(context.Background(), s.store, nil)
				if err != nil {
					b.Fatal(err)
				}
				if snap.Version != 4 {
					b.Fatalf("version %d", snap.Version)
				}
			}
		})
	}
}
