package delta

import (
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

const ordersSchema = `{"type":"struct","fields":[{"name":"id","type":"long"},{"name":"region","type":"string"},
	{"name":"tags","type":{"type":"array","elementType":"string","containsNull":true}},{"name":"at","type":"timestamp_ntz"}]}`

// Every mistake in create_table's keys is BAD_CONFIG at Open, naming the
// key and the problem.
func TestDefinitionRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"schema without create", Config{TableSchema: ordersSchema}, []string{`"table_schema" is set but create_table is false`}},
		{"partitions without create", Config{PartitionBy: "region"}, []string{`"partition_by" is set but create_table is false`}},
		{"no schema", Config{CreateTable: true}, []string{`"table_schema" is required with create_table = true`}},
		{"not JSON", Config{CreateTable: true, TableSchema: "id long, name string"}, []string{`"table_schema"`, "not a Delta schema"}},
		{"not a struct", Config{CreateTable: true, TableSchema: `"long"`}, []string{`"table_schema"`, "want struct"}},
		{"no column", Config{CreateTable: true, TableSchema: `{"type":"struct","fields":[]}`}, []string{`"table_schema"`, "no column"}},
		{"unknown type", Config{CreateTable: true, TableSchema: `{"type":"struct","fields":[{"name":"a","type":"uint8"}]}`},
			[]string{`"table_schema"`, `column "a" has unknown type "uint8"`}},
		{"nested unknown type", Config{CreateTable: true, TableSchema: `{"type":"struct","fields":[{"name":"s","type":{"type":"struct","fields":[{"name":"b","type":"text"}]}}]}`},
			[]string{`column "s.b" has unknown type "text"`}},
		{"duplicate", Config{CreateTable: true, TableSchema: `{"type":"struct","fields":[{"name":"a","type":"long"},{"name":"A","type":"long"}]}`},
			[]string{`"table_schema"`, "given twice", "case-insensitive"}},
		{"empty name", Config{CreateTable: true, TableSchema: `{"type":"struct","fields":[{"name":"","type":"long"}]}`}, []string{"empty name"}},
		{"delta metadata", Config{CreateTable: true, TableSchema: `{"type":"struct","fields":[{"name":"a","type":"long","metadata":{"delta.generationExpression":"1"}}]}`},
			[]string{`column "a" has metadata "delta.generationExpression"`}},
		{"variant", Config{CreateTable: true, TableSchema: `{"type":"struct","fields":[{"name":"v","type":"variant"}]}`},
			[]string{`"table_schema"`, "variantType"}},
		{"unknown partition", Config{CreateTable: true, TableSchema: ordersSchema, PartitionBy: "region, day"},
			[]string{`"partition_by"`, `"day" is not a top-level column of table_schema`}},
		{"nested partition", Config{CreateTable: true, TableSchema: ordersSchema, PartitionBy: "tags"},
			[]string{`"partition_by"`, `column "tags" is a array<string>: partition columns must have a primitive type`}},
		{"partition twice", Config{CreateTable: true, TableSchema: ordersSchema, PartitionBy: "region,region"}, []string{`"partition_by"`, "named twice"}},
		{"empty partition", Config{CreateTable: true, TableSchema: ordersSchema, PartitionBy: "region,,id"}, []string{`"partition_by"`, "empty column name"}},
		{"all partitions", Config{CreateTable: true, TableSchema: `{"type":"struct","fields":[{"name":"a","type":"long"}]}`, PartitionBy: "a"},
			[]string{`"partition_by"`, "every column"}},
		{"pico partition without metadata_columns", Config{CreateTable: true, TableSchema: ordersSchema, PartitionBy: "pico_topic"},
			[]string{`"pico_topic" is not a top-level column`}},
		{"pico column metadata_columns cannot fill", Config{CreateTable: true, MetadataColumns: true,
			TableSchema: `{"type":"struct","fields":[{"name":"id","type":"long"},{"name":"pico_offset","type":"integer"}]}`},
			[]string{`"metadata_columns"`, `"table_schema"`, `"pico_offset"`}},
		{"derived column missing", Config{CreateTable: true, TableSchema: ordersSchema, DerivedColumns: "day = date(at)"},
			[]string{`"derived_columns"`, `"table_schema"`, "day"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			derive, err := encode.ParseDerivations(tc.cfg.DerivedColumns)
			if err != nil {
				t.Fatal(err)
			}
			_, err = tc.cfg.definition(derive)
			if sdk.StatusOf(err) != sdk.StatusBadConfig {
				t.Fatalf("err %v, want BAD_CONFIG", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
}

func TestDefinition(t *testing.T) {
	d, err := (&Config{}).definition(nil)
	if d != nil || err != nil {
		t.Fatalf("create_table off: %v, %v", d, err)
	}
	d, err = (&Config{CreateTable: true, TableSchema: ordersSchema, PartitionBy: " region "}).definition(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.schema.Fields) != 4 || len(d.partitions) != 1 || d.partitions[0] != "region" {
		t.Fatalf("definition %v %q", d.schema, d.partitions)
	}
	snap, err := d.newTable(nil)
	if err != nil {
		t.Fatal(err)
	}
	// timestamp_ntz needs its feature; nothing else.
	if p := snap.Protocol; p.MinReaderVersion != 3 || p.MinWriterVersion != 7 || strings.Join(p.WriterFeatures, ",") != "timestampNtz" {
		t.Errorf("protocol %+v", p)
	}
	again, _ := d.newTable(nil)
	if again.Metadata.ID == snap.Metadata.ID {
		t.Error("two created tables share an id")
	}
}

// metadata_columns adds the pico_* columns after table_schema's, except
// those table_schema types itself; partition_by may name them.
func TestDefinitionMetadataColumns(t *testing.T) {
	schema := `{"type":"struct","fields":[{"name":"id","type":"long"},{"name":"pico_timestamp","type":"timestamp"}]}`
	d, err := (&Config{CreateTable: true, TableSchema: schema, MetadataColumns: true, PartitionBy: "pico_topic"}).definition(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range d.schema.Fields {
		got = append(got, f.Name+" "+f.Type.String())
	}
	want := "id long,pico_timestamp timestamp,pico_topic string,pico_partition long,pico_offset long,pico_key binary,pico_headers map<string,string>"
	if strings.Join(got, ",") != want {
		t.Errorf("columns %s\nwant    %s", strings.Join(got, ","), want)
	}
	if strings.Join(d.partitions, ",") != "pico_topic" {
		t.Errorf("partitions %q", d.partitions)
	}
	// Off, nothing is added.
	d, err = (&Config{CreateTable: true, TableSchema: schema}).definition(nil)
	if err != nil || len(d.schema.Fields) != 2 {
		t.Fatalf("%v, %v", d.schema, err)
	}
}

// FuzzDefinition: any table_schema / partition_by is either refused as
// BAD_CONFIG or makes a table this sink can write, whose schema reads back
// the same from the log.
func FuzzDefinition(f *testing.F) {
	f.Add(ordersSchema, "region", false)
	f.Add(ordersSchema, "", true)
	f.Add(`{"type":"struct","fields":[{"name":"a","type":"decimal(10,2)"},{"name":"b","type":{"type":"map","keyType":"string","valueType":"long"}}]}`, "a", false)
	f.Add(`{"type":"struct","fields":[{"name":"s","type":{"type":"struct","fields":[{"name":"x","type":"date"}]}}]}`, "s", true)
	f.Add(`{"type":"struct"}`, ",", false)
	f.Fuzz(func(t *testing.T, schema, partitionBy string, meta bool) {
		d, err := (&Config{CreateTable: true, TableSchema: schema, PartitionBy: partitionBy, MetadataColumns: meta}).definition(nil)
		if err != nil {
			if sdk.StatusOf(err) != sdk.StatusBadConfig {
				t.Fatalf("err %v is not BAD_CONFIG", err)
			}
			return
		}
		snap, err := d.newTable(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := snap.Writable(); err != nil {
			t.Fatal(err)
		}
		back, err := deltalog.ParseSchema(snap.Metadata.SchemaString)
		if err != nil || back.String() != d.schema.String() {
			t.Fatalf("schema %s reads back as %v (%v)", d.schema, back, err)
		}
	})
}

// A pico_* column table_schema names in another case is that column:
// Delta's names are case-insensitive, so none is added beside it.
func TestDefinitionMetadataColumnInAnotherCase(t *testing.T) {
	d, err := (&Config{CreateTable: true, MetadataColumns: true,
		TableSchema: `{"type":"struct","fields":[{"name":"id","type":"long"},{"name":"PICO_TOPIC","type":"string"}]}`}).definition(nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range d.schema.Fields {
		if strings.EqualFold(f.Name, "pico_topic") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d pico_topic columns in %v, want 1", n, d.schema.Fields)
	}
}
