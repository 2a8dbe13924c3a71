package redshift

import (
	"sync/atomic"
	"time"

	"github.com/picomq/heavy-sinks/plugins/redshift/rsql"

	"github.com/picomq/heavy-sinks/shared/sdk"
)

// counters are the sink's own metrics. Metrics() reads them while Consume
// runs, so they are atomics.
type counters struct {
	chunks          atomic.Int64 // chunks whose load transaction committed
	loads           atomic.Int64 // load transactions committed
	loadBatches     atomic.Int64 // batches those carried (summed per load)
	filesUploaded   atomic.Int64 // Parquet files put to S3
	s3Bytes         atomic.Int64 // bytes of those files
	rowsCopied      atomic.Int64 // rows of committed COPYs
	rowsInserted    atomic.Int64 // rows the INSERT added to targets
	rowsSkipped     atomic.Int64 // copied rows whose id the target already had
	copyRetries     atomic.Int64 // load transactions started again after a transient failure
	filesDeleted    atomic.Int64 // loaded files deleted
	filesArchived   atomic.Int64 // loaded files moved under archive/messages/
	cleanupFailures atomic.Int64 // file deletes or archives that failed (logged as warnings)
}

// Metrics implements sdk.MetricsReporter; the SDK puts the map under "sink".
func (s *Sink) Metrics() map[string]any {
	c := &s.stats
	return map[string]any{
		"chunks":                  c.chunks.Load(),
		"loads":                   c.loads.Load(),
		"load_batches":            c.loadBatches.Load(),
		"files_uploaded":          c.filesUploaded.Load(),
		"s3_bytes_uploaded":       c.s3Bytes.Load(),
		"rows_copied":             c.rowsCopied.Load(),
		"rows_inserted":           c.rowsInserted.Load(),
		"rows_skipped_duplicates": c.rowsSkipped.Load(),
		"copy_retries":            c.copyRetries.Load(),
		"files_deleted":           c.filesDeleted.Load(),
		"files_archived":          c.filesArchived.Load(),
		"cleanup_failures":        c.cleanupFailures.Load(),
	}
}

// loaded records the load of the S3 object key (a Parquet file or a
// manifest) into t, which committed with inserted new rows, as t's newest.
func (s *Sink) loaded(t *table, key string, inserted int64) {
	s.commits.Set(sdk.Commit{Table: t.name, Load: rsql.S3URL(s.store.bucket, key), Records: inserted, Time: time.Now().UTC()})
}

// LastCommits implements sdk.CommitReporter: the newest load this instance
// committed into each table, by table name.
func (s *Sink) LastCommits() []sdk.Commit { return s.commits.List() }

// metrics declares every number of Sink.Metrics for describe() (ABI 1.2):
// Prometheus type, unit and name.
var metrics = []sdk.Metric{
	{Field: "chunks", Name: "sink_chunks_total", Type: sdk.Counter, Help: "Chunks whose load transaction committed."},
	{Field: "loads", Name: "sink_loads_total", Type: sdk.Counter, Help: "Load transactions committed: one per chunk of a batch loaded alone, one per grouped load."},
	{Field: "load_batches", Name: "sink_load_batches_total", Type: sdk.Counter, Help: "Batches the committed load transactions carried, summed per load (divided by sink_loads_total: batches per load)."},
	{Field: "files_uploaded", Name: "sink_files_uploaded_total", Type: sdk.Counter, Help: "Parquet files put to S3."},
	{Field: "s3_bytes_uploaded", Name: "sink_s3_uploaded_bytes_total", Type: sdk.Counter, Unit: sdk.UnitBytes, Help: "Bytes of those files."},
	{Field: "rows_copied", Name: "sink_rows_copied_total", Type: sdk.Counter, Help: "Rows of committed COPYs into staging tables."},
	{Field: "rows_inserted", Name: "sink_rows_inserted_total", Type: sdk.Counter, Help: "Rows the INSERT added to target tables."},
	{Field: "rows_skipped_duplicates", Name: "sink_rows_skipped_duplicates_total", Type: sdk.Counter, Help: "Copied rows whose id the target table already had (a replay), not inserted."},
	{Field: "copy_retries", Name: "sink_copy_retries_total", Type: sdk.Counter, Help: "Load transactions started again after a transient failure."},
	{Field: "files_deleted", Name: "sink_files_deleted_total", Type: sdk.Counter, Help: "Loaded files deleted."},
	{Field: "files_archived", Name: "sink_files_archived_total", Type: sdk.Counter, Help: "Loaded files moved under archive/messages/."},
	{Field: "cleanup_failures", Name: "sink_cleanup_failures_total", Type: sdk.Counter, Help: "File deletes or archives that failed (logged as warnings)."},
}
