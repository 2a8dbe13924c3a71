package flatbuf_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	flatbuffers "github.com/google/flatbuffers/go"

	"github.com/picomq/heavy-sinks/connect/decode"
	"github.com/picomq/heavy-sinks/connect/decode/flatbuf"
)

// checkSafe: the outcome of decoding any bytes is a record error that is
// not a recovered panic, or valid JSON.
func checkSafe(t testing.TB, c *flatbuf.Codec, payload []byte) ([]byte, error) {
	t.Helper()
	out, err := c.AppendJSON(nil, payload)
	switch {
	case errors.Is(err, flatbuf.ErrInternal):
		t.Fatalf("%.32x…: a panic: %v", payload, err)
	case err != nil && !decode.IsRecordError(err):
		t.Fatalf("%.32x…: not a record error: %v", payload, err)
	case err == nil && !json.Valid(out):
		t.Fatalf("%.32x…: not JSON: %s", payload, out)
	}
	return out, err
}

// Every prefix of each test buffer: a record error, or (the cut removed
// only bytes nothing points to) exactly the full buffer's JSON.
func TestTruncated(t *testing.T) {
	kitchen := compile(t, "kitchen.bfbs", "")
	for _, name := range []string{"full.bin", "edge.bin", "unions.bin"} {
		payload := read(t, name)
		want := decodeOK(t, kitchen, payload)
		failed := 0
		for n := range len(payload) {
			out, err := checkSafe(t, kitchen, payload[:n])
			if err != nil {
				failed++
			} else if string(out) != want {
				t.Errorf("%s cut at %d decodes to other JSON: %s", name, n, out)
			}
		}
		if failed < len(payload)/2 {
			t.Errorf("%s: only %d of %d prefixes failed", name, failed, len(payload))
		}
	}
}

// Every byte of each buffer overwritten with a few values: never a panic,
// never invalid JSON.
func TestCorrupted(t *testing.T) {
	kitchen := compile(t, "kitchen.bfbs", "")
	for _, name := range []string{"full.bin", "edge.bin", "unions.bin"} {
		payload := read(t, name)
		for i := range payload {
			for _, v := range []byte{0x00, 0x01, 0x7f, 0x80, 0xff, payload[i] + 4} {
				damaged := append([]byte(nil), payload...)
				damaged[i] = v
				checkSafe(t, kitchen, damaged)
			}
		}
	}
}

// node crafts a kitchen.Node byte by byte: a table whose tags field is a
// vector of n offsets to one shared string of size bytes ('a'). Layout:
//
//	0   root offset -> 16
//	4   vtable: length 12, table size 8, next/label/kids absent, tags at 4
//	16  table: soffset 12 (vtable at 4), tags offset -> 24
//	24  vector: n, then n offsets to the string at 28+4n
//	28+4n string: length, bytes, NUL
func node(n, size int) []byte {
	le := binary.LittleEndian
	s := 28 + 4*n
	b := make([]byte, s+4+size+1)
	le.PutUint32(b[0:], 16)
	le.PutUint16(b[4:], 12)
	le.PutUint16(b[6:], 8)
	le.PutUint16(b[14:], 4)
	le.PutUint32(b[16:], 12)
	le.PutUint32(b[20:], 4)
	le.PutUint32(b[24:], uint32(n))
	for i := range n {
		le.PutUint32(b[28+4*i:], uint32(s-(28+4*i)))
	}
	le.PutUint32(b[s:], uint32(size))
	for i := range size {
		b[s+4+i] = 'a'
	}
	return b
}

