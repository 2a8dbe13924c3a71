package delta_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// Every primitive Delta type, nested types and two partition columns, in a
// table delta-rs created: delta-rs must read back exactly the values and
// types the records carried.
const createAllTypes = `
schema = pa.schema([
    ("s", pa.string()), ("l", pa.int64()), ("i", pa.int32()), ("sh", pa.int16()), ("b", pa.int8()),
    ("f", pa.float32()), ("d", pa.float64()), ("bo", pa.bool_()), ("bin", pa.binary()), ("dt", pa.date32()),
    ("ts", pa.timestamp("us", tz="UTC")), ("ntz", pa.timestamp("us")), ("dec", pa.decimal128(10, 3)),
    ("big", pa.decimal128(30, 2)),
    ("st", pa.struct([("x", pa.int64()), ("inner", pa.struct([("y", pa.string())]))])),
    ("arr", pa.list_(pa.int64())), ("arrst", pa.list_(pa.struct([("k", pa.string())]))),
    ("m", pa.map_(pa.string(), pa.int64())),
    ("p1", pa.string()), ("p2", pa.int32()),
])
write_deltalake(uri, pa.Table.from_pylist([], schema=schema), partition_by=["p1", "p2"], storage_options=opts)
dt = DeltaTable(uri, storage_options=opts)
dump({"protocol": [dt.protocol().min_reader_version, dt.protocol().min_writer_version]})
`

const readAllTypes = `
dt = DeltaTable(uri, storage_options=opts)
t = dt.to_pyarrow_table()
rows = sorted(t.to_pylist(), key=lambda r: r["l"])
for r in rows:
    r["m"] = sorted(r["m"]) if r["m"] is not None else None
dump({"types": {f.name: str(f.type) for f in t.schema}, "rows": rows})
`

