// Package delta is the Delta Lake sink: it appends each batch of JSON
// records to an existing Delta table as one commit, exactly once per record
// through Delta txn actions.
//
// Layers, imports pointing down:
//
//   - deltalog  the Delta transaction log: snapshots, table features,
//     commits, conflicts, partition values, stats. No I/O of its own.
//   - objstore  file://, s3://, az:// and gs:// behind deltalog.Store; a
//     table URI is parsed once (objstore.ParseLocation) and its typed errors
//     are rendered here with config key names (config.go).
//   - encode    JSON records → Parquet data files for a table schema, with
//     the spec's coercions and per-file stats.
//   - this package: the sink (config.go, sink.go, table.go) that the
//     SDK drives, its metric declarations (metrics.go) and the report of
//     truncated timestamps (timestamps.go), and cmd/sink, the c-shared
//     library's main.
package delta
