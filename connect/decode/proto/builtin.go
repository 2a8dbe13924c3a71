package protodec

import (
	"github.com/confluentinc/confluent-kafka-go/v2/schemaregistry/confluent"
	confluenttypes "github.com/confluentinc/confluent-kafka-go/v2/schemaregistry/confluent/types"
	"google.golang.org/genproto/googleapis/type/calendarperiod"
	"google.golang.org/genproto/googleapis/type/color"
	"google.golang.org/genproto/googleapis/type/date"
	"google.golang.org/genproto/googleapis/type/datetime"
	"google.golang.org/genproto/googleapis/type/dayofweek"
	"google.golang.org/genproto/googleapis/type/decimal"
	"google.golang.org/genproto/googleapis/type/expr"
	"google.golang.org/genproto/googleapis/type/fraction"
	"google.golang.org/genproto/googleapis/type/interval"
	"google.golang.org/genproto/googleapis/type/latlng"
	"google.golang.org/genproto/googleapis/type/localized_text"
	"google.golang.org/genproto/googleapis/type/money"
	"google.golang.org/genproto/googleapis/type/month"
	"google.golang.org/genproto/googleapis/type/phone_number"
	"google.golang.org/genproto/googleapis/type/postaladdress"
	"google.golang.org/genproto/googleapis/type/quaternion"
	"google.golang.org/genproto/googleapis/type/timeofday"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// builtIn holds, by import path, the files a Schema Registry treats as
// built in besides the well-known types (protocompile has those): its
// serializers never register them as references (Java's and Go's
// KNOWN_DEPENDENCIES/builtInDeps, Python's _is_builtin, skip.known.types),
// so a schema importing them arrives without them. Kafka Connect's
// ProtobufConverter writes Date, Time and Decimal columns as
// google.type.Date, google.type.TimeOfDay and confluent.type.Decimal.
//
// The descriptors are the ones the Go packages of Google's common types
// (genproto) and of confluent-kafka-go register, compiled from the
// upstream .proto files: no copy of their text to drift. Only these two
// protoc-generated packages of confluent-kafka-go are linked (no cgo, no
// librdkafka).
var builtIn = map[string]protoreflect.FileDescriptor{
	"confluent/meta.proto": confluent.File_confluent_meta_proto,
	// Registered by the Go package as confluent/types/decimal.proto; every
	// serializer imports it as confluent/type/decimal.proto (its package is
	// confluent.type): see builtInFile.
	"confluent/type/decimal.proto":      confluenttypes.File_confluent_types_decimal_proto,
	"google/type/calendar_period.proto": calendarperiod.File_google_type_calendar_period_proto,
	"google/type/color.proto":           color.File_google_type_color_proto,
	"google/type/date.proto":            date.File_google_type_date_proto,
	"google/type/datetime.proto":        datetime.File_google_type_datetime_proto,
	"google/type/dayofweek.proto":       dayofweek.File_google_type_dayofweek_proto,
	"google/type/decimal.proto":         decimal.File_google_type_decimal_proto,
	"google/type/expr.proto":            expr.File_google_type_expr_proto,
	"google/type/fraction.proto":        fraction.File_google_type_fraction_proto,
	"google/type/interval.proto":        interval.File_google_type_interval_proto,
	"google/type/latlng.proto":          latlng.File_google_type_latlng_proto,
	"google/type/localized_text.proto":  localized_text.File_google_type_localized_text_proto,
	"google/type/money.proto":           money.File_google_type_money_proto,
	"google/type/month.proto":           month.File_google_type_month_proto,
	"google/type/phone_number.proto":    phone_number.File_google_type_phone_number_proto,
	"google/type/postal_address.proto":  postaladdress.File_google_type_postal_address_proto,
	"google/type/quaternion.proto":      quaternion.File_google_type_quaternion_proto,
	"google/type/timeofday.proto":       timeofday.File_google_type_timeofday_proto,
}

// builtInFile returns the built-in file imported as path, or nil. It is
// handed to the compiler as a descriptor proto named path, not as the
// linked descriptor, so that the decimal file's registered name does not
// matter; its own imports (google/protobuf/*) resolve as any import does.
func builtInFile(path string) *descriptorpb.FileDescriptorProto {
	fd, ok := builtIn[path]
	if !ok {
		return nil
	}
	fdp := protodesc.ToFileDescriptorProto(fd)
	fdp.Name = proto.String(path)
	return fdp
}
