package delta

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
	"github.com/picomq/heavy-sinks/shared/metadata"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// Table creation (create_table). A missing table is created by the commit
// of its first batch: version 0 holds protocol, metaData, the txn and the
// batch's files together (deltalog.NewTable, CommitAppend), so no table is
// ever empty and the batch is exactly-once like any other.

// metadataColumns are the pico_* columns metadata_columns adds to a
// created table, named by shared/metadata, typed for Delta: the one place
// that says which Delta type each gets. Delta has a binary type, so the key
// is kept as bytes (the runtime spec's base64 is for destinations without
// one); partition and offset are long because a uint32 partition does not
// fit Delta's integer; headers are a map<string,string>, values base64 where
// not UTF-8. All nullable: a record without a key has no pico_key.
var metadataColumns = []deltalog.StructField{
	{Name: metadata.Topic, Type: deltalog.TypeString, Nullable: true},
	{Name: metadata.Partition, Type: deltalog.TypeLong, Nullable: true},
	{Name: metadata.Offset, Type: deltalog.TypeLong, Nullable: true},
	{Name: metadata.Timestamp, Type: deltalog.TypeLong, Nullable: true},
	{Name: metadata.Key, Type: deltalog.TypeBinary, Nullable: true},
	{Name: metadata.Headers, Type: &deltalog.MapType{KeyType: deltalog.TypeString, ValueType: deltalog.TypeString, ValueContainsNull: true}, Nullable: true},
}

// definition is the table create_table makes, validated at Open.
type definition struct {
	schema     *deltalog.StructType
	partitions []string
	// fromValues: no table_schema and column_types = "value_schema": the
	// schema is each table's first batch's value schema (valueschema.go),
	// checked against partition_by, metadata_columns and derived_columns
	// when that batch comes.
	fromValues  bool
	partitionBy string
	metadata    bool
	derive      []encode.Derivation
}

// fromBatch reports whether the table is made from a batch's value schema.
func (d *definition) fromBatch() bool { return d != nil && d.fromValues }

// newTable returns the snapshot of the table to create (a fresh table id
// each time: every URI gets its own table). A table made from a value
// schema takes vs; without one (at Open, before any batch) it is a
// placeholder with no column, which the first batch replaces
// (table.writeGroup), and a batch without one cannot create it.
func (d *definition) newTable(vs []byte) (*deltalog.Snapshot, error) {
	if !d.fromValues {
		return deltalog.NewTable(d.schema, d.partitions, nil, time.Now())
	}
	if vs == nil {
		return deltalog.NewTable(&deltalog.StructType{}, nil, nil, time.Now())
	}
	schema, err := parseValueSchema(vs)
	if err == nil {
		err = checkFields("", schema)
	}
	if err == nil && len(schema.Fields) == 0 {
		err = errors.New("the schema has no field")
	}
	if err != nil {
		return nil, fmt.Errorf("%w: the table cannot be created from the batch's value schema: %v", errValueSchema, err)
	}
	if d.metadata {
		addMetadataColumns(schema)
	}
	partitions, err := parsePartitionBy(d.partitionBy, schema)
	if err != nil {
		return nil, fmt.Errorf("%w: plugin_config key %q against the batch's value schema: %v", errValueSchema, keyPartitionBy, err)
	}
	if _, err := encode.New(schema, partitions, encode.Options{Metadata: d.metadata, Derive: d.derive}); err != nil {
		return nil, fmt.Errorf("%w: the table made from the batch's value schema cannot be written: %v", errValueSchema, err)
	}
	return deltalog.NewTable(schema, partitions, nil, time.Now())
}

// errNoValueSchema is the batch that must create a table from its value
// schema and has none.
func errNoValueSchema(uri string) error {
	return fmt.Errorf("%w: Delta table %s does not exist and the batch carries no value schema to create it from "+
		"(table_schema is not set; a value schema comes only with a batch the host decoded from Avro or Protobuf, "+
		"ABI 1.3): set table_schema, or create the table first", errValueSchema, uri)
}

func addMetadataColumns(schema *deltalog.StructType) {
	for _, f := range metadataColumns {
		// The schema may type it itself, in any case: Delta's names are
		// case-insensitive, and the filler matches them so.
		if !slices.ContainsFunc(schema.Fields, func(g deltalog.StructField) bool { return strings.EqualFold(g.Name, f.Name) }) {
			schema.Fields = append(schema.Fields, f)
		}
	}
}

