package metadata_test

import (
	"math"
	"strings"
	"testing"

	"github.com/picomq/heavy-sinks/shared/metadata"
)

func TestFieldNames(t *testing.T) {
	tests := []struct{ got, want string }{
		{metadata.Topic, "pico_topic"},
		{metadata.Partition, "pico_partition"},
		{metadata.Offset, "pico_offset"},
		{metadata.Timestamp, "pico_timestamp"},
		{metadata.Key, "pico_key"},
		{metadata.Headers, "pico_headers"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}

func TestRecordID(t *testing.T) {
	long := strings.Repeat("t", 200)
	tests := []struct {
		name      string
		topic     string
		partition uint32
		offset    uint64
		want      string
	}{
		{"typical", "orders.eu", 0, 42, "orders.eu:0:42"},
		{"zero offset", "orders", 0, 0, "orders:0:0"},
		{"empty topic", "", 0, 7, ":0:7"},
		{"largest values", "t", math.MaxUint32, math.MaxUint64, "t:4294967295:18446744073709551615"},
		{"colon in topic kept verbatim", "a:b", 1, 2, "a:b:1:2"},
		{"long topic", long, 0, 1, long + ":0:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := metadata.RecordID(tt.topic, tt.partition, tt.offset); got != tt.want {
				t.Errorf("RecordID = %q, want %q", got, tt.want)
			}
			prefix := []byte("id=")
			got := metadata.AppendRecordID(prefix, tt.topic, tt.partition, tt.offset)
			if string(got) != "id="+tt.want {
				t.Errorf("AppendRecordID = %q, want %q", got, "id="+tt.want)
			}
		})
	}
}

func TestAppendRecordIDReusesBuffer(t *testing.T) {
	buf := make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(100, func() {
		buf = metadata.AppendRecordID(buf[:0], "orders.eu", 0, 18446744073709551615)
	})
	if allocs != 0 {
		t.Errorf("AppendRecordID into a large enough buffer allocates %v times", allocs)
	}
}

func TestKeyBase64(t *testing.T) {
	tests := []struct {
		name   string
		key    []byte
		want   string
		wantOK bool
	}{
		{"absent", nil, "", false},
		{"empty but present", []byte{}, "", true},
		{"one byte, padded", []byte{0xff}, "/w==", true},
		{"two bytes, padded", []byte("ab"), "YWI=", true},
		{"three bytes, no padding", []byte("abc"), "YWJj", true},
		{"standard alphabet, not URL", []byte{0xfb, 0xff}, "+/8=", true},
		{"text", []byte("order-42"), "b3JkZXItNDI=", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := metadata.KeyBase64(tt.key)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("KeyBase64(%#v) = %q, %v; want %q, %v", tt.key, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestHeaderValue(t *testing.T) {
	tests := []struct {
		name string
		v    []byte
		want string
	}{
		{"nil", nil, ""},
		{"empty", []byte{}, ""},
		{"ASCII", []byte("application/json"), "application/json"},
		{"multi-byte UTF-8", []byte("größe ✓"), "größe ✓"},
		{"control bytes are valid UTF-8", []byte{0x00, 0x01}, "\x00\x01"},
		{"invalid byte", []byte{0xff}, "/w=="},
		{"truncated sequence", []byte{'a', 0xc3}, "YcM="},
		{"surrogate half", []byte{0xed, 0xa0, 0x80}, "7aCA"},
		{"text that looks like base64 stays text", []byte("/w=="), "/w=="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := metadata.HeaderValue(tt.v); got != tt.want {
				t.Errorf("HeaderValue(%#v) = %q, want %q", tt.v, got, tt.want)
			}
			if got := metadata.AppendHeaderValue([]byte("x"), tt.v); string(got) != "x"+tt.want {
				t.Errorf("AppendHeaderValue(%#v) = %q, want %q", tt.v, got, "x"+tt.want)
			}
		})
	}
}

var sink string

func BenchmarkRecordID(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		sink = metadata.RecordID("orders.eu", 0, 1234567890)
	}
}

func BenchmarkAppendRecordID(b *testing.B) {
	b.ReportAllocs()
	buf := make([]byte, 0, 64)
	for b.Loop() {
		buf = metadata.AppendRecordID(buf[:0], "orders.eu", 0, 1234567890)
	}
}

// AppendKeyBase64 and KeyBase64Len agree with KeyBase64, and a missing key
// leaves the buffer alone.
func TestAppendKeyBase64(t *testing.T) {
	for _, key := range [][]byte{nil, {}, []byte("k"), {0xff, 0, 1}} {
		want, wantOK := metadata.KeyBase64(key)
		got, ok := metadata.AppendKeyBase64([]byte("x"), key)
		if ok != wantOK || (ok && string(got) != "x"+want) || (!ok && string(got) != "x") {
			t.Errorf("%v: %q %v, want %q %v", key, got, ok, want, wantOK)
		}
		if ok && metadata.KeyBase64Len(len(key)) != len(want) {
			t.Errorf("%v: length %d, want %d", key, metadata.KeyBase64Len(len(key)), len(want))
		}
	}
	buf, key := make([]byte, 0, 64), []byte("key")
	if n := testing.AllocsPerRun(100, func() { buf, _ = metadata.AppendKeyBase64(buf[:0], key) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
}
