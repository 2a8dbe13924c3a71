package rsemu_test

import (
	"testing"
)

// BenchmarkCopy10k measures the emulator's own cost per row: one COPY of a
// 10,000-row Parquet file of the sink's shape, rolled back each time so the
// table stays empty. The cost model is off, so this is what a cluster does
// not spend: reading, checking and handing the rows to PostgreSQL.
//
//	go test -run X -bench Copy10k -benchtime 10x ./plugins/redshift/rsemu/
func BenchmarkCopy10k(b *testing.B) {
	const n = 10000
	e := newEnv(b)
	conn := e.connect(b)
	e.exec(b, conn, `CREATE TABLE bench (
  id VARCHAR(512), pico_offset VARCHAR(20), pico_timestamp VARCHAR(20), pico_topic VARCHAR,
  pico_partition BIGINT, pico_key VARCHAR(MAX), payload VARBYTE(16777216), created_at VARCHAR)`)
	e.put(b, "bench/0001.parquet", writeParquet(b, sinkRows("orders.eu", 0, n)))
	copySQL := e.copySQL("bench", sinkCols, "bench/0001.parquet")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e.exec(b, conn, "BEGIN")
		if tag := e.exec(b, conn, copySQL); tag.RowsAffected() != n {
			b.Fatalf("COPY tag %q", tag)
		}
		e.exec(b, conn, "ROLLBACK")
	}
	b.StopTimer()
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(n*b.N), "µs/row")
}
