package pipeline

import (
	"time"

	"github.com/picomq/heavy-sinks/connect/definition"
)

// How a block's fetches are shaped when its properties leave them to the
// runtime (neither fetch.min.bytes nor fetch.wait.max.ms set). The Kafka
// client's own defaults answer a fetch as soon as one byte is there, so a
// steady stream arrives in many small fetches and the runtime's CPU goes
// per fetch, not per record (docs/runtime.md, "Steady traffic").
const (
	// derivedBytesPerRecord estimates a record on the wire (compressed
	// record batches, as the broker counts fetch.min.bytes): enough that a
	// fetch of batch_length records is worth answering. Too high only
	// means the fetch waits its (short) maximum; too low, more fetches.
	derivedBytesPerRecord = 256
	derivedMaxMinBytes    = 1 << 20               // 1 MiB: past that a bucket is full long before
	derivedMinWait        = 10 * time.Millisecond // kgo refuses a shorter FetchMaxWait
	derivedMaxWait        = 500 * time.Millisecond
)

// fetchShape returns the fetch.min.bytes and fetch.wait.max.ms the
// runtime gives block t's client (0: the client's default). A block that
// sets either property gets exactly what it set and nothing derived.
//
// Derived, the wait is half of the shortest time a bucket waits before a
// flush (poll_interval, or max_batch_latency when set and shorter),
// within [10 ms, 500 ms]: below poll_interval, so the gaps between fetches
// of a steady stream never look like idle buckets (a wait as long as
// poll_interval halves the batches), yet long enough to gather a few
// hundred records per fetch (a poll_interval under 10 ms still waits 10
// ms: the client allows no less). The minimum bytes are about one batch's
// worth, batch_length × 256 bytes, at most 1 MiB, so a fetch returns early
// once a bucket could fill.
func fetchShape(t definition.Topic) (minBytes int32, maxWait time.Duration) {
	c := t.Client
	if c.FetchMinBytes > 0 || c.FetchMaxWait > 0 {
		return c.FetchMinBytes, c.FetchMaxWait
	}
	wait := t.PollInterval
	if t.MaxBatchLatency > 0 && (wait <= 0 || t.MaxBatchLatency < wait) {
		wait = t.MaxBatchLatency
	}
	wait = min(max(wait/2, derivedMinWait), derivedMaxWait)
	bytes := min(max(int64(t.BatchLength), 1)*derivedBytesPerRecord, derivedMaxMinBytes)
	return int32(bytes), wait
}
