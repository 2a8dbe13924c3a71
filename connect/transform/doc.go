// Package transform is the runtime's field transforms: the
// [[topics.transforms]] of a block, run in the order written on each
// record's JSON object after decoding and before consume() (docs/runtime.md,
// "Transforms"). A Spec is one transform as configured; Compile checks a
// block's specs once into a Chain, which is safe for concurrent use; Apply
// rewrites one payload, drops it, or returns a *RecordError (the record's
// problem: a dead letter or a stop, never a retry).
//
// It is pure: no Kafka types (a record's topic, partition, offset,
// timestamp, key and headers come as a Meta) and no I/O. The JSON is never
// decoded into maps: the top-level object is split into its members, kept
// in their order with their values' bytes as written (numbers keep every
// digit), and only the nested levels a path crosses are split and written
// again.
//
// File map: transform.go (Spec, Meta, Chain, Compile, Apply, the errors),
// steps.go (each transform type: its checks and its step), path.go (dotted
// paths into nested objects), json.go (the order-preserving object, the
// JSON scanner; strings are written by connect/internal/jsonw).
package transform
