package deltalog_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// benchState is a state of n files shaped like the sink's on the
// deltabench workload: 5 partitions, stats for 19 columns; with v2, of a
// table whose checkpoints are V2 (v2Checkpoint, delta.checkpointPolicy=v2).
func benchState(b *testing.B, n int, v2 bool) *deltalog.State {
	b.Helper()
	store := deltalog.NewMemStore()
	created := int64(1)
	proto := &deltalog.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}
	var conf map[string]string
	if v2 {
		proto = &deltalog.Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
			ReaderFeatures: []string{"v2Checkpoint"}, WriterFeatures: []string{"v2Checkpoint"}}
		conf = map[string]string{"delta.checkpointPolicy": "v2"}
	}
	v0, _ := deltalog.EncodeActions([]deltalog.Action{proto,
		&deltalog.Metadata{ID: "bench", Format: deltalog.Format{Provider: "parquet"}, PartitionColumns: []string{"region"},
			SchemaString: `{"type":"struct","fields":[{"name":"region","type":"string","nullable":true,"metadata":{}}]}`,
			CreatedTime:  &created, Configuration: conf}})
	store.Put(deltalog.CommitPath(0), v0)
	st, err := deltalog.LoadState(ctx, store, nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i += 5 {
		benchCommit(b, st, i, 5)
	}
	return st
}

var benchRegions = []string{"eu", "us", "apac", "latam", "mea"}

// benchCommit applies one commit of k adds numbered from first.
func benchCommit(b *testing.B, st *deltalog.State, first, k int) {
	var actions []deltalog.Action
	for i := first; i < first+k; i++ {
		r := benchRegions[i%5]
		stats := fmt.Sprintf(`{"numRecords":200,"minValues":{"event_id":%d,"user_id":%d,"session":"0000%04x","event":"alpha","page":"/alpha/%d","referrer":"alpha","country":"BR","device":"desktop","browser":"chrome","amount":0.%d,"discount":0.001,"score":0.0%d,"quantity":0,"items":0,"created_at":"2026-09-03T21:15:04.%03dZ","updated_at":"2026-09-03T21:15:05.%03dZ","note":"alpha alpha"},"maxValues":{"event_id":%d,"user_id":99%04d,"session":"ffff%04x","event":"hotel","page":"/hotel/99%d","referrer":"hotel","country":"US","device":"tablet","browser":"safari","amount":499.%d,"discount":0.999,"score":99.9%d,"quantity":19,"items":9,"created_at":"2026-09-03T21:15:05.%03dZ","updated_at":"2026-09-03T21:15:06.%03dZ","note":"hotel hotel"},"nullCount":{"event_id":0,"user_id":0,"session":0,"event":0,"page":0,"referrer":0,"country":0,"device":0,"browser":0,"amount":0,"discount":0,"score":0,"quantity":0,"items":0,"is_new":0,"is_paid":0,"created_at":0,"updated_at":0,"note":0}}`,
			i*200, i%9999, i%65536, i%1000, i%100, i%10, i%1000, i%1000, i*200+199, i%9999, i%65536, i%100, i%100, i%10, i%1000, i%1000)
		actions = append(actions, &deltalog.Add{Path: fmt.Sprintf("region=%s/part-%05d-1b2c3d4e-5f60-4718-9a0b-%012d.c000.snappy.parquet", r, i%100000, i),
			PartitionValues: deltalog.PartitionValues{"region": &r}, Size: 20000 + int64(i%5000), ModificationTime: 1780000000000 + int64(i),
			DataChange: true, Stats: stats})
	}
	actions = append(actions, &deltalog.Txn{AppID: "picomq", Version: int64(first)})
	if err := st.Apply(st.Version+1, actions); err != nil {
		b.Fatal(err)
	}
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCheckpoint150k is one checkpoint of a 150k-file table after 10
// commits of 5 files (the default interval on the deltabench workload):
// "full" encodes every add (no cache: the checkpointer before the cache),
// "cached" the steady state with a CheckpointCache, "v2" the steady state
// of a V2 table's checkpoints (sidecars and the JSON checkpoint written
// to memory). cpu-ms/op is the process's user+sys time (garbage collection
// included); MiB-file the bytes written for the checkpoint.
func BenchmarkCheckpoint150k(b *testing.B) {
	for _, mode := range []string{"full", "cached", "v2"} {
		b.Run(mode, func(b *testing.B) {
			st := benchState(b, 150000, mode == "v2")
			opts := &deltalog.CheckpointOptions{}
			store := deltalog.NewMemStore()
			encode := func() (int, error) {
				if mode != "v2" {
					data, _, _, err := deltalog.EncodeCheckpoint(ctx, st, opts)
					return len(data), err
				}
				before := memStoreBytes(b, store)
				_, err := deltalog.WriteCheckpoint(ctx, store, st, opts)
				return memStoreBytes(b, store) - before, err
			}
			if mode != "full" {
				opts.Cache = &deltalog.CheckpointCache{}
				if _, err := encode(); err != nil { // warm
					b.Fatal(err)
				}
			}
			next := st.NumFiles()
			var size int
			var cpu time.Duration
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				for range 10 {
					benchCommit(b, st, next, 5)
					next += 5
				}
				b.StartTimer()
				c0 := cpuNow()
				n, err := encode()
				if err != nil {
					b.Fatal(err)
				}
				cpu += cpuNow() - c0
				size = n
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(size)/(1<<20), "MiB-file")
		})
	}
}

// memStoreBytes is the size of every object in store.
func memStoreBytes(b *testing.B, store *deltalog.MemStore) int {
	b.Helper()
	files, err := store.List(ctx, "", "")
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, f := range files {
		n += int(f.Size)
	}
	return n
}
