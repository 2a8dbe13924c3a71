package protodec_test

import (
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/decode/decodetest"
	protodec "github.com/picomq/heavy-sinks/connect/decode/proto"
)

// TestFromSchemaBuiltInImports: Confluent's serializers (Java, Go, .NET,
// Python) register no reference for the files the registry treats as
// built in, so a schema importing them must compile without one. Kafka
// Connect's ProtobufConverter writes Date, Time and Decimal columns as
// google.type.Date, google.type.TimeOfDay and confluent.type.Decimal.
func TestFromSchemaBuiltInImports(t *testing.T) {
	for _, imp := range []string{
		"confluent/meta.proto", "confluent/type/decimal.proto",
		"google/type/calendar_period.proto", "google/type/color.proto", "google/type/date.proto",
		"google/type/datetime.proto", "google/type/dayofweek.proto", "google/type/decimal.proto",
		"google/type/expr.proto", "google/type/fraction.proto", "google/type/interval.proto",
		"google/type/latlng.proto", "google/type/localized_text.proto", "google/type/money.proto",
		"google/type/month.proto", "google/type/phone_number.proto", "google/type/postal_address.proto",
		"google/type/quaternion.proto", "google/type/timeofday.proto",
		"google/protobuf/timestamp.proto",
	} {
		src := "syntax = \"proto3\";\npackage t;\nimport \"" + imp + "\";\nmessage M { int64 id = 1; }\n"
		if _, err := protodec.FromSchema(src, nil); err != nil {
			t.Errorf("%s: %v", imp, err)
		}
	}
}

// connectSchema is what Kafka Connect's ProtobufConverter registers for a
// row with a DECIMAL(10,3), a DATE and a TIME column: the built-in imports
// used, without references, the decimal's precision and scale in
// confluent.field_meta.
const connectSchema = `syntax = "proto3";
package t;

import "confluent/meta.proto";
import "confluent/type/decimal.proto";
import "google/type/date.proto";
import "google/type/timeofday.proto";

message Row {
  int64 id = 1;
  confluent.type.Decimal amount = 2 [(confluent.field_meta) = { params: [ { key: "precision", value: "10" }, { key: "scale", value: "3" } ] }];
  google.type.Date day = 3;
  google.type.TimeOfDay at = 4;
}
`

// TestFromSchemaBuiltInDecodes decodes a row of connectSchema: the
// decimal as its exact digits, the other built-in types as the messages
// they are.
func TestFromSchemaBuiltInDecodes(t *testing.T) {
	c, err := protodec.FromSchema(connectSchema, nil)
	if err != nil {
		t.Fatal(err)
	}
	// [0]; id 7; amount {value 0x3039 (12345), precision 10, scale 3};
	// day {2026, 9, 3}; at {21, 15, 4, 123456000}, by hand from the wire format.
	payload := []byte{
		0x00,
		0x08, 0x07,
		0x12, 0x08, 0x0a, 0x02, 0x30, 0x39, 0x10, 0x0a, 0x18, 0x03,
		0x1a, 0x07, 0x08, 0xea, 0x0f, 0x10, 0x09, 0x18, 0x03,
		0x22, 0x0b, 0x08, 0x15, 0x10, 0x0f, 0x18, 0x04, 0x20, 0x80, 0x94, 0xef, 0x3a,
	}
	assertDecodes(t, c, vector{Name: "row", Payload: payload, Want: []byte(`{"id":7,` +
		`"amount":"12.345",` +
		`"day":{"year":2026,"month":9,"day":3},` +
		`"at":{"hours":21,"minutes":15,"seconds":4,"nanos":123456000}}`)})
}

