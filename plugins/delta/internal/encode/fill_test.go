package encode_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
)

func metaSchema(t testing.TB, extra ...string) *deltalog.StructType {
	return mustSchema(t, append([]string{
		field("id", `"long"`, true),
		field("pico_topic", `"string"`, true),
		field("pico_partition", `"integer"`, true),
		field("pico_offset", `"long"`, false),
		field("pico_timestamp", `"timestamp"`, true),
		field("pico_key", `"string"`, true),
		field("pico_headers", mapType(`"string"`, `"string"`, true), true),
	}, extra...)...)
}

func TestMetadataColumnsAreFilledFromTheRecord(t *testing.T) {
	enc := mustEncoder(t, metaSchema(t, field("pico_key_raw", `"binary"`, true)), nil, encode.Options{Metadata: true})
	add := func(payload string, m encode.Meta) {
		t.Helper()
		if err := enc.AddRecord([]byte(payload), &m); err != nil {
			t.Fatal(err)
		}
	}
	// The payload's own pico_* fields lose to the metadata.
	add(`{"id":1,"pico_topic":"forged","pico_offset":"not a number","pico_headers":{"x":"y"}}`, encode.Meta{
		Topic: "orders.eu", Partition: 0, Offset: 41, Timestamp: 1767225600123, Key: []byte{0xff, 0x00, 'k'},
		Headers: []encode.Header{{Key: []byte("trace"), Value: []byte("abc")}, {Key: []byte("bin"), Value: []byte{0xfe}}, {Key: []byte("trace"), Value: []byte("again")}},
	})
	add(`{"id":2}`, encode.Meta{Topic: "orders.eu", Partition: 3, Offset: 42, Timestamp: -1})
	add(`{"id":3}`, encode.Meta{Topic: "t", Offset: 43, Key: []byte{}, Headers: []encode.Header{}})
	files := flush(t, enc)
	rows := readRows(t, files[0].Data)
	got := fmt.Sprint(rows)
	want := fmt.Sprint([]map[string]any{
		{"id": int64(1), "pico_topic": "orders.eu", "pico_partition": int32(0), "pico_offset": int64(41), "pico_timestamp": rows[0]["pico_timestamp"],
			"pico_key": "/wBr", "pico_key_raw": nil, "pico_headers": map[string]any{"trace": "again", "bin": "/g=="}},
		{"id": int64(2), "pico_topic": "orders.eu", "pico_partition": int32(3), "pico_offset": int64(42), "pico_timestamp": rows[1]["pico_timestamp"],
			"pico_key": nil, "pico_key_raw": nil, "pico_headers": map[string]any{}},
		{"id": int64(3), "pico_topic": "t", "pico_partition": int32(0), "pico_offset": int64(43), "pico_timestamp": rows[2]["pico_timestamp"],
			"pico_key": "", "pico_key_raw": nil, "pico_headers": map[string]any{}},
	})
	if got != want {
		t.Errorf("rows\n got %s\nwant %s", got, want)
	}
	// Statistics count the filled values (a wrong null count makes readers
	// skip them).
	for _, c := range []string{`"pico_topic":0`, `"pico_offset":0`, `"pico_key":1`, `"pico_headers":0`, `"pico_offset":41`, `"pico_topic":"orders.eu"`} {
		if !strings.Contains(files[0].Stats, c) {
			t.Errorf("stats %s lack %s", files[0].Stats, c)
		}
	}
	// Timestamps: milliseconds become microseconds.
	ts := leafValues(t, files[0].Data, 4)
	if ts[0].Int64() != 1767225600123000 || ts[1].Int64() != -1000 || ts[2].Int64() != 0 {
		t.Errorf("pico_timestamp %v", ts)
	}
	// Headers: every one, in order, duplicates kept.
	keys := leafValues(t, files[0].Data, 6)
	var ks []string
	for _, k := range keys {
		ks = append(ks, k.String())
	}
	if strings.Join(ks[:3], ",") != "trace,bin,trace" {
		t.Errorf("header keys %q", ks)
	}
}

