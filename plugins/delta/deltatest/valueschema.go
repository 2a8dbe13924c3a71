package deltatest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/internal/testenv/sinkdriver"
	"github.com/picomq/heavy-sinks/shared/hostclient"
)

// Value schemas (ABI 1.3) as picomq-connect passes them with a batch it
// decoded from Avro: v1 of an order, and v2 adding two fields whose values
// alone would type them otherwise (a decimal string, a date string) and one
// that is only null.
const (
	orderSchemaV1 = `{"type":"struct","fields":[
	 {"name":"id","type":"long","nullable":false,"metadata":{}},
	 {"name":"region","type":"string","nullable":false,"metadata":{}},
	 {"name":"price","type":"decimal(20,4)","nullable":false,"metadata":{}},
	 {"name":"ts","type":"timestamp","nullable":false,"metadata":{}},
	 {"name":"addr","type":{"type":"struct","fields":[{"name":"street","type":"string","nullable":false,"metadata":{}},{"name":"zip","type":"integer","nullable":true,"metadata":{}}]},"nullable":false,"metadata":{}},
	 {"name":"tags","type":{"type":"array","elementType":"string","containsNull":false},"nullable":false,"metadata":{}}]}`
	orderSchemaV2 = `{"type":"struct","fields":[
	 {"name":"id","type":"long","nullable":false,"metadata":{}},
	 {"name":"region","type":"string","nullable":false,"metadata":{}},
	 {"name":"price","type":"decimal(20,4)","nullable":false,"metadata":{}},
	 {"name":"ts","type":"timestamp","nullable":false,"metadata":{}},
	 {"name":"addr","type":{"type":"struct","fields":[{"name":"street","type":"string","nullable":false,"metadata":{}},{"name":"zip","type":"integer","nullable":true,"metadata":{}}]},"nullable":false,"metadata":{}},
	 {"name":"tags","type":{"type":"array","elementType":"string","containsNull":false},"nullable":false,"metadata":{}},
	 {"name":"discount","type":"decimal(10,2)","nullable":true,"metadata":{}},
	 {"name":"seen","type":"date","nullable":false,"metadata":{}},
	 {"name":"note","type":"string","nullable":true,"metadata":{}}]}`
)

func orderV1(id int) string {
	return `{"id":` + itoa(id) + `,"region":"r` + itoa(id%2) + `","price":"12.340","ts":"2026-09-03T21:15:04.123456Z",` +
		`"addr":{"street":"Main ` + itoa(id) + `","zip":` + itoa(1000+id) + `},"tags":["a","b"]}`
}

