package encode_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
)

// Keys are compared in the column's type: the encoder's coercions make 1,
// 1.0 and "1" one key of a long column; a key the column cannot hold is a
// record error; key columns must be top-level primitives.
func TestKeysInTheColumnsType(t *testing.T) {
	schema := mustSchema(t, field("id", `"long"`, true), field("name", `"string"`, true), field("day", `"date"`, true),
		field("tags", `{"type":"array","elementType":"string","containsNull":true}`, true))
	k, err := encode.NewKeys(schema, []string{"id", "name", "day"})
	if err != nil {
		t.Fatal(err)
	}
	of := func(vals ...string) string {
		t.Helper()
		var raw [][]byte
		for _, v := range vals {
			raw = append(raw, []byte(v))
		}
		s, err := k.Of(raw)
		if err != nil {
			t.Fatalf("%v: %v", vals, err)
		}
		return s
	}
	a := of(`1`, `"x"`, `"2026-01-02"`)
	for _, same := range [][]string{{`1.0`, `"x"`, `"2026-01-02"`}, {`1e0`, `"x"`, `"2026-01-02"`}} {
		if b := of(same...); b != a {
			t.Errorf("%v: key %q, want %q", same, b, a)
		}
	}
	if b := of(`1`, `"x "`, `"2026-01-02"`); b == a {
		t.Errorf("another string, the same key")
	}
	for _, bad := range []string{`"one"`, `"1"`, `1.5`} {
		if _, err := k.Of([][]byte{[]byte(bad), []byte(`"x"`), []byte(`"2026-01-02"`)}); err == nil {
			t.Errorf("%s for a long key: no error", bad)
		}
	}
	for _, cols := range [][]string{{"tags"}, {"missing"}} {
		if _, err := encode.NewKeys(schema, cols); err == nil {
			t.Errorf("key columns %v: no error", cols)
		}
	}
}

