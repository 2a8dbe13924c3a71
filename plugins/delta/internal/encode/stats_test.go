package encode_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
)

func statsOf(t *testing.T, fields []string, parts []string, conf map[string]string, records ...string) string {
	t.Helper()
	enc := mustEncoder(t, mustSchema(t, fields...), parts, encode.Options{Configuration: conf})
	files := encodeRecords(t, enc, records...)
	if len(files) != 1 {
		t.Fatalf("%d files", len(files))
	}
	if !json.Valid([]byte(files[0].Stats)) {
		t.Fatalf("stats are not JSON: %s", files[0].Stats)
	}
	return files[0].Stats
}

func TestStatsAllTypes(t *testing.T) {
	fields := []string{
		field("l", `"long"`, true),
		field("i", `"integer"`, true),
		field("sh", `"short"`, true),
		field("b", `"byte"`, true),
		field("f", `"float"`, true),
		field("d", `"double"`, true),
		field("bool", `"boolean"`, true),
		field("bin", `"binary"`, true),
		field("dt", `"date"`, true),
		field("ts", `"timestamp"`, true),
		field("ntz", `"timestamp_ntz"`, true),
		field("dec", `"decimal(10,2)"`, true),
		field("wide", `"decimal(25,3)"`, true),
		field("s", `"string"`, true),
		field("st", structType(field("x", `"long"`, true), field("y", structType(field("z", `"string"`, true)), true)), true),
		field("arr", arrayType(`"long"`, true), true),
		field("m", mapType(`"string"`, `"long"`, true), true),
		field("allnull", `"long"`, true),
	}
	got := statsOf(t, fields, nil, nil,
		`{"l":5,"i":-1,"sh":3,"b":-128,"f":1.5,"d":-2.25,"bool":false,"bin":"AA==","dt":"2026-09-03","ts":"2026-09-03T21:15:04.123456Z","ntz":"2026-09-03 21:15:04","dec":-1.5,"wide":"-99.999","s":"b","st":{"x":1,"y":{"z":"q"}},"arr":[1,2],"m":{"a":1}}`,
		`{"l":-5,"i":7,"sh":-3,"b":127,"f":-0.5,"d":1e10,"bool":false,"bin":null,"dt":"1970-01-01","ts":"2026-09-03T21:15:05Z","ntz":"2026-09-03 21:15:04.001","dec":12.34,"wide":"1","s":"a","st":null,"arr":null,"m":null}`,
		`{"l":null,"st":{"x":null,"y":null},"arr":[],"m":{}}`,
	)
	// deltalog's formats (Spark's): timestamps cut to milliseconds, no
	// min/max for booleans and binary, nullCount for every column.
	want := `{"numRecords":3,` +
		`"minValues":{"l":-5,"i":-1,"sh":-3,"b":-128,"f":-0.5,"d":-2.25,"dt":"1970-01-01","ts":"2026-09-03T21:15:04.123Z","ntz":"2026-09-03T21:15:04.000","dec":-1.50,"wide":-99.999,"s":"a","st":{"x":1,"y":{"z":"q"}}},` +
		`"maxValues":{"l":5,"i":7,"sh":3,"b":127,"f":1.5,"d":1e+10,"dt":"2026-09-03","ts":"2026-09-03T21:15:05.000Z","ntz":"2026-09-03T21:15:04.001","dec":12.34,"wide":1.000,"s":"b","st":{"x":1,"y":{"z":"q"}}},` +
		`"nullCount":{"l":1,"i":1,"sh":1,"b":1,"f":1,"d":1,"bool":1,"bin":2,"dt":1,"ts":1,"ntz":1,"dec":1,"wide":1,"s":1,"st":{"x":2,"y":{"z":2}},"arr":1,"m":1,"allnull":3}}`
	if got != want {
		t.Fatalf("stats\n got %s\nwant %s", got, want)
	}
}

func TestStatsTimestamps(t *testing.T) {
	// deltalog cuts timestamp bounds down to milliseconds, as Spark does
	// and PROTOCOL.md describes; readers widen the max by 1 ms.
	got := statsOf(t, []string{field("ts", `"timestamp"`, true), field("ntz", `"timestamp_ntz"`, true)}, nil, nil,
		`{"ts":"2026-09-03T21:15:04.123999Z","ntz":"2026-09-03 21:15:04.120000"}`,
		`{"ts":"2026-09-03T21:15:04.123001Z","ntz":"1969-12-31 23:59:59.999"}`,
		`{"ts":-1788477304000001,"ntz":0}`,
	)
	want := `{"numRecords":3,"minValues":{"ts":"1913-04-30T00:44:55.999Z","ntz":"1969-12-31T23:59:59.999"},` +
		`"maxValues":{"ts":"2026-09-03T21:15:04.123Z","ntz":"2026-09-03T21:15:04.120"},"nullCount":{"ts":0,"ntz":0}}`
	if got != want {
		t.Fatalf("stats\n got %s\nwant %s", got, want)
	}
}

func TestStatsStringTruncation(t *testing.T) {
	long := strings.Repeat("a", 40)
	got := statsOf(t, []string{field("s", `"string"`, true)}, nil, nil,
		`{"s":"`+long+`"}`, `{"s":"`+strings.Repeat("a", 31)+`"}`)
	// min: the 32-character prefix; max: prefix + U+007F (the cut
	// character 'a' sorts below it).
	want := `{"numRecords":2,"minValues":{"s":"` + strings.Repeat("a", 31) + `"},"maxValues":{"s":"` + strings.Repeat("a", 32) + "\x7f" + `"},"nullCount":{"s":0}}`
	if got != want {
		t.Fatalf("stats\n got %q\nwant %q", got, want)
	}
	// A non-ASCII cut character gets U+10FFFF; prefix length from the table.
	got = statsOf(t, []string{field("s", `"string"`, true)}, nil, map[string]string{"delta.dataSkippingStringPrefixLength": "3"},
		`{"s":"abcé"}`, `{"s":"日本語テキスト"}`, `{"s":"\n\"q\""}`)
	want = `{"numRecords":3,"minValues":{"s":"\n\"q"},"maxValues":{"s":"日本語` + "\U0010FFFF" + `"},"nullCount":{"s":0}}`
	if got != want {
		t.Fatalf("stats\n got %q\nwant %q", got, want)
	}
}

