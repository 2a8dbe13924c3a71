// Package pipeline is the sink loop of picomq-connect, as the runtime spec
// describes it: per [[topics]] block one Kafka consumer in its own group,
// records bucketed per topic-partition, a bucket flushed at batch_length
// records or after poll_interval without new ones, decoded per schema,
// handed to the plugin's consume(), and the offset just past the batch
// committed only once consume() returned OK.
//
// By default a block delivers one batch at a time, in the loop that polls.
// With max_in_flight = N > 1 (beyond the spec) it delivers batches of
// different topic-partitions concurrently, at most one per partition and N
// per block, while the loop keeps polling: each partition's offset is
// committed once its own batch returned OK, so a slow partition holds only
// itself. Every rule below holds per batch; a stop, a host death or a
// revocation first waits for the batches in flight (inflight.go).
//
// With max_in_flight_per_partition = D > 1 as well, and a plugin that
// declares pipelined (ABI 1.5), a partition may have up to D batches in
// flight: each later one follows the one before it (hostclient.Batch.
// Follows), gets one attempt, and goes again as an ordinary batch when it
// is not OK; they land in order, so a partition's offset moves only over
// batches that all returned OK (inflight.go).
//
// A RETRY result hands the same batch again, attempts 2 to 5, with backoff
// from 200 ms to 5 s; the fifth failure stops that consumer and marks the
// sink failed. FATAL stops it at once: retrying cannot succeed. When the
// plugin's host process dies, the consumer drops what it buffered and
// starts again from the group's committed offsets, so the batch in flight
// and everything after it are delivered again; a death counts as a failed
// attempt of that batch, so a batch that kills its host five times stops
// the consumer too.
//
// A block of a binary schema (avro, proto, flatbuffer) decodes each
// payload through its decode.Decoder (Config.Decoders) into JSON; the
// batch reaches the plugin as json. A payload that cannot be decoded is
// the record's problem, as one that is not JSON; a decoder that fails
// otherwise (a Schema Registry that does not answer) has the batch decoded
// again after DecodeBackoff, for as long as it takes, without spending an
// attempt of the plugin's.
//
// With errors_tolerance = "all" a batch accepts per-record rejections (ABI
// 1.1): the records the plugin rejects, and those the runtime cannot
// decode, are produced to the block's dead-letter topic and acknowledged
// before the offset moves past the batch. Each dead-letter topic is found
// or created before a record of its source topic is consumed: at start,
// or when a pattern first assigns the topic.
//
// The package uses franz-go's kgo client, and reaches plugins through the
// Deliverer interface (a child.Instance in the runtime; in this package's
// tests, and connect/observe's, mostly the scripted plugin of
// connect/internal/fakeplugin, so that they run without a build and under
// the race detector).
//
// Before its consumers start, a sink opens its plugin instance (an
// Opener): RETRY at open, or a host that died, is retried with OpenBackoff
// for as long as it takes while the sink stays StateStarting; a refusal is
// a *RefusedError.
//
// File map: sink.go (a sink, its state, Run), open.go (opening, with
// backoff), consumer.go (the poll and bucket loop, assignments,
// revocations, the shutdown flush), inflight.go (batches in flight:
// starting, landing and committing them, halting on a failure, pausing a
// full partition, the start warnings for a plugin that serialises them or
// does not take pipelined batches; a partition's pipelined batches in
// order, void after one that was not delivered),
// deliver.go (decoding, attempts, backoff, outcomes; a pipelined follower's
// one attempt), binary.go (payloads
// of schema avro, proto, flatbuffer through the block's decoder into
// JSON; a decoder's transient failure decoded again, without limit),
// transform.go (a block's transforms run on one record's JSON payload),
// deadletter.go (the dead-letter producer, the check that its topics
// exist), budget.go (the runtime-wide cap on buffered bytes),
// client.go (kgo options from a definition; the pool of Record slices and
// decompression buffers kgo decodes fetches into), connopts.go (a block's
// connection options for other clients: picomq-connect audit), export.go (the decoding,
// client options and dead-letter records of a batch, for connect/redrive), fetch.go (fetch.min.bytes and
// fetch.wait.max.ms derived from a block that sets neither), fetchclock.go
// (when each broker last answered a fetch whose records the loop has: an
// idle bucket told from the gap between two long fetches), commit.go (the
// offsets of landed batches sent one commit at a time, the loop not
// waiting for the broker; each answer taken), fetcherr.go (a
// partition whose fetches fail paused with backoff, its warnings spaced; a
// deleted topic's new session), status.go (committed
// offset, high watermark and lag per assigned topic-partition).
package pipeline
