package deltalog_test

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

func mustSchema(t testing.TB, s string) *deltalog.StructType {
	t.Helper()
	st, err := deltalog.ParseSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func decodeJSON(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad JSON %s: %v", s, err)
	}
	return v
}

// Our collector reproduces the stats Spark wrote for stats-writing-all-types
// (4 rows, one null per column), modulo column mapping: that table uses
// physical names, which are mapped back to logical names for the comparison.
func TestStatsMatchSpark(t *testing.T) {
	store := tableStore(t, "stats-writing-all-types/delta")
	snap, err := deltalog.Load(context.Background(), store, nil)
	if err != nil {
		t.Fatal(err)
	}
	commits, err := deltalog.ReadCommits(context.Background(), store, 1)
	if err != nil {
		t.Fatal(err)
	}
	var sparkStats string
	for _, a := range commits[0].Actions {
		if add, ok := a.(*deltalog.Add); ok {
			sparkStats = add.Stats
		}
	}
	physToLogical := map[string]string{}
	var collect func(st *deltalog.StructType)
	collect = func(st *deltalog.StructType) {
		for i := range st.Fields {
			f := &st.Fields[i]
			if p, ok := f.MetadataString("delta.columnMapping.physicalName"); ok {
				physToLogical[p] = f.Name
			}
			if sub, ok := f.Type.(*deltalog.StructType); ok {
				collect(sub)
			}
		}
	}
	collect(snap.Schema)
	for p, l := range physToLogical {
		sparkStats = strings.ReplaceAll(sparkStats, `"`+p+`"`, `"`+l+`"`)
	}

	c, err := deltalog.NewStatsCollectorFor(snap.Schema, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := func(s string) time.Time { tm, _ := time.Parse(time.RFC3339, s); return tm }
	rows := []map[string]any{
		{"byte_col": 1, "short_col": 100, "int_col": 1000, "long_col": int64(10000), "float_col": float32(1.5),
			"double_col": 2.5, "date_col": "2023-01-15", "timestamp_col": ts("2023-06-15T12:30:00Z"),
			"timestamp_ntz_col": ts("2023-06-15T12:30:00Z"), "string_col": "alpha", "decimal_col": "123.45",
			"boolean_col": true, "binary_col": []byte("a"), "array_col": []any{1}, "map_col": map[string]any{"a": 1},
			"nested_struct": map[string]any{"inner_int": 10, "inner_string": "nested_a", "inner_double": 1.1}},
		{"byte_col": 5, "short_col": 500, "int_col": 5000, "long_col": int64(50000), "float_col": float32(3.14),
			"double_col": 6.28, "date_col": "2024-06-15", "timestamp_col": ts("2024-12-25T00:00:00Z"),
			"timestamp_ntz_col": ts("2024-12-25T00:00:00Z"), "string_col": "gamma", "decimal_col": json.Number("999.99"),
			"boolean_col": false, "binary_col": []byte("b"), "array_col": []any{2}, "map_col": map[string]any{"b": 2},
			"nested_struct": map[string]any{"inner_int": 50, "inner_string": "nested_c", "inner_double": 5.5}},
		{"byte_col": 3, "short_col": 300, "int_col": 3000, "long_col": int64(30000), "float_col": float32(2),
			"double_col": 4.0, "date_col": "2023-06-01", "timestamp_col": ts("2024-01-01T00:00:00Z"),
			"timestamp_ntz_col": ts("2024-01-01T00:00:00Z"), "string_col": "beta", "decimal_col": 500.5,
			"boolean_col": true, "binary_col": []byte("c"), "array_col": []any{3}, "map_col": map[string]any{"c": 3},
			"nested_struct": map[string]any{"inner_int": 30, "inner_double": 3.3}},
		{},
	}
	for _, r := range rows {
		if err := c.ObserveRecord(r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := c.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(decodeJSON(t, got), decodeJSON(t, sparkStats)) {
		t.Errorf("stats differ from Spark's\n got: %s\nwant: %s", got, sparkStats)
	}
}

func TestStatsTypesAndFormats(t *testing.T) {
	schema := mustSchema(t, `{"type":"struct","fields":[
		{"name":"ts","type":"timestamp","nullable":true,"metadata":{}},
		{"name":"ntz","type":"timestamp_ntz","nullable":true,"metadata":{}},
		{"name":"d","type":"date","nullable":true,"metadata":{}},
		{"name":"dec","type":"decimal(20,10)","nullable":true,"metadata":{}},
		{"name":"f","type":"double","nullable":true,"metadata":{}},
		{"name":"allnull","type":"long","nullable":true,"metadata":{}},
		{"name":"v","type":"void","nullable":true,"metadata":{}}]}`)
	c, err := deltalog.NewStatsCollectorFor(schema, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Timestamps truncate toward -inf to milliseconds, both for min and max.
	for _, us := range []int64{1_000_999, -1, 5_000_000} {
		c.Column("ts").ObserveInt(us)
		c.Column("ntz").ObserveInt(us)
	}
	c.Column("d").ObserveInt(-719162) // 0001-01-01
	c.Column("d").ObserveInt(2932896) // 9999-12-31
	if err := c.Column("dec").Observe("0"); err != nil {
		t.Fatal(err)
	}
	if err := c.Column("dec").Observe("-9999999999.9999999999"); err != nil {
		t.Fatal(err)
	}
	c.Column("f").ObserveFloat(1)
	c.Column("f").ObserveFloat(math.NaN())
	c.Column("allnull").ObserveNull()
	c.Column("v").ObserveNull()
	c.AddRows(3)
	got, _ := c.JSON()
	want := `{"numRecords":3,` +
		`"minValues":{"ts":"1969-12-31T23:59:59.999Z","ntz":"1969-12-31T23:59:59.999","d":"0001-01-01","dec":-9999999999.9999999999},` +
		`"maxValues":{"ts":"1970-01-01T00:00:05.000Z","ntz":"1970-01-01T00:00:05.000","d":"9999-12-31","dec":0.0000000000},` +
		`"nullCount":{"ts":0,"ntz":0,"d":0,"dec":0,"f":0,"allnull":1,"v":1}}`
	if got != want {
		t.Errorf("stats\n got %s\nwant %s", got, want)
	}
	c.Reset()
	if got, _ := c.JSON(); got != `{"numRecords":0,"nullCount":{"ts":0,"ntz":0,"d":0,"dec":0,"f":0,"allnull":0,"v":0}}` {
		t.Errorf("after Reset: %s", got)
	}
}

func TestStatsStringTruncation(t *testing.T) {
	schema := mustSchema(t, `{"type":"struct","fields":[{"name":"s","type":"string","nullable":true,"metadata":{}}]}`)
	long := strings.Repeat("a", 40)
	max := string(rune(0x10FFFF))
	cases := []struct {
		name       string
		prefix     string // delta.dataSkippingStringPrefixLength, "" for default
		values     []string
		min, max   string
		maxMissing bool
	}{
		{"short", "", []string{"b", "a"}, "a", "b", false},
		{"exactly 32", "", []string{strings.Repeat("x", 32)}, strings.Repeat("x", 32), strings.Repeat("x", 32), false},
		{"ascii tie-breaker", "", []string{long}, long[:32], long[:32] + "\x7f", false},
		{"unicode tie-breaker", "", []string{strings.Repeat("é", 33)}, strings.Repeat("é", 32), strings.Repeat("é", 32) + max, false},
		{"prefix in runes", "3", []string{"日本語のテキスト"}, "日本語", "日本語" + max, false},
		{"skips max rune", "2", []string{"ab" + max + "cd"}, "ab", "ab" + max + "\x7f", false},
		{"no bound", "1", []string{"a" + max + max + "z"}, "a", "", true},
		{"prefix 0", "0", []string{"abc"}, "", "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conf := map[string]string{}
			if c.prefix != "" {
				conf["delta.dataSkippingStringPrefixLength"] = c.prefix
			}
			sc, err := deltalog.NewStatsCollectorFor(schema, nil, conf, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range c.values {
				sc.Column("s").ObserveString(v)
				sc.AddRows(1)
			}
			js, _ := sc.JSON()
			var got struct {
				Min map[string]string `json:"minValues"`
				Max map[string]string `json:"maxValues"`
			}
			if err := json.Unmarshal([]byte(js), &got); err != nil {
				t.Fatal(err)
			}
			if got.Min["s"] != c.min {
				t.Errorf("min = %q, want %q", got.Min["s"], c.min)
			}
			if m, ok := got.Max["s"]; ok == c.maxMissing || m != c.max {
				t.Errorf("max = %q (present %v), want %q (present %v)", m, ok, c.max, !c.maxMissing)
			}
			// The bounds must hold for every value.
			for _, v := range c.values {
				if got.Min["s"] > v || (!c.maxMissing && got.Max["s"] < v) {
					t.Errorf("bounds [%q, %q] do not contain %q", got.Min["s"], got.Max["s"], v)
				}
			}
		})
	}
}

func TestStatsIndexedColumns(t *testing.T) {
	schema := mustSchema(t, `{"type":"struct","fields":[
		{"name":"p","type":"string","nullable":true,"metadata":{}},
		{"name":"a","type":"long","nullable":true,"metadata":{}},
		{"name":"s","type":{"type":"struct","fields":[
			{"name":"x","type":"long","nullable":true,"metadata":{}},
			{"name":"y.z","type":"string","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},
		{"name":"arr","type":{"type":"array","elementType":"long","containsNull":true},"nullable":true,"metadata":{}},
		{"name":"B","type":"boolean","nullable":true,"metadata":{}},
		{"name":"c","type":"double","nullable":true,"metadata":{}}]}`)
	paths := func(c *deltalog.StatsCollector) []string {
		var out []string
		for _, col := range c.Columns() {
			out = append(out, strings.Join(col.Path, "."))
		}
		return out
	}
	cases := []struct {
		name  string
		conf  map[string]string
		extra [][]string
		want  []string
	}{
		{"default 32, partition excluded", nil, nil, []string{"a", "s.x", "s.y.z", "arr", "B", "c"}},
		{"first 2 leaves", map[string]string{"delta.dataSkippingNumIndexedCols": "2"}, nil, []string{"a", "s.x"}},
		{"first 4 leaves (array counts)", map[string]string{"delta.dataSkippingNumIndexedCols": "4"}, nil, []string{"a", "s.x", "s.y.z", "arr"}},
		{"zero", map[string]string{"delta.dataSkippingNumIndexedCols": "0"}, nil, nil},
		{"all", map[string]string{"delta.dataSkippingNumIndexedCols": "-1"}, nil, []string{"a", "s.x", "s.y.z", "arr", "B", "c"}},
		{"named columns win", map[string]string{"delta.dataSkippingNumIndexedCols": "1",
			"delta.dataSkippingStatsColumns": "c, S.`y.z`, b, missing, p"}, nil, []string{"s.y.z", "B", "c"}},
		{"named struct takes all leaves", map[string]string{"delta.dataSkippingStatsColumns": "s"}, nil, []string{"s.x", "s.y.z"}},
		{"clustering columns added", map[string]string{"delta.dataSkippingNumIndexedCols": "1"}, [][]string{{"c"}}, []string{"a", "c"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sc, err := deltalog.NewStatsCollectorFor(schema, []string{"p"}, c.conf, c.extra)
			if err != nil {
				t.Fatal(err)
			}
			if got := paths(sc); !slices.Equal(got, c.want) {
				t.Errorf("indexed = %v, want %v", got, c.want)
			}
		})
	}
	// Nested output and nullCount-only columns.
	sc, _ := deltalog.NewStatsCollectorFor(schema, []string{"p"}, nil, nil)
	for _, r := range []map[string]any{
		{"p": "x", "a": 1, "s": map[string]any{"x": 5}, "arr": []any{1}, "B": true, "c": 0.5},
		{"a": 2, "s": nil, "B": nil},
	} {
		if err := sc.ObserveRecord(r); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := sc.JSON()
	want := `{"numRecords":2,"minValues":{"a":1,"s":{"x":5},"c":0.5},"maxValues":{"a":2,"s":{"x":5},"c":0.5},` +
		`"nullCount":{"a":0,"s":{"x":1,"y.z":2},"arr":1,"B":1,"c":1}}`
	if got != want {
		t.Errorf("stats\n got %s\nwant %s", got, want)
	}
	if err := sc.ObserveRecord(map[string]any{"s": "not an object"}); err == nil {
		t.Error("non-object struct value accepted")
	}
}

func TestParseColumnList(t *testing.T) {
	cases := []struct {
		in   string
		want [][]string
		err  bool
	}{
		{"a", [][]string{{"a"}}, false},
		{" a , b.c ", [][]string{{"a"}, {"b", "c"}}, false},
		{"`a.b`.c, `x``y`", [][]string{{"a.b", "c"}, {"x`y"}}, false},
		{"`a,b`", [][]string{{"a,b"}}, false},
		{"a,,b", nil, true},
		{"`open", nil, true},
		{"`a`b", nil, true},
	}
	for _, c := range cases {
		got, err := deltalog.ParseColumnList(c.in)
		if (err != nil) != c.err || !reflect.DeepEqual(got, c.want) && !c.err {
			t.Errorf("ParseColumnList(%q) = %q, %v; want %q (err %v)", c.in, got, err, c.want, c.err)
		}
	}
}

// The per-value path must not allocate: it runs for every value written.
func TestStatsObserveDoesNotAllocate(t *testing.T) {
	schema := mustSchema(t, `{"type":"struct","fields":[{"name":"i","type":"long","nullable":true,"metadata":{}},{"name":"s","type":"string","nullable":true,"metadata":{}},{"name":"f","type":"double","nullable":true,"metadata":{}}]}`)
	sc, _ := deltalog.NewStatsCollectorFor(schema, nil, nil, nil)
	ci, cs, cf := sc.Column("i"), sc.Column("s"), sc.Column("f")
	strs := []string{"m", "a", "z"}
	n := 0
	allocs := testing.AllocsPerRun(1000, func() {
		ci.ObserveInt(int64(n))
		cs.ObserveString(strs[n%3])
		cf.ObserveFloat(float64(n))
		ci.ObserveNull()
		sc.AddRows(1)
		n++
	})
	if allocs != 0 {
		t.Errorf("observe allocates %v times per row", allocs)
	}
}

func BenchmarkStatsObserve(b *testing.B) {
	schema := mustSchema(b, `{"type":"struct","fields":[{"name":"i","type":"long","nullable":true,"metadata":{}},{"name":"s","type":"string","nullable":true,"metadata":{}}]}`)
	sc, _ := deltalog.NewStatsCollectorFor(schema, nil, nil, nil)
	ci, cs := sc.Column("i"), sc.Column("s")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		ci.ObserveInt(int64(i))
		cs.ObserveString("value")
		i++
	}
}
