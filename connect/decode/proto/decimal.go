package protodec

import (
	"fmt"
	"strconv"

	"github.com/confluentinc/confluent-kafka-go/v2/schemaregistry/confluent"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/internal/jsonw"
)

// confluent.type.Decimal (builtin.go), which Kafka Connect's
// ProtobufConverter writes for a DECIMAL column, is written as the exact
// decimal it holds, a string keeping its scale ("-12.340"), as every
// format writes a decimal (docs/decode.md): its fields are bytes value
// (the unscaled integer, big-endian two's complement), uint32 precision
// and int32 scale.

// maxDecimalScale bounds the digits a record's scale can make us write
// ("0." and scale digits, or scale zeros): far beyond any database's
// decimal (Delta's and Redshift's take 38), and a few KB of JSON at most.
const maxDecimalScale = 1000

// isConfluentDecimal says whether md is confluent.type.Decimal as the
// built-in file defines it. A schema may register its own file under that
// path (a reference wins over a built-in): a message of the name but
// another shape is written as the message it is.
func isConfluentDecimal(md protoreflect.MessageDescriptor) bool {
	if md.FullName() != "confluent.type.Decimal" {
		return false
	}
	f := md.Fields()
	value, scale := f.ByNumber(1), f.ByNumber(3)
	return value != nil && value.Kind() == protoreflect.BytesKind && !value.IsList() &&
		scale != nil && scale.Kind() == protoreflect.Int32Kind && !scale.IsList()
}

// appendConfluentDecimal is wellKnown's writer of confluent.type.Decimal.
func appendConfluentDecimal(e *encoder, b []byte, p *msgPlan, m protoreflect.Message) ([]byte, error) {
	if !isConfluentDecimal(p.desc) {
		generic := *p
		generic.wk = nil
		return e.message(b, &generic, m)
	}
	value := m.Get(p.field(1).fd).Bytes()
	scale := m.Get(p.field(3).fd).Int()
	if scale < -maxDecimalScale || scale > maxDecimalScale {
		return b, fmt.Errorf("confluent.type.Decimal scale %d is beyond ±%d", scale, maxDecimalScale)
	}
	return jsonw.AppendDecimal(b, value, int(scale)), nil
}

// decimalType is the value schema of a confluent.type.Decimal field:
// decimal(p,s) from the precision and scale Kafka Connect's converter
// puts in the field's confluent.field_meta params, when they make a
// Delta decimal (1 <= p <= 38, 0 <= s <= p); else string, the exact
// digits. (A record of another scale than the column's lands when it
// fits exactly and fails the batch when it would be rounded: the sinks
// never round.)
func decimalType(fd protoreflect.FieldDescriptor) *decode.Type {
	opts, ok := fd.Options().(*descriptorpb.FieldOptions)
	if !ok || opts == nil {
		return decode.Primitive("string")
	}
	// The compiler may keep the extension as unknown bytes or as a
	// dynamic message: read it again with the Go type registered.
	raw, err := proto.Marshal(opts)
	if err != nil {
		return decode.Primitive("string")
	}
	var o descriptorpb.FieldOptions
	if (proto.UnmarshalOptions{Resolver: protoregistry.GlobalTypes}).Unmarshal(raw, &o) != nil {
		return decode.Primitive("string")
	}
	meta, _ := proto.GetExtension(&o, confluent.E_FieldMeta).(*confluent.Meta)
	p, perr := strconv.Atoi(meta.GetParams()["precision"])
	s, serr := strconv.Atoi(meta.GetParams()["scale"])
	if perr != nil || serr != nil || p < 1 || p > 38 || s < 0 || s > p {
		return decode.Primitive("string")
	}
	return decode.Decimal(p, s)
}
