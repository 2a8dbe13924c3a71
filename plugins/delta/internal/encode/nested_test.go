package encode_test

import (
	"reflect"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
)

// nestedSchema mixes structs, arrays and maps, nullable and not.
func nestedSchema(t *testing.T) *encode.Encoder {
	t.Helper()
	point := structType(field("x", `"long"`, false), field("label", `"string"`, true))
	schema := mustSchema(t,
		field("id", `"long"`, false),
		field("s", structType(
			field("a", `"string"`, true),
			field("b", `"timestamp"`, true),
			field("inner", structType(field("c", `"integer"`, true)), true),
		), true),
		field("tags", arrayType(`"string"`, true), true),
		field("points", arrayType(point, false), true),
		field("matrix", arrayType(arrayType(`"long"`, true), true), true),
		field("attrs", mapType(`"string"`, `"long"`, true), true),
		field("idx", mapType(`"integer"`, point, false), true),
		field("req", structType(field("r", `"boolean"`, false)), false),
	)
	return mustEncoder(t, schema, nil, encode.Options{})
}

func TestNestedRoundTrip(t *testing.T) {
	enc := nestedSchema(t)
	files := encodeRecords(t, enc,
		`{"id":1,"s":{"a":"x","b":"2026-09-03T21:15:04Z","inner":{"c":7}},"tags":["a",null,"c"],"points":[{"x":1,"label":"p"},{"x":2}],"matrix":[[1,2],[],null,[3]],"attrs":{"k":1,"n":null},"idx":{"5":{"x":5,"label":"five"}},"req":{"r":true}}`,
		`{"id":2,"s":null,"tags":[],"points":null,"matrix":[],"attrs":{},"idx":{},"req":{"r":false}}`,
		`{"id":3,"req":{"r":true},"s":{"inner":null}}`,
		// keys in any order, unknown fields anywhere
		`{"zzz":[1,{"q":null}],"req":{"extra":1,"r":false},"points":[{"label":"l","x":9,"other":{}}],"id":4}`,
	)
	rows := readRows(t, files[0].Data)
	want := []map[string]any{
		{"id": int64(1),
			"s":      map[string]any{"a": "x", "b": us(2026, 9, 3, 21, 15, 4, 0), "inner": map[string]any{"c": int32(7)}},
			"tags":   []any{"a", nil, "c"},
			"points": []any{map[string]any{"x": int64(1), "label": "p"}, map[string]any{"x": int64(2), "label": nil}},
			"matrix": []any{[]any{int64(1), int64(2)}, []any{}, nil, []any{int64(3)}},
			"attrs":  map[string]any{"k": int64(1), "n": nil},
			"idx":    map[string]any{"5": map[string]any{"x": int64(5), "label": "five"}},
			"req":    map[string]any{"r": true}},
		{"id": int64(2), "s": nil, "tags": []any{}, "points": nil, "matrix": []any{},
			"attrs": map[string]any{}, "idx": map[string]any{}, "req": map[string]any{"r": false}},
		{"id": int64(3), "s": map[string]any{"a": nil, "b": nil, "inner": nil}, "tags": nil, "points": nil, "matrix": nil,
			"attrs": nil, "idx": nil, "req": map[string]any{"r": true}},
		{"id": int64(4), "s": nil, "tags": nil, "points": []any{map[string]any{"x": int64(9), "label": "l"}}, "matrix": nil,
			"attrs": nil, "idx": nil, "req": map[string]any{"r": false}},
	}
	normalizeTimes(rows)
	// parquet-go's map[string]any reader turns the int32 key 5 into
	// string(rune(5)); check that key column directly.
	if k := rawValue(leafValues(t, files[0].Data, 10)[0]); k != int32(5) {
		t.Errorf("idx key %#v, want 5", k)
	}
	for _, m := range rows[0]["idx"].(map[string]any) {
		rows[0]["idx"] = map[string]any{"5": m}
	}
	if !reflect.DeepEqual(rows, want) {
		for i := range rows {
			if !reflect.DeepEqual(rows[i], want[i]) {
				t.Errorf("row %d:\n got %#v\nwant %#v", i, rows[i], want[i])
			}
		}
	}
}

