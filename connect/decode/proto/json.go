package protodec

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

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
		b = appendString(b, k.String()) // decimal integers, "true"/"false", the string
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
		return appendFloat(b, v.Float(), 32), nil
	case protoreflect.DoubleKind:
		return appendFloat(b, v.Float(), 64), nil
	case protoreflect.StringKind:
		// proto3 strings are checked by the unmarshaller; proto2 ones are
		// not, and JSON cannot carry invalid UTF-8 without changing it.
		s := v.String()
		if !utf8.ValidString(s) {
			return b, fmt.Errorf("field %s: invalid UTF-8", vp.fd.FullName())
		}
		return appendString(b, s), nil
	case protoreflect.BytesKind:
		return appendBase64(b, v.Bytes()), nil
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

// appendFloat appends the shortest number that reads back to f at its
// width (as encoding/json formats it), or the strings "NaN", "Infinity",
// "-Infinity" (JSON has no literal for them).
func appendFloat(b []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) ||
			bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' { // 1e-07 becomes 1e-7
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

func appendBase64(b []byte, p []byte) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, p)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// appendString appends s, valid UTF-8, as a JSON string.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
