package protodec_test

import (
	"testing"

	"github.com/picomq/heavy-sinks/connect/decode"
	protodec "github.com/picomq/heavy-sinks/connect/decode/proto"
)

// google.protobuf.Any is written in protojson's form, its type resolved in
// the schema's files; inside it the values are protojson's own (an int64
// is a string there). An Any of a type the schema does not hold is a
// record error, as in protojson.
func TestAny(t *testing.T) {
	c, err := protodec.FromSchema(`syntax = "proto3"; package p;
import "google/protobuf/any.proto";
message A { google.protobuf.Any x = 1; }
message B { int64 n = 1; }`, nil)
	if err != nil {
		t.Fatal(err)
	}
	any := func(url string) []byte {
		inner := append([]byte{0x0a, byte(len(url))}, url...)
		inner = append(inner, 0x12, 0x02, 0x08, 0x05) // value: B{n: 5}
		return append([]byte{0x00, 0x0a, byte(len(inner))}, inner...)
	}
	got, err := c.AppendJSON(nil, any("type.googleapis.com/p.B"))
	if want := `{"x":{"@type":"type.googleapis.com/p.B","n":"5"}}`; err != nil || compact(t, got) != want {
		t.Fatalf("got %s, %v; want %s", got, err, want)
	}
	if _, err := c.AppendJSON(nil, any("type.googleapis.com/p.Nope")); !decode.IsRecordError(err) {
		t.Fatalf("unknown Any type: %v", err)
	}
}

// Timestamps outside 0001-9999 cannot be written in RFC 3339: a record error.
func TestTimestampOutOfRange(t *testing.T) {
	c, err := protodec.FromSchema(`syntax = "proto3";
import "google/protobuf/timestamp.proto";
message T { google.protobuf.Timestamp t = 1; }`, nil)
	if err != nil {
		t.Fatal(err)
	}
	// t: {seconds: 253402300800}, one second after 9999-12-31T23:59:59Z.
	payload := []byte{0x00, 0x0a, 0x07, 0x08, 0x80, 0x83, 0xd1, 0xff, 0xaf, 0x07}
	if got, err := c.AppendJSON(nil, payload); !decode.IsRecordError(err) {
		t.Fatalf("got %s, %v", got, err)
	}
	payload = []byte{0x00, 0x0a, 0x07, 0x08, 0xff, 0x82, 0xd1, 0xff, 0xaf, 0x07} // the last valid second
	if got, err := c.AppendJSON(nil, payload); err != nil || string(got) != `{"t":"9999-12-31T23:59:59Z"}` {
		t.Fatalf("got %s, %v", got, err)
	}
}
