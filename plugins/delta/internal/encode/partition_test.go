package encode_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
)

func pv(s string) *string { return &s }

func TestPartitionedFiles(t *testing.T) {
	schema := mustSchema(t,
		field("region", `"string"`, true),
		field("v", `"long"`, true),
		field("day", `"date"`, true),
	)
	enc := mustEncoder(t, schema, []string{"region", "day"}, encode.Options{})
	files := encodeRecords(t, enc,
		`{"region":"eu","day":"2026-09-03","v":1}`,
		`{"region":"us","day":"2026-09-03","v":2}`,
		`{"v":3,"day":"2026-09-03","region":"eu"}`,
		`{"region":"eu","day":"2026-09-04","v":4}`,
		`{"region":null,"day":"2026-09-03","v":5}`,
		`{"region":"","day":"2026-09-03","v":6}`,
		`{"day":"2026-09-03","v":7}`,
		`{"region":"a/b:c=d%","day":null,"v":8}`,
		`{"region":"eu","day":"2026-09-03","v":9}`,
	)
	type want struct {
		dir    string
		values deltalog.PartitionValues
		v      []int64
	}
	wants := []want{
		{"region=eu/day=2026-09-03/", deltalog.PartitionValues{"region": pv("eu"), "day": pv("2026-09-03")}, []int64{1, 3, 9}},
		{"region=us/day=2026-09-03/", deltalog.PartitionValues{"region": pv("us"), "day": pv("2026-09-03")}, []int64{2}},
		{"region=eu/day=2026-09-04/", deltalog.PartitionValues{"region": pv("eu"), "day": pv("2026-09-04")}, []int64{4}},
		// null, "" (an empty partition value is null) and absent are one partition
		{"region=__HIVE_DEFAULT_PARTITION__/day=2026-09-03/", deltalog.PartitionValues{"region": nil, "day": pv("2026-09-03")}, []int64{5, 6, 7}},
		{"region=a%2Fb%3Ac%3Dd%25/day=__HIVE_DEFAULT_PARTITION__/", deltalog.PartitionValues{"region": pv("a/b:c=d%"), "day": nil}, []int64{8}},
	}
	if len(files) != len(wants) {
		t.Fatalf("%d files, want %d", len(files), len(wants))
	}
	for i, w := range wants {
		f := files[i]
		if f.Dir != w.dir || f.Path != w.dir+"part-0000"+string(rune('0'+i))+".snappy.parquet" {
			t.Errorf("file %d: Dir %q Path %q, want dir %q", i, f.Dir, f.Path, w.dir)
		}
		if !reflect.DeepEqual(f.PartitionValues, w.values) {
			t.Errorf("file %d: partition values %v, want %v", i, show(f.PartitionValues), show(w.values))
		}
		if f.NumRecords != int64(len(w.v)) {
			t.Errorf("file %d: NumRecords %d, want %d", i, f.NumRecords, len(w.v))
		}
		// Partition columns are not in the data file.
		pf := openParquet(t, f.Data)
		if cols := pf.Schema().Columns(); len(cols) != 1 || cols[0][0] != "v" {
			t.Errorf("file %d: columns %v, want [[v]]", i, cols)
		}
		var got []int64
		for _, v := range leafValues(t, f.Data, 0) {
			got = append(got, v.Int64())
		}
		if !reflect.DeepEqual(got, w.v) {
			t.Errorf("file %d: v %v, want %v", i, got, w.v)
		}
		if wantStats := `"numRecords":` + string(rune('0'+len(w.v))); len(f.Stats) < 14 || f.Stats[1:15] != wantStats {
			t.Errorf("file %d: stats %s", i, f.Stats)
		}
	}
	// The next batch starts clean.
	files = encodeRecords(t, enc, `{"region":"us","day":"2026-09-03","v":10}`)
	if len(files) != 1 || files[0].Dir != "region=us/day=2026-09-03/" || files[0].NumRecords != 1 {
		t.Fatalf("second batch: %+v", files)
	}
}

