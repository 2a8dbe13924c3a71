package connect_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/pyenv"
)

// An Avro block's records create their Delta table from the schema
// (column_types = "value_schema", create_table without table_schema): the
// runtime passes the codec's value schema with each batch (ABI 1.3) and the
// real Delta .so creates the table with the schema's types: int, date,
// decimal(20,4), timestamps, binary, a nested struct, an array and a map
// exactly as the hand-made table of TestDecodeAndTransformsOnRealBroker has
// them (a float as a double), and the records read back by delta-rs as they
// do there.
func TestAvroBlockCreatesDeltaTableFromSchema(t *testing.T) {
	r := newDecodeRig(t)
	topic := r.topic("avrocreate")
	var gen struct{ Values, Expected []string }
	r.python(&gen, "gen_avro.py", filepath.Join(r.py, "types.avsc"))
	r.produce(topic, records(t, gen.Values)...)
	uri := "file://" + filepath.Join(r.tables, "avrocreate")
	r.writeDef("create.toml", `type = "sink"
key = "dec_create"
path = "libpicomq_connector_delta_sink"

`+r.block(topic, r.group("avrocreate"), fmt.Sprintf("schema = \"avro\"\navro_schema_path = %q\nbatch_length = 50",
		filepath.Join(r.py, "types.avsc")))+fmt.Sprintf(`
[plugin_config]
table_uri = %q
create_table = true
column_types = "value_schema"
`, uri))
	r.start()
	r.waitAtEnd(map[string]string{r.group("avrocreate"): topic})

	got := strings.TrimSpace(pyenv.Run(t, `
import sys
from deltalake import DeltaTable
dt = DeltaTable(sys.argv[1])
print(", ".join(f.name + " " + str(f.type) for f in dt.to_pyarrow_table().schema))
`, uri))
	want := "id int64, l int64, i int32, d double, f double, b bool, s string, raw binary, dec decimal128(20, 4), " +
		"ts_us timestamp[us, tz=UTC], ts_ms timestamp[us, tz=UTC], day date32[day], uid string, color string, opt string, " +
		"addr struct<city: string, zip: int32>, tags list<element: string>, attrs map<string, int64>"
	if got != want {
		t.Fatalf("created table's columns\n%s\nwant\n%s", got, want)
	}
	// f is an Avro float, described as a double (docs/decode.md, Value
	// schema): its column holds the double of the shortest text the float
	// is written as (0.1, where a float column holds 0.10000000149011612).
	rows := r.readDelta("avrocreate", "id")
	wantRows := make([]string, len(gen.Expected))
	for i := range wantRows {
		wantRows[i] = floatColumn(t, gen.Expected[i], "f", 32)
		if i < len(rows) {
			rows[i] = floatColumn(t, rows[i], "f", 64)
		}
	}
	checkRows(t, "avrocreate", rows, wantRows)
}

// floatColumn rewrites the canonical value of the float column key of row
// ("float:" and Python's repr) as the double that the shortest text of the
// value at bits (32: as a float32) reads as, in Go's form.
func floatColumn(t *testing.T, row, key string, bits int) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(row), &m); err != nil {
		t.Fatalf("%v: %s", err, row)
	}
	s, _ := m[key].(string)
	v, err := strconv.ParseFloat(strings.TrimPrefix(s, "float:"), 64)
	if err == nil {
		v, err = strconv.ParseFloat(strconv.FormatFloat(v, 'g', -1, bits), 64)
	}
	if err != nil {
		t.Fatalf("column %s of %s: %v", key, row, err)
	}
	m[key] = "float:" + strconv.FormatFloat(v, 'g', -1, 64)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
