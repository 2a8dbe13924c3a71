// Package workload generates the Delta benchmark workload, shared by
// `make bench-delta` (tools/deltabench, the plugin alone in the C host) and
// `make bench-pipeline` (tools/pipelinebench, through picomq-connect), so the
// two measure the same records in the same batches; Batches, the batching
// it is built on, also makes tools/rsbench's records.
package workload

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// CreateDeltaTable is a Python script (delta-rs) that creates the empty
// table the Delta records go to: argv[1] the table URI, argv[2] the
// storage options as a JSON object ("{}" for none).
const CreateDeltaTable = `
import sys, json, pyarrow as pa
from deltalake import write_deltalake
schema = pa.schema([
    ("event_id", pa.int64()), ("user_id", pa.int64()), ("session", pa.string()), ("event", pa.string()),
    ("page", pa.string()), ("referrer", pa.string()), ("country", pa.string()), ("device", pa.string()),
    ("browser", pa.string()), ("amount", pa.float64()), ("discount", pa.float64()), ("score", pa.float64()),
    ("quantity", pa.int32()), ("items", pa.int32()), ("is_new", pa.bool_()), ("is_paid", pa.bool_()),
    ("created_at", pa.timestamp("us", tz="UTC")), ("updated_at", pa.timestamp("us", tz="UTC")),
    ("note", pa.string()), ("region", pa.string()),
])
write_deltalake(sys.argv[1], pa.Table.from_pylist([], schema=schema), partition_by=["region"], storage_options=json.loads(sys.argv[2]) or None)
`

// DeltaSchema is the Delta schema (schemaString) of the table
// CreateDeltaTable makes, for benchmarks that encode the batches without a
// table, e.g. the encoder's in plugins/delta/encode.
const DeltaSchema = `{"type":"struct","fields":[` +
	`{"name":"event_id","type":"long","nullable":true,"metadata":{}},` +
	`{"name":"user_id","type":"long","nullable":true,"metadata":{}},` +
	`{"name":"session","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"event","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"page","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"referrer","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"country","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"device","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"browser","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"amount","type":"double","nullable":true,"metadata":{}},` +
	`{"name":"discount","type":"double","nullable":true,"metadata":{}},` +
	`{"name":"score","type":"double","nullable":true,"metadata":{}},` +
	`{"name":"quantity","type":"integer","nullable":true,"metadata":{}},` +
	`{"name":"items","type":"integer","nullable":true,"metadata":{}},` +
	`{"name":"is_new","type":"boolean","nullable":true,"metadata":{}},` +
	`{"name":"is_paid","type":"boolean","nullable":true,"metadata":{}},` +
	`{"name":"created_at","type":"timestamp","nullable":true,"metadata":{}},` +
	`{"name":"updated_at","type":"timestamp","nullable":true,"metadata":{}},` +
	`{"name":"note","type":"string","nullable":true,"metadata":{}},` +
	`{"name":"region","type":"string","nullable":true,"metadata":{}}]}`

// DeltaPartitionColumns are the partition columns of that table.
var DeltaPartitionColumns = []string{"region"}

// Delta returns nb batches of size records, the same every call: ~300-byte
// JSON events with 20 mixed columns (two timestamps as strings that need
// coercion, region the partition column), offsets 0..nb*size-1; and the
// total payload bytes.
func Delta(nb, size int) ([][]hostclient.Record, int) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}
	regions := []string{"eu", "us", "apac", "latam", "mea"}
	return Batches(nb, size, func(n int, ts time.Time) hostclient.Record {
		p := fmt.Sprintf(`{"event_id":%d,"user_id":%d,"session":"%08x","event":"%s","page":"/%s/%d","referrer":"%s","country":"%s","device":"%s","browser":"%s","amount":%.2f,"discount":%.3f,"score":%.4f,"quantity":%d,"items":%d,"is_new":%t,"is_paid":%t,"created_at":"%s","updated_at":"%s","note":"%s %s","region":"%s"}`,
			n, rng.IntN(1_000_000), rng.Uint32(), words[rng.IntN(8)], words[rng.IntN(8)], rng.IntN(1000), words[rng.IntN(8)],
			[]string{"NO", "DE", "US", "BR", "JP"}[rng.IntN(5)], []string{"mobile", "desktop", "tablet"}[rng.IntN(3)],
			[]string{"firefox", "chrome", "safari"}[rng.IntN(3)], rng.Float64()*500, rng.Float64(), rng.Float64()*100,
			rng.IntN(20), rng.IntN(10), rng.IntN(2) == 0, rng.IntN(3) > 0,
			ts.Format(time.RFC3339Nano), ts.Add(time.Second).Format("2006-01-02 15:04:05.000"),
			words[rng.IntN(8)], words[rng.IntN(8)], regions[rng.IntN(len(regions))])
		return hostclient.Record{Offset: uint64(n), TimestampMs: ts.UnixMilli(), Payload: []byte(p)}
	})
}

// Batches returns nb batches of size records made by record, called for
// n = 0..nb*size-1 in order with ts = 2026-09-03 21:15:04 UTC + n ms; and
// the total payload bytes. record sets the offset (n for every caller).
func Batches(nb, size int, record func(n int, ts time.Time) hostclient.Record) ([][]hostclient.Record, int) {
	base := time.Date(2026, 9, 3, 21, 15, 4, 0, time.UTC)
	total := 0
	out := make([][]hostclient.Record, nb)
	for b := range nb {
		recs := make([]hostclient.Record, size)
		for i := range size {
			n := b*size + i
			recs[i] = record(n, base.Add(time.Duration(n)*time.Millisecond))
			total += len(recs[i].Payload)
		}
		out[b] = recs
	}
	return out, total
}

// WorkDir makes a fresh directory for a benchmark's file:// tables inside
// parent ($TMPDIR when empty; created when missing), named after prefix.
// The path is absolute: tables' file:// URIs are made from it.
func WorkDir(parent, prefix string) (string, error) {
	if parent != "" {
		abs, err := filepath.Abs(parent)
		if err != nil {
			return "", err
		}
		if err := os.MkdirAll(abs, 0o777); err != nil {
			return "", err
		}
		parent = abs
	}
	return os.MkdirTemp(parent, prefix)
}
