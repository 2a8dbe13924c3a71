package encode_test

// REQUIRES PYTHON. TestPyarrowReadsFiles checks the files with a second,
// independent Parquet implementation (Arrow C++ through pyarrow): types,
// column order, encodings, values. It runs in the project's pinned
// virtualenv (internal/testenv/pyenv: buildscripts/pyenv.sh creates .cache/venv from
// buildscripts/requirements.txt on first use) and fails, never skips, when
// that env cannot be made.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/pyenv"
	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
)

const pyarrowCheck = `
import datetime, decimal, json, sys
import pyarrow.parquet as pq

path, want_names = sys.argv[1], json.loads(sys.argv[2])
pf = pq.ParquetFile(path)
table = pf.read()
assert table.column_names == want_names, table.column_names

types = {f.name: str(f.type) + ("" if f.nullable else " not null") for f in table.schema}
md = pf.metadata
chunks = []
for i in range(md.num_columns):
    c = md.row_group(0).column(i)
    chunks.append({"path": c.path_in_schema, "physical": c.physical_type,
                   "logical": str(pf.schema.column(i).logical_type),
                   "encodings": sorted(c.encodings), "compression": c.compression})

def norm(v):
    if isinstance(v, decimal.Decimal): return "dec:" + str(v)
    if isinstance(v, datetime.datetime): return "ts:" + v.isoformat()
    if isinstance(v, datetime.date): return "date:" + v.isoformat()
    if isinstance(v, bytes): return "bin:" + v.hex()
    if isinstance(v, dict): return {k: norm(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)): return [norm(x) for x in v]
    return v

json.dump({"types": types, "chunks": chunks, "rows": norm(table.to_pylist())}, sys.stdout)
`

type pyarrowReport struct {
	Types  map[string]string `json:"types"`
	Chunks []struct {
		Path        string   `json:"path"`
		Physical    string   `json:"physical"`
		Logical     string   `json:"logical"`
		Encodings   []string `json:"encodings"`
		Compression string   `json:"compression"`
	} `json:"chunks"`
	Rows []map[string]any `json:"rows"`
}

