package encode_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/picomq/heavy-sinks/internal/testenv"
	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
)

// Merge and Filter write files of their own encodings, not the source
// files': Spark's files (data-reader-timestamp_ntz) carry RLE on an INT32
// column, which parquet-go cannot write. Every row comes through.
func TestMergeAndFilterRewriteSparkFiles(t *testing.T) {
	dir := filepath.Join(testenv.DeltaTables(t), "data-reader-timestamp_ntz", "tsNtzPartition=2013-07-05 17%3A01%3A00.123456")
	paths, err := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if err != nil || len(paths) != 2 {
		t.Fatalf("%v %v, want the partition's two files", paths, err)
	}
	var srcs []*parquet.File
	var rows int64
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f := openParquet(t, data)
		srcs = append(srcs, f)
		rows += f.NumRows()
	}
	schema := mustSchema(t, field("id", `"integer"`, true), field("tsNtz", `"timestamp_ntz"`, true))
	coll, err := deltalog.NewStatsCollectorFor(schema, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	m, err := encode.Merge(&buf, srcs, coll, "")
	if err != nil {
		t.Fatal(err)
	}
	if m.NumRecords != rows || openParquet(t, buf.Bytes()).NumRows() != rows {
		t.Errorf("merged %d rows, want %d", m.NumRecords, rows)
	}
	k, err := encode.NewKeys(schema, []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	drop := map[string]bool{}
	for _, id := range []string{"3", "4", "5"} {
		key, err := k.Of([][]byte{[]byte(id)})
		if err != nil {
			t.Fatal(err)
		}
		drop[key] = true
	}
	for _, src := range srcs {
		buf.Reset()
		f, err := k.Filter(&buf, src, deltalog.PartitionValues{}, drop, coll, "")
		if err != nil {
			t.Fatal(err)
		}
		if f.Dropped == 0 || f.Dropped+f.NumRecords != src.NumRows() {
			t.Errorf("filter: %+v of %d rows", f, src.NumRows())
		}
	}
}