func TestMetadataColumnsBinaryKeyAndLongTimestamp(t *testing.T) {
	schema := mustSchema(t, field("id", `"long"`, true), field("pico_key", `"binary"`, true),
		field("pico_timestamp", `"long"`, false), field("pico_partition", `"long"`, false))
	enc := mustEncoder(t, schema, nil, encode.Options{Metadata: true})
	m := encode.Meta{Offset: 1, Timestamp: 1767225600123, Partition: 4294967295, Key: []byte{0xff, 0}}
	if err := enc.AddRecord([]byte(`{"id":1,"pico_key":"AAAA"}`), &m); err != nil {
		t.Fatal(err)
	}
	files := flush(t, enc)
	rows := readRows(t, files[0].Data)
	if rows[0]["pico_key"] != "\xff\x00" || rows[0]["pico_timestamp"] != int64(1767225600123) || rows[0]["pico_partition"] != int64(4294967295) {
		t.Errorf("row %v", rows[0])
	}
}

func TestMetadataColumnsOffByDefault(t *testing.T) {
	enc := mustEncoder(t, metaSchema(t), nil, encode.Options{})
	m := encode.Meta{Topic: "real", Offset: 9}
	if err := enc.AddRecord([]byte(`{"id":1,"pico_topic":"from payload","pico_offset":5}`), &m); err != nil {
		t.Fatal(err)
	}
	rows := readRows(t, flush(t, enc)[0].Data)
	if rows[0]["pico_topic"] != "from payload" || rows[0]["pico_offset"] != int64(5) || rows[0]["pico_key"] != nil {
		t.Errorf("row %v", rows[0])
	}
}

func TestMetadataRecordErrors(t *testing.T) {
	schema := mustSchema(t, field("id", `"long"`, true), field("pico_key", `"string"`, false), field("pico_partition", `"integer"`, true))
	enc := mustEncoder(t, schema, nil, encode.Options{Metadata: true})
	for _, tt := range []struct {
		m    encode.Meta
		want string
	}{
		{encode.Meta{Offset: 7}, `field "pico_key": the record has no key and the column is not nullable (record 0, offset 7)`},
		{encode.Meta{Offset: 8, Key: []byte("k"), Partition: 1 << 31}, `field "pico_partition": partition 2147483648 out of range for integer`},
	} {
		err := enc.AddRecord([]byte(`{"id":1}`), &tt.m)
		var re *encode.RecordError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), tt.want) || enc.Len() != 0 {
			t.Errorf("got %v (Len %d), want %q", err, enc.Len(), tt.want)
		}
	}
}

func TestFillConfigErrors(t *testing.T) {
	base := []string{field("id", `"long"`, true), field("ts", `"timestamp"`, true), field("n", `"long"`, true),
		field("day", `"date"`, true), field("hour", `"integer"`, true), field("b", `"byte"`, true), field("f", `"double"`, true)}
	for _, tt := range []struct {
		name   string
		extra  string
		derive string
		want   string
	}{
		{"offset as integer", field("pico_offset", `"integer"`, true), "", `column "pico_offset" is integer; the record metadata it is filled with needs long`},
		{"topic as long", field("pico_topic", `"long"`, true), "", `column "pico_topic" is long; the record metadata it is filled with needs string`},
		{"headers map<string,long>", field("pico_headers", mapType(`"string"`, `"long"`, true), true), "", `column "pico_headers" is map<string,long>; the record metadata it is filled with needs map<string,string>`},
		{"key as array", field("pico_key", arrayType(`"string"`, true), true), "", `column "pico_key" is array<string>; the record metadata it is filled with needs string (base64) or binary`},
		{"no such column", "", "nope = date(ts)", `derived column "nope" is not a top-level column of the table`},
		{"date into integer", "", "hour = date(ts)", `derived column "hour" is integer; date() fills date or string columns`},
		{"hour into date", "", "day = hour(ts)", `derived column "day" is date; hour() fills byte, short, integer, long or string columns`},
		{"year into byte", "", "b = year(ts)", `derived column "b" is byte; year() fills short, integer, long or string columns`},
		{"from a long", "", "day = date(n)", `column "day" is derived from column "n" of type long; derive from a timestamp`},
		{"into a metadata column", field("pico_offset", `"long"`, true), "pico_offset = hour(ts)", `derived column "pico_offset" is also a metadata column`},
		{"from a metadata string", field("pico_topic", `"string"`, true), "day = date(pico_topic)", `column "day" is derived from "pico_topic", which is filled by the sink itself and is not a timestamp`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fields := base
			if tt.extra != "" {
				fields = append(append([]string(nil), base...), tt.extra)
			}
			ds, err := encode.ParseDerivations(tt.derive)
			if err != nil {
				t.Fatal(err)
			}
			_, err = encode.New(mustSchema(t, fields...), nil, encode.Options{Metadata: true, Derive: ds})
			var ce *encode.ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.want) || ce.Derive != (tt.derive != "") {
				t.Fatalf("got %v, want a ConfigError with %q", err, tt.want)
			}
		})
	}
}

