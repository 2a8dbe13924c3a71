package delta_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/picomq/heavy-sinks/internal/testenv/services"
	"github.com/picomq/heavy-sinks/plugins/delta"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

func init() {
	sdk.Register(delta.Plugin())
}

// benchLog is the version-0 commit of a 20-column table partitioned by
// region, the shape deltabench uses.
func benchLog() []byte {
	schema := `{"type":"struct","fields":[` +
		`{"name":"event_id","type":"long","nullable":true,"metadata":{}},{"name":"user_id","type":"long","nullable":true,"metadata":{}},` +
		`{"name":"session","type":"string","nullable":true,"metadata":{}},{"name":"event","type":"string","nullable":true,"metadata":{}},` +
		`{"name":"page","type":"string","nullable":true,"metadata":{}},{"name":"referrer","type":"string","nullable":true,"metadata":{}},` +
		`{"name":"country","type":"string","nullable":true,"metadata":{}},{"name":"device","type":"string","nullable":true,"metadata":{}},` +
		`{"name":"browser","type":"string","nullable":true,"metadata":{}},{"name":"amount","type":"double","nullable":true,"metadata":{}},` +
		`{"name":"discount","type":"double","nullable":true,"metadata":{}},{"name":"score","type":"double","nullable":true,"metadata":{}},` +
		`{"name":"quantity","type":"integer","nullable":true,"metadata":{}},{"name":"items","type":"integer","nullable":true,"metadata":{}},` +
		`{"name":"is_new","type":"boolean","nullable":true,"metadata":{}},{"name":"is_paid","type":"boolean","nullable":true,"metadata":{}},` +
		`{"name":"created_at","type":"timestamp","nullable":true,"metadata":{}},{"name":"updated_at","type":"timestamp","nullable":true,"metadata":{}},` +
		`{"name":"note","type":"string","nullable":true,"metadata":{}},{"name":"region","type":"string","nullable":true,"metadata":{}}]}`
	md, _ := json.Marshal(map[string]any{"metaData": map[string]any{"id": "bench", "format": map[string]any{"provider": "parquet", "options": map[string]any{}},
		"schemaString": schema, "partitionColumns": []string{"region"}, "configuration": map[string]any{}, "createdTime": 0}})
	return []byte(`{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}` + "\n" + string(md) + "\n")
}

// benchTable writes benchLog's table to a temporary directory.
func benchTable(tb testing.TB) string {
	dir := tb.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "_delta_log", "00000000000000000000.json"), benchLog(), 0o644); err != nil {
		tb.Fatal(err)
	}
	return "file://" + dir
}

func benchBatch(b, size int) *sdk.Batch {
	rng := rand.New(rand.NewPCG(uint64(b), 2))
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}
	regions := []string{"eu", "us", "apac", "latam", "mea"}
	base := time.Date(2026, 9, 3, 21, 15, 4, 0, time.UTC)
	batch := &sdk.Batch{Topic: "bench", Schema: "json", Attempt: 1}
	for i := range size {
		n := b*size + i
		ts := base.Add(time.Duration(n) * time.Millisecond)
		p := fmt.Sprintf(`{"event_id":%d,"user_id":%d,"session":"%08x","event":"%s","page":"/%s/%d","referrer":"%s","country":"NO","device":"mobile","browser":"firefox","amount":%.2f,"discount":%.3f,"score":%.4f,"quantity":%d,"items":%d,"is_new":%t,"is_paid":%t,"created_at":"%s","updated_at":"%s","note":"%s","region":"%s"}`,
			n, rng.IntN(1_000_000), rng.Uint32(), words[rng.IntN(8)], words[rng.IntN(8)], rng.IntN(1000), words[rng.IntN(8)],
			rng.Float64()*500, rng.Float64(), rng.Float64()*100, rng.IntN(20), rng.IntN(10), rng.IntN(2) == 0, rng.IntN(3) > 0,
			ts.Format(time.RFC3339Nano), ts.Add(time.Second).Format("2006-01-02 15:04:05.000"), words[rng.IntN(8)], regions[rng.IntN(5)])
		batch.Records = append(batch.Records, sdk.Record{Offset: uint64(n), Timestamp: ts.UnixMilli(), Payload: []byte(p)})
	}
	return batch
}

// BenchmarkConsume is the sink in-process (no C host): JSON → Parquet →
// local files → commit, 1000-record batches.
func BenchmarkConsume(b *testing.B) {
	benchConsume(b, map[string]any{"table_uri": benchTable(b)})
}

// BenchmarkConsumeS3 is BenchmarkConsume on MinIO (the services of
// buildscripts/services.sh), and reports the store requests per batch.
func BenchmarkConsumeS3(b *testing.B) {
	svc := services.Require(b)
	bucket := svc.NewBucket(b)
	_, err := svc.S3Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket,
		Key: aws.String("t/_delta_log/00000000000000000000.json"), Body: bytes.NewReader(benchLog())})
	if err != nil {
		b.Fatal(err)
	}
	benchConsume(b, map[string]any{"table_uri": "s3://" + bucket + "/t", "storage_backend_type": "s3",
		"aws_s3_access_key": svc.S3AccessKey, "aws_s3_secret_key": svc.S3SecretKey, "aws_s3_region": svc.S3Region,
		"aws_s3_endpoint_url": svc.S3Endpoint, "aws_s3_allow_http": true})
}