// normalizeTimes turns the reader's time.Time back into microseconds.
func normalizeTimes(v any) {
	switch v := v.(type) {
	case []map[string]any:
		for _, m := range v {
			normalizeTimes(m)
		}
	case map[string]any:
		for k, x := range v {
			if tm, ok := x.(interface{ UnixMicro() int64 }); ok {
				v[k] = tm.UnixMicro()
			} else {
				normalizeTimes(x)
			}
		}
	case []any:
		for _, x := range v {
			normalizeTimes(x)
		}
	}
}

func TestNestedErrors(t *testing.T) {
	for _, tc := range []struct{ in, err string }{
		{`{"id":1,"req":{"r":true},"s":{"inner":{"c":"x"}}}`,
			`Invalid record value: field "s.inner.c": expected integer, got JSON string (record 0, offset 7)`},
		{`{"id":1,"req":{"r":true},"s":{"b":"noon"}}`,
			`Invalid record value: field "s.b": cannot parse "noon" as a timestamp (record 0, offset 7)`},
		{`{"id":1,"req":{"r":true},"s":[1]}`,
			`Invalid record value: field "s": expected struct, got JSON array (record 0, offset 7)`},
		{`{"id":1,"req":{"r":true},"tags":"a"}`,
			`Invalid record value: field "tags": expected array, got JSON string (record 0, offset 7)`},
		{`{"id":1,"req":{"r":true},"points":[{"x":1},null]}`,
			`Invalid record value: field "points[1]": null in non-nullable field (record 0, offset 7)`},
		{`{"id":1,"req":{"r":true},"points":[{"x":1},{"label":"a"}]}`,
			`Invalid record value: field "points[1].x": missing non-nullable field (record 0, offset 7)`},
		{`{"id":1,"req":{"r":true},"matrix":[[1],[2,"3"]]}`,
			`Invalid record value: field "matrix[1][1]": expected long, got JSON string (record 0, offset 7)`},
		{`{"id":1,"req":{"r":true},"attrs":{"a":1,"b":1.5}}`,
			`Invalid record value: field "attrs[b]": expected long, got fractional number 1.5 (record 0, offset 7)`},
		{`{"id":1,"req":{"r":true},"attrs":[]}`,
			`Invalid record value: field "attrs": expected map, got JSON array (record 0, offset 7)`},
		{`{"id":1,"req":{"r":true},"idx":{"x":{"x":1}}}`,
			`Invalid record value: field "idx[x]": cannot parse "x" as integer (record 0, offset 7)`},
		{`{"id":1,"req":{"r":true},"idx":{"99999999999":{"x":1}}}`,
			`Invalid record value: field "idx[99999999999]": value 99999999999 out of range for integer (record 0, offset 7)`},
		{`{"id":1,"req":{"r":true},"idx":{"1":null}}`,
			`Invalid record value: field "idx[1]": null in non-nullable field (record 0, offset 7)`},
		{`{"id":1,"req":{"r":true},"idx":{"1":{"x":null}}}`,
			`Invalid record value: field "idx[1].x": null in non-nullable field (record 0, offset 7)`},
		{`{"id":1}`,
			`Invalid record value: field "req": missing non-nullable field (record 0, offset 7)`},
		{`{"id":1,"req":{}}`,
			`Invalid record value: field "req.r": missing non-nullable field (record 0, offset 7)`},
		{`{"id":1,"req":null}`,
			`Invalid record value: field "req": null in non-nullable field (record 0, offset 7)`},
	} {
		enc := nestedSchema(t)
		if got := addErr(enc, tc.in); got != tc.err {
			t.Errorf("Add(%s):\n got %q\nwant %q", tc.in, got, tc.err)
		}
	}
}