func show(p deltalog.PartitionValues) map[string]any {
	m := map[string]any{}
	for k, v := range p {
		if v == nil {
			m[k] = nil
		} else {
			m[k] = *v
		}
	}
	return m
}

func TestPartitionValueSerialization(t *testing.T) {
	for _, tc := range []struct {
		typ, in, want, dir string
	}{
		{`"string"`, `"héllo wörld"`, "héllo wörld", "héllo wörld"},
		{`"long"`, `-9223372036854775808`, "-9223372036854775808", ""},
		{`"integer"`, `42`, "42", ""},
		{`"short"`, `-7`, "-7", ""},
		{`"byte"`, `127`, "127", ""},
		{`"boolean"`, `true`, "true", ""},
		{`"double"`, `1.5`, "1.5", ""},
		{`"double"`, `2`, "2.0", ""},
		{`"double"`, `1e300`, "1.0E300", ""},
		{`"double"`, `-0.0000001`, "-1.0E-7", ""},
		{`"float"`, `0.1`, "0.1", ""},
		{`"decimal(10,2)"`, `-12.3`, "-12.30", ""},
		{`"decimal(10,3)"`, `0.05`, "0.050", ""},
		{`"decimal(30,2)"`, `"-123456789012345678901.5"`, "-123456789012345678901.50", ""},
		{`"date"`, `"2026-09-03"`, "2026-09-03", ""},
		{`"date"`, `"0099-01-02"`, "0099-01-02", ""},
		{`"timestamp"`, `"2026-09-03T23:15:04.5+02:00"`, "2026-09-03T21:15:04.500000Z", "2026-09-03T21%3A15%3A04.500000Z"},
		{`"timestamp"`, `-1`, "1969-12-31T23:59:59.999999Z", "1969-12-31T23%3A59%3A59.999999Z"},
		{`"timestamp_ntz"`, `"2026-09-03 21:15:04"`, "2026-09-03 21:15:04.000000", "2026-09-03 21%3A15%3A04.000000"},
		{`"binary"`, `"AQID"`, "\x01\x02\x03", "%01%02%03"},
	} {
		t.Run(tc.typ+"/"+tc.in, func(t *testing.T) {
			schema := mustSchema(t, field("p", tc.typ, true), field("v", `"long"`, true))
			enc := mustEncoder(t, schema, []string{"p"}, encode.Options{})
			files := encodeRecords(t, enc, `{"p":`+tc.in+`,"v":1}`)
			got := files[0].PartitionValues["p"]
			if got == nil || *got != tc.want {
				t.Fatalf("partition value %v, want %q", show(files[0].PartitionValues), tc.want)
			}
			dir := tc.dir
			if dir == "" {
				dir = tc.want
			}
			if files[0].Dir != "p="+dir+"/" {
				t.Fatalf("dir %q, want %q", files[0].Dir, "p="+dir+"/")
			}
		})
	}
}

func TestPartitionErrors(t *testing.T) {
	schema := mustSchema(t, field("p", `"string"`, false), field("q", `"integer"`, true), field("v", `"long"`, true))
	enc := mustEncoder(t, schema, []string{"p", "q"}, encode.Options{})
	for _, tc := range []struct{ in, err string }{
		{`{"v":1}`, `Invalid record value: field "p": missing non-nullable field (record 0, offset 7)`},
		{`{"p":null}`, `Invalid record value: field "p": null in non-nullable field (record 1, offset 7)`},
		{`{"p":""}`, `Invalid record value: field "p": empty string in non-nullable partition column (an empty partition value is null) (record 2, offset 7)`},
		{`{"p":"x","q":"1"}`, `Invalid record value: field "q": expected integer, got JSON string (record 3, offset 7)`},
		{`{"p":"x","q":1e10}`, `Invalid record value: field "q": value 1e10 out of range for integer (record 4, offset 7)`},
	} {
		if got := addErr(enc, tc.in); got != tc.err {
			t.Errorf("Add(%s):\n got %q\nwant %q", tc.in, got, tc.err)
		}
	}
	if enc.Len() != 0 {
		t.Fatalf("Len %d", enc.Len())
	}
	// string partition columns coerce like string columns
	files := encodeRecords(t, enc, `{"p":12.50,"q":3,"v":1}`, `{"p":{"a":[1]},"v":2}`, `{"p":"x","p":"12.50","q":3,"v":3}`)
	if len(files) != 2 || *files[0].PartitionValues["p"] != "12.50" || *files[1].PartitionValues["p"] != `{"a":[1]}` ||
		files[0].NumRecords != 2 || files[1].PartitionValues["q"] != nil {
		t.Fatalf("files %+v", files)
	}
}