// definition validates create_table, table_schema, partition_by and
// returns the definition of created tables, or nil when create_table is
// off. Every error is BAD_CONFIG naming the key.
// derive is derived_columns, parsed: the encoder built here checks that
// it and metadata_columns can fill the created schema.
func (c *Config) definition(derive []encode.Derivation) (*definition, error) {
	if !c.CreateTable {
		// A key that would do nothing is most likely a mistake.
		key := ""
		switch {
		case c.TableSchema != "":
			key = keyTableSchema
		case c.PartitionBy != "":
			key = keyPartitionBy
		default:
			return nil, nil
		}
		return nil, sdk.BadConfigf("plugin_config key %q is set but %s is false: it only describes tables the sink creates", key, keyCreateTable)
	}
	if strings.TrimSpace(c.TableSchema) == "" && c.ColumnTypes == columnTypesValueSchema {
		for _, name := range strings.Split(c.PartitionBy, ",") {
			if strings.TrimSpace(name) == "" && strings.TrimSpace(c.PartitionBy) != "" {
				return nil, sdk.BadConfigf("plugin_config key %q: empty column name in %q", keyPartitionBy, c.PartitionBy)
			}
		}
		return &definition{fromValues: true, partitionBy: c.PartitionBy, metadata: c.MetadataColumns, derive: derive}, nil
	}
	if strings.TrimSpace(c.TableSchema) == "" {
		return nil, sdk.BadConfigf("plugin_config key %q is required with %s = true (or %s = %q)", keyTableSchema, keyCreateTable, keyColumnTypes, columnTypesValueSchema)
	}
	schema, err := parseTableSchema(c.TableSchema)
	if err != nil {
		return nil, sdk.BadConfigf("plugin_config key %q: %v", keyTableSchema, err)
	}
	if c.MetadataColumns {
		addMetadataColumns(schema)
	}
	partitions, err := parsePartitionBy(c.PartitionBy, schema)
	if err != nil {
		return nil, sdk.BadConfigf("plugin_config key %q: %v", keyPartitionBy, err)
	}
	d := &definition{schema: schema, partitions: partitions}
	if _, err := d.newTable(nil); err != nil {
		return nil, sdk.BadConfigf("plugin_config key %q: the sink could not write the table it would create: %v", keyTableSchema, err)
	}
	// The encoder has the last word on what it can write.
	_, err = encode.New(schema, partitions, encode.Options{Metadata: c.MetadataColumns, Derive: derive})
	if ce := (*encode.ConfigError)(nil); errors.As(err, &ce) {
		key := keyMetadataColumns
		if ce.Derive {
			key = keyDerivedColumns
		}
		return nil, sdk.BadConfigf("plugin_config key %q with the %q of created tables: %v", key, keyTableSchema, err)
	}
	if err != nil {
		return nil, sdk.BadConfigf("plugin_config keys %q and %q: %v", keyTableSchema, keyPartitionBy, err)
	}
	return d, nil
}

// parseTableSchema parses Delta's schema JSON and refuses what a created
// table must not have: no columns, a name empty or given twice (Delta
// column names are case-insensitive), and delta.* column metadata, which
// would ask for table features (invariants, generated or identity columns,
// column mapping) under a protocol that does not declare them.
func parseTableSchema(s string) (*deltalog.StructType, error) {
	schema, err := deltalog.ParseSchema(s)
	if err != nil {
		return nil, fmt.Errorf("not a Delta schema (the JSON of a metaData.schemaString): %v", strings.TrimPrefix(err.Error(), "deltalog: parse schema: "))
	}
	if len(schema.Fields) == 0 {
		return nil, fmt.Errorf("the schema has no column")
	}
	if err := checkFields("", schema); err != nil {
		return nil, err
	}
	return schema, nil
}

func checkFields(prefix string, st *deltalog.StructType) error {
	seen := map[string]string{}
	for _, f := range st.Fields {
		col := prefix + f.Name
		if strings.TrimSpace(f.Name) == "" {
			return fmt.Errorf("a column of %q has an empty name", strings.TrimSuffix(prefix, "."))
		}
		if other, dup := seen[strings.ToLower(f.Name)]; dup {
			return fmt.Errorf("column %q is given twice (as %q and %q: column names are case-insensitive)", col, prefix+other, col)
		}
		seen[strings.ToLower(f.Name)] = f.Name
		for k := range f.Metadata {
			if strings.HasPrefix(k, "delta.") {
				return fmt.Errorf("column %q has metadata %q: the sink creates tables without delta.* column metadata", col, k)
			}
		}
		if err := checkType(col, f.Type); err != nil {
			return err
		}
	}
	return nil
}

func checkType(col string, t deltalog.DataType) error {
	switch t := t.(type) {
	case *deltalog.StructType:
		return checkFields(col+".", t)
	case *deltalog.ArrayType:
		return checkType(col, t.ElementType)
	case *deltalog.MapType:
		if err := checkType(col, t.KeyType); err != nil {
			return err
		}
		return checkType(col, t.ValueType)
	case deltalog.PrimitiveType:
		if !t.Known() {
			return fmt.Errorf("column %q has unknown type %q", col, string(t))
		}
	}
	return nil
}

// parsePartitionBy splits "a, b" into column names, each a top-level
// column of schema with a primitive type, named once.
func parsePartitionBy(s string, schema *deltalog.StructType) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		f := schema.Field(name)
		switch {
		case name == "":
			return nil, fmt.Errorf("empty column name in %q", s)
		case f == nil:
			return nil, fmt.Errorf("%q is not a top-level column of %s", name, keyTableSchema)
		case !isPrimitive(f.Type):
			return nil, fmt.Errorf("column %q is a %s: partition columns must have a primitive type", name, f.Type)
		}
		for _, p := range out {
			if strings.EqualFold(p, name) {
				return nil, fmt.Errorf("column %q is named twice", name)
			}
		}
		out = append(out, name)
	}
	if len(out) == len(schema.Fields) {
		return nil, fmt.Errorf("every column of %s is a partition column: the data files would have none", keyTableSchema)
	}
	return out, nil
}

func isPrimitive(t deltalog.DataType) bool {
	switch t.(type) {
	case deltalog.PrimitiveType, deltalog.DecimalType:
		return true
	}
	return false
}
