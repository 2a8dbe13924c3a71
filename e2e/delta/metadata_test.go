package delta_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// A table with every pico_* column (issue 11 item 3, metadata_columns).
const createMetaTable = `
schema = pa.schema([("id", pa.int64()), ("pico_topic", pa.string()), ("pico_partition", pa.int32()), ("pico_offset", pa.int64()),
    ("pico_timestamp", pa.timestamp("us", tz="UTC")), ("pico_key", pa.string()), ("pico_headers", pa.map_(pa.string(), pa.string()))])
write_deltalake(uri, pa.Table.from_pylist([], schema=schema), storage_options=opts)
`

// metaBatch carries keys (text, not UTF-8, empty, none), headers (text,
// not UTF-8, repeated, none) and payloads that try to set pico_* fields
// themselves.
func metaBatch(topic string, first uint64) hostclient.Batch {
	b := jsonBatch(topic, first,
		`{"id":1,"pico_topic":"forged","pico_offset":-5,"pico_key":"forged"}`,
		`{"id":2}`,
		`{"id":3,"pico_headers":{"forged":"yes"}}`,
		`{"id":4}`,
	)
	b.Records[0].Key = []byte("order-1")
	b.Records[0].Headers = []hostclient.Header{{Key: "trace", Value: []byte("abc")}, {Key: "bin", Value: []byte{0xff, 0x00}}}
	b.Records[1].Key = []byte{0xff, 0xfe, 0x00}
	b.Records[2].Key = []byte{}
	b.Records[2].Headers = []hostclient.Header{{Key: "k", Value: []byte("1")}, {Key: "k", Value: []byte("2")}}
	b.Records[3].TimestampMs = -1
	return b
}

func metaRows(t *testing.T, uri string) string {
	t.Helper()
	rows, err := json.Marshal(readRows(t, uri, "id"))
	if err != nil {
		t.Fatal(err)
	}
	return string(rows)
}

func TestMetadataColumnsAreFilledFromTheRecord(t *testing.T) {
	uri := fileURI(filepath.Join(t.TempDir(), "meta"))
	py(t, createMetaTable, uri)
	inst := newHarness(t).open("meta", map[string]any{"table_uri": uri, "metadata_columns": true})
	consume(t, inst, metaBatch("orders.eu", 40))
	// The record's metadata wins over the payload's pico_* fields. Keys are
	// base64 (the column is a string); headers are text when UTF-8 and
	// base64 otherwise, every one in order; no key is null, no headers an
	// empty map.
	want := `[` +
		`{"id":1,"pico_headers":[["trace","abc"],["bin","/wA="]],"pico_key":"b3JkZXItMQ==","pico_offset":40,"pico_partition":0,"pico_timestamp":"2026-01-01T00:00:00+00:00","pico_topic":"orders.eu"},` +
		`{"id":2,"pico_headers":[],"pico_key":"//4A","pico_offset":41,"pico_partition":0,"pico_timestamp":"2026-01-01T00:00:00.001000+00:00","pico_topic":"orders.eu"},` +
		`{"id":3,"pico_headers":[["k","1"],["k","2"]],"pico_key":"","pico_offset":42,"pico_partition":0,"pico_timestamp":"2026-01-01T00:00:00.002000+00:00","pico_topic":"orders.eu"},` +
		`{"id":4,"pico_headers":[],"pico_key":null,"pico_offset":43,"pico_partition":0,"pico_timestamp":"1969-12-31T23:59:59.999000+00:00","pico_topic":"orders.eu"}]`
	if got := metaRows(t, uri); got != want {
		t.Fatalf("rows\n got %s\nwant %s", got, want)
	}
}

// The key as raw bytes in a binary column, the timestamp as epoch
// milliseconds in a long one.
func TestMetadataColumnsBinaryKeyLongTimestamp(t *testing.T) {
	uri := fileURI(filepath.Join(t.TempDir(), "meta"))
	py(t, `
schema = pa.schema([("id", pa.int64()), ("pico_key", pa.binary()), ("pico_timestamp", pa.int64())])
write_deltalake(uri, pa.Table.from_pylist([], schema=schema), storage_options=opts)
`, uri)
	inst := newHarness(t).open("meta", map[string]any{"table_uri": uri, "metadata_columns": true})
	consume(t, inst, metaBatch("orders.eu", 0))
	want := `[{"id":1,"pico_key":"6f726465722d31","pico_timestamp":1767225600000},{"id":2,"pico_key":"fffe00","pico_timestamp":1767225600001},` +
		`{"id":3,"pico_key":"","pico_timestamp":1767225600002},{"id":4,"pico_key":null,"pico_timestamp":-1}]`
	if got := metaRows(t, uri); got != want {
		t.Fatalf("rows\n got %s\nwant %s", got, want)
	}
}

