package flatbuf_test

import "testing"

// BenchmarkOrder: one realistic 12-field record (testdata/order.json: ids,
// strings, a double, a float, an enum, a bool, a vector of strings and a
// nested 3-field table), decoded into a reused buffer as the runtime does.
//
//	go test -run '^$' -bench Order -benchmem ./connect/decode/flatbuf/
func BenchmarkOrder(b *testing.B) {
	c := compile(b, "order.bfbs", "")
	payload := read(b, "order.bin")
	var dst []byte
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		var err error
		if dst, err = c.AppendJSON(dst[:0], payload); err != nil {
			b.Fatal(err)
		}
	}
}