func TestPyarrowReadsFiles(t *testing.T) {
	names := []string{"zid", "str", "int", "short", "byte", "float", "double", "bool", "bin", "date", "ts", "ntz",
		"dec9", "dec18", "dec38", "rec", "list", "objs", "map"}
	wantTypes := map[string]string{
		"zid": "int64 not null", "str": "string", "int": "int32", "short": "int16", "byte": "int8",
		"float": "float", "double": "double", "bool": "bool", "bin": "binary", "date": "date32[day]",
		"ts": "timestamp[us, tz=UTC]", "ntz": "timestamp[us]",
		"dec9": "decimal128(9, 2)", "dec18": "decimal128(18, 4)", "dec38": "decimal128(38, 6)",
		"rec": "struct<b: string not null, a: int64>", "list": "list<element: int64>",
		"objs": "list<element: struct<k: string> not null>", "map": "map<string, double ('map')> not null",
	}
	wantPhysical := map[string]string{
		"zid": "INT64", "str": "BYTE_ARRAY", "int": "INT32", "short": "INT32", "byte": "INT32", "float": "FLOAT",
		"double": "DOUBLE", "bool": "BOOLEAN", "bin": "BYTE_ARRAY", "date": "INT32", "ts": "INT64", "ntz": "INT64",
		"dec9": "INT32", "dec18": "INT64", "dec38": "FIXED_LEN_BYTE_ARRAY", "rec.b": "BYTE_ARRAY", "rec.a": "INT64",
		"list.list.element": "INT64", "objs.list.element.k": "BYTE_ARRAY", "map.key_value.key": "BYTE_ARRAY",
		"map.key_value.value": "DOUBLE",
	}
	wantLogical := map[string]string{
		"str": "String", "short": "Int(bitWidth=16, isSigned=true)", "byte": "Int(bitWidth=8, isSigned=true)",
		"date": "Date", "ts": "Timestamp(isAdjustedToUTC=true, timeUnit=microseconds, is_from_converted_type=false, force_set_converted_type=false)",
		"ntz":  "Timestamp(isAdjustedToUTC=false, timeUnit=microseconds, is_from_converted_type=false, force_set_converted_type=false)",
		"dec9": "Decimal(precision=9, scale=2)", "dec18": "Decimal(precision=18, scale=4)", "dec38": "Decimal(precision=38, scale=6)",
	}
	var wantRows []map[string]any
	if err := json.Unmarshal([]byte(`[
	{"zid":1,"str":"héllo","int":-2147483648,"short":-32768,"byte":-128,"float":1.5,"double":-2.25,"bool":true,
	 "bin":"bin:000102","date":"date:2026-09-03","ts":"ts:2026-09-03T21:15:04.123456+00:00","ntz":"ts:2026-09-03T21:15:04",
	 "dec9":"dec:1234567.89","dec18":"dec:-12345678901234.5678","dec38":"dec:-12345678901234567890123456789012.123456",
	 "rec":{"b":"x","a":7},"list":[1,null,3],"objs":[{"k":"a"},{"k":null}],"map":[["pi",3.14],["nan",null]]},
	{"zid":2,"str":"{\"a\":1}","int":null,"short":null,"byte":null,"float":null,"double":null,"bool":null,"bin":null,
	 "date":null,"ts":null,"ntz":null,"dec9":null,"dec18":null,"dec38":null,"rec":null,"list":[],"objs":[],"map":[]},
	{"zid":3,"str":null,"int":null,"short":null,"byte":null,"float":null,"double":null,"bool":null,"bin":null,
	 "date":null,"ts":null,"ntz":null,"dec9":null,"dec18":null,"dec38":null,"rec":null,"list":null,"objs":null,"map":[["e",2.71]]}
	]`), &wantRows); err != nil {
		t.Fatal(err)
	}

	for _, dict := range []bool{false, true} {
		enc := mustEncoder(t, kitchenSink(t), []string{"part"}, encode.Options{DictionaryEncoding: dict})
		files := encodeRecords(t, enc, kitchenSinkRecords...)
		path := filepath.Join(t.TempDir(), "f.snappy.parquet")
		if err := os.WriteFile(path, files[0].Data, 0o644); err != nil {
			t.Fatal(err)
		}
		namesJSON, _ := json.Marshal(names)
		out := pyenv.Run(t, pyarrowCheck, path, string(namesJSON))
		var rep pyarrowReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("pyarrow output %s: %v", out, err)
		}
		if !reflect.DeepEqual(rep.Types, wantTypes) {
			for k, v := range rep.Types {
				if wantTypes[k] != v {
					t.Errorf("arrow type of %s: %s, want %s", k, v, wantTypes[k])
				}
			}
		}
		for _, c := range rep.Chunks {
			if c.Compression != "SNAPPY" {
				t.Errorf("%s: compression %s", c.Path, c.Compression)
			}
			if want := wantPhysical[c.Path]; c.Physical != want {
				t.Errorf("%s: physical type %s, want %s", c.Path, c.Physical, want)
			}
			if want, ok := wantLogical[c.Path]; ok && c.Logical != want {
				t.Errorf("%s: logical type %s, want %s", c.Path, c.Logical, want)
			}
			for _, e := range c.Encodings {
				switch {
				case e == "PLAIN", e == "RLE":
				case e == "RLE_DICTIONARY" && dict:
				default:
					t.Errorf("%s: encoding %s (dictionary=%v)", c.Path, e, dict)
				}
			}
		}
		if !reflect.DeepEqual(rep.Rows, wantRows) {
			for i := range rep.Rows {
				for k, v := range rep.Rows[i] {
					if !reflect.DeepEqual(v, wantRows[i][k]) {
						t.Errorf("row %d %s: pyarrow read %#v, want %#v", i, k, v, wantRows[i][k])
					}
				}
			}
		}
	}
}
