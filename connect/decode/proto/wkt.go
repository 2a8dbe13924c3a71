package protodec

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/picomq/heavy-sinks/connect/internal/jsonw"
)

// wellKnownFunc writes a message of a well-known type, which p plans.
type wellKnownFunc func(e *encoder, b []byte, p *msgPlan, m protoreflect.Message) ([]byte, error)

// wellKnown holds the JSON of the well-known types that the proto3 JSON
// mapping writes specially, by full name (a dynamic message of one is not
// the generated Go type).
var wellKnown map[protoreflect.FullName]wellKnownFunc

func init() {
	wellKnown = map[protoreflect.FullName]wellKnownFunc{
		"google.protobuf.Timestamp": appendTimestamp,
		"google.protobuf.Struct":    appendStruct,
		"google.protobuf.Value":     appendValue,
		"google.protobuf.ListValue": appendListValue,
		// protojson's own forms: "1.5s", "a.b,cD", {"@type": ..., fields}.
		"google.protobuf.Duration":  appendProtojson,
		"google.protobuf.FieldMask": appendProtojson,
		"google.protobuf.Any":       appendProtojson,
		// Not a well-known type, a built-in of the registry (decimal.go).
		"confluent.type.Decimal": appendConfluentDecimal,
	}
	// Wrappers are their value, null when the wrapper itself is unset.
	for _, name := range wrappers {
		wellKnown[name] = appendWrapper
	}
}

var wrappers = []protoreflect.FullName{
	"google.protobuf.DoubleValue", "google.protobuf.FloatValue",
	"google.protobuf.Int64Value", "google.protobuf.UInt64Value",
	"google.protobuf.Int32Value", "google.protobuf.UInt32Value",
	"google.protobuf.BoolValue", "google.protobuf.StringValue",
	"google.protobuf.BytesValue",
}

func isWrapper(name protoreflect.FullName) bool {
	return slices.Contains(wrappers, name)
}

func appendWrapper(e *encoder, b []byte, p *msgPlan, m protoreflect.Message) ([]byte, error) {
	f := p.field(1)
	return e.value(b, &f.val, m.Get(f.fd))
}

// Timestamp's valid range, 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z.
const (
	minTimestamp = -62135596800
	maxTimestamp = 253402300799
)

// appendTimestamp writes RFC 3339 in UTC with 0, 3, 6 or 9 fractional
// digits, the fewest that keep every nonzero digit (protojson's form).
func appendTimestamp(_ *encoder, b []byte, p *msgPlan, m protoreflect.Message) ([]byte, error) {
	return appendTimestampValue(b, m.Get(p.field(1).fd).Int(), m.Get(p.field(2).fd).Int())
}

// appendTimestampValue writes the Timestamp of secs and nanos (the fast
// path reads them from the wire).
func appendTimestampValue(b []byte, secs, nanos int64) ([]byte, error) {
	if secs < minTimestamp || secs > maxTimestamp || nanos < 0 || nanos >= 1e9 {
		return b, fmt.Errorf("google.protobuf.Timestamp out of range: seconds %d, nanos %d", secs, nanos)
	}
	b = append(b, '"')
	b = appendDateTime(b, secs)
	b = appendFraction(b, nanos)
	return append(b, 'Z', '"'), nil
}

// appendFraction appends ".ddd", ".dddddd" or ".ddddddddd" for nanos in
// [0, 1e9), nothing for 0.
func appendFraction(b []byte, nanos int64) []byte {
	if nanos == 0 {
		return b
	}
	digits := 9
	for digits > 3 && nanos%1000 == 0 {
		nanos /= 1000
		digits -= 3
	}
	b = append(b, '.')
	for i := digits - 1; i >= 0; i-- {
		b = append(b, '0')
	}
	for i := len(b) - 1; nanos > 0; i-- {
		b[i] = byte('0' + nanos%10)
		nanos /= 10
	}
	return b
}

// appendDateTime appends secs since the epoch (years 1-9999, as the range
// check leaves them) as "2006-01-02T15:04:05": what
// time.Unix(secs, 0).UTC().AppendFormat writes with that layout, without
// time.Time splitting the seconds twice (a tenth of a record's decoding).
func appendDateTime(b []byte, secs int64) []byte {
	// Unsigned from 0001-01-01 (minTimestamp, 719162 days before the
	// epoch) on: cheaper divisions, no rounding toward zero to correct.
	u := uint64(secs - minTimestamp)
	rem := u % 86400
	b = jsonw.AppendDate(b, int64(u/86400)-719162)
	hour, minute, sec := rem/3600, rem/60%60, rem%60
	return append(b, 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':', byte('0'+minute/10), byte('0'+minute%10), ':',
		byte('0'+sec/10), byte('0'+sec%10))
}

// appendStruct writes a google.protobuf.Struct as the JSON object it holds.
func appendStruct(e *encoder, b []byte, p *msgPlan, m protoreflect.Message) ([]byte, error) {
	f := p.field(1)
	return e.mapValue(b, f, m.Get(f.fd).Map())
}

func appendListValue(e *encoder, b []byte, p *msgPlan, m protoreflect.Message) ([]byte, error) {
	f := p.field(1)
	return e.list(b, &f.val, m.Get(f.fd).List())
}

// appendValue writes a google.protobuf.Value as the JSON value it holds.
// One with no kind set, which protojson refuses, is null: nothing is lost.
// A NaN or infinite number_value is a string like any other double.
func appendValue(e *encoder, b []byte, p *msgPlan, m protoreflect.Message) ([]byte, error) {
	od := p.desc.Oneofs().ByName("kind")
	fd := m.WhichOneof(od)
	if fd == nil {
		return append(b, "null"...), nil
	}
	return e.value(b, &p.fields[fd.Index()].val, m.Get(fd))
}

// appendProtojson writes m as protojson does, resolving Any type URLs in
// the schema's files (an Any of a type they do not hold is an error, as in
// protojson). Inside an Any the values are protojson's own: 64-bit
// integers are strings there.
func appendProtojson(e *encoder, b []byte, _ *msgPlan, m protoreflect.Message) ([]byte, error) {
	opts := protojson.MarshalOptions{UseProtoNames: true, Resolver: e.types}
	return opts.MarshalAppend(b, m.Interface())
}
