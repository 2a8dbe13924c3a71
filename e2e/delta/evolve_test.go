package delta_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// schema_evolution: new top-level fields become columns (add_columns), or
// are ignored visibly (none, the default).

// tableSchema returns the table's schema as delta-rs reads it, one
// "name: type" per column.
func tableSchema(t *testing.T, uri string) string {
	t.Helper()
	return strings.TrimSpace(py(t, `
dt = DeltaTable(uri, storage_options=opts)
for f in pa.schema(dt.schema().to_arrow()):
    print(f"{f.name}: {f.type}")
`, uri))
}

// logsContaining returns the instance's log lines whose message contains s.
func logsContaining(inst *hostclient.Instance, s string) []string {
	var out []string
	for _, l := range inst.Logs() {
		if strings.Contains(l.Message, s) {
			out = append(out, l.Level.String()+" "+l.Message)
		}
	}
	return out
}

var addColumns = map[string]any{"schema_evolution": "add_columns"}

func evolveConfig(uri string) map[string]any { return with(addColumns, "table_uri", uri) }

func TestAddColumnsAddsTypedColumnsInTheBatchCommit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "events")
	uri := fileURI(dir)
	py(t, createEvents, uri)
	inst := newHarness(t).open("ev", evolveConfig(uri))
	consume(t, inst, jsonBatch("ev", 0,
		`{"id":1,"body":"a","n":1,"d":1.5,"s":"x","b":true,"o":{"k":1,"l":["p","q"]},"arr":[1,null,2],"later":null}`,
		`{"id":2,"n":2,"d":2,"o":{"k":null,"m":0.5},"later":null}`,
		`{"id":3}`))
	want := strings.Join([]string{"id: int64", "body: string", "n: int64", "d: double", "s: string", "b: bool",
		"o: struct<k: int64, l: list<element: string>, m: double>", "arr: list<element: int64>"}, "\n")
	if got := tableSchema(t, uri); got != want {
		t.Fatalf("schema\n%s\nwant\n%s", got, want)
	}
	rows := readRows(t, uri, "id")
	if len(rows) != 3 || rows[0]["n"] != 1.0 || rows[0]["d"] != 1.5 || rows[0]["s"] != "x" || rows[0]["b"] != true ||
		sprintf("%v", rows[0]["o"]) != "map[k:1 l:[p q] m:<nil>]" || sprintf("%v", rows[0]["arr"]) != "[1 <nil> 2]" ||
		rows[1]["d"] != 2.0 || sprintf("%v", rows[1]["o"]) != "map[k:<nil> l:<nil> m:0.5]" || rows[1]["body"] != nil ||
		rows[2]["n"] != nil || rows[2]["o"] != nil {
		t.Fatalf("rows %v", rows)
	}
	// One commit holds the new schema and the data written against it.
	commit, err := os.ReadFile(filepath.Join(dir, "_delta_log", "00000000000000000001.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(commit), `"metaData"`) || !strings.Contains(string(commit), `"add"`) ||
		!strings.Contains(string(commit), `"isBlindAppend":false`) {
		t.Fatalf("commit 1 is not metaData + add:\n%s", commit)
	}
	// "later" was only null: no column yet, counted and logged as ignored;
	// the first batch that gives it a value adds it.
	m := sinkMetrics(t, inst)
	if m["columns_added"] != 6.0 || m["fields_ignored"] != 2.0 {
		t.Fatalf("columns_added %v fields_ignored %v, want 6 and 2", m["columns_added"], m["fields_ignored"])
	}
	if l := logsContaining(inst, "only null so far"); len(l) != 1 || !strings.Contains(l[0], "field=later") {
		t.Fatalf("ignored-field warnings %q", l)
	}
	if l := logsContaining(inst, "added columns"); len(l) != 1 || !strings.Contains(l[0], "o struct<k:long,l:array<string>,m:double>") {
		t.Fatalf("added-columns log %q", l)
	}
	consume(t, inst, jsonBatch("ev", 3, `{"id":4,"later":"now"}`, `{"id":5,"n":5}`))
	if got := tableSchema(t, uri); got != want+"\nlater: string" {
		t.Fatalf("schema\n%s", got)
	}
	rows = readRows(t, uri, "id")
	if len(rows) != 5 || rows[3]["later"] != "now" || rows[0]["later"] != nil || rows[4]["n"] != 5.0 {
		t.Fatalf("rows %v", rows)
	}
	// Everything else of the metaData is kept: the table id.
	if n := len(history(t, uri)); n != 3 {
		t.Fatalf("%d versions, want 3", n)
	}
}

// With the default the spec's behaviour is unchanged — the field is not
// written — but each new name is logged once and every occurrence counted.
func TestSchemaEvolutionNoneCountsAndLogsIgnoredFields(t *testing.T) {
	uri := fileURI(filepath.Join(t.TempDir(), "events"))
	py(t, createEvents, uri)
	inst := newHarness(t).open("ev", map[string]any{"table_uri": uri})
	consume(t, inst, jsonBatch("ev", 0, `{"id":1,"extra":1}`, `{"id":2,"extra":2,"more":"x"}`))
	consume(t, inst, jsonBatch("ev", 2, `{"id":3,"extra":3}`))
	if got := tableSchema(t, uri); got != "id: int64\nbody: string" {
		t.Fatalf("schema changed:\n%s", got)
	}
	wantIDs(t, uri, "1,2,3")
	m := sinkMetrics(t, inst)
	if m["fields_ignored"] != 4.0 || m["columns_added"] != 0.0 {
		t.Fatalf("fields_ignored %v columns_added %v, want 4 and 0", m["fields_ignored"], m["columns_added"])
	}
	l := logsContaining(inst, "a field of the records is not written")
	if len(l) != 2 || !strings.HasPrefix(l[0], "WARN ") || !strings.Contains(l[0], "field=extra") || !strings.Contains(l[0], "offset=0") ||
		!strings.Contains(l[1], "field=more") || !strings.Contains(l[1], "offset=1") || !strings.Contains(l[0], `schema_evolution = "add_columns"`) {
		t.Fatalf("warnings %q, want one for extra and one for more", l)
	}
}

// A field the batch does not type fails the batch for good, naming field,
// topic and offsets; nothing is written.
func TestAddColumnsRefusesUndecidedTypes(t *testing.T) {
	uri := fileURI(filepath.Join(t.TempDir(), "events"))
	py(t, createEvents, uri)
	inst := newHarness(t).open("ev", evolveConfig(uri))
	wantStatus(t, inst.Consume(jsonBatch("ev", 7, `{"id":1,"n":1}`, `{"id":2,"n":"a"}`)), hostclient.StatusFatal,
		`Schema evolution: topic "ev"`, `field "n" cannot become a column: its values have two types in this batch: long at offset 7, string at offset 8`)
	wantStatus(t, inst.Consume(jsonBatch("ev", 7, `{"id":1,"tags":[]}`)), hostclient.StatusFatal,
		`field "tags" cannot become a column: its arrays are empty`, "offset 7")
	wantStatus(t, inst.Consume(jsonBatch("ev", 7, `{"id":1,"Body":"x"}`)), hostclient.StatusFatal,
		`field "Body" cannot become a column: the name differs only in case from "body"`)
	if n := len(history(t, uri)); n != 1 {
		t.Fatalf("%d versions, want 1", n)
	}
	if got := tableSchema(t, uri); got != "id: int64\nbody: string" {
		t.Fatalf("schema changed:\n%s", got)
	}
}

// Another writer changes the schema after the sink read the table: the
// sink's commit, which carries a metaData built from the older schema,
// loses the race, sees the winner's metaData, and the batch is rebuilt
// against the new schema — the other writer's column is kept, and a
// column it added with another type refuses values that do not fit it.
func TestAddColumnsRacingSchemaChange(t *testing.T) {
	t.Run("another column", func(t *testing.T) {
		uri := fileURI(filepath.Join(t.TempDir(), "events"))
		py(t, createEvents, uri)
		inst := newHarness(t).open("ev", evolveConfig(uri))
		consume(t, inst, events("ev", 0, 1))
		py(t, `
from deltalake.schema import Field, PrimitiveType
DeltaTable(uri).alter.add_columns([Field("theirs", PrimitiveType("string"), nullable=True)])
`, uri)
		consume(t, inst, jsonBatch("ev", 1, `{"id":1,"ours":1.5,"theirs":"t"}`))
		if got := tableSchema(t, uri); got != "id: int64\nbody: string\ntheirs: string\nours: double" {
			t.Fatalf("schema\n%s", got)
		}
		rows := readRows(t, uri, "id")
		if len(rows) != 2 || rows[1]["ours"] != 1.5 || rows[1]["theirs"] != "t" {
			t.Fatalf("rows %v", rows)
		}
		if len(logsContaining(inst, "rebuilding it against the new snapshot")) == 0 {
			t.Fatal("no rebuild logged: the race was not seen through the commit conflict")
		}
	})
	t.Run("same column, another type", func(t *testing.T) {
		uri := fileURI(filepath.Join(t.TempDir(), "events"))
		py(t, createEvents, uri)
		inst := newHarness(t).open("ev", evolveConfig(uri))
		consume(t, inst, events("ev", 0, 1))
		py(t, `
from deltalake.schema import Field, PrimitiveType
DeltaTable(uri).alter.add_columns([Field("n", PrimitiveType("long"), nullable=True)])
`, uri)
		wantStatus(t, inst.Consume(jsonBatch("ev", 1, `{"id":1,"n":"one"}`)), hostclient.StatusFatal,
			`Invalid record value: field "n": expected long, got JSON string`, "offset 1")
		if got := tableSchema(t, uri); got != "id: int64\nbody: string\nn: int64" {
			t.Fatalf("schema\n%s", got)
		}
		wantIDs(t, uri, "0")
	})
}

// A batch that added a column, replayed by a new runtime (with more
// records), is written once: the commit that added the column holds its
// txn too.
func TestAddColumnsReplayIsExactlyOnce(t *testing.T) {
	uri := fileURI(filepath.Join(t.TempDir(), "events"))
	py(t, createEvents, uri)
	batch := func(first, n int) hostclient.Batch {
		var p []string
		for i := first; i < first+n; i++ {
			p = append(p, sprintf(`{"id":%d,"extra":"e%d"}`, i, i))
		}
		return jsonBatch("ev", uint64(first), p...)
	}
	h := newHarness(t)
	consume(t, h.open("ev", evolveConfig(uri)), batch(0, 5))
	h.host.Kill()

	inst := newHarness(t).open("ev", evolveConfig(uri))
	consume(t, inst, batch(0, 5))
	consume(t, inst, batch(3, 5)) // 5..7 are new
	wantIDs(t, uri, span(0, 7))
	rows := readRows(t, uri, "id")
	if rows[7]["extra"] != "e7" || rows[0]["extra"] != "e0" {
		t.Fatalf("rows %v", rows)
	}
	if n := len(history(t, uri)); n != 3 {
		t.Fatalf("%d versions, want 3", n)
	}
	if m := sinkMetrics(t, inst); m["columns_added"] != 0.0 || m["records_skipped"] != 7.0 {
		t.Fatalf("columns_added %v records_skipped %v, want 0 and 7", m["columns_added"], m["records_skipped"])
	}
}

func TestSchemaEvolutionBadValueIsBadConfig(t *testing.T) {
	uri := fileURI(filepath.Join(t.TempDir(), "events"))
	py(t, createEvents, uri)
	err := newHarness(t).openErr("ev", map[string]any{"table_uri": uri, "schema_evolution": "merge"})
	wantStatus(t, err, hostclient.StatusBadConfig, `schema_evolution`, `"merge" is not one of none, add_columns`)
}

// With a host that accepts rejections, a batch that adds a column leaves out
// the records that do not fit (their new fields do not type the column), and
// a replay that extends the batch reports the first delivery's rejections
// again while the new part adds another column.
func TestAddColumnsKeepsRejectionsAcrossReplay(t *testing.T) {
	uri := fileURI(filepath.Join(t.TempDir(), "events"))
	py(t, createEvents, uri)
	b := jsonBatch("ev", 10, `{"id":1,"n":1}`, `{"id":"bad","n":"not a long"}`, `{"id":3,"n":3}`)
	b.AcceptRejections = true
	rej, err := newHarness(t).open("ev", evolveConfig(uri)).ConsumeResult(b)
	if err != nil || len(rej) != 1 || rej[0].Index != 1 || !strings.Contains(rej[0].Message, `field "id"`) {
		t.Fatalf("first delivery: %+v %v", rej, err)
	}
	replay := jsonBatch("ev", 10, `{"id":1,"n":1}`, `{"id":"bad","n":"not a long"}`, `{"id":3,"n":3}`,
		`{"id":4,"n":4,"m":"x"}`, `{"id":"bad again"}`)
	replay.Attempt, replay.AcceptRejections = 2, true
	rej, err = newHarness(t).open("ev", evolveConfig(uri)).ConsumeResult(replay)
	if err != nil || len(rej) != 2 || rej[0].Index != 1 || rej[1].Index != 4 {
		t.Fatalf("replay: %+v %v", rej, err)
	}
	if got := tableSchema(t, uri); got != "id: int64\nbody: string\nn: int64\nm: string" {
		t.Fatalf("schema\n%s", got)
	}
	rows := readRows(t, uri, "id")
	if len(rows) != 3 || rows[1]["n"] != 3.0 || rows[2]["m"] != "x" {
		t.Fatalf("rows %v", rows)
	}
}

// The checkpoint the sink writes after adding columns carries the evolved
// metaData: delta-rs reading the (partitioned) table through it alone sees
// the columns and the partitioning.
func TestAddColumnsCheckpointCarriesTheNewSchema(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "regions")
	uri := fileURI(dir)
	py(t, createRegions, uri, `{"delta.checkpointInterval": "2"}`)
	inst := newHarness(t).open("ev", evolveConfig(uri))
	consume(t, inst, jsonBatch("ev", 0, `{"id":0,"region":"eu","a":1}`))
	consume(t, inst, jsonBatch("ev", 1, `{"id":1,"region":"us","b":[true]}`))
	waitForFile(t, checkpointFile(dir, 2))
	cp := copyTable(t, dir)
	for _, v := range []string{"00000000000000000000.json", "00000000000000000001.json"} {
		if err := os.Remove(filepath.Join(cp, "_delta_log", v)); err != nil {
			t.Fatal(err)
		}
	}
	if got := tableSchema(t, fileURI(cp)); got != "id: int64\nregion: string\nbody: string\na: int64\nb: list<element: bool>" {
		t.Fatalf("schema through the checkpoint\n%s", got)
	}
	rows := readRows(t, fileURI(cp), "id")
	if len(rows) != 2 || rows[0]["a"] != 1.0 || rows[0]["region"] != "eu" || sprintf("%v", rows[1]["b"]) != "[true]" || rows[1]["region"] != "us" {
		t.Fatalf("rows %v", rows)
	}
}

// With metadata_columns, a payload field named like a pico_* column is the
// record's metadata, not data: add_columns never types such a column from
// what a producer sent (found in review: "pico_partition":"p-1" stopped the
// sink with FATAL, and "pico_offset":7 added a column then overwritten).
func TestAddColumnsNeverAddsPicoColumnsFromThePayload(t *testing.T) {
	uri := fileURI(filepath.Join(t.TempDir(), "events"))
	py(t, createEvents, uri)
	inst := newHarness(t).open("ev", with(evolveConfig(uri), "metadata_columns", true))
	consume(t, inst, jsonBatch("ev", 0,
		`{"id":1,"pico_offset":7,"pico_partition":"p-1","PICO_KEY":[1],"extra":"x"}`))
	if got, want := tableSchema(t, uri), "id: int64\nbody: string\nextra: string"; got != want {
		t.Fatalf("schema\n%s\nwant\n%s", got, want)
	}
	if rows := readRows(t, uri, "id"); len(rows) != 1 || rows[0]["extra"] != "x" {
		t.Fatalf("rows %v", rows)
	}
}