// Without metadata_columns the pico_* columns are ordinary columns, filled
// from the payload as before; a table without pico_* columns is written as
// before with metadata_columns on.
func TestMetadataColumnsOffByDefaultAndOptional(t *testing.T) {
	uri := fileURI(filepath.Join(t.TempDir(), "meta"))
	py(t, createMetaTable, uri)
	h := newHarness(t)
	consume(t, h.open("meta", map[string]any{"table_uri": uri}), metaBatch("orders.eu", 40))
	want := `[` +
		`{"id":1,"pico_headers":null,"pico_key":"forged","pico_offset":-5,"pico_partition":null,"pico_timestamp":null,"pico_topic":"forged"},` +
		`{"id":2,"pico_headers":null,"pico_key":null,"pico_offset":null,"pico_partition":null,"pico_timestamp":null,"pico_topic":null},` +
		`{"id":3,"pico_headers":[["forged","yes"]],"pico_key":null,"pico_offset":null,"pico_partition":null,"pico_timestamp":null,"pico_topic":null},` +
		`{"id":4,"pico_headers":null,"pico_key":null,"pico_offset":null,"pico_partition":null,"pico_timestamp":null,"pico_topic":null}]`
	if got := metaRows(t, uri); got != want {
		t.Fatalf("rows\n got %s\nwant %s", got, want)
	}

	plain := fileURI(filepath.Join(t.TempDir(), "events"))
	py(t, createEvents, plain)
	consume(t, h.open("plain", map[string]any{"table_uri": plain, "metadata_columns": true}), events("events", 0, 5))
	wantIDs(t, plain, span(0, 4))
}

// A pico_* column of a type the metadata does not fit is refused before
// anything is written: at open for a fixed table_uri, at the first batch
// (FATAL) for a templated one.
func TestMetadataColumnOfWrongTypeIsRefused(t *testing.T) {
	dir := t.TempDir()
	uri := fileURI(filepath.Join(dir, "meta"))
	py(t, `
schema = pa.schema([("id", pa.int64()), ("pico_offset", pa.int32())])
write_deltalake(uri, pa.Table.from_pylist([], schema=schema), storage_options=opts)
`, uri)
	h := newHarness(t)
	msg := []string{`plugin_config key "metadata_columns"`, `column "pico_offset" is integer`, "needs long"}
	wantStatus(t, h.openErr("meta", map[string]any{"table_uri": uri, "metadata_columns": true}), hostclient.StatusBadConfig, msg...)

	inst := h.open("meta", map[string]any{"table_uri": fileURI(dir) + "/{topic}", "metadata_columns": true})
	wantStatus(t, inst.Consume(events("meta", 0, 3)), hostclient.StatusFatal, msg...)
	if n := len(history(t, uri)); n != 1 {
		t.Fatalf("%d versions, want only the create", n)
	}
	// Off, the column is an ordinary one.
	consume(t, h.open("off", map[string]any{"table_uri": uri}), events("meta", 0, 3))
}

// Derived partition columns (issue 11 item 5): day and hour from a
// timestamp column, a string hour from a field the table does not have.
const createDerivedTable = `
schema = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", tz="UTC")), ("day", pa.date32()), ("hour", pa.int32()), ("src_hour", pa.string())])
write_deltalake(uri, pa.Table.from_pylist([], schema=schema), partition_by=["day", "hour"], storage_options=opts)
`

func derivedBatch(first uint64) hostclient.Batch {
	return jsonBatch("events", first,
		`{"id":1,"ts":"2026-09-03T23:15:04+02:00","event_time":"2026-09-03T01:00:00Z"}`,
		`{"id":2,"ts":"2026-09-03 21:59:59.999999","day":"1999-01-01","hour":7}`,
		`{"id":3,"ts":1788480000000000,"event_time":1788480000000000}`,
		`{"id":4,"ts":null,"event_time":"2026-09-04"}`,
	)
}

