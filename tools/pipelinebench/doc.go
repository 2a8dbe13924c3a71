// Command pipelinebench is `make bench-pipeline`: the Delta sink through
// the whole runtime. Per target (file://, MinIO), -repeats times (3), it
//
//  1. runs the plugin alone on the workload of `make bench-delta`
//     (internal/testenv/workload: the same records, 1000-record batches),
//     in a picomq-host started exactly as picomq-connect starts it
//     (connect/child: its worker count, quarantine, log forwarding and
//     open config): the plugin-only CPU per record;
//  2. produces the same batches to a topic while dist/picomq-connect runs
//     a definition with batch_length = the batch size, and measures
//     records/s from the first produce to the last commit, the runtime
//     process's own CPU (user+sys from /proc) and its picomq-host child's,
//     per record, and the runtime's overhead over the plugin-only figure;
//  3. produces at a fixed rate below that capacity for -steady seconds and
//     reports the end-to-end latency (record timestamp at produce → the
//     group's committed offset passing it, p50/p99) and whether the lag
//     grows;
//  4. reads step 2's topic again with the Kafka client alone, in a child
//     process of this binary (-floor-consume): franz-go with its
//     defaults, no group, no commits, no sink, GOGC=400 as the runtime.
//     Its CPU per record, from its first record to its last, estimates
//     the part of the runtime's figure that is the client's;
//
// and prints the median of each figure over the repeats, with its range:
// on a shared machine one run is noise.
//
// -host-start bench starts the plugin-only host as the other benches do
// (bench.StartHost: no quarantine of lent memory), the comparison this
// bench made before; the difference is in docs/runtime.md, "Benchmark".
//
// -formats json,avro,proto,json+transforms (make bench-formats) runs step
// 2 once per variant in each repeat, the same records each time: as the
// workload's JSON, as plain Avro binary (testdata/workload.avsc, encoded
// with hamba/avro; the definition's avro_schema_path), as plain protobuf
// (testdata/workload.proto, its descriptor set workload.binpb made by
// testdata/gen_proto.py, encoded with dynamicpb; proto_descriptor_set_path),
// "+transforms" adding a three-transform chain (add_fields, delete_fields,
// update_fields). The plugin gets JSON each time, into the same table
// schema. It prints a table per target: records/s, runtime and child CPU
// per record, the runtime's share of the plugin-only CPU, and the runtime
// CPU per record minus the JSON run's of the same repeat.
//
// Brokers: -brokers, else $PICOMQ_KAFKA_BROKERS, else franz-go's kfake in
// this process (it prints which). The target figures are against a
// real broker; kfake's own CPU is in this process, never in the runtime's.
//
//	go run ./tools/pipelinebench -batches 100
//
// File map: main.go (flags, the repeats, the medians), plugin.go (the
// plugin-only run), pipeline.go (a run through picomq-connect: producing,
// commits, latencies, lag), floor.go (the Kafka client alone), formats.go (the -formats variants: the
// workload encoded as Avro and protobuf, the transform chain, their
// table).
package main
