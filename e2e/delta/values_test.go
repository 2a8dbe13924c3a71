package delta_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// Values that must either land exactly or fail the batch naming field,
// value, topic and offset: decimals are never rounded, timestamps without a
// zone are read as UTC whether 'T' or ' ' separates date and time, floats
// take NaN and the infinities, records matching no column are counted, and
// empty payloads (tombstones) fail unless skip_empty_payloads says
// otherwise.

const createValues = `
schema = pa.schema([
    pa.field("id", pa.int64(), nullable=False), ("dec", pa.decimal128(12, 3)), ("whole", pa.decimal128(5, 0)),
    ("ts", pa.timestamp("us", tz="UTC")), ("ntz", pa.timestamp("us")), ("f", pa.float32()), ("d", pa.float64()),
])
write_deltalake(uri, pa.Table.from_pylist([], schema=schema), storage_options=opts)
`

// readValues returns the rows by id, every value as delta-rs reads it,
// rendered as a string (decimals exactly, timestamps ISO, floats by repr).
func readValues(t *testing.T, uri string) map[string]map[string]string {
	t.Helper()
	out := py(t, `
dt = DeltaTable(uri, storage_options=opts)
rows = {}
for r in dt.to_pyarrow_table().to_pylist():
    rows[str(r["id"])] = {k: (None if v is None else v.isoformat() if hasattr(v, "isoformat") else repr(v) if isinstance(v, float) else str(v)) for k, v in r.items()}
dump(rows)
`, uri)
	var rows map[string]map[string]string
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return rows
}

func wantValues(t *testing.T, rows map[string]map[string]string, id, col, want string) {
	t.Helper()
	r, ok := rows[id]
	if !ok {
		t.Fatalf("no row id %s in %v", id, rows)
	}
	if r[col] != want {
		t.Errorf("row %s column %s: delta-rs reads %q, want %q", id, col, r[col], want)
	}
}

func TestDecimalsAreStoredExactlyOrRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dec")
	uri := fileURI(dir)
	py(t, createValues, uri)
	inst := newHarness(t).open("dec", map[string]any{"table_uri": uri})

	for i, tc := range []struct{ name, record, value string }{
		{"string needs rounding", `{"id":1,"dec":"1.2345"}`, `value "1.2345" has more than 3 fractional digits and would be rounded to fit decimal(12,3)`},
		{"number needs rounding", `{"id":1,"dec":1.2345}`, `value 1.2345 has more than 3 fractional digits and would be rounded to fit decimal(12,3)`},
		{"exponent needs rounding", `{"id":1,"dec":"1.2345e-1"}`, `value "1.2345e-1" has more than 3 fractional digits`},
		{"scale 0 needs rounding", `{"id":1,"whole":"2.5"}`, `value "2.5" is not an integer and would be rounded to fit decimal(5,0)`},
		{"precision overflow", `{"id":1,"dec":"1234567890.5"}`, `value "1234567890.5" does not fit decimal(12,3)`},
		{"precision overflow number", `{"id":1,"whole":123456}`, `value 123456 does not fit decimal(5,0)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			field := "dec"
			if strings.Contains(tc.record, "whole") {
				field = "whole"
			}
			// Own offsets per case: a batch wrongly committed must not make
			// the next one a skipped replay.
			off := uint64(10 * (i + 1))
			b := jsonBatch("money", off, `{"id":0,"dec":"1.000"}`, tc.record)
			wantStatus(t, inst.Consume(b), hostclient.StatusFatal,
				`Invalid record value: field "`+field+`": `+tc.value, `topic "money"`, sprintf("offset %d)", off+1))
		})
	}
	if n := len(history(t, uri)); n != 1 {
		t.Fatalf("%d versions after refused batches, want only the create", n)
	}

	// Exact values are taken, in every spelling.
	consume(t, inst, jsonBatch("money", 100,
		`{"id":1,"dec":"1.2340"}`,   // trailing zeros beyond the scale are exact
		`{"id":2,"dec":1.2340000}`,  // as a number too
		`{"id":3,"dec":"1.2345e1"}`, // 12.345
		`{"id":4,"dec":1.2345E+1}`,  // 12.345
		`{"id":5,"dec":"-0.001"}`,   //
		`{"id":6,"dec":"999999999.999","whole":"-99999"}`,
		`{"id":7,"dec":"12345e-3","whole":"1.5e1"}`, // 12.345, 15
		`{"id":8,"dec":0.1000,"whole":"0.000"}`,
	))
	rows := readValues(t, uri)
	for id, want := range map[string]string{"1": "1.234", "2": "1.234", "3": "12.345", "4": "12.345", "5": "-0.001",
		"6": "999999999.999", "7": "12.345", "8": "0.100"} {
		wantValues(t, rows, id, "dec", want)
	}
	wantValues(t, rows, "6", "whole", "-99999")
	wantValues(t, rows, "7", "whole", "15")
	wantValues(t, rows, "8", "whole", "0")
}

func TestTimestampsWithoutZoneAreUTCWithTOrSpace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ts")
	uri := fileURI(dir)
	py(t, createValues, uri)
	inst := newHarness(t).open("ts", map[string]any{"table_uri": uri})
	consume(t, inst, jsonBatch("ts", 0,
		`{"id":1,"ts":"2026-09-03T21:15:04","ntz":"2026-09-03T21:15:04"}`,
		`{"id":2,"ts":"2026-09-03 21:15:04","ntz":"2026-09-03 21:15:04"}`,
		`{"id":3,"ts":"2026-09-03T21:15:04.123456","ntz":"2026-09-03t21:15:04.5"}`,
		`{"id":4,"ts":"2026-09-03T23:15:04+02:00","ntz":"2026-09-03T21:15:04Z"}`,
	))
	rows := readValues(t, uri)
	for id, want := range map[string][2]string{
		"1": {"2026-09-03T21:15:04+00:00", "2026-09-03T21:15:04"},
		"2": {"2026-09-03T21:15:04+00:00", "2026-09-03T21:15:04"},
		"3": {"2026-09-03T21:15:04.123456+00:00", "2026-09-03T21:15:04.500000"},
		"4": {"2026-09-03T21:15:04+00:00", "2026-09-03T21:15:04"},
	} {
		wantValues(t, rows, id, "ts", want[0])
		wantValues(t, rows, id, "ntz", want[1])
	}
	wantStatus(t, inst.Consume(jsonBatch("ts", 10, `{"id":9,"ts":"2026-09-03T21:15"}`)), hostclient.StatusFatal,
		`Invalid record value: field "ts": cannot parse "2026-09-03T21:15" as a timestamp`, `topic "ts"`, "offset 10")
}

func TestFloatsTakeNaNAndInfinityStrings(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nan")
	uri := fileURI(dir)
	py(t, createValues, uri)
	inst := newHarness(t).open("nan", map[string]any{"table_uri": uri})
	consume(t, inst, jsonBatch("nan", 0,
		`{"id":1,"f":"NaN","d":"NaN"}`,
		`{"id":2,"f":"Infinity","d":"Infinity"}`,
		`{"id":3,"f":"-Infinity","d":"-Infinity"}`,
		`{"id":4,"f":1.5,"d":-2.5}`,
	))
	consume(t, inst, jsonBatch("nan", 4, `{"id":5,"f":0.25,"d":3}`))
	rows := readValues(t, uri)
	for id, want := range map[string]string{"1": "nan", "2": "inf", "3": "-inf", "4": "", "5": ""} {
		if want == "" {
			continue
		}
		wantValues(t, rows, id, "f", want)
		wantValues(t, rows, id, "d", want)
	}
	wantValues(t, rows, "4", "d", "-2.5")
	wantValues(t, rows, "5", "f", "0.25")

	// Delta stats cannot carry NaN or ±Infinity: the first file has no
	// bounds for f and d (no skipping), the second has exact ones.
	out := py(t, `
import glob
stats = []
for f in sorted(glob.glob(sys.argv[1] + "/_delta_log/*.json")):
    for line in open(f):
        a = json.loads(line)
        if "add" in a:
            s = json.loads(a["add"]["stats"])
            stats.append({"min": s.get("minValues", {}), "max": s.get("maxValues", {}), "nulls": s.get("nullCount", {})})
dump(stats)
`, dir)
	want := `[{"max": {"id": 4}, "min": {"id": 1}, "nulls": {"d": 0, "dec": 4, "f": 0, "id": 0, "ntz": 4, "ts": 4, "whole": 4}}, ` +
		`{"max": {"d": 3, "f": 0.25, "id": 5}, "min": {"d": 3, "f": 0.25, "id": 5}, "nulls": {"d": 0, "dec": 1, "f": 0, "id": 0, "ntz": 1, "ts": 1, "whole": 1}}]`
	if strings.TrimSpace(out) != want {
		t.Errorf("stats\n got %s\nwant %s", strings.TrimSpace(out), want)
	}
	// Data skipping must not hide them: delta-rs's query engine (DataFusion,
	// which orders NaN above +Infinity) over the table, and pyarrow over the
	// data files with their Parquet statistics. (delta-rs's Python
	// to_pyarrow_table(filters=...) loses the Infinity row here, as it does
	// on tables delta-rs wrote itself: a reader bug, see the report.)
	out = py(t, `
import glob
import pyarrow.dataset as ds
from deltalake import QueryBuilder
dt = DeltaTable(uri, storage_options=opts)
df = pa.table(QueryBuilder().register("t", dt).execute("select id from t where d > 2.75").read_all())
files = sorted(glob.glob(sys.argv[2] + "/*.parquet"))
pq = ds.dataset(files).to_table(filter=ds.field("d") > 2.75)
dump({"datafusion": sorted(df.column("id").to_pylist()), "parquet": sorted(pq.column("id").to_pylist())})
`, uri, dir)
	if want := `{"datafusion": [1, 2, 5], "parquet": [2, 5]}`; strings.TrimSpace(out) != want {
		t.Errorf("d > 2.75 reads %s, want %s", strings.TrimSpace(out), want)
	}
	wantStatus(t, inst.Consume(jsonBatch("nan", 9, `{"id":9,"d":"1.5"}`)), hostclient.StatusFatal,
		`Invalid record value: field "d": expected double, got JSON string`, "offset 9")
}

func TestRecordsMatchingNoColumnAreCountedAndLoggedOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "unmatched")
	uri := fileURI(dir)
	py(t, `
schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
write_deltalake(uri, pa.Table.from_pylist([], schema=schema), storage_options=opts)
`, uri)
	inst := newHarness(t).open("unmatched", map[string]any{"table_uri": uri})
	consume(t, inst, jsonBatch("people", 0, `{"id":1,"name":"a"}`, `{"ID":2,"Name":"b"}`, `{"Id":3}`, `{"name":"d"}`))
	consume(t, inst, jsonBatch("people", 4, `{"ID":5}`))
	m := sinkMetrics(t, inst)
	if m["records_unmatched"] != 3.0 || m["records_written"] != 5.0 {
		t.Fatalf("records_unmatched %v records_written %v, want 3 and 5", m["records_unmatched"], m["records_written"])
	}
	var warns []string
	for _, l := range inst.Logs() {
		if strings.Contains(l.Message, "match no column") {
			warns = append(warns, l.Level.String()+" "+l.Message)
		}
	}
	if len(warns) != 1 || !strings.HasPrefix(warns[0], "WARN ") || !strings.Contains(warns[0], "topic=people") ||
		!strings.Contains(warns[0], "offset=1") || !strings.Contains(warns[0], "case-sensitively") {
		t.Fatalf("warnings %q, want one for topic people at offset 1", warns)
	}
	// The rows are there, as delta-rs reads them: nulls where no name matched.
	rows := readRows(t, uri, "name")
	if len(rows) != 5 || rows[0]["id"] != 1.0 || rows[1]["name"] != "d" || rows[2]["id"] != nil {
		t.Fatalf("rows %v", rows)
	}
}

func TestEmptyPayloadsFailUnlessSkipped(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tomb")
	uri := fileURI(dir)
	py(t, `
schema = pa.schema([("id", pa.int64())])
write_deltalake(uri, pa.Table.from_pylist([], schema=schema), storage_options=opts)
`, uri)
	h := newHarness(t)

	strict := h.open("strict", map[string]any{"table_uri": uri})
	wantStatus(t, strict.Consume(jsonBatch("c", 0, `{"id":0}`, ``)), hostclient.StatusFatal,
		`Invalid JSON record: empty payload (a tombstone?)`, "skip_empty_payloads = true", `topic "c"`, "offset 1")
	wantStatus(t, strict.Consume(jsonBatch("c", 0, `{"id":0}`, `not json`)), hostclient.StatusFatal,
		`Invalid JSON record: `, `topic "c"`, "offset 1")
	if n := len(history(t, uri)); n != 1 {
		t.Fatalf("%d versions after refused batches", n)
	}

	skip := h.open("skip", map[string]any{"table_uri": uri, "skip_empty_payloads": true})
	batch := jsonBatch("c", 10, `{"id":10}`, ``, `{"id":12}`, ``)
	consume(t, skip, batch)
	consume(t, skip, batch)                      // a replay: exactly-once skips everything
	consume(t, skip, jsonBatch("c", 14, ``, ``)) // tombstones only: no commit
	wantIDs(t, uri, "10,12")
	if n := len(history(t, uri)); n != 2 {
		t.Fatalf("%d versions, want the create and one commit", n)
	}
	// The commit's txn records the batch's last offset, a skipped record.
	out := py(t, `
import glob
print([json.loads(l)["txn"]["version"] for f in glob.glob(sys.argv[1] + "/_delta_log/*.json") for l in open(f) if '"txn"' in l])
`, dir)
	if strings.TrimSpace(out) != "[13]" {
		t.Fatalf("txn versions %s, want [13]", out)
	}
	if m := sinkMetrics(t, skip); m["empty_payloads_skipped"] != 4.0 || m["records_written"] != 2.0 {
		t.Fatalf("empty_payloads_skipped %v records_written %v, want 4 and 2", m["empty_payloads_skipped"], m["records_written"])
	}
}

// Parquet orders DECIMAL min/max as signed numbers. A decimal(38,2) column
// is a fixed-length byte array, which the Parquet library ordered as
// unsigned bytes: a file holding -5.00, 3.00, -1.00 claimed min 3.00 and max
// -1.00 in its footer, and a reader pruning on x < 0 skipped it. pyarrow
// reads the footer's statistics and the page index's bounds.
func TestWideDecimalStatisticsAreSigned(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "dec")
	uri := fileURI(dir)
	py(t, `
schema = pa.schema([("id", pa.int64()), ("x", pa.decimal128(38, 2)), ("y", pa.decimal128(20, 0))])
write_deltalake(uri, pa.Table.from_pylist([], schema=schema), storage_options=opts)
`, uri)
	inst := newHarness(t).open("dec", map[string]any{"table_uri": uri})
	consume(t, inst, jsonBatch("t", 0, `{"id":1,"x":"-5.00","y":-1}`, `{"id":2,"x":"3.00","y":null}`,
		`{"id":3,"x":"-1.00","y":12345678901234567890}`, `{"id":4,"x":"0.01","y":-12345678901234567890}`))
	got := strings.TrimSpace(py(t, `
import glob, pyarrow.parquet as pq
for f in glob.glob(sys.argv[1] + "/*.parquet"):
    rg = pq.ParquetFile(f).metadata.row_group(0)
    for c in (1, 2):
        s = rg.column(c).statistics
        print(rg.column(c).path_in_schema, s.min, s.max, s.null_count)
`, dir))
	want := "x -5.00 3.00 0\ny -12345678901234567890 12345678901234567890 1"
	if got != want {
		t.Fatalf("footer statistics:\n%s\nwant\n%s", got, want)
	}
	// The values are read back as written; a filter below zero finds both.
	out := strings.TrimSpace(py(t, `
import pyarrow.compute as pc
t = DeltaTable(uri).to_pyarrow_table()
print(sorted(t.filter(pc.less(t["x"], pa.scalar(decimal.Decimal("0"), pa.decimal128(38, 2))))["id"].to_pylist()))
`, uri))
	if out != "[1, 3]" {
		t.Fatalf("ids with x < 0: %s", out)
	}
}
