package rsparquet_test

import (
	"fmt"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/redshift/rsparquet"
	"github.com/picomq/heavy-sinks/plugins/redshift/rsql"
)

// benchChunk is n records shaped like a typical JSON topic: a 16-byte key
// and a payload of about 250 bytes that differs per record.
func benchChunk(n int) rsparquet.Chunk {
	c := rsparquet.Chunk{Topic: "orders.eu", CreatedAt: createdAt, Records: make([]rsparquet.Record, n)}
	for i := range c.Records {
		c.Records[i] = rsparquet.Record{
			Offset:    uint64(1_000_000 + i),
			Timestamp: 1732878480000 + int64(i),
			Key:       []byte(fmt.Sprintf("customer-%07d", i%5000)),
			Payload: []byte(fmt.Sprintf(`{"order_id":%d,"customer":"customer-%07d","status":"paid","amount":%d.%02d,`+
				`"currency":"EUR","items":[{"sku":"SKU-%05d","qty":%d},{"sku":"SKU-%05d","qty":1}],`+
				`"shipping":{"country":"DE","city":"Berlin","zip":"10%03d"},"created":"2025-11-29T11:08:%02d.%03dZ"}`,
				i, i%5000, i%997, i%100, i%40000, 1+i%3, (i*7)%40000, i%1000, i%60, i%1000)),
		}
	}
	return c
}

// BenchmarkEncodeChunk measures the plugin's own CPU per row: the
// pre-flight check plus Parquet and zstd encoding of one chunk, for the
// default batch_size and two larger ones.
func BenchmarkEncodeChunk(b *testing.B) {
	for _, rows := range []int{100, 1000, 10000} {
		for _, payload := range []rsql.PayloadFormat{rsql.PayloadVarbyte, rsql.PayloadText} {
			b.Run(fmt.Sprintf("rows=%d/payload=%s", rows, payload), func(b *testing.B) {
				l := rsql.NewLayout(rsql.Options{IncludeMetadata: true, IncludeKey: true, Payload: payload})
				e := rsparquet.NewEncoder(l)
				c := benchChunk(rows)
				lim := l.DefaultLimits()
				in := 0
				for _, r := range c.Records {
					in += len(r.Payload)
				}
				b.SetBytes(int64(in))
				b.ReportAllocs()
				var size int
				for b.Loop() {
					if err := rsparquet.Check(l, lim, c); err != nil {
						b.Fatal(err)
					}
					data, err := e.Encode(c)
					if err != nil {
						b.Fatal(err)
					}
					size = len(data)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
				b.ReportMetric(float64(size)/float64(rows), "file-bytes/row")
			})
		}
	}
}
