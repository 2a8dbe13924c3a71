package protodec

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/picomq/heavy-sinks/connect/internal/jsonw"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// encoder writes a decoded message as JSON: the proto3 JSON mapping
// (protojson) with the project's conventions where they differ (docs/decode.md
// "Protobuf"): 64-bit integers as numbers, not strings; keys the .proto
// field names in declaration order; every field present.
type encoder struct {
	types *dynamicpb.Types // resolves google.protobuf.Any type URLs
	plans plans
}

// message appends m, of the message type p plans, as a JSON object: every
// field in declaration order. An unset field without presence (a proto3
// scalar, repeated, map) is its zero value, by protobuf's semantics; an
// unset field with presence (message, proto3 optional, oneof member,
// proto2 optional) is null. So every record of a message has the same keys.
func (e *encoder) message(b []byte, p *msgPlan, m protoreflect.Message) ([]byte, error) {
	if p.wk != nil {
		return p.wk(e, b, p, m)
	}
	b = append(b, '{')
	var err error
	for i := range p.fields {
		f := &p.fields[i]
		b = append(b, f.key...)
		switch f.shape {
		case list:
			b, err = e.list(b, &f.val, m.Get(f.fd).List())
		case mapping:
			b, err = e.mapValue(b, f, m.Get(f.fd).Map())
		case optional, required:
			if !m.Has(f.fd) {
				if f.shape == required {
					return b, fmt.Errorf("required field %s is missing", f.fd.FullName())
				}
				b = append(b, "null"...)
				continue
			}
			b, err = e.value(b, &f.val, m.Get(f.fd))
		default:
			b, err = e.value(b, &f.val, m.Get(f.fd))
		}
		if err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

func (e *encoder) list(b []byte, vp *valuePlan, l protoreflect.List) ([]byte, error) {
	b = append(b, '[')
	var err error
	for i, n := 0, l.Len(); i < n; i++ {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = e.value(b, vp, l.Get(i)); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

// mapValue appends a map as an object with its keys sorted (as protojson
// does), so that the same map always writes the same JSON.
func (e *encoder) mapValue(b []byte, f *fieldPlan, m protoreflect.Map) ([]byte, error) {
	keys := make([]protoreflect.MapKey, 0, m.Len())
	m.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
		keys = append(keys, k)
		return true
	})
	slices.SortFunc(keys, keyOrder(f.mapKey))
	b = append(b, '{')
	var err error
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		// decimal integers, "true"/"false", the string (proto2 strings
		// are not checked by the unmarshaller: see value)
		var ok bool
		if b, ok = jsonw.AppendString(b, k.String()); !ok {
			return b, fmt.Errorf("field %s: map key: invalid UTF-8", f.fd.FullName())
		}
		b = append(b, ':')
		if b, err = e.value(b, &f.val, m.Get(k)); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// keyOrder orders the map keys of kind k: numbers numerically, strings
// and bools by their value (false first).
func keyOrder(k protoreflect.Kind) func(x, y protoreflect.MapKey) int {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return func(x, y protoreflect.MapKey) int { return cmp.Compare(x.Int(), y.Int()) }
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return func(x, y protoreflect.MapKey) int { return cmp.Compare(x.Uint(), y.Uint()) }
	case protoreflect.BoolKind:
		return func(x, y protoreflect.MapKey) int { return cmp.Compare(b2i(x.Bool()), b2i(y.Bool())) }
	default:
		return func(x, y protoreflect.MapKey) int { return strings.Compare(x.String(), y.String()) }
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// value appends one singular value as vp plans it.
func (e *encoder) value(b []byte, vp *valuePlan, v protoreflect.Value) ([]byte, error) {
	switch vp.kind {
	case protoreflect.BoolKind:
		return strconv.AppendBool(b, v.Bool()), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return strconv.AppendInt(b, v.Int(), 10), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return strconv.AppendUint(b, v.Uint(), 10), nil
	case protoreflect.FloatKind:
		return jsonw.AppendFloat(b, v.Float(), 32), nil
	case protoreflect.DoubleKind:
		return jsonw.AppendFloat(b, v.Float(), 64), nil
	case protoreflect.StringKind:
		// proto3 strings are checked by the unmarshaller; proto2 ones are
		// not, and JSON cannot carry invalid UTF-8 without changing it.
		b, ok := jsonw.AppendString(b, v.String())
		if !ok {
			return b, fmt.Errorf("field %s: invalid UTF-8", vp.fd.FullName())
		}
		return b, nil
	case protoreflect.BytesKind:
		return jsonw.AppendBase64(b, v.Bytes()), nil
	case protoreflect.EnumKind:
		if vp.enum.null {
			return append(b, "null"...), nil
		}
		if name, ok := vp.enum.name(v.Enum()); ok {
			return append(b, name...), nil
		}
		// A value the schema does not name (open enums keep it): its
		// number, as protojson writes it.
		return strconv.AppendInt(b, int64(v.Enum()), 10), nil
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return e.message(b, vp.msg, v.Message())
	}
	return b, fmt.Errorf("field %s: unsupported kind %v", vp.fd.FullName(), vp.kind)
}
