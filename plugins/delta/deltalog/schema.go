package deltalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// DataType is a Delta column type as serialized in metaData.schemaString
// (PROTOCOL.md "Schema Serialization Format"). The concrete types are
// PrimitiveType, DecimalType, *StructType, *ArrayType and *MapType; callers
// type-switch on them.
type DataType interface {
	// String returns the type as Delta spells it ("long", "decimal(10,2)",
	// "array<string>" for non-primitive types is a readable rendering only).
	String() string
	isDataType()
}

// PrimitiveType is a non-parameterised Delta type, named as in the schema
// JSON. Names this package does not know are kept verbatim so a schema from a
// newer writer still parses; Known reports whether the name is one of ours.
type PrimitiveType string

// Primitive types from the protocol. "void" columns exist in Spark-written
// tables (never materialized); "variant" needs the variantType feature.
const (
	TypeString       PrimitiveType = "string"
	TypeLong         PrimitiveType = "long"
	TypeInteger      PrimitiveType = "integer"
	TypeShort        PrimitiveType = "short"
	TypeByte         PrimitiveType = "byte"
	TypeFloat        PrimitiveType = "float"
	TypeDouble       PrimitiveType = "double"
	TypeBoolean      PrimitiveType = "boolean"
	TypeBinary       PrimitiveType = "binary"
	TypeDate         PrimitiveType = "date"
	TypeTimestamp    PrimitiveType = "timestamp"
	TypeTimestampNTZ PrimitiveType = "timestamp_ntz"
	TypeVoid         PrimitiveType = "void"
	TypeVariant      PrimitiveType = "variant"
)

func (t PrimitiveType) String() string { return string(t) }
func (PrimitiveType) isDataType()      {}

// Known reports whether t is one of the primitive types listed in PROTOCOL.md.
func (t PrimitiveType) Known() bool {
	switch t {
	case TypeString, TypeLong, TypeInteger, TypeShort, TypeByte, TypeFloat, TypeDouble,
		TypeBoolean, TypeBinary, TypeDate, TypeTimestamp, TypeTimestampNTZ, TypeVoid, TypeVariant:
		return true
	}
	return false
}

// DecimalType is decimal(Precision, Scale).
type DecimalType struct {
	Precision int
	Scale     int
}

func (d DecimalType) String() string { return fmt.Sprintf("decimal(%d,%d)", d.Precision, d.Scale) }
func (DecimalType) isDataType()      {}

// StructType is the table schema and the type of struct columns.
type StructType struct {
	Fields []StructField
}

func (*StructType) isDataType() {}
func (s *StructType) String() string {
	var b strings.Builder
	b.WriteString("struct<")
	for i, f := range s.Fields {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(f.Name)
		b.WriteByte(':')
		b.WriteString(f.Type.String())
	}
	b.WriteByte('>')
	return b.String()
}

// Field returns the field with the given name (exact match) or nil.
func (s *StructType) Field(name string) *StructField {
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return &s.Fields[i]
		}
	}
	return nil
}

// StructField is one column. Metadata values are kept as raw JSON because
// they are not all strings (delta.columnMapping.id is a number,
// delta.typeChanges a list) and must survive a round trip unchanged.
type StructField struct {
	Name     string
	Type     DataType
	Nullable bool
	Metadata map[string]json.RawMessage
}

