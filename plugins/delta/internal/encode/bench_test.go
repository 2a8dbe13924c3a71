package encode_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/internal/testenv/workload"
	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
)

// benchSchema is ~20 mixed columns: strings, longs, doubles, booleans,
// timestamps sent as strings, one nested struct, one partition column.
const benchSchema = `{"type":"struct","fields":[
{"name":"id","type":"long","nullable":false,"metadata":{}},
{"name":"eid","type":"string","nullable":false,"metadata":{}},
{"name":"uid","type":"long","nullable":true,"metadata":{}},
{"name":"sess","type":"string","nullable":true,"metadata":{}},
{"name":"cc","type":"string","nullable":true,"metadata":{}},
{"name":"region","type":"string","nullable":true,"metadata":{}},
{"name":"amt","type":"double","nullable":true,"metadata":{}},
{"name":"qty","type":"integer","nullable":true,"metadata":{}},
{"name":"price","type":"double","nullable":true,"metadata":{}},
{"name":"test","type":"boolean","nullable":true,"metadata":{}},
{"name":"ts","type":"timestamp","nullable":true,"metadata":{}},
{"name":"upd","type":"timestamp","nullable":true,"metadata":{}},
{"name":"status","type":"string","nullable":true,"metadata":{}},
{"name":"dev","type":{"type":"struct","fields":[
  {"name":"os","type":"string","nullable":true,"metadata":{}},
  {"name":"ver","type":"string","nullable":true,"metadata":{}},
  {"name":"model","type":"string","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},
{"name":"score","type":"double","nullable":true,"metadata":{}},
{"name":"flags","type":"long","nullable":true,"metadata":{}},
{"name":"cat","type":"string","nullable":true,"metadata":{}},
{"name":"active","type":"boolean","nullable":true,"metadata":{}},
{"name":"ms","type":"long","nullable":true,"metadata":{}},
{"name":"note","type":"string","nullable":true,"metadata":{}}]}`

func benchRecords(n int) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	countries := []string{"DE", "FR", "US", "JP", "BR", "IN", "GB", "ES"}
	regions := []string{"eu", "us", "ap"}
	statuses := []string{"created", "paid", "shipped", "delivered", "cancelled"}
	oses := []string{"ios", "android", "linux", "windows"}
	cats := []string{"books", "games", "music", "garden", "tools", "toys"}
	out := make([][]byte, n)
	for i := range out {
		sec := 1788477304 + int64(i)
		out[i] = fmt.Appendf(nil, `{"id":%d,"eid":"%08x","uid":%d,"sess":"%08x","cc":%q,"region":%q,"amt":%.2f,"qty":%d,"price":%.3f,"test":%t,"ts":"2026-09-03T%02d:%02d:%02d.%03dZ","upd":"2026-09-03 %02d:%02d:%02d","status":%q,"dev":{"os":%q,"ver":"%d.%d.%d","model":"M-%03d"},"score":%.4f,"flags":%d,"cat":%q,"active":%t,"ms":%d,"note":"n%d"}`,
			1_000_000+i, rng.Uint32(),
			rng.IntN(1_000_000), rng.Uint32(), countries[rng.IntN(len(countries))], regions[rng.IntN(len(regions))],
			rng.Float64()*1000, rng.IntN(20), rng.Float64()*100, rng.IntN(10) == 0,
			(sec/3600)%24, (sec/60)%60, sec%60, rng.IntN(1000), (sec/3600)%24, (sec/60)%60, sec%60,
			statuses[rng.IntN(len(statuses))], oses[rng.IntN(len(oses))], rng.IntN(20), rng.IntN(10), rng.IntN(100), rng.IntN(1000),
			rng.Float64(), rng.Int64N(1<<20), cats[rng.IntN(len(cats))], rng.IntN(2) == 0, sec*1000+int64(rng.IntN(1000)), rng.IntN(100000))
	}
	return out
}

