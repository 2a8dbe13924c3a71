package hostdriver

// Batch is a picomq_batch: records of one topic partition, in offset order.
// The host passes every field as given: it does not check that Attempt is
// in 1..5 or that offsets ascend, so tests can send what a plugin must
// refuse.
type Batch struct {
	Attempt   uint32 // 1 for the first delivery
	Partition uint32
	Topic     string
	Schema    string // "json", "raw", "text", "proto", "flatbuffer", "avro"
	Records   []Record
}

// Record is a picomq_record.
type Record struct {
	Offset      uint64
	TimestampMs int64
	// Key nil is an absent key (ptr == NULL); a non-nil empty Key, such as
	// []byte{}, is present and empty.
	Key     []byte
	Headers []Header
	Payload []byte
}

// Header is a picomq_header. Key and Value are arbitrary bytes.
type Header struct {
	Key   string
	Value []byte
}

func (b *Batch) encode(e *encoder) {
	e.u32(b.Attempt)
	e.u32(b.Partition)
	e.str(b.Topic)
	e.str(b.Schema)
	e.size("record count", len(b.Records))
	for i := range b.Records {
		r := &b.Records[i]
		e.u64(r.Offset)
		e.u64(uint64(r.TimestampMs))
		if r.Key == nil {
			e.u8(0)
		} else {
			e.u8(1)
			e.bytes(r.Key)
		}
		e.size("header count", len(r.Headers))
		for _, h := range r.Headers {
			e.str(h.Key)
			e.bytes(h.Value)
		}
		e.bytes(r.Payload)
	}
}