func TestDerivedPartitionColumns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "derived")
	uri := fileURI(dir)
	py(t, createDerivedTable, uri)
	cfg := map[string]any{"table_uri": uri, "derived_columns": "day = date(ts), hour = hour(ts), src_hour = hour(event_time)"}
	consume(t, newHarness(t).open("derived", cfg), derivedBatch(0))

	dirs, err := filepath.Glob(filepath.Join(dir, "day=*", "hour=*"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range dirs {
		dirs[i], _ = filepath.Rel(dir, dirs[i])
	}
	slices.Sort(dirs)
	wantDirs := []string{"day=2026-09-03/hour=21", "day=2026-09-04/hour=0", "day=__HIVE_DEFAULT_PARTITION__/hour=__HIVE_DEFAULT_PARTITION__"}
	if !slices.Equal(dirs, wantDirs) {
		t.Fatalf("partition directories %q, want %q", dirs, wantDirs)
	}
	// The payload's own day and hour lose to the derivation; a null
	// timestamp gives null partition values.
	want := `[` +
		`{"day":"2026-09-03","hour":21,"id":1,"src_hour":"01","ts":"2026-09-03T21:15:04+00:00"},` +
		`{"day":"2026-09-03","hour":21,"id":2,"src_hour":null,"ts":"2026-09-03T21:59:59.999999+00:00"},` +
		`{"day":"2026-09-04","hour":0,"id":3,"src_hour":"00","ts":"2026-09-04T00:00:00+00:00"},` +
		`{"day":null,"hour":null,"id":4,"src_hour":"00","ts":null}]`
	if got := metaRows(t, uri); got != want {
		t.Fatalf("rows\n got %s\nwant %s", got, want)
	}
	// delta-rs prunes on the partition values the commit recorded.
	out := py(t, `
dt = DeltaTable(uri, storage_options=opts)
dump(sorted(r["id"] for r in dt.to_pyarrow_table(partitions=[("day", "=", "2026-09-03"), ("hour", "=", "21")]).to_pylist()))
`, uri)
	if strings.TrimSpace(out) != "[1, 2]" {
		t.Fatalf("ids in day=2026-09-03/hour=21: %s", out)
	}
}

func TestDerivedColumnsConfigErrors(t *testing.T) {
	uri := fileURI(filepath.Join(t.TempDir(), "derived"))
	py(t, createDerivedTable, uri)
	h := newHarness(t)
	for _, tt := range []struct {
		spec string
		want []string
	}{
		{"day = week(ts)", []string{`plugin_config key "derived_columns"`, `unknown function "week"`}},
		{"day = date(ts", []string{`plugin_config key "derived_columns"`, `expected ')' after the field name`}},
		{"nope = date(ts)", []string{`plugin_config key "derived_columns"`, `derived column "nope" is not a top-level column of the table`}},
		{"hour = date(ts)", []string{`plugin_config key "derived_columns"`, `derived column "hour" is integer; date() fills date or string columns`}},
		{"day = date(id)", []string{`plugin_config key "derived_columns"`, `derived from column "id" of type long`}},
	} {
		err := h.openErr("derived", map[string]any{"table_uri": uri, "derived_columns": tt.spec})
		wantStatus(t, err, hostclient.StatusBadConfig, tt.want...)
	}
}

// A record whose source field cannot be read as a timestamp fails the
// batch naming the field (or is rejected alone where the host allows).
func TestDerivedColumnUnparsableSource(t *testing.T) {
	uri := fileURI(filepath.Join(t.TempDir(), "derived"))
	py(t, createDerivedTable, uri)
	inst := newHarness(t).open("derived", map[string]any{"table_uri": uri, "derived_columns": "day = date(event_time)"})
	err := inst.Consume(jsonBatch("events", 0, `{"id":1,"event_time":"2026-09-03T21:15:04Z"}`, `{"id":2,"event_time":"yesterday"}`))
	wantStatus(t, err, hostclient.StatusFatal, `field "event_time": cannot parse "yesterday" as a timestamp (deriving column "day")`, "offset 1")
}

// Replays of a batch with metadata and derived columns add nothing.
func TestMetadataAndDerivedColumnsReplayExactlyOnce(t *testing.T) {
	uri := fileURI(filepath.Join(t.TempDir(), "derived"))
	py(t, `
schema = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", tz="UTC")), ("day", pa.date32()), ("pico_offset", pa.int64())])
write_deltalake(uri, pa.Table.from_pylist([], schema=schema), partition_by=["day"], storage_options=opts)
`, uri)
	cfg := map[string]any{"table_uri": uri, "metadata_columns": true, "derived_columns": "day = date(ts)"}
	h := newHarness(t)
	consume(t, h.open("ev", cfg), derivedBatch(10))
	h.host.Kill()

	inst := newHarness(t).open("ev", cfg)
	b := derivedBatch(10)
	b.Attempt = 2
	consume(t, inst, b)
	consume(t, inst, derivedBatch(12)) // 12, 13 again; 14, 15 new
	out := py(t, `
dt = DeltaTable(uri, storage_options=opts)
dump(sorted([r["pico_offset"], r["id"], str(r["day"])] for r in dt.to_pyarrow_table().to_pylist()))
`, uri)
	want := `[[10, 1, "2026-09-03"], [11, 2, "2026-09-03"], [12, 3, "2026-09-04"], [13, 4, "None"], [14, 3, "2026-09-04"], [15, 4, "None"]]`
	if strings.TrimSpace(out) != want {
		t.Fatalf("rows %s, want %s", out, want)
	}
	if n := len(history(t, uri)); n != 3 { // create + the first batch + 14..15
		t.Fatalf("%d versions, want 3", n)
	}
}
