package decode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Value schemas: the type of the JSON a Codec writes, in the neutral form
// the ABI carries as a batch's value_schema (docs/abi.md, "Value schema"):
// the Delta protocol's schema serialization, a struct type
// {"type":"struct","fields":[{"name","type","nullable","metadata"}]}. A
// plugin maps it as it likes (the Delta sink types columns with it).

// Described is a Codec that can say the type of the JSON it writes: its
// ValueSchema, the neutral form's JSON of a struct type, fixed when the
// codec was compiled. nil: the codec cannot describe its records.
type Described interface {
	ValueSchema() []byte
}

// PayloadDescribed is a Codec whose records' type depends on the payload (a
// Protobuf registry schema: the message indexes name the message type):
// PayloadSchema is the value schema of the payload's JSON, asked after
// AppendJSON succeeded for it; nil: undescribed.
type PayloadDescribed interface {
	PayloadSchema(payload []byte) []byte
}

// CodecSchema is the value schema of payload's JSON as c wrote it: c's
// ValueSchema or PayloadSchema; nil when c describes nothing.
func CodecSchema(c Codec, payload []byte) []byte {
	switch d := c.(type) {
	case Described:
		return d.ValueSchema()
	case PayloadDescribed:
		return d.PayloadSchema(payload)
	}
	return nil
}

// Describer is a Decoder that can say the value schema of one payload it
// decoded (a registry decoder: the schema of the payload's id). It is asked
// after AppendJSON succeeded for the payload; nil: undescribed.
type Describer interface {
	RecordSchema(ctx context.Context, topic string, payload []byte) []byte
}

// RecordSchema implements Describer: the Codec's value schema.
func (s Static) RecordSchema(_ context.Context, _ string, payload []byte) []byte {
	return CodecSchema(s.Codec, payload)
}

// Type is a data type of the neutral form: a primitive by its name
// ("long", "integer", "short", "byte", "float", "double", "boolean",
// "string", "binary", "date", "timestamp", "timestamp_ntz",
// "decimal(p,s)"), or a struct, array or map.
type Type struct {
	Name string // the primitive's name, or "struct", "array", "map"
	// Struct: its fields in order.
	Fields []Field
	// Array: the element type; map: the value type. Nullable: an element
	// or map value may be null.
	Elem         *Type
	ElemNullable bool
	// Map: the key type (always string for what the codecs write: JSON
	// object keys).
	Key *Type
}

// Field is one field of a struct type.
type Field struct {
	Name     string
	Type     *Type
	Nullable bool
}

// Primitive returns the type named name.
func Primitive(name string) *Type { return &Type{Name: name} }

// Struct returns a struct type of fields.
func Struct(fields ...Field) *Type { return &Type{Name: "struct", Fields: fields} }

// Array returns an array type.
func Array(elem *Type, containsNull bool) *Type {
	return &Type{Name: "array", Elem: elem, ElemNullable: containsNull}
}

// Map returns a map type with string keys, the only keys JSON objects have.
func Map(value *Type, valueContainsNull bool) *Type {
	return &Type{Name: "map", Key: Primitive("string"), Elem: value, ElemNullable: valueContainsNull}
}

// Decimal returns decimal(p,s).
func Decimal(p, s int) *Type { return Primitive(fmt.Sprintf("decimal(%d,%d)", p, s)) }

type jsonField struct {
	Name     string          `json:"name"`
	Type     json.RawMessage `json:"type"`
	Nullable bool            `json:"nullable"`
	Metadata struct{}        `json:"metadata"`
}

// MarshalJSON writes the neutral form.
func (t *Type) MarshalJSON() ([]byte, error) {
	switch t.Name {
	case "struct":
		fields := make([]jsonField, len(t.Fields))
		for i, f := range t.Fields {
			tj, err := f.Type.MarshalJSON()
			if err != nil {
				return nil, err
			}
			fields[i] = jsonField{Name: f.Name, Type: tj, Nullable: f.Nullable}
		}
		return json.Marshal(struct {
			Type   string      `json:"type"`
			Fields []jsonField `json:"fields"`
		}{"struct", fields})
	case "array":
		return json.Marshal(struct {
			Type         string `json:"type"`
			ElementType  *Type  `json:"elementType"`
			ContainsNull bool   `json:"containsNull"`
		}{"array", t.Elem, t.ElemNullable})
	case "map":
		return json.Marshal(struct {
			Type              string `json:"type"`
			KeyType           *Type  `json:"keyType"`
			ValueType         *Type  `json:"valueType"`
			ValueContainsNull bool   `json:"valueContainsNull"`
		}{"map", t.Key, t.Elem, t.ElemNullable})
	case "":
		return nil, errors.New("decode: a type without a name")
	}
	return json.Marshal(t.Name)
}