func TestStatsColumnSelection(t *testing.T) {
	fields := []string{
		field("p", `"string"`, true),
		field("a", `"long"`, true),
		field("s", structType(field("x", `"long"`, true), field("y", `"long"`, true)), true),
		field("b", `"long"`, true),
		field("arr", arrayType(`"long"`, true), true),
	}
	rec := `{"p":"k","a":1,"s":{"x":2,"y":3},"b":4,"arr":[5]}`
	for _, tc := range []struct {
		name string
		conf map[string]string
		want string
	}{
		{"default all 32", nil,
			`{"numRecords":1,"minValues":{"a":1,"s":{"x":2,"y":3},"b":4},"maxValues":{"a":1,"s":{"x":2,"y":3},"b":4},"nullCount":{"a":0,"s":{"x":0,"y":0},"b":0,"arr":0}}`},
		{"first 2 leaves (partition column not counted)", map[string]string{"delta.dataSkippingNumIndexedCols": "2"},
			`{"numRecords":1,"minValues":{"a":1,"s":{"x":2}},"maxValues":{"a":1,"s":{"x":2}},"nullCount":{"a":0,"s":{"x":0}}}`},
		{"none", map[string]string{"delta.dataSkippingNumIndexedCols": "0"}, `{"numRecords":1}`},
		{"all", map[string]string{"delta.dataSkippingNumIndexedCols": "-1"},
			`{"numRecords":1,"minValues":{"a":1,"s":{"x":2,"y":3},"b":4},"maxValues":{"a":1,"s":{"x":2,"y":3},"b":4},"nullCount":{"a":0,"s":{"x":0,"y":0},"b":0,"arr":0}}`},
		{"named columns win, struct means its leaves, case-insensitive",
			map[string]string{"delta.dataSkippingStatsColumns": " B, `S`.Y ,missing,p", "delta.dataSkippingNumIndexedCols": "1"},
			`{"numRecords":1,"minValues":{"s":{"y":3},"b":4},"maxValues":{"s":{"y":3},"b":4},"nullCount":{"s":{"y":0},"b":0}}`},
		{"named struct", map[string]string{"delta.dataSkippingStatsColumns": "s"},
			`{"numRecords":1,"minValues":{"s":{"x":2,"y":3}},"maxValues":{"s":{"x":2,"y":3}},"nullCount":{"s":{"x":0,"y":0}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := statsOf(t, fields, []string{"p"}, tc.conf, rec); got != tc.want {
				t.Fatalf("stats\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestStatsInvalidConfiguration(t *testing.T) {
	for _, conf := range []map[string]string{
		{"delta.dataSkippingNumIndexedCols": "x"},
		{"delta.dataSkippingNumIndexedCols": "-2"},
		{"delta.dataSkippingStringPrefixLength": "-1"},
		{"delta.dataSkippingStatsColumns": "a,,b"},
		{"delta.dataSkippingStatsColumns": "`a"},
		{"delta.dataSkippingStatsColumns": "`a`b"},
	} {
		if _, err := encode.New(mustSchema(t, field("a", `"long"`, true)), nil, encode.Options{Configuration: conf}); err == nil {
			t.Errorf("New accepted %v", conf)
		}
	}
	// backticks allow dots and commas in names
	got := statsOf(t, []string{field("a.b", `"long"`, true), field("c,d", `"long"`, true), field("e", `"long"`, true)}, nil,
		map[string]string{"delta.dataSkippingStatsColumns": "`a.b`, `c,d`"}, `{"a.b":1,"c,d":2,"e":3}`)
	if want := `{"numRecords":1,"minValues":{"a.b":1,"c,d":2},"maxValues":{"a.b":1,"c,d":2},"nullCount":{"a.b":0,"c,d":0}}`; got != want {
		t.Fatalf("stats\n got %s\nwant %s", got, want)
	}
}

// JSON cannot hold NaN or ±Infinity: a column that saw one gets no bounds
// in that file (no data skipping on it), the other columns keep theirs.
func TestStatsNonFiniteFloats(t *testing.T) {
	fields := []string{field("id", `"long"`, true), field("f", `"float"`, true), field("d", `"double"`, true)}
	for _, tc := range []struct{ f, d, want string }{
		{`"NaN"`, `"Infinity"`, `{"numRecords":2,"minValues":{"id":1},"maxValues":{"id":2},"nullCount":{"id":0,"f":0,"d":0}}`},
		{`"-Infinity"`, `null`, `{"numRecords":2,"minValues":{"id":1,"d":2.5},"maxValues":{"id":2,"d":2.5},"nullCount":{"id":0,"f":0,"d":1}}`},
	} {
		got := statsOf(t, fields, nil, nil, `{"id":1,"f":`+tc.f+`,"d":`+tc.d+`}`, `{"id":2,"f":0.5,"d":2.5}`)
		if got != tc.want {
			t.Errorf("f=%s d=%s: stats\n got %s\nwant %s", tc.f, tc.d, got, tc.want)
		}
	}
}
