package encode_test

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
)

// mergeSchema has a column of every type the encoder writes.
func mergeSchema(t *testing.T) *deltalog.StructType {
	return mustSchema(t,
		field("l", `"long"`, true), field("i", `"integer"`, true), field("sh", `"short"`, true), field("b", `"byte"`, true),
		field("d", `"double"`, true), field("f", `"float"`, true), field("s", `"string"`, true), field("bo", `"boolean"`, true),
		field("bin", `"binary"`, true), field("dt", `"date"`, true), field("ts", `"timestamp"`, true), field("ntz", `"timestamp_ntz"`, true),
		field("d1", `"decimal(5,2)"`, true), field("d2", `"decimal(15,2)"`, true), field("d3", `"decimal(30,2)"`, true),
		field("st", structType(field("x", `"long"`, true), field("y", `"string"`, true)), true),
		field("arr", arrayType(`"long"`, true), true), field("m", mapType(`"string"`, `"long"`, true), true),
	)
}

func mergeRecords(count int) []string {
	var out []string
	for n := range count {
		if n%5 == 4 {
			out = append(out, `{"l":null}`) // every column null
			continue
		}
		neg := 1 - 2*(n%2)
		out = append(out, fmt.Sprintf(`{"l":%d,"i":%d,"sh":%d,"b":%d,"d":%d.5,"f":%d.25,"s":"s%02d é","bo":%v,"bin":"AAE=",`+
			`"dt":"2026-01-%02d","ts":"2026-09-03T21:15:%02d.123456Z","ntz":"2026-09-03 21:15:%02d.5","d1":"%d.25","d2":"%d.5",`+
			`"d3":"%d2345678901234567890.12","st":{"x":%d,"y":"y%d"},"arr":[%d,null],"m":{"k":%d}}`,
			n*neg*1000, n*neg%30000, n%30000, n*neg%100, n*neg, n, 11-n, n%3 == 0, n%28+1, n%60, n%60, n*neg%1000, n*neg*1000, n*neg, n*neg, n, n, n))
	}
	return out
}

// Merging the files of several batches gives the file of one batch of the
// same records: the same rows, and the same add.stats (min/max of every
// type, nulls of leaves, structs, arrays and maps), so compaction keeps
// every column's type and the statistics data skipping relies on.
func TestMergeKeepsRowsAndStats(t *testing.T) {
	for _, c := range []struct{ records, perFile int }{{12, 4}, {3000, 1000}} {
		t.Run(fmt.Sprintf("%dx%d", c.records/c.perFile, c.perFile), func(t *testing.T) { testMerge(t, c.records, c.perFile) })
	}
}