func TestUnpartitionedTarget(t *testing.T) {
	enc := mustEncoder(t, mustSchema(t, field("v", `"long"`, true)), nil, encode.Options{})
	var targets []encode.Target
	if err := enc.Add([]byte(`{"v":1}`), 0); err != nil {
		t.Fatal(err)
	}
	files := flush(t, enc)
	for _, f := range files {
		targets = append(targets, f.Target)
	}
	want := []encode.Target{{Path: "part-00000.snappy.parquet", Dir: "", PartitionValues: deltalog.PartitionValues{}, NumRecords: 1}}
	if !reflect.DeepEqual(targets, want) {
		t.Fatalf("targets %+v, want %+v", targets, want)
	}
	if files, err := enc.Flush(nil); err != nil || files != nil {
		t.Fatalf("empty Flush: %v %v", files, err)
	}
}

// Interleaved partitions: every file gathers its records from all over the
// buffers, repeated columns (slot ranges per record) included; stats too.
func TestPartitionsInterleavedNested(t *testing.T) {
	schema := mustSchema(t,
		field("p", `"integer"`, false),
		field("id", `"long"`, false),
		field("tags", arrayType(`"string"`, true), true),
		field("m", mapType(`"string"`, `"long"`, true), true),
		field("s", structType(field("x", `"double"`, true)), true),
	)
	enc := mustEncoder(t, schema, []string{"p"}, encode.Options{})
	var recs []string
	want := map[int32][]map[string]any{}
	for i := range 200 {
		p := int32(i*7%3 + i%2*3) // 0..5, interleaved
		tags := []any{}
		for j := range i % 4 {
			if j == 2 {
				tags = append(tags, nil)
			} else {
				tags = append(tags, "t"+string(rune('a'+j)))
			}
		}
		tagsJSON, _ := json.Marshal(tags)
		row := map[string]any{"id": int64(i), "tags": tags, "m": map[string]any{"k": int64(i), "n": nil},
			"s": map[string]any{"x": float64(i) / 2}}
		if i%5 == 0 {
			row["tags"], tagsJSON = nil, []byte("null")
		}
		want[p] = append(want[p], row)
		recs = append(recs, fmt.Sprintf(`{"p":%d,"id":%d,"tags":%s,"m":{"k":%d,"n":null},"s":{"x":%v}}`, p, i, tagsJSON, i, float64(i)/2))
	}
	files := encodeRecords(t, enc, recs...)
	if len(files) != 6 {
		t.Fatalf("%d files", len(files))
	}
	for _, f := range files {
		var p int32
		fmt.Sscan(*f.PartitionValues["p"], &p)
		rows := readRows(t, f.Data)
		if !reflect.DeepEqual(rows, want[p]) {
			t.Fatalf("partition %d:\n got %v\nwant %v", p, rows, want[p])
		}
		var st struct {
			NumRecords int64
			MinValues  struct{ ID int64 }
			MaxValues  struct{ ID int64 }
			NullCount  struct{ Tags int64 }
		}
		if err := json.Unmarshal([]byte(f.Stats), &st); err != nil {
			t.Fatal(err)
		}
		nulls := 0
		for _, r := range want[p] {
			if r["tags"] == nil {
				nulls++
			}
		}
		if st.NumRecords != int64(len(want[p])) || st.MinValues.ID != want[p][0]["id"] || st.MaxValues.ID != want[p][len(want[p])-1]["id"] ||
			st.NullCount.Tags != int64(nulls) {
			t.Fatalf("partition %d stats %s", p, f.Stats)
		}
	}
}
