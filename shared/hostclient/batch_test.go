package hostclient

import "testing"

// encodedSize must be exact: encode grows the buffer by it once, and a
// short figure would only cost speed, a long one memory, but either means
// it no longer describes the wire format.
func TestBatchEncodedSize(t *testing.T) {
	for name, b := range map[string]Batch{
		"empty":              {Topic: "t", Schema: "json"},
		"value schema":       {Topic: "t", Schema: "json", ValueSchema: []byte(`{"type":"struct","fields":[]}`)},
		"empty value schema": {Topic: "t", Schema: "json", ValueSchema: []byte{}},
		"redrive": {Topic: "t", Schema: "json", Records: []Record{{Offset: 1, Payload: []byte(`{}`)}},
			Redrive: &Redrive{Topic: "t.dlq", Partition: 2, Offsets: []uint64{9}}},
		"pipelined": {Topic: "t", Schema: "json", RangeLast: 12, Follows: new(uint64(9))},
		"records": {Attempt: 2, Partition: 7, Topic: "orders", Schema: "raw", Records: []Record{
			{Offset: 1, Payload: []byte(`{"a":1}`)},
			{Offset: 2, Key: []byte{}, Payload: []byte{}},
			{Offset: 3, Key: []byte("k"), Headers: []Header{{Key: "h", Value: []byte("v")}, {Key: "", Value: nil}}, Payload: []byte("xyz")},
		}},
	} {
		e := &encoder{}
		encodeBatch(e, &b)
		if len(e.b) != b.encodedSize() {
			t.Errorf("%s: encode appended %d bytes, encodedSize says %d", name, len(e.b), b.encodedSize())
		}
	}
}
