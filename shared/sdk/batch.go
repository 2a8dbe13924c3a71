package sdk

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Batch is one flush of one topic partition, as the host handed it over.
//
// Keys, headers and payloads are borrowed: they point into host memory that
// is valid only until Consume returns. A sink copies whatever it keeps (see
// Clone); Topic and Schema are Go strings and may be kept.
type Batch struct {
	Topic     string
	Partition uint32
	Schema    string // json, raw, text, proto, flatbuffer, avro
	Attempt   uint32 // 1 on first delivery, up to 5 for the same batch
	Records   []Record
	// ValueSchema (ABI 1.3) is the type of every payload as the host
	// knows it from the schema it decoded them with: the JSON of a struct
	// type in the Delta protocol's schema serialization (docs/abi.md,
	// "Value schema"). nil: the host gave none (a 1.2 host, a json block).
	// Like the payloads it is host memory, valid during Consume only.
	ValueSchema []byte
	// Redrive (ABI 1.4) is set when the batch is dead letters put back by
	// a redrive (docs/abi.md, "Redrive"): Topic, Partition and the
	// records' offsets are their original coordinates, Redrive where each
	// sits in the dead-letter topic. The SDK hands such a batch only to a
	// plugin registered with Plugin.Redrive, with one offset per record,
	// strictly increasing. nil: an ordinary batch.
	Redrive *Redrive
	// RangeLast (ABI 1.5) is the offset of the last record of the host's
	// batch, records the host kept back (dead letters, transforms) included;
	// the SDK sets it to the last record's offset for an older host.
	RangeLast uint64
	// Follows (ABI 1.5), when not nil, is the RangeLast of the batch of the
	// same topic partition that the host sent before this one and had not
	// seen answered (pipelined.go). nil: the batch follows nothing
	// unanswered.
	Follows *uint64
	// Self is the SDK's record of this batch while it is in progress (set
	// for every batch), and Pred that of the batch it follows while that
	// one is unanswered (nil otherwise; set only for a plugin registered
	// with Plugin.Pipelined and Plugin.ConcurrentConsume). A batch with
	// Pred set is written only in the same commit as its predecessor or
	// after it was answered OK (pipelined.go).
	Self, Pred *Pending

	rejects *rejections // ABI 1.1 per-record outcomes; see Reject
	skipped int         // records the destination already had; see Skipped
}

// Redrive is the dead-letter side of a redrive batch: the dead-letter topic
// and partition its records were read from, and Offsets[i], record i's
// offset there. A sink that dedupes on offsets dedupes a redrive on these:
// the original offsets are at or below what it recorded for the original
// partition, so they would all look like a replay.
type Redrive struct {
	Topic     string
	Partition uint32
	Offsets   []uint64
}

// SeqOffset is the offset an exactly-once sink orders and dedupes record i
// on: its dead-letter offset in a redrive batch, else its own.
func (b *Batch) SeqOffset(i int) uint64 {
	if b.Redrive != nil {
		return b.Redrive.Offsets[i]
	}
	return b.Records[i].Offset
}

// checkRedrive refuses a redrive batch the SDK must not hand to the sink.
func (b *Batch) checkRedrive(accepts bool) error {
	r := b.Redrive
	if r == nil {
		return nil
	}
	if !accepts {
		return Fatalf("a redrive batch (dead letters of %q partition %d) reached a plugin that does not declare redrive in describe(): it cannot write them exactly once", r.Topic, r.Partition)
	}
	if len(r.Offsets) != len(b.Records) {
		return Fatalf("redrive batch: %d dead-letter offsets for %d records", len(r.Offsets), len(b.Records))
	}
	for i := 1; i < len(r.Offsets); i++ {
		if r.Offsets[i] <= r.Offsets[i-1] {
			return Fatalf("redrive batch: dead-letter offsets not strictly increasing at record %d (%d after %d)", i, r.Offsets[i], r.Offsets[i-1])
		}
	}
	return nil
}

