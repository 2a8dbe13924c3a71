package hostclient

import (
	"fmt"

	"github.com/picomq/heavy-sinks/shared/abi"
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
	// ValueSchema (ABI 1.3) is the type of every payload, the JSON of a
	// struct type in the Delta protocol's schema serialization
	// (docs/abi.md, "Value schema"); nil: none.
	ValueSchema []byte
	// Redrive (ABI 1.4) marks a batch of dead letters put back by a
	// redrive: Topic, Partition and the records' offsets are their
	// original coordinates, Redrive where they sit in the dead-letter
	// topic. nil: an ordinary batch. Send it only to a library whose
	// describe() declares "redrive" (docs/abi.md, "Redrive").
	Redrive *Redrive
	// RangeLast (ABI 1.5) is the offset of the last record of the
	// runtime's batch, records it kept back (dead letters, transforms)
	// included; 0: the last record's offset.
	RangeLast uint64
	// Follows (ABI 1.5), when not nil, is the RangeLast of the batch of
	// the same partition sent before this one and not answered yet: a
	// pipelined batch. Send it only to a library whose describe()
	// declares "pipelined" (docs/abi.md, "Pipelined batches"): Consume
	// refuses it for any other library, reading describe() once.
	Follows *uint64
}

// Redrive is the dead-letter side of a redrive batch: the dead-letter
// topic and partition its records were read from, and per record (as many
// as Batch.Records, strictly increasing) its offset there.
type Redrive struct {
	Topic     string
	Partition uint32
	Offsets   []uint64
}

// RejectReason is a picomq_reject_reason: why a record was rejected.
type RejectReason int32

// The header's reasons, from shared/abi (which shared/sdk/cabi checks
// against the header).
const (
	RejectValue    = RejectReason(abi.RejectValue)
	RejectSize     = RejectReason(abi.RejectSize)
	RejectEncoding = RejectReason(abi.RejectEncoding)
)

// String is the reason's name as the runtime's dead-letter headers carry
// it: value, size, encoding; "unknown(N)" for a value this side does not
// know (a later minor version).
func (r RejectReason) String() string {
	switch r {
	case RejectValue, RejectSize, RejectEncoding:
		return abi.RejectReason(r).String()
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