// TestFromSchemaReferenceWinsOverBuiltIn: a schema that does register a
// reference under a built-in's path gets its own file, not the built-in;
// a confluent.type.Decimal of another shape is then written as the
// message it is, not as a decimal.
func TestFromSchemaReferenceWinsOverBuiltIn(t *testing.T) {
	for _, c := range []struct {
		path, own, msg string
		payload        []byte
		want           string
	}{
		{"google/type/date.proto", "package google.type;\nmessage Date { string iso = 1; }", "google.type.Date",
			[]byte{0x00, 0x0a, 0x03, 0x0a, 0x01, 'x'}, `{"f":{"iso":"x"}}`}, // [0]; f {iso "x"}
		{"confluent/type/decimal.proto", "package confluent.type;\nmessage Decimal { string text = 1; int64 scale = 3; }", "confluent.type.Decimal",
			[]byte{0x00, 0x0a, 0x05, 0x0a, 0x01, 'x', 0x18, 0x02}, `{"f":{"text":"x","scale":2}}`}, // [0]; f {text "x", scale 2}
	} {
		src := "syntax = \"proto3\";\npackage t;\nimport \"" + c.path + "\";\nmessage M { " + c.msg + " f = 1; }\n"
		codec, err := protodec.FromSchema(src, map[string]string{c.path: "syntax = \"proto3\";\n" + c.own + "\n"})
		if err != nil {
			t.Fatal(err)
		}
		assertDecodes(t, codec, vector{Name: c.path, Payload: c.payload, Want: []byte(c.want)})
		if s := string(codec.PayloadSchema(c.payload)); !strings.Contains(s, `"name":"f","type":{"type":"struct"`) {
			t.Errorf("%s: value schema %s", c.path, s)
		}

		// A reference under a built-in's path that does not compile is
		// the schema's error, not hidden by the built-in.
		if _, err := protodec.FromSchema(src, map[string]string{c.path: "not proto"}); err == nil ||
			!strings.Contains(err.Error(), c.path) {
			t.Errorf("%s: broken reference: %v", c.path, err)
		}
	}
}

// TestFromSchemaBuiltInPython decodes rows that confluent-kafka's Python
// ProtobufSerializer wrote for testdata/known/row.proto: the schema as it
// registered it (a base64 FileDescriptorProto), without a reference for
// any of its imports (gen.py asserts none was registered).
func TestFromSchemaBuiltInPython(t *testing.T) {
	var reg registryFile
	readJSON(t, "known.json", &reg)
	if len(reg.Vectors) != 3 || len(reg.Refs) != 0 {
		t.Fatalf("known.json: %d vectors, %d refs", len(reg.Vectors), len(reg.Refs))
	}
	for form, text := range map[string]string{"serialized": reg.Schema, "text": readText(t, "known/row.proto")} {
		c, err := protodec.FromSchema(text, nil)
		if err != nil {
			t.Fatalf("%s: %v", form, err)
		}
		for _, v := range reg.Vectors {
			t.Run(form+"/"+v.Name, func(t *testing.T) { assertDecodes(t, c, v) })
		}
	}
}

// The value schema of the built-in types, as the JSON writes them: each
// vector fits. A decimal with Kafka Connect's precision and scale in its
// field_meta is decimal(p,s), one without is a string (its exact digits);
// Date is a struct of its fields.
func TestPayloadSchemaFitsBuiltIns(t *testing.T) {
	var reg registryFile
	readJSON(t, "known.json", &reg)
	c, err := protodec.FromSchema(reg.Schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range reg.Vectors {
		got, err := c.AppendJSON(nil, v.Payload)
		if err != nil {
			t.Fatal(err)
		}
		s := c.PayloadSchema(v.Payload)
		if err := decodetest.Fits(s, got); err != nil ||
			!strings.Contains(string(s), `{"name":"amount","type":"decimal(10,3)","nullable":true`) ||
			!strings.Contains(string(s), `{"name":"wide","type":"string","nullable":true`) ||
			!strings.Contains(string(s), `"name":"day","type":{"type":"struct"`) {
			t.Errorf("%s: %v\nschema %s\njson   %s", v.Name, err, s, got)
		}
	}
}

// A scale past ±1000 would make kilobytes of zeros out of a few bytes: the
// record's error. ±1000 itself is written.
func TestConfluentDecimalScaleBound(t *testing.T) {
	c, err := protodec.FromSchema(connectSchema, nil)
	if err != nil {
		t.Fatal(err)
	}
	// [0]; amount {value 0x01, scale -1000 / -1001 (int32 varints, sign-extended to 10 bytes)}
	row := func(scale ...byte) []byte {
		amount := append([]byte{0x0a, 0x01, 0x01, 0x18}, scale...)
		return append([]byte{0x00, 0x12, byte(len(amount))}, amount...)
	}
	got, err := c.AppendJSON(nil, row(0x98, 0xf8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01))
	if err != nil || !strings.HasPrefix(string(got), `{"id":0,"amount":"1`+strings.Repeat("0", 1000)+`",`) {
		t.Fatalf("scale -1000: %.80s, %v", got, err)
	}
	if _, err := c.AppendJSON(nil, row(0x97, 0xf8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)); !decode.IsRecordError(err) {
		t.Fatalf("scale -1001: %v", err)
	}
}