func TestDerivedPartitions(t *testing.T) {
	schema := mustSchema(t,
		field("id", `"long"`, true),
		field("ts", `"timestamp"`, true),
		field("s", `"string"`, true),
		field("day", `"date"`, true),
		field("hour", `"integer"`, true),
		field("sday", `"string"`, true),
		field("shour", `"string"`, true),
		field("y", `"short"`, true),
		field("m", `"long"`, true),
		field("d", `"byte"`, true),
	)
	ds, err := encode.ParseDerivations("day = date(ts), hour = hour(ts), sday = date(s), shour = hour(raw), y = year(raw), m = month(raw), d = day(`raw`)")
	if err != nil {
		t.Fatal(err)
	}
	enc := mustEncoder(t, schema, []string{"day", "hour"}, encode.Options{Derive: ds})
	files := encodeRecords(t, enc,
		// the payload's own day/hour lose to the derivation
		`{"id":1,"ts":"2026-09-03T23:15:04+02:00","day":"1999-01-01","hour":99,"s":"2026-09-03 21:15:04","raw":"2026-12-31T23:59:59.999999Z"}`,
		`{"id":2,"ts":1788476104000000,"s":"2026-09-04","raw":-1}`,
		`{"id":3,"ts":null,"raw":null}`,
		`{"id":4,"ts":"2026-09-03T21:00:00Z","raw":"1969-12-31","raw":"2026-09-03T05:00:00\u005a","s":"2026-09-03T21:59:59Z"}`,
	)
	type want struct {
		values deltalog.PartitionValues
		ids    []int64
	}
	wants := []want{
		{deltalog.PartitionValues{"day": pv("2026-09-03"), "hour": pv("21")}, []int64{1, 4}},
		{deltalog.PartitionValues{"day": pv("2026-09-03"), "hour": pv("22")}, []int64{2}},
		{deltalog.PartitionValues{"day": nil, "hour": nil}, []int64{3}},
	}
	if len(files) != len(wants) {
		t.Fatalf("%d files, want %d", len(files), len(wants))
	}
	if !strings.Contains(files[0].Stats, `"sday":0`) || !strings.Contains(files[0].Stats, `"minValues":{"id":1,"ts":"2026-09-03T21:00:00.000Z","s":"2026-09-03 21:15:04","sday":"2026-09-03","shour":"05"`) {
		t.Errorf("stats %s", files[0].Stats)
	}
	var all []map[string]any
	for i, w := range wants {
		if !reflect.DeepEqual(files[i].PartitionValues, w.values) {
			t.Errorf("file %d: partition values %v, want %v", i, show(files[i].PartitionValues), show(w.values))
		}
		rows := readRows(t, files[i].Data)
		if len(rows) != len(w.ids) {
			t.Fatalf("file %d: %d rows", i, len(rows))
		}
		all = append(all, rows...)
	}
	got := map[int64]string{}
	for _, r := range all {
		got[r["id"].(int64)] = fmt.Sprint(r["sday"], " ", r["shour"], " ", r["y"], " ", r["m"], " ", r["d"])
	}
	wantRows := map[int64]string{
		1: "2026-09-03 23 2026 12 31",
		2: "2026-09-04 23 1969 12 31",
		3: "<nil> <nil> <nil> <nil> <nil>",
		4: "2026-09-03 05 2026 9 3",
	}
	if !reflect.DeepEqual(got, wantRows) {
		t.Errorf("derived file columns\n got %v\nwant %v", got, wantRows)
	}
}

