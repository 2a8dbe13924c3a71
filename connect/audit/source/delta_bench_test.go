package source_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/connect/audit"
	"github.com/picomq/heavy-sinks/connect/audit/source"
	"github.com/picomq/heavy-sinks/internal/testenv/pyenv"
	"github.com/picomq/heavy-sinks/plugins/delta"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// BenchmarkDeltaScan reads the pico_* columns of a Delta table of
// PICOMQ_AUDIT_ROWS rows (default 10,000,000) in 4 partitions, written by
// delta-rs in files of 2,500,000 rows, and reports rows/s and the peak
// heap seen while it ran (sampled every 10 ms): the heap must not grow
// with the rows.
func BenchmarkDeltaScan(b *testing.B) {
	rows := 10_000_000
	if s := os.Getenv("PICOMQ_AUDIT_ROWS"); s != "" {
		rows, _ = strconv.Atoi(s)
	}
	dir := filepath.Join(b.TempDir(), "t")
	pyenv.Run(b, `
import sys, pyarrow as pa
from deltalake import write_deltalake
n, per = int(sys.argv[2]), 2_500_000
for start in range(0, n, per):
    m = min(per, n - start)
    offs = pa.array(range(start // 4, start // 4 + (m + 3) // 4), pa.int64())
    t = pa.table({
        "id": pa.array(range(start, start + m), pa.int64()),
        "pico_topic": pa.array(["t"] * m, pa.string()),
        "pico_partition": pa.array([i % 4 for i in range(m)], pa.int32()),
        "pico_offset": pa.array([start // 4 + i // 4 for i in range(m)], pa.int64()),
    })
    write_deltalake(sys.argv[1], t, mode="append")
`, dir, strconv.Itoa(rows))
	cfg, err := delta.NewAudit(context.Background(), json.RawMessage(`{"table_uri":"file://`+dir+`","metadata_columns":true}`), "k", sdk.Env{})
	if err != nil {
		b.Fatal(err)
	}
	tps := []audit.TP{{Topic: "t", Partition: 0}, {Topic: "t", Partition: 1}, {Topic: "t", Partition: 2}, {Topic: "t", Partition: 3}}
	var peak atomic.Uint64
	stop := make(chan struct{})
	go func() {
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
		}
	}()
	b.ResetTimer()
	for range b.N {
		out, _, err := (&source.Delta{Key: "k", Cfg: cfg}).Scan(context.Background(), tps)
		if err != nil {
			b.Fatal(err)
		}
		var n int64
		for _, w := range out {
			n += w.Rows.Rows()
			if len(w.Rows.Once.Ranges()) != 1 || w.Rows.Copies != 0 {
				b.Fatalf("%v: ranges %v, %d copies", w.Table, w.Rows.Once.Ranges(), w.Rows.Copies)
			}
		}
		if n != int64(rows) {
			b.Fatalf("%d rows counted, want %d", n, rows)
		}
	}
	b.StopTimer()
	close(stop)
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
}
