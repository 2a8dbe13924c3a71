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
// runtime gives block t's client (0: the client's default), and whether it
// derived them. A block that sets either property gets exactly what it set
// and nothing derived.
//
// Derived, the wait is poll_interval, within [10 ms, 500 ms]: as long as
// it can be without a record waiting at the broker longer than a bucket
// waits for the next one, since the runtime's CPU at a steady rate goes per
// fetch. A fetch that waits that long would make the gaps between the
// fetches of a steady stream look like idle buckets; with derived settings
// a bucket is idle only once its broker answered a fetch after its last
// records (fetchClock). With max_batch_latency the wait is half of the
// shorter of the two: the bound is the block's latency promise, and what a
// record waits at the broker comes on top of what it waits in its bucket
// (measured: 48 partitions at 3,000 records/s with a 500 ms bound, a 100
// ms wait added 60-80 ms to the median produce-to-commit latency). A
// poll_interval under 10 ms still waits 10 ms: the client allows no less.
// The minimum bytes are about one batch's worth, batch_length × 256 bytes,
// at most 1 MiB, so a fetch returns early once a bucket could fill.
func fetchShape(t definition.Topic) (minBytes int32, maxWait time.Duration, derived bool) {
	c := t.Client
	if c.FetchMinBytes > 0 || c.FetchMaxWait > 0 {
		return c.FetchMinBytes, c.FetchMaxWait, false
	}
	wait := t.PollInterval
	if t.MaxBatchLatency > 0 {
		wait = min(wait, t.MaxBatchLatency) / 2
	}
	wait = min(max(wait, derivedMinWait), derivedMaxWait)
	bytes := min(max(int64(t.BatchLength), 1)*derivedBytesPerRecord, derivedMaxMinBytes)
	return int32(bytes), wait, true
}