func benchConsume(b *testing.B, cfg map[string]any) {
	def, _ := json.Marshal(map[string]any{"key": "bench", "plugin_config": cfg})
	h, err := sdk.Open(def, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer sdk.Close(h)
	batches := make([]*sdk.Batch, 20)
	size := 0
	for i := range batches {
		batches[i] = benchBatch(i, 1000)
		size += batches[i].PayloadBytes()
	}
	before := requests(b, h)
	b.ResetTimer()
	next := uint64(0)
	for i := 0; i < b.N; i++ {
		batch := batches[i%len(batches)]
		for j := range batch.Records {
			batch.Records[j].Offset = next
			next++
		}
		if err := sdk.Consume(h, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(b.N)*float64(size)/float64(len(batches))/b.Elapsed().Seconds()/1e6, "MB/s")
	b.ReportMetric((requests(b, h)-before)/float64(b.N), "requests/batch")
}

// requests returns the instance's store requests so far, of every kind.
func requests(b *testing.B, h uint64) float64 {
	out, err := sdk.Metrics(h)
	if err != nil {
		b.Fatal(err)
	}
	var m struct{ Sink map[string]any }
	if err := json.Unmarshal(out, &m); err != nil {
		b.Fatal(err)
	}
	n := 0.0
	for _, kind := range []string{"get", "put", "list", "delete"} {
		n += m.Sink["storage_"+kind+"_requests"].(float64)
	}
	return n
}

// BenchmarkConsumePartitions is 48 partitions' 60-record batches into one
// file:// table per round, delivered one at a time (a runtime with
// max_in_flight = 1) or all at once (group commits). It reports records/s
// and the batches each commit held.
func BenchmarkConsumePartitions(b *testing.B) {
	const parts, size = 48, 60
	for _, concurrent := range []bool{false, true} {
		name := "one-at-a-time"
		if concurrent {
			name = "at-once"
		}
		b.Run(name, func(b *testing.B) {
			def, _ := json.Marshal(map[string]any{"key": "bench", "plugin_config": map[string]any{"table_uri": benchTable(b)}})
			h, err := sdk.Open(def, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer sdk.Close(h)
			batches := make([]*sdk.Batch, parts)
			for p := range batches {
				batches[p] = benchBatch(p, size)
				batches[p].Partition = uint32(p)
			}
			b.ResetTimer()
			for i := range b.N {
				var wg sync.WaitGroup
				for _, batch := range batches {
					for j := range batch.Records {
						batch.Records[j].Offset = uint64(i*size + j)
					}
					consume := func() {
						if err := sdk.Consume(h, batch); err != nil {
							b.Error(err)
						}
					}
					if !concurrent {
						consume()
						continue
					}
					wg.Add(1)
					go func() { defer wg.Done(); consume() }()
				}
				wg.Wait()
			}
			b.StopTimer()
			out, err := sdk.Metrics(h)
			if err != nil {
				b.Fatal(err)
			}
			var m struct{ Sink map[string]float64 }
			if err := json.Unmarshal(out, &m); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N*parts*size)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(m.Sink["commits"]/float64(b.N), "commits/round")
			b.ReportMetric(m.Sink["commit_batches"]/m.Sink["commits"], "batches/commit")
		})
	}
}

// BenchmarkConsumePipelined is BenchmarkConsumePartitions' 48 partitions
// with two batches per partition in flight each round (a runtime with
// max_in_flight_per_partition = 2): "wait" calls a partition's second
// batch once its first was answered (what the SDK does for a sink that is
// not Pipelined), "co-grouped" sends both at once, the second following
// the first (Follows, Self, Pred), so that a group commit holds both.
func BenchmarkConsumePipelined(b *testing.B) {
	const parts, size = 48, 60
	for _, mode := range []string{"wait", "co-grouped"} {
		b.Run(mode, func(b *testing.B) {
			def, _ := json.Marshal(map[string]any{"key": "bench", "plugin_config": map[string]any{"table_uri": benchTable(b)}})
			h, err := sdk.Open(def, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer sdk.Close(h)
			var first, second []*sdk.Batch
			for p := range parts {
				first, second = append(first, benchBatch(2*p, size)), append(second, benchBatch(2*p+1, size))
				first[p].Partition, second[p].Partition = uint32(p), uint32(p)
			}
			b.ResetTimer()
			for i := range b.N {
				var wg sync.WaitGroup
				for p := range parts {
					f, s := first[p], second[p]
					for j := range size {
						f.Records[j].Offset = uint64(2*i*size + j)
						s.Records[j].Offset = uint64(2*i*size + size + j)
					}
					f.RangeLast, s.RangeLast = f.LastOffset(), s.LastOffset()
					var answerF func(bool)
					f.Self, answerF = sdk.NewPending(f)
					s.Self, s.Pred, s.Follows = nil, nil, nil
					consume := func(batch *sdk.Batch, answer func(bool)) {
						err := sdk.Consume(h, batch)
						if err != nil {
							b.Error(err)
						}
						if answer != nil {
							answer(err == nil)
						}
					}
					if mode == "wait" {
						wg.Add(1)
						go func() { defer wg.Done(); consume(f, answerF); consume(s, nil) }()
						continue
					}
					wg.Add(2)
					var answerS func(bool)
					s.Self, answerS = sdk.NewPending(s)
					s.Pred, s.Follows = f.Self, &f.RangeLast
					go func() { defer wg.Done(); consume(f, answerF) }()
					go func() { defer wg.Done(); consume(s, answerS) }()
				}
				wg.Wait()
			}
			b.StopTimer()
			out, err := sdk.Metrics(h)
			if err != nil {
				b.Fatal(err)
			}
			var m struct{ Sink map[string]float64 }
			if err := json.Unmarshal(out, &m); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N*2*parts*size)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(m.Sink["commits"]/float64(b.N), "commits/round")
			b.ReportMetric(m.Sink["commit_batches"]/m.Sink["commits"], "batches/commit")
		})
	}
}
