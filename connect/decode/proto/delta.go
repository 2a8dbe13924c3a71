package protodec

import (
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/picomq/heavy-sinks/connect/decode"
)

// The value schema (decode.Described) of a message type: the type of the
// JSON json.go writes for it, walking the same descriptors in the same
// order (docs/decode.md, "Value schema").

// ValueSchema implements decode.Described.
func (c *Message) ValueSchema() []byte { return c.schema }

// PayloadSchema implements decode.PayloadDescribed: the value schema of the
// message the payload's message indexes name, worked out once per message
// type.
func (s *Schema) PayloadSchema(payload []byte) []byte {
	md, _, err := messageAt(s.file, payload)
	if err != nil {
		return nil
	}
	if v, ok := s.schemas.Load(md); ok {
		return v.([]byte)
	}
	v, _ := s.schemas.LoadOrStore(md, valueSchema(md))
	return v.([]byte)
}

// valueSchema describes md's JSON.
func valueSchema(md protoreflect.MessageDescriptor) []byte {
	t, _ := describer{}.message(md)
	if t.Name != "struct" {
		return nil // a well-known type at the top: no record
	}
	b, _ := t.MarshalJSON()
	return b
}

type describer map[protoreflect.FullName]bool // messages being described

// wellKnownTypes are the types of the well-known messages json.go writes
// specially (wkt.go), and whether their JSON may be null.
var wellKnownTypes = map[protoreflect.FullName]struct {
	name string
	null bool
}{
	"google.protobuf.Timestamp": {"timestamp", false},
	// protojson's string forms, and the JSON values Struct, Value,
	// ListValue and Any hold: a string column takes their text.
	"google.protobuf.Duration":    {"string", false},
	"google.protobuf.FieldMask":   {"string", false},
	"google.protobuf.Any":         {"string", false},
	"google.protobuf.Struct":      {"string", false},
	"google.protobuf.ListValue":   {"string", false},
	"google.protobuf.Value":       {"string", true},
	"google.protobuf.DoubleValue": {"double", false},
	"google.protobuf.FloatValue":  {"double", false}, // as a float
	"google.protobuf.Int64Value":  {"long", false},
	"google.protobuf.UInt64Value": {"decimal(20,0)", false},
	"google.protobuf.Int32Value":  {"integer", false},
	"google.protobuf.UInt32Value": {"long", false},
	"google.protobuf.BoolValue":   {"boolean", false},
	"google.protobuf.StringValue": {"string", false},
	"google.protobuf.BytesValue":  {"binary", false},
}

// message returns md's type and whether its JSON may be null (beyond an
// unset field with presence).
func (d describer) message(md protoreflect.MessageDescriptor) (*decode.Type, bool) {
	if wk, ok := wellKnownTypes[md.FullName()]; ok {
		return decode.Primitive(wk.name), wk.null
	}
	if d[md.FullName()] {
		// A recursive message has no finite column type: the nested
		// value lands as its JSON text.
		return decode.Primitive("string"), false
	}
	d[md.FullName()] = true
	defer delete(d, md.FullName())
	st := decode.Struct()
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		var t *decode.Type
		null := false
		switch {
		case fd.IsMap():
			v, vnull := d.value(fd.MapValue())
			t = decode.Map(v, vnull)
		case fd.IsList():
			e, enull := d.value(fd)
			t = decode.Array(e, enull)
		default:
			t, null = d.value(fd)
			null = null || fd.HasPresence()
		}
		st.Fields = append(st.Fields, decode.Field{Name: string(fd.Name()), Type: t, Nullable: null})
	}
	return st, false
}

// value is the type of one singular value of fd (json.go's value).
func (d describer) value(fd protoreflect.FieldDescriptor) (*decode.Type, bool) {
	p := decode.Primitive
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return p("boolean"), false
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return p("integer"), false
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return p("long"), false
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return decode.Decimal(20, 0), false // up to 18446744073709551615, past a long
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		// A float is a double column: a later version of the schema may
		// make the field a double (a compatible change), whose values a
		// float column would round; every float, and the shortest text it
		// is written as, reads back exactly as a double.
		return p("double"), false
	case protoreflect.StringKind:
		return p("string"), false
	case protoreflect.BytesKind:
		return p("binary"), false
	case protoreflect.EnumKind:
		return p("string"), fd.Enum().FullName() == "google.protobuf.NullValue"
	case protoreflect.MessageKind, protoreflect.GroupKind:
		if isConfluentDecimal(fd.Message()) {
			return decimalType(fd), false // decimal.go
		}
		return d.message(fd.Message())
	}
	return p("string"), true
}
