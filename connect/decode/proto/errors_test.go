package protodec_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/connect/decode"
	protodec "github.com/picomq/heavy-sinks/connect/decode/proto"
)

// Bad payloads are the record's problem (*decode.RecordError) and leave dst
// as it was. The bytes are written by hand: each is one defect.
func TestBadPayload(t *testing.T) {
	var vectors []vector
	readJSON(t, "vectors.json", &vectors)
	var max []byte
	for _, v := range vectors {
		if v.Name == "max" {
			max = v.Payload
		}
	}
	plain, err := protodec.FromDescriptorSet(descriptorSet(t), "shop.v1.Order")
	if err != nil {
		t.Fatal(err)
	}
	registry, err := protodec.FromSchema(readText(t, "shop/v1/order.proto"),
		map[string]string{"shop/v1/common.proto": readText(t, "shop/v1/common.proto")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		codec   decode.Codec
		payload []byte
		want    string
	}{
		{"truncated", plain, max[:len(max)-1], "shop.v1.Order"},
		{"truncated length", plain, []byte{0x0a, 0x05, 'a'}, "shop.v1.Order"},
		{"wire type 7", plain, []byte{0x0f}, "shop.v1.Order"},
		{"field number 0", plain, []byte{0x00, 0x01}, "shop.v1.Order"},
		{"invalid UTF-8 in a proto3 string", plain, []byte{0x0a, 0x01, 0xff}, "UTF-8"},
		// counts (map, field 19): key "0", then the key again as a varint.
		// The protobuf runtime panics on it (found by FuzzAppendJSON).
		{"map key twice, wrong wire type", plain, []byte{0x9a, 0x01, 0x05, 0x0a, 0x01, '0', 0x08, '0'}, "undecodable"},
		{"empty registry payload", registry, nil, "message indexes"},
		{"negative count", registry, []byte{0x01}, "invalid count -1"},
		{"count beyond the payload", registry, []byte{0x7e, 0x00}, "invalid count 63"},
		{"truncated index", registry, []byte{0x02, 0x80}, "truncated"},
		{"unknown top-level index [3]", registry, []byte{0x02, 0x06}, "3 top-level message(s)"},
		{"negative index [-1]", registry, []byte{0x02, 0x01}, "index -1"},
		{"unknown nested index [0, 9]", registry, []byte{0x04, 0x00, 0x12}, "shop.v1.Order has 3 nested message(s)"},
		{"bad message after good indexes", registry, []byte{0x02, 0x02, 0x0f}, "shop.v1.Refund"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := []byte("kept")
			out, err := tc.codec.AppendJSON(dst, tc.payload)
			if err == nil {
				t.Fatalf("no error; wrote %s", out)
			}
			if !decode.IsRecordError(err) {
				t.Fatalf("%T is not a record error: %v", err, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not say %q", err, tc.want)
			}
			if !bytes.Equal(out, []byte("kept")) {
				t.Fatalf("dst changed: %q", out)
			}
		})
	}
}

// An empty plain payload is a message with every field unset: protobuf
// cannot tell it from a record written so.
func TestEmptyPlainPayload(t *testing.T) {
	c, err := protodec.FromDescriptorSet(descriptorSet(t), "shop.v1.Refund")
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.AppendJSON(nil, nil)
	want := `{"order_id":"","amount":null,"labels":{},"reason":null}`
	if err != nil || string(got) != want {
		t.Fatalf("got %s, %v; want %s", got, err, want)
	}
}

// proto2 strings are not checked for UTF-8 by the runtime; JSON cannot
// carry them unchanged, so they are refused rather than altered.
func TestProto2InvalidUTF8(t *testing.T) {
	c, err := protodec.FromSchema(`syntax = "proto2"; message P { optional string s = 1; required int32 n = 2; }`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppendJSON(nil, []byte{0x00, 0x0a, 0x01, 0xff, 0x10, 0x01}); !decode.IsRecordError(err) {
		t.Fatalf("invalid UTF-8: %v", err)
	}
	if _, err := c.AppendJSON(nil, []byte{0x00, 0x0a, 0x01, 'x'}); !decode.IsRecordError(err) {
		t.Fatalf("a missing required field: %v", err)
	}
	// Nor are proto2 map keys: written as they came, they made the record
	// invalid JSON.
	m, err := protodec.FromSchema(`syntax = "proto2"; message M { map<string, int32> m = 1; }`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := m.AppendJSON(nil, []byte{0x00, 0x0a, 0x03, 0x0a, 0x01, 0xff}); !decode.IsRecordError(err) || !strings.Contains(err.Error(), "UTF-8") {
		t.Fatalf("invalid UTF-8 map key: %s, %v", out, err)
	}
	got, err := c.AppendJSON(nil, []byte{0x00, 0x10, 0x01})
	if want := `{"s":null,"n":1}`; err != nil || string(got) != want {
		t.Fatalf("got %s, %v; want %s", got, err, want)
	}
}

func TestCompileErrors(t *testing.T) {
	set := descriptorSet(t)
	for _, tc := range []struct {
		name string
		err  func() error
		want string
	}{
		{"unknown message", func() error { _, err := protodec.FromDescriptorSet(set, "shop.v1.Nope"); return err }, "shop.v1.Nope"},
		{"an enum, not a message", func() error { _, err := protodec.FromDescriptorSet(set, "shop.v1.Status"); return err }, "not a message"},
		{"not a descriptor set", func() error { _, err := protodec.FromDescriptorSet([]byte{0xff}, "shop.v1.Order"); return err }, "descriptor set"},
		{"missing reference", func() error { _, err := protodec.FromSchema(readText(t, "shop/v1/order.proto"), nil); return err }, "shop/v1/common.proto"},
		{"syntax error", func() error { _, err := protodec.FromSchema(`syntax = "proto3"; message {`, nil); return err }, "protobuf schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v does not say %q", err, tc.want)
			}
		})
	}
}

// A field sent with the wrong wire type for its number is, by protobuf's
// rules, an unknown field: dropped, not an error. Bytes after a valid
// message are more fields: protobuf cannot tell trailing garbage.
func TestWrongWireTypeIsUnknown(t *testing.T) {
	c, err := protodec.FromDescriptorSet(descriptorSet(t), "shop.v1.Refund")
	if err != nil {
		t.Fatal(err)
	}
	// order_id (1) as a varint, then field 9 (not in Refund) as a varint.
	got, err := c.AppendJSON(nil, []byte{0x08, 0x05, 0x48, 0x01})
	want := `{"order_id":"","amount":null,"labels":{},"reason":null}`
	if err != nil || string(got) != want {
		t.Fatalf("got %s, %v; want %s", got, err, want)
	}
}
