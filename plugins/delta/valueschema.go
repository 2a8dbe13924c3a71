package delta

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
	"github.com/picomq/heavy-sinks/plugins/delta/internal/encode"
	"github.com/picomq/heavy-sinks/shared/sdk"
)

// Column types from the value schema (column_types = "value_schema"). A
// host that decoded the payloads from a schema (Avro, Protobuf) passes its
// type with the batch (ABI 1.3, sdk.Batch.ValueSchema), in the very form of
// a Delta schemaString. With it the table create_table makes, when
// table_schema is not given, is the first batch's value schema, and
// add_columns takes a new field's type from it instead of from the values.

// column_types values.
const (
	columnTypesValues      = "values"
	columnTypesValueSchema = "value_schema"
)

// errValueSchema marks what fails a batch for good when the table is made
// from the value schema: retrying the same batch gives the same answer.
var errValueSchema = errors.New("delta: column_types = \"value_schema\"")

// checkColumnTypes validates column_types.
func (c *Config) checkColumnTypes() error {
	switch c.ColumnTypes {
	case "", columnTypesValues, columnTypesValueSchema:
		return nil
	}
	return sdk.BadConfigf("plugin_config key %q: %q is not one of %s, %s", keyColumnTypes, c.ColumnTypes, columnTypesValues, columnTypesValueSchema)
}

// parseValueSchema reads a batch's value schema as a Delta schema whose
// every field, element and map value is nullable: the schema describes this
// batch's records, and a later version of it may drop a field (a compatible
// change in Avro and Protobuf) that a non-nullable column would then
// refuse in every record.
func parseValueSchema(vs []byte) (*deltalog.StructType, error) {
	st, err := deltalog.ParseSchema(string(vs))
	if err != nil {
		return nil, fmt.Errorf("the batch's value schema is not a Delta schema: %v", strings.TrimPrefix(err.Error(), "deltalog: parse schema: "))
	}
	relax(st)
	return st, nil
}

func relax(t deltalog.DataType) {
	switch t := t.(type) {
	case *deltalog.StructType:
		for i := range t.Fields {
			t.Fields[i].Nullable = true
			relax(t.Fields[i].Type)
		}
	case *deltalog.ArrayType:
		t.ContainsNull = true
		relax(t.ElementType)
	case *deltalog.MapType:
		t.ValueContainsNull = true
		relax(t.ValueType)
	}
}

// columnHint is the top-level field types the members' value schemas give,
// for add_columns; nil with column_types = "values" or when no member has
// one. A field two members type differently is left out: its type comes
// from the values. A schema that does not parse gives nothing.
func (t *table) columnHint(members []*member) *deltalog.StructType {
	if !t.env.opts.typesFromSchema {
		return nil
	}
	var hint *deltalog.StructType
	drop := map[string]bool{}
	for _, m := range members {
		if m.b.ValueSchema == nil {
			continue
		}
		st, err := parseValueSchema(m.b.ValueSchema)
		if err != nil {
			continue
		}
		if hint == nil {
			hint = st
			continue
		}
		for _, f := range st.Fields {
			switch g := hint.Field(f.Name); {
			case drop[f.Name]:
			case g == nil:
				hint.Fields = append(hint.Fields, f)
			case g.Type.String() != f.Type.String():
				drop[f.Name] = true
			}
		}
	}
	if hint != nil && len(drop) > 0 {
		kept := hint.Fields[:0]
		for _, f := range hint.Fields {
			if !drop[f.Name] {
				kept = append(kept, f)
			}
		}
		hint.Fields = kept
	}
	return hint
}

// usableHint is hint without the fields whose type the table cannot take
// as a new column as it is, so that their values type them, as with
// column_types = "values": a type that needs a table feature the table's
// protocol lacks (timestamp_ntz: timestampNtz), since the sink never
// upgrades a protocol by itself, and a type that fails the checks a created
// table's schema passes (nested names that differ only in case, an unknown
// type). Each such field of the batch (unknown, so about to be added) is
// logged once per table.
func (t *table) usableHint(hint *deltalog.StructType, unknown []encode.UnknownField, topic string) *deltalog.StructType {
	if hint == nil {
		return nil
	}
	kept := &deltalog.StructType{}
	for _, f := range hint.Fields {
		why := ""
		if missing := deltalog.MissingFeatures(t.snap.Protocol, &deltalog.StructType{Fields: []deltalog.StructField{f}}); len(missing) > 0 {
			why = fmt.Sprintf("its type needs the table feature %s, which the table's protocol lacks, and the sink does not upgrade a protocol; "+
				"to get the type, add the feature to the table first (Spark: ALTER TABLE ... SET TBLPROPERTIES ('delta.feature.%s' = 'supported')) "+
				"or add the column by hand", strings.Join(missing, ", "), missing[0])
		} else if err := checkType(f.Name, f.Type); err != nil {
			why = err.Error()
		}
		if why == "" {
			kept.Fields = append(kept.Fields, f)
			continue
		}
		if !slices.ContainsFunc(unknown, func(u encode.UnknownField) bool { return u.Name == f.Name }) {
			continue
		}
		first, last := t.env.stats.unhinted.first(t.uri + "\x00" + f.Name)
		if !first {
			continue
		}
		if last {
			t.env.log.Warn(fmt.Sprintf("%d fields typed from values instead of the value schema logged; further ones are not", maxOnceNames), "table", t.uri)
		}
		t.env.log.Warn("a new column takes its type from the values, not from the value schema ("+f.Type.String()+"): "+why,
			"table", t.uri, "topic", topic, "field", f.Name)
	}
	return kept
}

// fromValueSchema makes the table still to be created (create_table
// without table_schema) from the value schema of the group's first batch
// that has one (the batch that opened the table may have left nothing to
// commit). A group without one fails FATAL, unless it holds nothing to
// write (tombstones only, skip_empty_payloads): empty is set, and the
// group is done, as a commit of tombstones only is (nothing committed, no
// table created, each batch OK).
func (t *table) fromValueSchema(live []*member) (empty bool, err error) {
	for _, m := range live {
		if m.b.ValueSchema == nil {
			continue
		}
		snap, err := t.env.opts.create.newTable(m.b.ValueSchema)
		if err != nil {
			return false, sdk.Fatalf("Delta table %s cannot be created: %v", t.uri, err)
		}
		t.snap = snap
		return false, nil
	}
	n := 0
	for _, m := range live {
		for _, r := range m.b.Records {
			if len(r.Payload) > 0 || !t.env.opts.skipEmpty {
				return false, sdk.Fatal(errNoValueSchema(t.uri))
			}
			n++
		}
	}
	t.env.stats.empty.Add(int64(n))
	t.env.log.Info("skipped records with an empty payload", "table", t.uri, "topic", topics(live), "skipped", n)
	return true, nil
}