func TestCrafted(t *testing.T) {
	c := compile(t, "kitchen.bfbs", "Node")
	if got := decodeOK(t, c, node(2, 3)); got != `{"tags":["aaa","aaa"]}` {
		t.Fatalf("the crafted base decodes to %s", got)
	}
	u32 := func(at int, v uint32) func([]byte) {
		return func(b []byte) { binary.LittleEndian.PutUint32(b[at:], v) }
	}
	u16 := func(at int, v uint16) func([]byte) {
		return func(b []byte) { binary.LittleEndian.PutUint16(b[at:], v) }
	}
	const str = 28 + 4*2 // the string of node(2, 3)
	for _, tc := range []struct {
		name  string
		patch func([]byte)
		want  string
	}{
		{"root offset past the end", u32(0, 1000), "outside the"},
		{"root offset at the end", u32(0, 40), "outside the"},
		{"vtable before the start", u32(16, 100), "vtable outside the payload"},
		{"vtable after the end", u32(16, 0xffffff00), "vtable outside the payload"},
		{"odd vtable length", u16(4, 5), "vtable at byte 4 has length 5"},
		{"vtable longer than the payload", u16(4, 60000), "outside the"},
		{"vtable too short", u16(4, 2), "has length 2"},
		{"table larger than the payload", u16(6, 60000), "outside the"},
		{"table smaller than its soffset", u16(6, 2), "has size 2"},
		{"field outside the table", u16(14, 6), "outside the table's 8 bytes"},
		{"vector offset past the end", u32(20, 0x7ffffff0), "outside the"},
		{"vector length past the end", u32(24, 0xffffffff), "4294967295 4-byte elements"},
		{"element offset past the end", u32(28, 0xfffffff0), "outside the"},
		{"string length past the end", u32(str, 1000), "outside the"},
		{"string not UTF-8", func(b []byte) { b[str+4] = 0xff }, "not UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := node(2, 3)
			tc.patch(b)
			_, err := checkSafe(t, c, b)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	for _, b := range [][]byte{nil, {1}, {4, 0, 0}} {
		if _, err := checkSafe(t, c, b); err == nil {
			t.Errorf("%x decoded", b)
		}
	}
}

// One string shared by 16,384 vector slots is a legal FlatBuffer of 96 KiB
// that would expand to 1 GiB of JSON: refused at the output bound.
func TestSharedAmplification(t *testing.T) {
	c := compile(t, "kitchen.bfbs", "Node")
	_, err := checkSafe(t, c, node(1<<14, 64<<10))
	if err == nil || !strings.Contains(err.Error(), "exceeds its bound") {
		t.Fatalf("error %v", err)
	}
	// Sharing below the bound decodes.
	if _, err := checkSafe(t, c, node(64, 1<<10)); err != nil {
		t.Fatal(err)
	}
}

// deep.bin: a chain of 70 tables (the Python runtime wrote it).
func TestDepth(t *testing.T) {
	c := compile(t, "kitchen.bfbs", "Node")
	_, err := checkSafe(t, c, read(t, "deep.bin"))
	if err == nil || !strings.Contains(err.Error(), "nested deeper than 64") || !strings.Contains(err.Error(), "field ….next.next") {
		t.Fatalf("error %v", err)
	}
}

// Union types the data gets wrong, written with the Go runtime's builder
// (a correct encoder of wrong values).
func TestBadUnions(t *testing.T) {
	c := compile(t, "kitchen.bfbs", "")
	inner := func(b *flatbuffers.Builder) flatbuffers.UOffsetT {
		b.StartObject(2)
		b.PrependInt32Slot(1, 7, 0)
		return b.EndObject()
	}
	// Root's fields: any_type 15, any 16, anys_type 17, anys 18.
	root := func(fill func(b *flatbuffers.Builder)) []byte {
		b := flatbuffers.NewBuilder(256)
		fill(b)
		b.Finish(b.EndObject())
		return b.FinishedBytes()
	}
	for _, tc := range []struct {
		name string
		buf  []byte
		want string
	}{
		{"unknown member", root(func(b *flatbuffers.Builder) {
			v := inner(b)
			b.StartObject(26)
			b.PrependByteSlot(15, 9, 0)
			b.PrependUOffsetTSlot(16, v, 0)
		}), "union kitchen.Any has no member 9"},
		{"more values than types", root(func(b *flatbuffers.Builder) {
			v := inner(b)
			b.StartVector(1, 1, 1)
			b.PrependByte(1)
			types := b.EndVector(1)
			b.StartVector(4, 2, 4)
			b.PrependUOffsetT(v)
			b.PrependUOffsetT(v)
			vals := b.EndVector(2)
			b.StartObject(26)
			b.PrependUOffsetTSlot(17, types, 0)
			b.PrependUOffsetTSlot(18, vals, 0)
		}), "2 union values but 1 types"},
		{"values without types", root(func(b *flatbuffers.Builder) {
			v := inner(b)
			b.StartVector(4, 1, 4)
			b.PrependUOffsetT(v)
			vals := b.EndVector(1)
			b.StartObject(26)
			b.PrependUOffsetTSlot(18, vals, 0)
		}), "without its anys_type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checkSafe(t, c, tc.buf)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	// A NONE element of a vector of unions is null; a NONE union's value
	// is not written.
	buf := root(func(b *flatbuffers.Builder) {
		v := inner(b)
		b.StartVector(1, 2, 1)
		b.PrependByte(1)
		b.PrependByte(0)
		types := b.EndVector(2)
		b.StartVector(4, 2, 4)
		b.PrependUOffsetT(v)
		b.PrependUOffsetT(v)
		vals := b.EndVector(2)
		b.StartObject(26)
		b.PrependUOffsetTSlot(16, v, 0)
		b.PrependUOffsetTSlot(17, types, 0)
		b.PrependUOffsetTSlot(18, vals, 0)
	})
	got := decodeOK(t, c, buf)
	if !strings.Contains(got, `"any_type":"NONE","anys_type":["NONE","Inner"],"anys":[null,{"n":7}]`) {
		t.Errorf("got %s", got)
	}
}

// A required field the buffer lacks is the record's error, as flatc's
// verifier has it.
func TestRequired(t *testing.T) {
	c := compile(t, "kitchen.bfbs", "Req")
	req := func(withID bool) []byte {
		b := flatbuffers.NewBuilder(64)
		id := b.CreateString("r-1")
		b.StartObject(2)
		if withID {
			b.PrependUOffsetTSlot(0, id, 0)
		}
		b.PrependInt32Slot(1, 3, 0)
		b.Finish(b.EndObject())
		return b.FinishedBytes()
	}
	if got := decodeOK(t, c, req(true)); got != `{"id":"r-1","n":3}` {
		t.Errorf("got %s", got)
	}
	if _, err := checkSafe(t, c, req(false)); err == nil || !strings.Contains(err.Error(), "field id: required field absent") {
		t.Errorf("error %v", err)
	}
}