// Record is one message of a batch.
type Record struct {
	Offset    uint64
	Timestamp int64  // epoch milliseconds
	Key       []byte // nil when the record has no key; empty but non-nil when the key is empty
	Headers   []Header
	Payload   []byte
}

// Header is one record header, bytes as sent.
type Header struct {
	Key, Value []byte
}

// Payload schemas the SDK checks before a sink sees a batch.
const (
	SchemaJSON = "json"
	SchemaText = "text"
	SchemaRaw  = "raw"
)

// FirstOffset and LastOffset return the offsets of the first and last record
// (0 for an empty batch).
func (b *Batch) FirstOffset() uint64 {
	if len(b.Records) == 0 {
		return 0
	}
	return b.Records[0].Offset
}

// LastOffset returns the offset of the last record, 0 for an empty batch.
func (b *Batch) LastOffset() uint64 {
	if len(b.Records) == 0 {
		return 0
	}
	return b.Records[len(b.Records)-1].Offset
}

// PayloadBytes is the sum of payload lengths.
func (b *Batch) PayloadBytes() int {
	n := 0
	for i := range b.Records {
		n += len(b.Records[i].Payload)
	}
	return n
}

// Clone returns a deep copy that owns all its memory and may outlive the
// call that delivered b.
func (b *Batch) Clone() *Batch {
	size := 0
	for i := range b.Records {
		r := &b.Records[i]
		size += len(r.Key) + len(r.Payload)
		for _, h := range r.Headers {
			size += len(h.Key) + len(h.Value)
		}
	}
	arena := make([]byte, 0, size)
	take := func(p []byte) []byte {
		if p == nil {
			return nil
		}
		start := len(arena)
		arena = append(arena, p...)
		return arena[start:len(arena):len(arena)]
	}
	c := *b
	c.Records = make([]Record, len(b.Records))
	for i := range b.Records {
		r := b.Records[i]
		r.Key, r.Payload = take(r.Key), take(r.Payload)
		if r.Headers != nil {
			hs := make([]Header, len(r.Headers))
			for j, h := range r.Headers {
				hs[j] = Header{Key: take(h.Key), Value: take(h.Value)}
			}
			r.Headers = hs
		}
		c.Records[i] = r
	}
	return &c
}

// CheckPayloads verifies every payload against the batch schema: a json
// batch must carry one JSON value per record and a text batch valid UTF-8.
// Other schemas are opaque bytes. A failure is Fatal: the same batch can
// never pass. It never rejects single records (see Reject): a sink that
// leaves the check to the SDK does not know to skip them.
func (b *Batch) CheckPayloads() error {
	switch b.Schema {
	case SchemaJSON:
		for i := range b.Records {
			p := b.Records[i].Payload
			if !json.Valid(p) {
				return Fatalf("topic %q offset %d: payload is not a JSON value (schema json)", b.Topic, b.Records[i].Offset)
			}
		}
	case SchemaText:
		for i := range b.Records {
			if !utf8.Valid(b.Records[i].Payload) {
				return Fatalf("topic %q offset %d: payload is not valid UTF-8 (schema text)", b.Topic, b.Records[i].Offset)
			}
		}
	}
	return nil
}

// Skipped reports that n more records of b, none of them rejected, were
// not written because the destination already had them (a replay of a
// batch an earlier delivery wrote). The SDK counts them in the metrics as
// skipped instead of records (written). It is only counted when Consume
// returns nil; a sink that builds the batch again from the start after a
// failure reports the counts of the build that succeeded.
func (b *Batch) Skipped(n int) {
	if n < 0 || b.skipped+n > len(b.Records) {
		panic(fmt.Sprintf("sdk: Batch.Skipped(%d) after %d in a batch of %d records", n, b.skipped, len(b.Records)))
	}
	b.skipped += n
}

func (b *Batch) String() string {
	return fmt.Sprintf("batch topic=%q partition=%d records=%d offsets=%d..%d attempt=%d",
		b.Topic, b.Partition, len(b.Records), b.FirstOffset(), b.LastOffset(), b.Attempt)
}
