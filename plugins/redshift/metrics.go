package redshift

import "sync/atomic"

// counters are the sink's own metrics. Metrics() reads them while Consume
// runs, so they are atomics.
type counters struct {
	chunks          atomic.Int64 // chunks whose load transaction committed
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