// BenchmarkEncode is the hot path end to end: 1000-record batches of ~360
// bytes and 20 columns (strings, longs, doubles, booleans, timestamps sent
// as strings, a nested struct, a partition column with three values) added
// and flushed to in-memory snappy Parquet files with their stats. Run with
// -cpu 1 for the one-core figure:
//
//	go test -run '^$' -bench BenchmarkEncode -cpu 1 ./plugins/delta/internal/encode/
func BenchmarkEncode(b *testing.B) {
	benchEncode(b, benchSchema, []string{"region"}, benchRecords(1000))
}

// BenchmarkEncodeWorkload is BenchmarkEncode on make bench-delta's batches
// (internal/testenv/workload: 1000 records of ~380 bytes, 20 columns, five
// partitions), each batch a different one of 20, as the sink sees them:
//
//	go test -run '^$' -bench BenchmarkEncodeWorkload -cpu 1 ./plugins/delta/internal/encode/
func BenchmarkEncodeWorkload(b *testing.B) {
	batches, _ := workload.Delta(20, 1000)
	recs := make([][]byte, 0, 20*1000)
	for _, batch := range batches {
		for _, r := range batch {
			recs = append(recs, r.Payload)
		}
	}
	benchEncode(b, workload.DeltaSchema, workload.DeltaPartitionColumns, recs)
}

// benchEncode adds and flushes recs in batches of 1000, round and round.
func benchEncode(b *testing.B, schemaJSON string, partitionColumns []string, all [][]byte) {
	schema, err := deltalog.ParseSchema(schemaJSON)
	if err != nil {
		b.Fatal(err)
	}
	enc, err := encode.New(schema, partitionColumns, encode.Options{FileName: func(i int) string { return fmt.Sprintf("part-%05d.snappy.parquet", i) }})
	if err != nil {
		b.Fatal(err)
	}
	const batch = 1000
	recs := all[:batch]
	next := 0
	inBytes := 0
	for _, r := range recs {
		inBytes += len(r)
	}
	bufs := make([]bytes.Buffer, 8)
	open := func(t *encode.Target) (io.Writer, error) {
		for i := range bufs {
			if bufs[i].Len() == 0 {
				return &bufs[i], nil
			}
		}
		return nil, fmt.Errorf("out of buffers")
	}
	outBytes := 0
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		recs = all[next : next+batch]
		next = (next + batch) % len(all)
		for i := range bufs {
			bufs[i].Reset()
		}
		for i, r := range recs {
			if err := enc.Add(r, uint64(i)); err != nil {
				b.Fatal(err)
			}
		}
		files, err := enc.Flush(open)
		if err != nil {
			b.Fatal(err)
		}
		outBytes = 0
		for _, f := range files {
			outBytes += int(f.Size)
		}
	}
	cpuSec := (cpuTime() - cpu0).Seconds()
	sec := b.Elapsed().Seconds()
	// On a shared machine wall time includes other processes; CPU time
	// (user+system of this process, GOMAXPROCS=1 with -cpu 1) is the cost.
	b.ReportMetric(float64(b.N*batch)/cpuSec, "records/cpu-s")
	b.ReportMetric(float64(b.N*batch)/sec, "records/s")
	b.ReportMetric(float64(b.N*inBytes)/sec/1e6, "MB/s")
	b.ReportMetric(float64(inBytes)/batch, "B/record")
	b.ReportMetric(float64(outBytes), "parquet-B/batch")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAdd is the JSON side alone: decoding and coercing into the
// column buffers, no Parquet.
func BenchmarkAdd(b *testing.B) {
	schema, err := deltalog.ParseSchema(benchSchema)
	if err != nil {
		b.Fatal(err)
	}
	enc, err := encode.New(schema, []string{"region"}, encode.Options{})
	if err != nil {
		b.Fatal(err)
	}
	const batch = 1000
	recs := benchRecords(batch)
	inBytes := 0
	for _, r := range recs {
		inBytes += len(r)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		enc.Reset()
		for i, r := range recs {
			if err := enc.Add(r, uint64(i)); err != nil {
				b.Fatal(err)
			}
		}
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N*batch)/sec, "records/s")
	b.ReportMetric(float64(b.N*inBytes)/sec/1e6, "MB/s")
}