// Filter drops the rows of the given keys, keeps the others as they were
// with stats collected anew, and writes nothing when no row matches.
func TestFilterDropsTheRowsOfKeys(t *testing.T) {
	schema := mustSchema(t, field("id", `"long"`, true), field("name", `"string"`, true))
	enc := mustEncoder(t, schema, nil, encode.Options{})
	files := encodeRecords(t, enc, `{"id":1,"name":"a"}`, `{"id":2,"name":"b"}`, `{"id":3,"name":"c"}`, `{"name":"null id"}`)
	k, err := encode.NewKeys(schema, []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	key := func(v string) string {
		s, err := k.Of([][]byte{[]byte(v)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	snap := &deltalog.Snapshot{Schema: schema}
	coll, err := deltalog.NewStatsCollectorFor(schema, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = snap
	var buf bytes.Buffer
	f, err := k.Filter(&buf, openParquet(t, files[0].Data), deltalog.PartitionValues{}, map[string]bool{key("2"): true, key("9"): true}, coll, "")
	if err != nil {
		t.Fatal(err)
	}
	if f.Dropped != 1 || f.NumRecords != 3 || f.Size != int64(buf.Len()) {
		t.Fatalf("%+v (%d bytes)", f, buf.Len())
	}
	if !strings.Contains(f.Stats, `"minValues":{"id":1,"name":"a"}`) || !strings.Contains(f.Stats, `"maxValues":{"id":3,"name":"null id"}`) ||
		!strings.Contains(f.Stats, `"nullCount":{"id":1,"name":0}`) {
		t.Errorf("stats %s", f.Stats)
	}
	var ids []int64
	for _, v := range leafValues(t, buf.Bytes(), 0) {
		if !v.IsNull() {
			ids = append(ids, v.Int64())
		}
	}
	if len(ids) != 2 || ids[0] != 1 || ids[1] != 3 {
		t.Errorf("ids left %v, want 1 3 (and the null)", ids)
	}
	buf.Reset()
	f, err = k.Filter(&buf, openParquet(t, files[0].Data), deltalog.PartitionValues{}, map[string]bool{key("9"): true}, coll, "")
	if err != nil || f.Dropped != 0 || buf.Len() != 0 {
		t.Errorf("no key in the file: %+v, %d bytes, %v", f, buf.Len(), err)
	}
}

// Filter keeps the rows of repeated and nested columns whole: the values
// of a dropped row go, those of kept rows stay with their levels.
func TestFilterKeepsNestedRowsWhole(t *testing.T) {
	schema := mustSchema(t, field("id", `"long"`, true), field("tags", `{"type":"array","elementType":"string","containsNull":true}`, true),
		field("a", `{"type":"struct","fields":[{"name":"x","type":"long","nullable":true,"metadata":{}}]}`, true))
	enc := mustEncoder(t, schema, nil, encode.Options{})
	var recs []string
	for i := range 3000 { // several pages and chunks
		recs = append(recs, fmt.Sprintf(`{"id":%d,"tags":[%s],"a":{"x":%d}}`, i, strings.Repeat(`"t",`, i%4)+`"end"`, i))
	}
	files := encodeRecords(t, enc, recs...)
	k, err := encode.NewKeys(schema, []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	drop := map[string]bool{}
	for i := 0; i < 3000; i += 3 {
		s, _ := k.Of([][]byte{fmt.Appendf(nil, "%d", i)})
		drop[s] = true
	}
	coll, err := deltalog.NewStatsCollectorFor(schema, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	f, err := k.Filter(&buf, openParquet(t, files[0].Data), deltalog.PartitionValues{}, drop, coll, "")
	if err != nil {
		t.Fatal(err)
	}
	if f.Dropped != 1000 || f.NumRecords != 2000 {
		t.Fatalf("%+v", f)
	}
	rows := make([]parquet.Row, 3000)
	n, _ := openParquet(t, buf.Bytes()).RowGroups()[0].Rows().ReadRows(rows)
	if n != 2000 {
		t.Fatalf("%d rows read back", n)
	}
	for _, r := range rows[:n] {
		var id, x int64
		tags := 0
		for _, v := range r {
			switch v.Column() {
			case 0:
				id = v.Int64()
			case 1:
				tags++
			case 2:
				x = v.Int64()
			}
		}
		if id%3 == 0 || x != id || tags != int(id%4)+1 {
			t.Fatalf("row id %d, a.x %d, %d tags", id, x, tags)
		}
	}
}

// A timestamp key column's partition value, in Spark's form or ISO 8601,
// is the key a change of that instant renders; a value no form reads is
// an error (the file may hold any key), null is not.
func TestKeysPartitionTimestamp(t *testing.T) {
	for _, typ := range []string{"timestamp", "timestamp_ntz"} {
		schema := mustSchema(t, field("ts", `"`+typ+`"`, true), field("v", `"long"`, true))
		k, err := encode.NewKeys(schema, []string{"ts"})
		if err != nil {
			t.Fatal(err)
		}
		key, err := k.Of([][]byte{[]byte(`"2024-03-04T05:06:07.123456Z"`)})
		if err != nil {
			t.Fatal(err)
		}
		for _, pv := range []string{"2024-03-04 05:06:07.123456", "2024-03-04T05:06:07.123456Z", "2024-03-04T05:06:07.123456"} {
			s, ok, err := k.PartitionText(0, &pv)
			if err != nil || !ok || !strings.HasSuffix(key, ":"+s) {
				t.Errorf("%s %q: %q %v %v, want the key %q", typ, pv, s, ok, err, key)
			}
		}
		bad := "4 March 2024"
		if _, _, err := k.PartitionText(0, &bad); err == nil {
			t.Errorf("%s %q: no error", typ, bad)
		}
		if _, ok, err := k.PartitionText(0, nil); ok || err != nil {
			t.Errorf("%s null: %v %v, want not ok and no error", typ, ok, err)
		}
	}
}
