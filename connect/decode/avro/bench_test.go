package avro_test

import (
	"testing"

	hamba "github.com/hamba/avro/v2"
)

// BenchmarkAppendJSON decodes the 12-field order record of the bench_order
// vector (strings, longs, a decimal, a timestamp, a nullable union, a map
// of three):
//
//	go test -run XXX -bench . -benchmem ./connect/decode/avro/
//
// hamba_generic is hamba's own generic decoding of the same payload into
// map[string]any, before any JSON is written: the path this package does
// not take.
func BenchmarkAppendJSON(b *testing.B) {
	var v vector
	for _, x := range vectors(b) {
		if x.Name == "bench_order" {
			v = x
		}
	}
	c, p := v.compile(b)
	b.Run("codec", func(b *testing.B) {
		dst := make([]byte, 0, 1024)
		b.SetBytes(int64(len(p)))
		b.ReportAllocs()
		for b.Loop() {
			out, err := c.AppendJSON(dst[:0], p)
			if err != nil || len(out) != len(v.Want) {
				b.Fatalf("%s %v", out, err)
			}
		}
	})
	b.Run("hamba_generic", func(b *testing.B) {
		s, err := hamba.ParseWithCache(v.Writer, "", &hamba.SchemaCache{})
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(p)))
		b.ReportAllocs()
		for b.Loop() {
			var out any
			if err := hamba.Unmarshal(s, p, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
