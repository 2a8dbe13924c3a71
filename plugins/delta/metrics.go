package delta

import "github.com/picomq/heavy-sinks/shared/sdk"

// metrics declares every number of Sink.Metrics for describe() (ABI 1.2):
// Prometheus type, base unit and name. The JSON keeps its names and units
// (tools/deltabench and tools/deltascale read checkpoint_cpu_ms); Scale turns
// milliseconds into seconds for the exporter.
var metrics = []sdk.Metric{
	{Field: "tables", Name: "sink_tables", Type: sdk.Gauge, Help: "Delta tables the instance has opened."},
	{Field: "commits", Name: "sink_commits_total", Type: sdk.Counter, Help: "Delta commits this instance made."},
	{Field: "commit_batches", Name: "sink_commit_batches_total", Type: sdk.Counter, Help: "Batches those commits held: more than commits when concurrent batches for one table were written as one commit (a group commit)."},
	{Field: "grouped_commits", Name: "sink_grouped_commits_total", Type: sdk.Counter, Help: "Commits that held more than one batch."},
	{Field: "files_written", Name: "sink_files_written_total", Type: sdk.Counter, Help: "Parquet data files of those commits."},
	{Field: "bytes_written", Name: "sink_written_bytes_total", Type: sdk.Counter, Unit: sdk.UnitBytes, Help: "Bytes of those data files."},
	{Field: "records_written", Name: "sink_records_written_total", Type: sdk.Counter, Help: "Rows of those data files."},
	{Field: "records_skipped", Name: "sink_records_skipped_total", Type: sdk.Counter, Help: "Records of replayed batches at or below the offset the table's txn action holds (exactly_once), not written again."},
	{Field: "batches_replayed", Name: "sink_batches_replayed_total", Type: sdk.Counter, Help: "Batches found, in whole or in part, already committed."},
	{Field: "commit_conflicts", Name: "sink_commit_conflicts_total", Type: sdk.Counter, Help: "Commits that lost the race for a log version to another writer and were retried."},
	{Field: "records_unmatched", Name: "sink_records_unmatched_total", Type: sdk.Counter, Help: "Committed records none of whose top-level fields named a column (rows of nulls)."},
	{Field: "fields_ignored", Name: "sink_fields_ignored_total", Type: sdk.Counter, Help: "Top-level fields of committed records that named no column and were not written."},
	{Field: "columns_added", Name: "sink_columns_added_total", Type: sdk.Counter, Help: "Columns schema_evolution added."},
	{Field: "empty_payloads_skipped", Name: "sink_empty_payloads_skipped_total", Type: sdk.Counter, Help: "Records with an empty payload skipped by skip_empty_payloads."},
	{Field: "timestamps_truncated", Name: "sink_timestamps_truncated_total", Type: sdk.Counter, Help: "Committed timestamp values whose fraction had non-zero digits beyond the microsecond, cut to microseconds."},
	{Field: "fsyncs", Name: "sink_fsyncs_total", Type: sdk.Counter, Help: "Files and directories synced by file:// tables."},
	{Field: "checkpoints_written", Name: "sink_checkpoints_written_total", Type: sdk.Counter, Help: "Delta checkpoints written."},
	{Field: "checkpoint_failures", Name: "sink_checkpoint_failures_total", Type: sdk.Counter, Help: "Checkpoints that failed (logged; the next one is tried later)."},
	{Field: "last_checkpoint_version", Name: "sink_last_checkpoint_version", Type: sdk.Gauge, Help: "Table version of the newest checkpoint this instance wrote; -1 before the first."},
	{Field: "last_checkpoint_write_ms", Name: "sink_last_checkpoint_write_seconds", Type: sdk.Gauge, Unit: sdk.UnitSeconds, Scale: 0.001, Help: "Time the newest checkpoint took to build and write."},
	{Field: "log_files_deleted", Name: "sink_log_files_deleted_total", Type: sdk.Counter, Help: "Expired Delta log files deleted after checkpoints."},
	{Field: "checkpoint_cpu_ms", Name: "sink_checkpoint_cpu_seconds_total", Type: sdk.Counter, Unit: sdk.UnitSeconds, Scale: 0.001, Help: "CPU time of the checkpointer's thread while checkpointing."},
	{Field: "checkpoint_adds_encoded", Name: "sink_checkpoint_adds_encoded_total", Type: sdk.Counter, Help: "add actions checkpoints encoded."},
	{Field: "checkpoint_adds_copied", Name: "sink_checkpoint_adds_copied_total", Type: sdk.Counter, Help: "add actions checkpoints copied as bytes from the previous one."},
	{Field: "checkpoint_cache_fallbacks", Name: "sink_checkpoint_cache_fallbacks_total", Type: sdk.Counter, Help: "Checkpoints that could not use the checkpoint cache and encoded every action."},
	{Field: "checkpoint_commits_from_memory", Name: "sink_checkpoint_commits_from_memory_total", Type: sdk.Counter, Help: "Commits the checkpointer took from memory."},
	{Field: "checkpoint_commits_read", Name: "sink_checkpoint_commits_read_total", Type: sdk.Counter, Help: "Commits the checkpointer read from the store."},
	{Field: "compactions", Name: "sink_compactions_total", Type: sdk.Counter, Help: "Compaction commits (compaction = true)."},
	{Field: "compaction_aborts", Name: "sink_compaction_aborts_total", Type: sdk.Counter, Help: "Compactions abandoned because a concurrent commit removed a file they read or changed the table definition; their new files were deleted."},
	{Field: "compaction_failures", Name: "sink_compaction_failures_total", Type: sdk.Counter, Help: "Compaction checks that failed (logged; tried again at the next check)."},
	{Field: "compaction_files_removed", Name: "sink_compaction_files_removed_total", Type: sdk.Counter, Help: "Data files compaction commits removed (dataChange = false)."},
	{Field: "compaction_files_added", Name: "sink_compaction_files_added_total", Type: sdk.Counter, Help: "Data files compaction commits added."},
	{Field: "compaction_files_reencoded", Name: "sink_compaction_files_reencoded_total", Type: sdk.Counter, Help: "Files compaction wrote by decoding and encoding every value, because their inputs could not be spliced page by page (dictionary pages, different writers, incomplete stats)."},
	{Field: "compaction_bytes_read", Name: "sink_compaction_read_bytes_total", Type: sdk.Counter, Unit: sdk.UnitBytes, Help: "Bytes of the data files compactions read."},
	{Field: "compaction_bytes_written", Name: "sink_compaction_written_bytes_total", Type: sdk.Counter, Unit: sdk.UnitBytes, Help: "Bytes of the data files compaction commits added."},
	{Field: "compaction_cpu_ms", Name: "sink_compaction_cpu_seconds_total", Type: sdk.Counter, Unit: sdk.UnitSeconds, Scale: 0.001, Help: "CPU time of the compactor's thread while compacting."},
	{Field: "compaction_ms", Name: "sink_compaction_seconds_total", Type: sdk.Counter, Unit: sdk.UnitSeconds, Scale: 0.001, Help: "Wall time spent compacting."},
	{Field: "storage_get_requests", Name: "sink_storage_get_requests_total", Type: sdk.Counter, Help: "Object store GET requests."},
	{Field: "storage_put_requests", Name: "sink_storage_put_requests_total", Type: sdk.Counter, Help: "Object store PUT requests."},
	{Field: "storage_list_requests", Name: "sink_storage_list_requests_total", Type: sdk.Counter, Help: "Object store LIST requests."},
	{Field: "storage_delete_requests", Name: "sink_storage_delete_requests_total", Type: sdk.Counter, Help: "Object store DELETE requests."},
}