func TestEveryTypeRoundTripsThroughDeltaRS(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "types")
	uri := fileURI(dir)
	py(t, createAllTypes, uri)
	inst := newHarness(t).open("types", map[string]any{"table_uri": uri})
	consume(t, inst, jsonBatch("types", 0,
		`{"s":"héllo","l":9007199254740993,"i":-2147483648,"sh":32767,"b":-128,"f":1.5,"d":-2.25e-10,"bo":true,"bin":"AAEC/w==","dt":"2026-09-03",`+
			`"ts":"2026-09-03T23:15:04.123456+02:00","ntz":"2026-09-03 21:15:04.5","dec":"1234567.891","big":12345678901234567890123456.78,`+
			`"st":{"x":1,"inner":{"y":"deep"}},"arr":[1,null,3],"arrst":[{"k":"a"},{"k":null}],"m":{"a":1,"b":null},"p1":"a b/c=d%","p2":7}`,
		`{"l":2,"s":null,"st":null,"arr":null,"m":null,"p1":null,"p2":null}`,
		`{"l":3,"s":{"nested":[1,"x"]},"ts":1788470104000001,"p1":"","p2":-1}`,
	))
	out := py(t, readAllTypes, uri)
	var got struct {
		Types map[string]string `json:"types"`
		Rows  []map[string]any  `json:"rows"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber() // 9007199254740993 does not survive float64
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	wantTypes := map[string]string{
		"s": "string", "l": "int64", "i": "int32", "sh": "int16", "b": "int8", "f": "float", "d": "double", "bo": "bool",
		"bin": "binary", "dt": "date32[day]", "ts": "timestamp[us, tz=UTC]", "ntz": "timestamp[us]", "dec": "decimal128(10, 3)",
		"big": "decimal128(30, 2)", "st": "struct<x: int64, inner: struct<y: string>>", "arr": "list<element: int64>",
		"arrst": "list<element: struct<k: string>>", "m": "map<string, int64>", "p1": "string", "p2": "int32",
	}
	for k, v := range wantTypes {
		if got.Types[k] != v && !(k == "arr" && got.Types[k] == "list<item: int64>") && !(k == "arrst" && got.Types[k] == "list<item: struct<k: string>>") {
			t.Errorf("column %s: type %s, want %s", k, got.Types[k], v)
		}
	}
	rows, _ := json.Marshal(got.Rows)
	want := `[` +
		`{"arr":null,"arrst":null,"b":null,"big":null,"bin":null,"bo":null,"d":null,"dec":null,"dt":null,"f":null,"i":null,"l":2,"m":null,"ntz":null,"p1":null,"p2":null,"s":null,"sh":null,"st":null,"ts":null},` +
		`{"arr":null,"arrst":null,"b":null,"big":null,"bin":null,"bo":null,"d":null,"dec":null,"dt":null,"f":null,"i":null,"l":3,"m":null,"ntz":null,"p1":null,"p2":-1,"s":"{\"nested\":[1,\"x\"]}","sh":null,"st":null,"ts":"2026-09-03T21:15:04.000001+00:00"},` +
		`{"arr":[1,null,3],"arrst":[{"k":"a"},{"k":null}],"b":-128,"big":"12345678901234567890123456.78","bin":"000102ff","bo":true,"d":-2.25e-10,"dec":"1234567.891","dt":"2026-09-03","f":1.5,"i":-2147483648,"l":9007199254740993,"m":[["a",1],["b",null]],"ntz":"2026-09-03T21:15:04.500000","p1":"a b/c=d%","p2":7,"s":"héllo","sh":32767,"st":{"inner":{"y":"deep"},"x":1},"ts":"2026-09-03T21:15:04.123456+00:00"}` +
		`]`
	if string(rows) != want {
		t.Fatalf("rows\n got %s\nwant %s", rows, want)
	}
}

// DuckDB (no Delta extension here: it downloads at run time) reads the data
// files our commits reference, with Hive partitioning from the directory
// names: a second, independent Parquet reader for every type.
func TestDuckDBReadsTheDataFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "types")
	uri := fileURI(dir)
	py(t, createAllTypes, uri)
	inst := newHarness(t).open("types", map[string]any{"table_uri": uri})
	consume(t, inst, jsonBatch("types", 0,
		`{"s":"héllo","l":1,"i":-2147483648,"sh":32767,"b":-128,"f":1.5,"d":-2.25e-10,"bo":true,"bin":"AAEC/w==","dt":"2026-09-03",`+
			`"ts":"2026-09-03T23:15:04.123456+02:00","ntz":"2026-09-03 21:15:04.5","dec":"1234567.891","big":"12345678901234567890123456.78",`+
			`"st":{"x":1,"inner":{"y":"deep"}},"arr":[1,null,3],"arrst":[{"k":"a"}],"m":{"a":1},"p1":"eu","p2":7}`,
		`{"l":2,"p1":"us","p2":8}`,
	))
	out := py(t, `
import duckdb, glob, urllib.parse
files = []
for f in sorted(glob.glob(sys.argv[2] + "/_delta_log/*.json")):
    for line in open(f):
        a = json.loads(line)
        if "add" in a:
            files.append(sys.argv[2] + "/" + urllib.parse.unquote(a["add"]["path"]))
con = duckdb.connect()
con.execute("SET TimeZone = 'UTC'")
rel = con.sql("SELECT * FROM read_parquet(?, hive_partitioning = true) ORDER BY l", params=[files])
types = {c: str(t) for c, t in zip(rel.columns, rel.types)}
rows = [dict(zip(rel.columns, r)) for r in rel.fetchall()]
dump({"types": types, "rows": rows})
`, uri, dir)
	var got struct {
		Types map[string]string
		Rows  []map[string]any
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for col, want := range map[string]string{"s": "VARCHAR", "l": "BIGINT", "i": "INTEGER", "sh": "SMALLINT", "b": "TINYINT",
		"f": "FLOAT", "d": "DOUBLE", "bo": "BOOLEAN", "bin": "BLOB", "dt": "DATE", "ts": "TIMESTAMP WITH TIME ZONE", "ntz": "TIMESTAMP",
		"dec": "DECIMAL(10,3)", "big": "DECIMAL(30,2)", "arr": "BIGINT[]", "m": "MAP(VARCHAR, BIGINT)"} {
		if got.Types[col] != want {
			t.Errorf("DuckDB reads column %s as %s, want %s", col, got.Types[col], want)
		}
	}
	r := got.Rows[0]
	for col, want := range map[string]string{"s": "héllo", "ts": "2026-09-03T21:15:04.123456+00:00", "ntz": "2026-09-03T21:15:04.500000",
		"dec": "1234567.891", "big": "12345678901234567890123456.78", "bin": "000102ff", "p1": "eu"} {
		if v := fmt.Sprint(r[col]); v != want {
			t.Errorf("row 1 column %s = %s, want %s", col, v, want)
		}
	}
	if len(got.Rows) != 2 || fmt.Sprint(got.Rows[1]["p2"]) != "8" {
		t.Errorf("rows %v", got.Rows)
	}
}
