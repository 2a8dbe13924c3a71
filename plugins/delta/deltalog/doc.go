// Package deltalog is the Delta Lake transaction-log logic behind the PicoMQ
// Delta sink: reading just enough of an existing table's log to append to it,
// deciding whether this writer may append at all, and building the commit
// for one blind append — exactly once, through txn actions.
//
// Use it when you need Delta protocol decisions without a storage SDK: it
// does no I/O of its own. Everything it reads or writes goes through Store,
// a five-method interface (list-from, get, optional ranged get,
// put-if-absent, delete) that object-store backends implement elsewhere
// (plugins/delta/objstore). MemStore is an in-memory Store for tests.
//
// It is written for an appender, not a reader of data: snapshots hold the
// protocol, metadata, schema, application transactions and domain metadata,
// never the file list, so loading a table with hundreds of thousands of
// files reads only the log lines and checkpoint columns that matter.
//
// Checkpoints are the exception: a checkpoint must list every live file.
// State is the full reconciled table state (LoadState, then Apply/Update
// commit by commit), WriteCheckpoint writes it as a classic Parquet
// checkpoint plus _last_checkpoint, and CleanupLog deletes the expired log
// behind a checkpoint. This package decides what a checkpoint holds (which
// actions, which fields, tombstone and txn retention, row groups, cache
// reuse, _last_checkpoint); the Parquet bytes, read and written, are
// ckptfile's.
//
// A typical commit:
//
//	snap, err := deltalog.Load(ctx, store, nil)
//	if err := snap.Writable(); err != nil { … refuse the table … }
//	stats, _ := deltalog.NewStatsCollector(snap)   // per data file
//	… write Parquet files, feeding stats …
//	res, err := deltalog.CommitAppend(ctx, store, snap, deltalog.AppendCommit{
//		Files: files, AppID: "picomq-orders", AppVersion: batchSeq,
//	}, nil)
//
// The reference is the Delta protocol (PROTOCOL.md in delta-io/delta); where
// it leaves room, this package follows Delta-Spark's behaviour, the
// reference implementation whose tables and readers we must interoperate
// with. Each file's comments name the decisions it makes.
//
// # File map
//
//	doc.go             this overview
//	actions.go         action types and the one-action-per-line JSON codec
//	schema.go          schemaString parsing: struct/array/map/primitive/decimal
//	store.go           Store, RangeReader, storage sentinels, MemStore
//	logpath.go         _delta_log file naming: commits, checkpoints (classic,
//	                   multi-part, V2 UUID), everything else ignored
//	snapshot.go        Load / Update / Apply, Snapshot, _last_checkpoint hint,
//	                   segment selection (newest complete checkpoint, no gaps)
//	replay.go          the one reconciliation of table-level actions, the
//	                   one JSON action scanner (projections) and commit reader
//	checkpoint_read.go checkpoint reading for both projections: V2 JSON,
//	                   Parquet with a column projection, sidecars; the
//	                   non-file actions' rows (Parquet decoding, column
//	                   lookup and ranged reads: ckptfile)
//	interval.go        "interval 7 days" durations for table properties
//	features.go        the table-feature table and CheckWritable
//	partition.go       partition value serialization, Hive directory escaping,
//	                   add.path URI encoding
//	stats.go           per-file statistics collection (Spark-compatible)
//	stats_merge.go     ObserveStats: a file's stats from the stats of the
//	                   files it was made of (compaction)
//	commit.go          PrepareAppend, PutCommit, CommitAppend, ReadCommits
//	prepare.go         what PrepareAppend and PrepareCompaction share:
//	                   commitInfo defaults and timestamp, add actions
//	conflict.go        ResolveConflict (ResolveGroupConflict for a commit
//	                   with several txn actions) and IsOurCommit
//	compact.go         compaction commits: PrepareCompaction,
//	                   CommitCompaction (remove/add with dataChange = false,
//	                   aborted when a winner removed a file read),
//	                   ResolveCompactionConflict, FilePath
//	merge.go           merge commits (write_mode = upsert): PrepareMerge,
//	                   CommitMerge (removes with dataChange = true, re-plan
//	                   when a winner removed a file rewritten or added one
//	                   that may hold a changed key), ResolveMergeConflict
//	state.go           State: the full table state with its file list,
//	                   LoadState/LoadStateAt, Apply, Update, retention
//	state_read.go      file actions (add/remove/sidecar) of Parquet
//	                   checkpoints and sidecars
//	checkpoint_write.go WriteCheckpoint, EncodeCheckpoint: orchestration
//	checkpoint_last.go _last_checkpoint: WriteLastCheckpoint and its checksum
//	checkpoint_schema.go the checkpoint schema: which actions and fields a
//	                   checkpoint holds (laid out as Parquet by ckptfile)
//	checkpoint_rows.go which action field fills which checkpoint column
//	stats_parsed.go    add.stats_parsed both ways: JSON → typed columns when
//	                   writing, typed columns → JSON when reading
//	checkpoint_cache.go CheckpointCache: a checkpoint copies the previous
//	                   one's encoded add row groups and encodes only what
//	                   changed (encoding, row groups, the file's framing and
//	                   footer: ckptfile)
//	cleanup.go         CleanupLog: expired-log cleanup behind a checkpoint
//	checkpoint_v2.go   V2 checkpoints: sidecars that later checkpoints
//	                   reference again, delta.checkpointPolicy
//	create.go          creating a table with its first append (version 0)
//	parquet_decimal.go SignedFixedLenByteArrayType, kept for callers
//	                   (ckptfile's)
//
// # One log, two projections
//
// A Snapshot (what an appender needs) and a State (what a checkpoint
// needs) are two projections of one log replay: the same segment
// (logSegment), the same reconciliation of protocol, metaData, txn and
// domainMetadata (replayState, which State embeds and extends with add and
// remove), the same JSON scanner (scanActions with projTable or projState),
// the same commit reader (readCommit) and the same checkpoint reader
// (readCheckpointPart, readParquetCheckpoint), whose column projection
// fetches only the non-file columns for a Snapshot (ranged reads of a large
// file) and every column for a State (state_read.go decodes the file
// actions).
//
// # Tests
//
// The conformance tests (conformance_test.go) load the Delta tables in
// shared/testdata/delta-tables, which sits beside the repository checkout;
// they find it through testenv.DeltaTables (internal/testenv), which fails
// with where it looked and how to point it elsewhere (PICOMQ_DELTA_TABLES).
package deltalog
