package hostdriver

import (
	"fmt"
	"slices"

	"github.com/picomq/heavy-sinks/shared/sdk"
)

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
	// AcceptRejections passes a reject callback (ABI 1.1): the plugin may
	// then reject single records and write the rest. Read them with
	// Instance.ConsumeResult.
	AcceptRejections bool
}

// RejectReason is a picomq_reject_reason: why a record was rejected.
type RejectReason int32

// The header's reasons; the SDK's values, checked against the header by
// shared/sdk/cabi.
const (
	RejectValue    = RejectReason(sdk.RejectValue)
	RejectSize     = RejectReason(sdk.RejectSize)
	RejectEncoding = RejectReason(sdk.RejectEncoding)
)

// String is the reason's name as the runtime's dead-letter headers carry
// it: value, size, encoding; "unknown(N)" for a value this side does not
// know (a later minor version).
func (r RejectReason) String() string {
	switch r {
	case RejectValue, RejectSize, RejectEncoding:
		return sdk.RejectReason(r).String()
	}
	return fmt.Sprintf("unknown(%d)", int32(r))
}

// Rejection is one record a consume that returned OK rejected.
type Rejection struct {
	Index   int // position in Batch.Records
	Reason  RejectReason
	Message string
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

// encodedSize is how many bytes encode appends: the request buffer is
// sized once instead of growing through a batch of payloads.
func (b *Batch) encodedSize() int {
	n := 4 + 4 + 4 + len(b.Topic) + 4 + len(b.Schema) + 4
	for i := range b.Records {
		r := &b.Records[i]
		n += 8 + 8 + 1 + 4 + 4 + len(r.Payload)
		if r.Key != nil {
			n += 4 + len(r.Key)
		}
		for _, h := range r.Headers {
			n += 4 + len(h.Key) + 4 + len(h.Value)
		}
	}
	return n
}

func (b *Batch) encode(e *encoder) {
	e.b = slices.Grow(e.b, b.encodedSize())
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