// A failed record must leave no slot behind in any column, including the
// ones it wrote before failing deep inside a nested value.
func TestFailedRecordRollsBack(t *testing.T) {
	enc := nestedSchema(t)
	good := `{"id":1,"req":{"r":true},"tags":["a"],"points":[{"x":1}],"attrs":{"k":1}}`
	bad := []string{
		`{"id":2,"req":{"r":true},"tags":["b","c"],"points":[{"x":2},{"x":"bad"}]}`,
		`{"id":2,"s":{"a":"partial"},"tags":["b"],"matrix":[[1,2,3]],"attrs":{"z":2},"req":{"r":"bad"}}`,
		`{"id":2,"tags":["b"],"matrix":[[1,2,3]]`,
	}
	if err := enc.Add([]byte(good), 0); err != nil {
		t.Fatal(err)
	}
	for i, b := range bad {
		if err := enc.Add([]byte(b), uint64(i+1)); err == nil {
			t.Fatalf("bad record %d accepted", i)
		}
	}
	if err := enc.Add([]byte(good), 9); err != nil {
		t.Fatal(err)
	}
	rows := readRows(t, flush(t, enc)[0].Data)
	if len(rows) != 2 || !reflect.DeepEqual(rows[0], rows[1]) {
		t.Fatalf("rows after failed records:\n%#v", rows)
	}
}

func TestDuplicateKeysLastWins(t *testing.T) {
	enc := nestedSchema(t)
	files := encodeRecords(t, enc,
		`{"id":1,"id":2,"req":{"r":true},"req":{"r":false}}`,
		`{"id":3,"req":{"r":true},"tags":["a","b"],"tags":["c"],"s":{"a":"x","a":"y"},"s":{"b":0}}`,
		`{"id":4,"req":{"r":true},"points":[{"x":1,"label":"a","x":2,"label":null},{"x":3,"x":4}],"matrix":[[1]],"matrix":null}`,
	)
	rows := readRows(t, files[0].Data)
	normalizeTimes(rows)
	check := func(row int, key string, want any) {
		t.Helper()
		if got := rows[row][key]; !reflect.DeepEqual(got, want) {
			t.Errorf("row %d %s = %#v, want %#v", row, key, got, want)
		}
	}
	check(0, "id", int64(2))
	check(0, "req", map[string]any{"r": false})
	check(1, "tags", []any{"c"})
	check(1, "s", map[string]any{"a": nil, "b": int64(0), "inner": nil})
	check(2, "points", []any{map[string]any{"x": int64(2), "label": nil}, map[string]any{"x": int64(4), "label": nil}})
	check(2, "matrix", nil)
}

func TestMapKeysAreParsedAsKeyType(t *testing.T) {
	schema := mustSchema(t,
		field("b", mapType(`"boolean"`, `"string"`, true), true),
		field("d", mapType(`"date"`, `"string"`, true), true),
		field("dec", mapType(`"decimal(5,2)"`, `"string"`, true), true),
		field("f", mapType(`"double"`, `"string"`, true), true),
		field("l", mapType(`"long"`, `"string"`, true), true),
	)
	enc := mustEncoder(t, schema, nil, encode.Options{})
	files := encodeRecords(t, enc, `{"b":{"true":"t","false":"f"},"d":{"2026-09-03":"x"},"dec":{"1.5":"y"},"f":{"2.5e1":"z"},"l":{"-3":"w","3":"dup","3":"dup2"}}`)
	vals := leafValues(t, files[0].Data, 0)
	if rawValue(vals[0]) != true || rawValue(vals[1]) != false {
		t.Errorf("boolean keys %v", vals)
	}
	if got := rawValue(leafValues(t, files[0].Data, 2)[0]); got != days(2026, 9, 3) {
		t.Errorf("date key %v", got)
	}
	if got := rawValue(leafValues(t, files[0].Data, 4)[0]); got != int32(150) {
		t.Errorf("decimal key %v", got)
	}
	if got := rawValue(leafValues(t, files[0].Data, 6)[0]); got != 25.0 {
		t.Errorf("double key %v", got)
	}
	// Duplicate map keys are kept as separate entries, in order.
	var keys []any
	for _, v := range leafValues(t, files[0].Data, 8) {
		keys = append(keys, rawValue(v))
	}
	if !reflect.DeepEqual(keys, []any{int64(-3), int64(3), int64(3)}) {
		t.Errorf("long keys %v", keys)
	}
	enc.Reset()
	if got := addErr(enc, `{"b":{"yes":"t"}}`); got != `Invalid record value: field "b[yes]": cannot parse "yes" as boolean (record 0, offset 7)` {
		t.Error(got)
	}
	if got := addErr(enc, `{"l":{"1.5":"x"}}`); got != `Invalid record value: field "l[1.5]": expected long, got fractional number 1.5 (record 1, offset 7)` {
		t.Error(got)
	}
	if got := addErr(enc, `{"l":{" 1":"x"}}`); got != `Invalid record value: field "l[ 1]": cannot parse " 1" as long (record 2, offset 7)` {
		t.Error(got)
	}
}