func orderV2(id int) string {
	return strings.TrimSuffix(orderV1(id), "}") + `,"discount":"1.50","seen":"2026-09-03","note":null}`
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// schemaJSON is the table's schema as delta-rs reads it: its fields.
func schemaJSON(t *testing.T, s *Store, uri string) string {
	t.Helper()
	return strings.TrimSpace(s.Py(`
dt = DeltaTable(uri, storage_options=opts)
print(json.dumps(json.loads(dt.schema().to_json())["fields"], sort_keys=True, separators=(",", ":")))
`, uri))
}

func field(name, typ string) string {
	return `{"metadata":{},"name":"` + name + `","nullable":true,"type":` + typ + `}`
}

// ColumnTypesFromValueSchema: with column_types = "value_schema" and no
// table_schema, the table is created from the first batch's value schema,
// types exact (decimal(20,4), timestamp, a nested struct, an array), every
// column nullable; add_columns then takes the new fields' types from the
// value schema (decimal(10,2) and date, where the values would give string,
// and a field that is only null); a batch without a value schema cannot
// create a table and fails FATAL.
func ColumnTypesFromValueSchema(t *testing.T, d sinkdriver.Driver, s *Store) {
	uri := s.URI("orders")
	inst := Open(t, d.Start(t, s.Secrets...), "vs", s.Config(uri, "create_table", true, "column_types", "value_schema",
		"partition_by", "region", "schema_evolution", "add_columns"))

	none := s.URI("none")
	other := Open(t, d.Start(t, s.Secrets...), "vs2", s.Config(none, "create_table", true, "column_types", "value_schema",
		"skip_empty_payloads", true))
	// Tombstones only (no record decoded, so no value schema): nothing to
	// write, nothing created, OK.
	consume(t, other, JSONBatch("orders", 0, "", ""))
	WantStatus(t, other.Consume(JSONBatch("orders", 2, orderV1(0))), hostclient.StatusFatal, "carries no value schema")
	for _, k := range s.Objects("") {
		if strings.HasPrefix(k, "none/") {
			t.Fatalf("object %q written for a table never created", k)
		}
	}

	b := JSONBatch("orders", 0, orderV1(0), orderV1(1))
	b.ValueSchema = []byte(orderSchemaV1)
	consume(t, inst, b)
	v1 := field("id", `"long"`) + "," + field("region", `"string"`) + "," + field("price", `"decimal(20,4)"`) + "," +
		field("ts", `"timestamp"`) + "," +
		field("addr", `{"fields":[`+field("street", `"string"`)+","+field("zip", `"integer"`)+`],"type":"struct"}`) + "," +
		field("tags", `{"containsNull":true,"elementType":"string","type":"array"}`)
	if got := schemaJSON(t, s, uri); got != "["+v1+"]" {
		t.Fatalf("created schema\n%s\nwant\n[%s]", got, v1)
	}
	if f := s.Facts(uri); strings.Join(f.Partitions, ",") != "region" || f.Operations[0] != "CREATE TABLE AS SELECT" {
		t.Fatalf("created table: %+v", f)
	}

	b = JSONBatch("orders", 2, orderV2(2))
	b.ValueSchema = []byte(orderSchemaV2)
	consume(t, inst, b)
	v2 := v1 + "," + field("discount", `"decimal(10,2)"`) + "," + field("seen", `"date"`) + "," + field("note", `"string"`)
	if got := schemaJSON(t, s, uri); got != "["+v2+"]" {
		t.Fatalf("evolved schema\n%s\nwant\n[%s]", got, v2)
	}
	rows := s.ReadRows(uri, "id")
	if len(rows) != 3 || rows[0]["price"] != "12.3400" || rows[0]["ts"] != "2026-09-03T21:15:04.123456+00:00" ||
		rows[2]["discount"] != "1.50" || rows[2]["seen"] != "2026-09-03" || rows[2]["note"] != nil || rows[0]["discount"] != nil {
		t.Fatalf("rows: %v", rows)
	}
}

// ColumnTypesValuesIgnoresValueSchema: by default (column_types = "values")
// a batch's value schema changes nothing: create_table still needs
// table_schema, and add_columns types new fields from the values (a
// decimal string is a string).
func ColumnTypesValuesIgnoresValueSchema(t *testing.T, d sinkdriver.Driver, s *Store) {
	rt := d.Start(t, s.Secrets...)
	_, err := rt.Open(sinkdriver.Definition{Key: "bad", Name: "bad", Config: s.Config(s.URI("x"), "create_table", true)})
	WantStatus(t, err, hostclient.StatusBadConfig, "table_schema")

	uri := s.URI("orders")
	inst := Open(t, rt, "vals", s.Config(uri, "create_table", true, "schema_evolution", "add_columns",
		"table_schema", `{"type":"struct","fields":[{"name":"id","type":"long"}]}`))
	b := JSONBatch("orders", 0, orderV2(0))
	b.ValueSchema = []byte(orderSchemaV2)
	consume(t, inst, b)
	got := schemaJSON(t, s, uri)
	for _, want := range []string{field("price", `"string"`), field("seen", `"string"`), field("discount", `"string"`)} {
		if !strings.Contains(got, want) {
			t.Fatalf("schema %s lacks %s", got, want)
		}
	}
	if strings.Contains(got, `"note"`) {
		t.Fatalf("a field only null was added: %s", got)
	}
}

// ColumnTypesHintTheTableCannotHold: add_columns takes no type from the
// value schema that the table cannot hold as it is. A timestamp_ntz needs
// the timestampNtz feature, which the table created without one lacks: the
// field is typed from its values (a string), the protocol stays as it was,
// and a warning says why, once. A struct whose fields differ only in case
// fails the checks a created table's schema passes: typed from the values,
// which refuse it too (FATAL, nothing committed). A table created from a
// value schema with a timestamp_ntz gets the feature.
func ColumnTypesHintTheTableCannotHold(t *testing.T, d sinkdriver.Driver, s *Store) {
	uri := s.URI("t")
	inst := Open(t, d.Start(t, s.Secrets...), "vs", s.Config(uri, "create_table", true, "column_types", "value_schema",
		"schema_evolution", "add_columns"))
	id := `{"name":"id","type":"long","nullable":false,"metadata":{}}`
	ntz := `{"name":"lt","type":"timestamp_ntz","nullable":false,"metadata":{}}`
	dup := `{"name":"s","type":{"type":"struct","fields":[{"name":"a","type":"long","nullable":false,"metadata":{}},` +
		`{"name":"A","type":"string","nullable":false,"metadata":{}}]},"nullable":false,"metadata":{}}`
	schema := func(fields ...string) []byte {
		return []byte(`{"type":"struct","fields":[` + strings.Join(fields, ",") + `]}`)
	}
	b := JSONBatch("t", 0, `{"id":1}`)
	b.ValueSchema = schema(id)
	consume(t, inst, b)
	for i := uint64(1); i <= 2; i++ {
		b = JSONBatch("t", i, `{"id":`+itoa(int(i)+1)+`,"lt":"2026-01-01T10:00:00"}`)
		b.ValueSchema = schema(id, ntz)
		consume(t, inst, b)
	}
	f := s.Facts(uri)
	if f.Reader != 1 || f.Writer != 2 || strings.Join(f.Columns, ",") != "id long,lt string" {
		t.Fatalf("table after add_columns: %+v", f)
	}
	var warned []string
	for _, l := range inst.Logs() {
		if strings.Contains(l, "timestampNtz") {
			warned = append(warned, l)
		}
	}
	if len(warned) != 1 || !strings.HasPrefix(warned[0], "WARN") || !strings.Contains(warned[0], "field=lt") {
		t.Fatalf("want one warning naming field lt and the feature, got %q", warned)
	}
	if rows := s.ReadRows(uri, "id"); len(rows) != 3 || rows[2]["lt"] != "2026-01-01T10:00:00" {
		t.Fatalf("rows: %v", rows)
	}

	b = JSONBatch("t", 3, `{"id":4,"s":{"a":5,"A":"x"}}`)
	b.ValueSchema = schema(id, dup)
	WantStatus(t, inst.Consume(b), hostclient.StatusFatal, "differs only in case")
	if !slices.ContainsFunc(inst.Logs(), func(l string) bool {
		return strings.HasPrefix(l, "WARN") && strings.HasSuffix(l, "field=s") && strings.Contains(l, "case-insensitive")
	}) {
		t.Fatalf("no warning names field s and why its value schema type is not used: %q", inst.Logs())
	}
	if f := s.Facts(uri); len(f.Versions) != 3 || strings.Join(f.Columns, ",") != "id long,lt string" {
		t.Fatalf("table after the refused batch: %+v", f)
	}

	created := s.URI("ntz")
	inst2 := Open(t, d.Start(t, s.Secrets...), "vs2", s.Config(created, "create_table", true, "column_types", "value_schema"))
	b = JSONBatch("t", 0, `{"id":1,"lt":"2026-01-01T10:00:00"}`)
	b.ValueSchema = schema(id, ntz)
	consume(t, inst2, b)
	f = s.Facts(created)
	if f.Reader != 3 || f.Writer != 7 || strings.Join(f.ReaderFeatures, ",") != "timestampNtz" ||
		strings.Join(f.WriterFeatures, ",") != "timestampNtz" || strings.Join(f.Columns, ",") != "id long,lt timestamp_ntz" {
		t.Fatalf("table created with a timestamp_ntz: %+v", f)
	}
	if rows := s.ReadRows(created, "id"); len(rows) != 1 || rows[0]["lt"] != "2026-01-01T10:00:00" {
		t.Fatalf("rows: %v", rows)
	}
}