// MetadataString returns a string-valued metadata entry.
func (f *StructField) MetadataString(key string) (string, bool) {
	raw, ok := f.Metadata[key]
	if !ok {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// ArrayType is array<ElementType>.
type ArrayType struct {
	ElementType  DataType
	ContainsNull bool
}

func (*ArrayType) isDataType()      {}
func (a *ArrayType) String() string { return "array<" + a.ElementType.String() + ">" }

// MapType is map<KeyType, ValueType>.
type MapType struct {
	KeyType           DataType
	ValueType         DataType
	ValueContainsNull bool
}

func (*MapType) isDataType() {}
func (m *MapType) String() string {
	return "map<" + m.KeyType.String() + "," + m.ValueType.String() + ">"
}

// ParseSchema parses a metaData.schemaString. The top level must be a struct.
func ParseSchema(schemaString string) (*StructType, error) {
	t, err := parseDataType(json.RawMessage(schemaString))
	if err != nil {
		return nil, fmt.Errorf("deltalog: parse schema: %w", err)
	}
	st, ok := t.(*StructType)
	if !ok {
		return nil, fmt.Errorf("deltalog: parse schema: top-level type is %s, want struct", t)
	}
	return st, nil
}

// MarshalSchema renders s in the protocol's JSON form (the inverse of
// ParseSchema).
func MarshalSchema(s *StructType) (string, error) {
	b, err := json.Marshal(schemaJSON(s))
	if err != nil {
		return "", err
	}
	return string(b), nil
}

type jsonField struct {
	Name     string                     `json:"name"`
	Type     json.RawMessage            `json:"type"`
	Nullable *bool                      `json:"nullable"`
	Metadata map[string]json.RawMessage `json:"metadata"`
}

type jsonComplex struct {
	Type              string          `json:"type"`
	Fields            []jsonField     `json:"fields"`
	ElementType       json.RawMessage `json:"elementType"`
	ContainsNull      *bool           `json:"containsNull"`
	KeyType           json.RawMessage `json:"keyType"`
	ValueType         json.RawMessage `json:"valueType"`
	ValueContainsNull *bool           `json:"valueContainsNull"`
}

func parseDataType(raw json.RawMessage) (DataType, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, fmt.Errorf("missing type")
	}
	if raw[0] == '"' {
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			return nil, err
		}
		return parsePrimitive(name)
	}
	var c jsonComplex
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	switch c.Type {
	case "struct":
		st := &StructType{Fields: make([]StructField, 0, len(c.Fields))}
		for _, jf := range c.Fields {
			ft, err := parseDataType(jf.Type)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", jf.Name, err)
			}
			st.Fields = append(st.Fields, StructField{
				Name:     jf.Name,
				Type:     ft,
				Nullable: jf.Nullable == nil || *jf.Nullable,
				Metadata: jf.Metadata,
			})
		}
		return st, nil
	case "array":
		et, err := parseDataType(c.ElementType)
		if err != nil {
			return nil, fmt.Errorf("array element: %w", err)
		}
		return &ArrayType{ElementType: et, ContainsNull: c.ContainsNull == nil || *c.ContainsNull}, nil
	case "map":
		kt, err := parseDataType(c.KeyType)
		if err != nil {
			return nil, fmt.Errorf("map key: %w", err)
		}
		vt, err := parseDataType(c.ValueType)
		if err != nil {
			return nil, fmt.Errorf("map value: %w", err)
		}
		return &MapType{KeyType: kt, ValueType: vt, ValueContainsNull: c.ValueContainsNull == nil || *c.ValueContainsNull}, nil
	case "variant":
		// Not in the protocol's JSON form, but cheap to accept.
		return TypeVariant, nil
	default:
		return nil, fmt.Errorf("unknown complex type %q", c.Type)
	}
}

// parsePrimitive understands "decimal(p,s)" (spaces allowed), bare "decimal"
// (Spark's decimal(10,0)) and keeps any other name as a PrimitiveType.
func parsePrimitive(name string) (DataType, error) {
	if name == "decimal" {
		return DecimalType{Precision: 10, Scale: 0}, nil
	}
	if rest, ok := strings.CutPrefix(name, "decimal("); ok {
		inner, ok := strings.CutSuffix(rest, ")")
		if !ok {
			return nil, fmt.Errorf("bad decimal type %q", name)
		}
		ps, ss, ok := strings.Cut(inner, ",")
		if !ok {
			return nil, fmt.Errorf("bad decimal type %q", name)
		}
		p, err1 := strconv.Atoi(strings.TrimSpace(ps))
		s, err2 := strconv.Atoi(strings.TrimSpace(ss))
		if err1 != nil || err2 != nil || p < 1 || p > 38 || s < 0 || s > p {
			return nil, fmt.Errorf("bad decimal type %q", name)
		}
		return DecimalType{Precision: p, Scale: s}, nil
	}
	if name == "" {
		return nil, fmt.Errorf("empty type name")
	}
	return PrimitiveType(name), nil
}

// schemaJSON converts a DataType to values encoding/json renders in the
// protocol's shape (field order as Spark writes it).
func schemaJSON(t DataType) any {
	switch t := t.(type) {
	case PrimitiveType:
		return string(t)
	case DecimalType:
		return t.String()
	case *StructType:
		type field struct {
			Name     string                     `json:"name"`
			Type     any                        `json:"type"`
			Nullable bool                       `json:"nullable"`
			Metadata map[string]json.RawMessage `json:"metadata"`
		}
		out := struct {
			Type   string  `json:"type"`
			Fields []field `json:"fields"`
		}{Type: "struct", Fields: make([]field, 0, len(t.Fields))}
		for _, f := range t.Fields {
			md := f.Metadata
			if md == nil {
				md = map[string]json.RawMessage{}
			}
			out.Fields = append(out.Fields, field{Name: f.Name, Type: schemaJSON(f.Type), Nullable: f.Nullable, Metadata: md})
		}
		return out
	case *ArrayType:
		return struct {
			Type         string `json:"type"`
			ElementType  any    `json:"elementType"`
			ContainsNull bool   `json:"containsNull"`
		}{"array", schemaJSON(t.ElementType), t.ContainsNull}
	case *MapType:
		return struct {
			Type              string `json:"type"`
			KeyType           any    `json:"keyType"`
			ValueType         any    `json:"valueType"`
			ValueContainsNull bool   `json:"valueContainsNull"`
		}{"map", schemaJSON(t.KeyType), schemaJSON(t.ValueType), t.ValueContainsNull}
	}
	return nil
}