func TestDerivedRecordErrors(t *testing.T) {
	schema := mustSchema(t, field("id", `"long"`, true), field("day", `"date"`, false), field("s", `"string"`, true))
	ds, _ := encode.ParseDerivations("day = date(s)")
	enc := mustEncoder(t, schema, []string{"day"}, encode.Options{Derive: ds})
	for _, tt := range []struct{ rec, want string }{
		{`{"id":1,"s":"yesterday"}`, `field "s": cannot parse "yesterday" as a timestamp (deriving column "day")`},
		{`{"id":1,"s":{"a":1}}`, `field "s": expected timestamp, got JSON object (deriving column "day")`},
		{`{"id":1,"s":1.5}`, `field "s": expected timestamp, got fractional number 1.5 (deriving column "day")`},
		{`{"id":1}`, `field "day": derived from "s", which is null or missing, and the column is not nullable`},
		{`{"id":1,"s":"2026-09-03T00:00:00Z",}`, `Invalid JSON record`},
	} {
		if got := addErr(enc, tt.rec); !strings.Contains(got, tt.want) || enc.Len() != 0 {
			t.Errorf("%s: got %q (Len %d), want %q", tt.rec, got, enc.Len(), tt.want)
		}
	}
}

// A derived date from a date column, and pico_timestamp as the source.
func TestDerivedFromDateAndMetadata(t *testing.T) {
	schema := mustSchema(t, field("id", `"long"`, true), field("dt", `"date"`, true), field("y", `"integer"`, true),
		field("pico_timestamp", `"timestamp"`, true), field("h", `"string"`, true))
	ds, _ := encode.ParseDerivations("y = year(dt), h = hour(pico_timestamp)")
	enc := mustEncoder(t, schema, nil, encode.Options{Derive: ds, Metadata: true})
	m := encode.Meta{Offset: 1, Timestamp: 1767225600000 + 3*3600*1000}
	if err := enc.AddRecord([]byte(`{"id":1,"dt":"1999-12-31"}`), &m); err != nil {
		t.Fatal(err)
	}
	rows := readRows(t, flush(t, enc)[0].Data)
	if rows[0]["y"] != int32(1999) || rows[0]["h"] != "03" {
		t.Errorf("row %v", rows[0])
	}
}

func TestParseDerivations(t *testing.T) {
	for _, tt := range []struct {
		spec string
		want []encode.Derivation
		err  string
	}{
		{"", nil, ""},
		{"  \t", nil, ""},
		{"day=date(ts)", []encode.Derivation{{"day", encode.FuncDate, "ts"}}, ""},
		{" day = DATE ( ts ) , hour=Hour(ts)", []encode.Derivation{{"day", encode.FuncDate, "ts"}, {"hour", encode.FuncHour, "ts"}}, ""},
		{"y=year(a.b),m=month(a-b),d=day(é)", []encode.Derivation{{"y", encode.FuncYear, "a.b"}, {"m", encode.FuncMonth, "a-b"}, {"d", encode.FuncDay, "é"}}, ""},
		{"`the day` = date(`created at`)", []encode.Derivation{{"the day", encode.FuncDate, "created at"}}, ""},
		{"`a``b` = date(`,=()`)", []encode.Derivation{{"a`b", encode.FuncDate, ",=()"}}, ""},
		{"day", nil, `at byte 3 of "day": expected '=' after the column name, found the end`},
		{"day = week(ts)", nil, `at byte 6 of "day = week(ts)": unknown function "week" (one of date, year, month, day, hour)`},
		{"day = date ts", nil, `expected '(' after the function name, found 't'`},
		{"day = date(ts", nil, `expected ')' after the field name, found the end`},
		{"day = date()", nil, `expected a field name, found ')'`},
		{"= date(ts)", nil, `expected a column name, found '='`},
		{"day = date(ts),", nil, `at byte 15 of "day = date(ts),": expected a column name, found the end`},
		{"day = date(ts) hour = hour(ts)", nil, `expected ',' between derived columns, found 'h'`},
		{"day = date(ts), DAY = date(x)", nil, `column "DAY" is derived twice`},
		{"ts = date(TS)", nil, `column "ts" is derived from itself`},
		{"a = date(b), b = date(c)", nil, `column "a" is derived from "b", itself a derived column`},
		{"`` = date(x)", nil, `empty name`},
		{"`abc = date(x)", nil, "unterminated `quoted` name"},
	} {
		got, err := encode.ParseDerivations(tt.spec)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: got %v, %v; want error %q", tt.spec, got, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: got %v, %v; want %v", tt.spec, got, err, tt.want)
		}
	}
}

