// Package delta is the Delta Lake sink: it appends each batch of JSON
// records to an existing Delta table as one commit (batches delivered
// together for one table as one group commit), exactly once per record
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
//   - this package: the sink (config.go, sink.go) that the SDK drives;
//     one table per resolved URI (table.go), given what it needs in a
//     tableEnv; batches that wait for a table written together (group.go);
//     each commit in steps — plan, write the data files,
//     build the actions, put, re-base on a conflict (commit.go) — and its
//     outcome, landed, not landed or unknown, decided once and mapped to
//     OK or RETRY once (outcome.go); its metric declarations (metrics.go)
//     and the report of truncated timestamps (timestamps.go); and cmd/sink,
//     the c-shared library's main.
//
// File map: sink.go (the SDK's Sink: open, consume, close, its metrics
// and the newest version per table, metrics()'s last_commits), config.go (the
// plugin_config keys), table.go (one table: its environment, snapshot,
// filter, close), group.go (the table's writer queue: batches that wait
// for it written as one group commit, each answered for itself; a
// partition's pipelined batches in their predecessor's commit or after it),
// commit.go (a group's commit in steps), outcome.go (landed / not landed
// / unknown, and OK or RETRY), upload.go (data files
// in flight), create.go (create_table with the first batch), evolve.go
// (schema_evolution and fields the table lacks), valueschema.go
// (column_types: column types from a batch's value schema), audit.go (what picomq-connect audit needs: the config decoded, tables
// resolved and opened read-only, txn appIds, commitInfo rejections),
// rejections.go (rejected
// offsets recorded in commitInfo so a replay rejects them again),
// checkpointer.go (checkpoints and log cleanup off the commit path),
// compact.go (compaction = true: small files rewritten off the commit path),
// upsert.go (write_mode = "upsert": changes read with shared/changes, the
// files holding changed keys found by partition values and stats and
// rewritten without them, one merge commit with the new rows),
// background.go (the loop the checkpointer and compactor goroutines share),
// cpu_linux.go and cpu_other.go (the checkpointer's thread CPU),
// metrics.go (metric declarations), timestamps.go (timestamps cut to
// microseconds, counted and warned once).
package delta