// UnmarshalJSON reads the neutral form.
func (t *Type) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		*t = Type{}
		return json.Unmarshal(b, &t.Name)
	}
	var v struct {
		Type   string `json:"type"`
		Fields []struct {
			Name     string `json:"name"`
			Type     *Type  `json:"type"`
			Nullable *bool  `json:"nullable"`
		} `json:"fields"`
		ElementType       *Type `json:"elementType"`
		ContainsNull      bool  `json:"containsNull"`
		KeyType           *Type `json:"keyType"`
		ValueType         *Type `json:"valueType"`
		ValueContainsNull bool  `json:"valueContainsNull"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v.Type {
	case "struct":
		*t = Type{Name: "struct", Fields: make([]Field, len(v.Fields))}
		for i, f := range v.Fields {
			if f.Type == nil {
				return fmt.Errorf("decode: field %q has no type", f.Name)
			}
			t.Fields[i] = Field{Name: f.Name, Type: f.Type, Nullable: f.Nullable == nil || *f.Nullable}
		}
	case "array":
		if v.ElementType == nil {
			return errors.New("decode: an array without elementType")
		}
		*t = *Array(v.ElementType, v.ContainsNull)
	case "map":
		if v.KeyType == nil || v.ValueType == nil {
			return errors.New("decode: a map without keyType or valueType")
		}
		*t = Type{Name: "map", Key: v.KeyType, Elem: v.ValueType, ElemNullable: v.ValueContainsNull}
	default:
		return fmt.Errorf("decode: unknown type %q", v.Type)
	}
	return nil
}

// Equal reports whether t and u are the same type, nullability of
// elements, map values and struct fields included.
func (t *Type) Equal(u *Type) bool {
	if t == nil || u == nil {
		return t == u
	}
	if !strings.EqualFold(t.Name, u.Name) || t.ElemNullable != u.ElemNullable || len(t.Fields) != len(u.Fields) ||
		!t.Elem.Equal(u.Elem) || !t.Key.Equal(u.Key) {
		return false
	}
	for i := range t.Fields {
		f, g := t.Fields[i], u.Fields[i]
		if f.Name != g.Name || f.Nullable != g.Nullable || !f.Type.Equal(g.Type) {
			return false
		}
	}
	return true
}

// ParseSchema reads a value schema: the JSON of a struct type.
func ParseSchema(b []byte) (*Type, error) {
	var t Type
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("decode: value schema: %w", err)
	}
	if t.Name != "struct" {
		return nil, fmt.Errorf("decode: value schema: a %s, not a struct", t.Name)
	}
	return &t, nil
}

// MergeSchemas returns the value schema of a batch whose records were
// decoded with several schemas (versions of one subject), in the order
// first seen. Structs merge field by field at every depth: the fields in
// first-seen order, the fields a later version adds appended; a field some
// versions lack is nullable. Arrays merge their element types, maps their
// value types (null allowed where any version allows it). Where two types
// of one field differ (a primitive against another, or kinds that differ)
// that field is left out, for good, at the depth where they differ, so
// that its type comes from the values: two types of one field can only
// both land in one column if the values decide. A struct left without a
// field, or an array or map whose element differs, is such a difference
// of the field holding it. nil when a schema does not parse or none is
// given.
func MergeSchemas(schemas ...[]byte) []byte {
	var out *Type
	m := merger{drop: map[string]bool{}}
	for _, s := range schemas {
		t, err := ParseSchema(s)
		if err != nil {
			return nil
		}
		if out == nil {
			out = t
			continue
		}
		if !m.merge(out, t, "") {
			// Every top-level field was left out.
			out.Fields = nil
		}
	}
	if out == nil {
		return nil
	}
	b, err := out.MarshalJSON()
	if err != nil {
		return nil
	}
	return b
}

// merger merges types; drop holds the paths of the fields left out, so
// that a later version does not bring them back.
type merger struct {
	drop map[string]bool
}

// merge merges u into t, in place, path naming t; false when they
// differ at t itself.
func (m *merger) merge(t, u *Type, path string) bool {
	if !strings.EqualFold(t.Name, u.Name) {
		return false
	}
	switch t.Name {
	case "struct":
		return m.mergeFields(t, u, path)
	case "array", "map":
		if !t.Key.Equal(u.Key) || !m.merge(t.Elem, u.Elem, path+"\x00[]") {
			return false
		}
		t.ElemNullable = t.ElemNullable || u.ElemNullable
	}
	return true
}

// mergeFields merges struct u's fields into struct t's; false when t is
// left without a field.
func (m *merger) mergeFields(t, u *Type, path string) bool {
	seen := map[string]bool{}
	for _, f := range u.Fields {
		seen[f.Name] = true
		p := path + "\x00" + f.Name
		if m.drop[p] {
			continue
		}
		i := fieldIndex(t, f.Name)
		switch {
		case i < 0:
			f.Nullable = true // the earlier schemas' records lack it
			t.Fields = append(t.Fields, f)
		case !m.merge(t.Fields[i].Type, f.Type, p):
			m.drop[p] = true
			t.Fields = append(t.Fields[:i], t.Fields[i+1:]...)
		default:
			t.Fields[i].Nullable = t.Fields[i].Nullable || f.Nullable
		}
	}
	for i := range t.Fields {
		if !seen[t.Fields[i].Name] {
			t.Fields[i].Nullable = true
		}
	}
	return len(t.Fields) > 0
}

func fieldIndex(t *Type, name string) int {
	for i, f := range t.Fields {
		if f.Name == name {
			return i
		}
	}
	return -1
}