// FuzzParseDerivations: the parser never panics, and what it accepts
// formats to a spec that parses back to the same derivations.
//
//	go test -run XXX -fuzz FuzzParseDerivations ./plugins/delta/internal/encode/
func FuzzParseDerivations(f *testing.F) {
	for _, s := range []string{"day=date(ts)", " day = DATE ( ts ) , hour=Hour(ts)", "`a``b` = date(`,=()`)", "y=year(a.b),m=month(a-b)",
		"`x", "a=date(b),", "a=date(a)", "\xff=date(x)", "a\u00a0=\u2028date(x)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		ds, err := encode.ParseDerivations(spec)
		if err != nil {
			return
		}
		again, err := encode.ParseDerivations(encode.FormatDerivations(ds))
		if err != nil || !reflect.DeepEqual(again, ds) {
			t.Fatalf("%q parsed to %v, formatted %q, which parses to %v, %v", spec, ds, encode.FormatDerivations(ds), again, err)
		}
		for _, d := range ds {
			if d.Column == "" || d.Source == "" || d.Func < encode.FuncDate || d.Func > encode.FuncHour {
				t.Fatalf("%q: derivation %+v", spec, d)
			}
		}
	})
}

// FuzzDerivedDecode is FuzzDecode with derived columns, one of them a
// partition column, read from a column, from a captured string column and
// from a field the table lacks, which exercises the decoder's captures.
//
//	go test -run XXX -fuzz FuzzDerivedDecode ./plugins/delta/internal/encode/
func FuzzDerivedDecode(f *testing.F) {
	for _, s := range append(kitchenSinkRecords, `{"zid":1,"map":{},"raw":"2026-09-03T21:15:04Z","str":"2026-09-03"}`,
		`{"zid":1,"map":{},"raw":-1,"raw":"x","part":"y"}`, `{"zid":1,"map":{},"raw":null,"ts":null}`, `{"zid":1,"map":{},"raw":{"a":[1]}}`,
		`{"zid":1,"map":{},"r\u0061w":"1970-01-01"}`, `{"zid":1,"map":{},"str":"2026-09-03 21:15:04","str":5}`) {
		f.Add([]byte(s))
	}
	ds, err := encode.ParseDerivations("part = date(ts), int = hour(raw), short = month(str), byte = day(raw)")
	if err != nil {
		f.Fatal(err)
	}
	enc, err := encode.New(kitchenSink(f), []string{"part"}, encode.Options{Derive: ds, Metadata: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		enc.Reset()
		if err := enc.AddRecord(payload, &encode.Meta{Offset: 1}); err != nil {
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

// A payload field the encoder fills, or a derivation reads, is not a field
// the table lacks: Unknown (schema_evolution) does not list it.
func TestFilledAndSourceFieldsAreNotUnknown(t *testing.T) {
	schema := mustSchema(t, field("id", `"long"`, true), field("pico_topic", `"string"`, true), field("day", `"date"`, true))
	ds, _ := encode.ParseDerivations("day = date(event_time)")
	enc := mustEncoder(t, schema, nil, encode.Options{Metadata: true, Derive: ds, InferUnknown: true})
	m := encode.Meta{Topic: "t"}
	if err := enc.AddRecord([]byte(`{"id":1,"pico_topic":"x","day":"2026-01-01","event_time":"2026-09-03T00:00:00Z","other":1}`), &m); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range enc.Unknown() {
		names = append(names, u.Name)
	}
	if fmt.Sprint(names) != "[other]" {
		t.Errorf("unknown fields %v, want [other]", names)
	}
}
