package encode_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
)

// FuzzDecode feeds arbitrary payloads to one encoder of a fixed mixed
// schema. Properties: Add never panics; it accepts nothing json.Valid
// refuses (the plugin declares ChecksJSON on it); a rejected record is a
// *RecordError and leaves the buffer as it was; an accepted one flushes to
// a Parquet file parquet-go reads back with the right row count.
//
//	go test -run XXX -fuzz FuzzDecode ./plugins/delta/internal/encode/
func FuzzDecode(f *testing.F) {
	for _, s := range append(kitchenSinkRecords,
		`{}`, `{"zid":1,"map":{}}`, `[]`, `{"zid":1,"map":{},"rec":{"b":"x","b":"y","a":1},"list":[1,2,[3]]}`,
		`{"zid":1e2,"map":{"a":1e400},"ts":"2026-09-03T21:15:04.999999999+14:00"}`,
		`{"zid":-0,"map":{"\u0000":null},"str":[{"\ud800":"\udc00"}]}`,
		`{"zid":9223372036854775807,"map":{},"dec38":"-99999999999999999999999999999999.9999995"}`,
		`{"zid":1,"map":{},"objs":[{"k":"a","k":1}],"date":-2147483648,"dec9":"+.5e-3"}`,
		` {"zid" : 1 , "map" : { } } `, `{"zid":1,"map":{},"bin":"////"}`, `{"zid":1,"map":{},"part":{"x":[]}}`,
	) {
		f.Add([]byte(s))
	}
	enc, err := encode.New(kitchenSink(f), []string{"part"}, encode.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		enc.Reset()
		err := enc.Add(payload, 1)
		if err != nil {
			var re *encode.RecordError
			if !errors.As(err, &re) || enc.Len() != 0 {
				t.Fatalf("Add(%q): %v (Len %d)", payload, err, enc.Len())
			}
			return
		}
		if !json.Valid(payload) {
			t.Fatalf("Add(%q) accepted a payload json.Valid refuses", payload)
		}
		files := flush(t, enc)
		if len(files) != 1 || files[0].NumRecords != 1 {
			t.Fatalf("Add(%q) then Flush: %+v", payload, files)
		}
		if n := openParquet(t, files[0].Data).NumRows(); n != 1 {
			t.Fatalf("Add(%q): file has %d rows", payload, n)
		}
	})
}

// FuzzValue puts an arbitrary JSON text in one field of an otherwise valid
// record, which reaches the coercions far more often than whole random
// payloads do. Same properties as FuzzDecode.
func FuzzValue(f *testing.F) {
	fields := []string{"str", "int", "short", "byte", "float", "double", "bool", "bin", "date", "ts", "ntz",
		"dec9", "dec18", "dec38", "rec", "list", "objs", "map", "part", "unknown"}
	for i, v := range []string{`"x"`, `1`, `-32768`, `1e2`, `1.5`, `-0.0`, `true`, `"AAEC"`, `"2026-09-03"`,
		`"2026-09-03T21:15:04.123456789+02:00"`, `"2026-09-03 21:15:04"`, `"1234567.891"`, `-12.5e3`,
		`"-1e-40"`, `{"b":"x","a":1,"b":"y"}`, `[1,null,[2]]`, `[{"k":"a"},{"k":{}}]`, `{"a":1,"a":null}`,
		`{"p":[]}`, `{"deep":[[[{}]]]}`} {
		f.Add(uint8(i), []byte(v))
	}
	// Non-finite float strings, decimals that would need rounding, and
	// zone-less 'T' timestamps.
	for _, v := range []struct {
		field string
		value string
	}{{"float", `"NaN"`}, {"double", `"-Infinity"`}, {"double", `"Infinity"`}, {"dec9", `"1.2345"`}, {"dec18", `1.2340`},
		{"dec38", `"1.2345e1"`}, {"ts", `"2026-09-03T21:15:04"`}, {"ntz", `"2026-09-03T21:15:04.5"`}} {
		for i, name := range fields {
			if name == v.field {
				f.Add(uint8(i), []byte(v.value))
			}
		}
	}
	enc, err := encode.New(kitchenSink(f), []string{"part"}, encode.Options{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, which uint8, value []byte) {
		name := fields[int(which)%len(fields)]
		rec := append([]byte(`{"zid":1,"map":{"k":1},"`+name+`":`), value...)
		rec = append(rec, '}')
		enc.Reset()
		if err := enc.Add(rec, 1); err != nil {
			var re *encode.RecordError
			if !errors.As(err, &re) || enc.Len() != 0 {
				t.Fatalf("Add(%q): %v (Len %d)", rec, err, enc.Len())
			}
			return
		}
		if !json.Valid(rec) {
			t.Fatalf("Add(%q) accepted a payload json.Valid refuses", rec)
		}
		files := flush(t, enc)
		if len(files) != 1 || files[0].NumRecords != 1 {
			t.Fatalf("Add(%q) then Flush: %+v", rec, files)
		}
		if n := openParquet(t, files[0].Data).NumRows(); n != 1 {
			t.Fatalf("Add(%q): file has %d rows", rec, n)
		}
	})
}