func testMerge(t *testing.T, count, perFile int) {
	schema := mergeSchema(t)
	records := mergeRecords(count)
	whole := encodeRecords(t, mustEncoder(t, schema, nil, encode.Options{}), records...)[0]

	enc := mustEncoder(t, schema, nil, encode.Options{})
	var parts []*parquet.File
	var datas [][]byte
	var stats []string
	for i := 0; i < len(records); i += perFile {
		w := encodeRecords(t, enc, records[i:i+perFile]...)[0]
		parts = append(parts, openParquet(t, w.Data))
		datas, stats = append(datas, w.Data), append(stats, w.Stats)
	}

	// Splice: the pages as they are, the stats combined from the files'.
	spliced, rows, err := encode.Splice(nil, datas, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rows != int64(count) || len(openParquet(t, spliced).RowGroups()) != 1 {
		t.Fatalf("spliced %d rows, %d row groups", rows, len(openParquet(t, spliced).RowGroups()))
	}
	if got, want := readRows(t, spliced), readRows(t, whole.Data); !reflect.DeepEqual(got, want) {
		t.Errorf("spliced rows\n%v\nwant\n%v", got, want)
	}
	combined, err := deltalog.NewStatsCollectorFor(schema, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stats {
		if err := combined.ObserveStats(s); err != nil {
			t.Fatal(err)
		}
	}
	if js, _ := combined.JSON(); js != whole.Stats {
		t.Errorf("combined stats\n%s\nwant (one batch)\n%s", js, whole.Stats)
	}

	coll, err := deltalog.NewStatsCollectorFor(schema, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	m, err := encode.Merge(&buf, parts, coll, "")
	if err != nil {
		t.Fatal(err)
	}
	if m.NumRecords != int64(count) || m.Size != int64(buf.Len()) {
		t.Fatalf("merged %d rows, size %d of %d bytes", m.NumRecords, m.Size, buf.Len())
	}
	if m.Stats != whole.Stats {
		t.Errorf("merged stats\n%s\nwant (one batch)\n%s", m.Stats, whole.Stats)
	}
	if got, want := readRows(t, buf.Bytes()), readRows(t, whole.Data); !reflect.DeepEqual(got, want) {
		t.Errorf("merged rows\n%v\nwant\n%v", got, want)
	}
	if got, want := openParquet(t, buf.Bytes()).Schema(), openParquet(t, whole.Data).Schema(); !parquet.EqualNodes(got, want) {
		t.Errorf("merged schema\n%v\nwant\n%v", got, want)
	}
}

// A statistics column the files lack (added to the table after they were
// written) is null in every row; files of different schemas are not merged.
func TestMergeSchemaChanges(t *testing.T) {
	old := mustSchema(t, field("l", `"long"`, true))
	enc := mustEncoder(t, old, nil, encode.Options{})
	a := openParquet(t, encodeRecords(t, enc, `{"l":1}`, `{"l":2}`)[0].Data)
	b := openParquet(t, encodeRecords(t, enc, `{"l":3}`)[0].Data)
	wider := mustSchema(t, field("l", `"long"`, true), field("n", `"string"`, true))
	coll, err := deltalog.NewStatsCollectorFor(wider, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	m, err := encode.Merge(&buf, []*parquet.File{a, b}, coll, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"numRecords":3,"minValues":{"l":1},"maxValues":{"l":3},"nullCount":{"l":0,"n":3}}`; m.Stats != want {
		t.Errorf("stats %s, want %s", m.Stats, want)
	}
	c := openParquet(t, encodeRecords(t, mustEncoder(t, wider, nil, encode.Options{}), `{"l":4,"n":"x"}`)[0].Data)
	if _, err := encode.Merge(&buf, []*parquet.File{a, c}, coll, ""); err == nil {
		t.Fatal("files of different schemas were merged")
	}
}

// Files with dictionary pages are not spliced (their pages need their own
// chunk's dictionary): Merge rewrites them.
func TestSpliceRefusesDictionaryPages(t *testing.T) {
	schema := mustSchema(t, field("s", `"string"`, true))
	enc := mustEncoder(t, schema, nil, encode.Options{DictionaryEncoding: true})
	a := encodeRecords(t, enc, `{"s":"x"}`, `{"s":"x"}`)[0].Data
	b := encodeRecords(t, enc, `{"s":"y"}`)[0].Data
	if _, _, err := encode.Splice(nil, [][]byte{a, b}, nil); !errors.Is(err, encode.ErrNotSpliceable) {
		t.Fatalf("err %v, want ErrNotSpliceable", err)
	}
}

// Stats without a nullCount for an indexed column cannot be combined; a
// file with values but no bounds leaves the combined column without any.
func TestObserveStats(t *testing.T) {
	schema := mustSchema(t, field("l", `"long"`, true), field("d", `"double"`, true))
	coll, err := deltalog.NewStatsCollectorFor(schema, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := coll.ObserveStats(`{"numRecords":2,"nullCount":{"l":0}}`); !errors.Is(err, deltalog.ErrStatsIncomplete) {
		t.Fatalf("err %v, want ErrStatsIncomplete", err)
	}
	coll.Reset()
	for _, s := range []string{
		`{"numRecords":2,"minValues":{"l":5,"d":1.5},"maxValues":{"l":9,"d":2},"nullCount":{"l":0,"d":0}}`,
		`{"numRecords":3,"minValues":{"l":-1},"maxValues":{"l":4},"nullCount":{"l":1,"d":0}}`, // d saw NaN
	} {
		if err := coll.ObserveStats(s); err != nil {
			t.Fatal(err)
		}
	}
	want := `{"numRecords":5,"minValues":{"l":-1},"maxValues":{"l":9},"nullCount":{"l":1,"d":0}}`
	if js, _ := coll.JSON(); js != want {
		t.Fatalf("stats %s, want %s", js, want)
	}
}