// walkFields calls fn for every struct field in the schema, depth first,
// including fields nested in arrays and maps. path is the field path from the
// root (array/map hops are not named). Returning false stops the walk.
func walkFields(s *StructType, fn func(path []string, f *StructField) bool) bool {
	var walkType func(path []string, t DataType) bool
	walkStruct := func(path []string, st *StructType) bool {
		for i := range st.Fields {
			f := &st.Fields[i]
			p := append(path[:len(path):len(path)], f.Name)
			if !fn(p, f) {
				return false
			}
			if !walkType(p, f.Type) {
				return false
			}
		}
		return true
	}
	walkType = func(path []string, t DataType) bool {
		switch t := t.(type) {
		case *StructType:
			return walkStruct(path, t)
		case *ArrayType:
			return walkType(path, t.ElementType)
		case *MapType:
			return walkType(path, t.KeyType) && walkType(path, t.ValueType)
		}
		return true
	}
	return walkStruct(nil, s)
}

// containsType reports whether any field (at any depth) has a type for which
// pred is true.
func containsType(s *StructType, pred func(DataType) bool) bool {
	var in func(t DataType) bool
	in = func(t DataType) bool {
		if pred(t) {
			return true
		}
		switch t := t.(type) {
		case *StructType:
			for _, f := range t.Fields {
				if in(f.Type) {
					return true
				}
			}
		case *ArrayType:
			return in(t.ElementType)
		case *MapType:
			return in(t.KeyType) || in(t.ValueType)
		}
		return false
	}
	return in(s)
}

// WithColumns returns a copy of md whose schema has cols appended at the
// top level, everything else (id, format, partition columns, configuration,
// createdTime, name, description) kept as it is: the metaData action of an
// append that adds columns. Names must be new: a name equal (ignoring case,
// as Delta does) to an existing column is an error.
func WithColumns(md *Metadata, cols []StructField) (*Metadata, error) {
	schema, err := ParseSchema(md.SchemaString)
	if err != nil {
		return nil, err
	}
	for _, c := range cols {
		for _, f := range schema.Fields {
			if strings.EqualFold(f.Name, c.Name) {
				return nil, fmt.Errorf("deltalog: column %q already exists as %q", c.Name, f.Name)
			}
		}
		schema.Fields = append(schema.Fields, c)
	}
	out := *md
	if out.SchemaString, err = MarshalSchema(schema); err != nil {
		return nil, err
	}
	// Both are written as [] and {} when empty, never null: readers
	// (delta-rs) refuse a null.
	out.PartitionColumns = append(make([]string, 0, len(md.PartitionColumns)), md.PartitionColumns...)
	out.Configuration = maps.Clone(md.Configuration)
	if out.Configuration == nil {
		out.Configuration = map[string]string{}
	}
	out.Format.Options = maps.Clone(md.Format.Options)
	if out.Format.Options == nil {
		out.Format.Options = map[string]string{}
	}
	return &out, nil
}

// checkNewMetadata refuses a metaData action that would make an append
// something else: another table (id), another partitioning, or a schema
// that drops or changes a column of the snapshot's.
func checkNewMetadata(s *Snapshot, md *Metadata) error {
	switch {
	case md.ID != s.Metadata.ID:
		return fmt.Errorf("deltalog: new metaData has table id %s, the table is %s", md.ID, s.Metadata.ID)
	case !slices.Equal(md.PartitionColumns, s.Metadata.PartitionColumns):
		return fmt.Errorf("deltalog: new metaData changes the partition columns")
	}
	schema, err := ParseSchema(md.SchemaString)
	if err != nil {
		return err
	}
	old, err := ParseSchema(s.Metadata.SchemaString)
	if err != nil {
		return err
	}
	if len(schema.Fields) < len(old.Fields) {
		return fmt.Errorf("deltalog: new metaData drops columns")
	}
	for i, f := range old.Fields {
		a, _ := json.Marshal(schemaJSON(&StructType{Fields: []StructField{f}}))
		b, _ := json.Marshal(schemaJSON(&StructType{Fields: schema.Fields[i : i+1]}))
		if !bytes.Equal(a, b) {
			return fmt.Errorf("deltalog: new metaData changes column %q", f.Name)
		}
	}
	return nil
}