func TestVoidColumnsAreSkipped(t *testing.T) {
	schema := mustSchema(t, field("a", `"long"`, true), field("nothing", `"void"`, true),
		field("s", structType(field("v", `"void"`, true), field("w", `"string"`, true)), true))
	enc := mustEncoder(t, schema, nil, encode.Options{})
	files := encodeRecords(t, enc, `{"a":1,"nothing":{"any":"thing"},"s":{"v":5,"w":"x"}}`)
	f := openParquet(t, files[0].Data)
	if got := len(f.Schema().Columns()); got != 2 {
		t.Fatalf("%d columns, want 2 (void columns are not written)", got)
	}
	// void columns are null in every record
	if want := `{"numRecords":1,"minValues":{"a":1,"s":{"w":"x"}},"maxValues":{"a":1,"s":{"w":"x"}},"nullCount":{"a":0,"nothing":1,"s":{"v":1,"w":0}}}`; files[0].Stats != want {
		t.Errorf("stats %s", files[0].Stats)
	}
}

func TestUnsupportedSchemas(t *testing.T) {
	for _, tc := range []struct {
		fields []string
		parts  []string
		err    string
	}{
		{[]string{field("v", `"variant"`, true)}, nil, `encode: unsupported schema: column "v": type "variant" is not supported`},
		{[]string{field("v", `"interval"`, true)}, nil, `encode: unsupported schema: column "v": type "interval" is not supported`},
		{[]string{field("v", arrayType(`"void"`, true), true)}, nil, `encode: unsupported schema: column "v": void inside an array`},
		{[]string{field("v", mapType(arrayType(`"long"`, true), `"long"`, true), true)}, nil,
			`encode: unsupported schema: column "v": map keys of type array are not supported (JSON object keys are strings)`},
		{[]string{field("v", structType(field("x", `"void"`, true)), true)}, nil, `encode: unsupported schema: column "v": struct with no writable field`},
		{[]string{field("v", `"void"`, true)}, nil, `encode: unsupported schema: no column to write (every column is void or a partition column)`},
		{[]string{field("p", `"string"`, true)}, []string{"p"}, `encode: unsupported schema: no column to write (every column is void or a partition column)`},
		{[]string{field("v", `"long"`, true)}, []string{"nope"}, `encode: unsupported schema: column "nope": partition column is not a top-level column of the schema`},
		{[]string{field("v", `"long"`, true), field("p", structType(field("x", `"long"`, true)), true)}, []string{"p"},
			`encode: unsupported schema: column "p": partition column of type struct<x:long>`},
	} {
		_, err := encode.New(mustSchema(t, tc.fields...), tc.parts, encode.Options{})
		if err == nil || err.Error() != tc.err {
			t.Errorf("New(%v, %v) error %v, want %s", tc.fields, tc.parts, err, tc.err)
		}
	}
}
