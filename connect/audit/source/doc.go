// Package source is what `picomq-connect audit` reads, behind the
// interfaces of connect/audit: the broker (Kafka: partitions, offsets,
// dead letters, records read back with direct consumers that never join a
// group or commit), the Delta sink's tables (Delta: the log replayed with
// plugins/delta/deltalog through stores whose writes fail, the pico_*
// columns of the live data files read page by page) and the Redshift sink's
// (Redshift: ids streamed by one ordered query per table; for
// write_mode = "upsert" the applied offsets of offsets_<table>). The plugins'
// own configuration code (plugins/delta.NewAudit, plugins/redshift.NewAudit)
// decides where the tables are and how to reach them.
//
// Use connect/audit for the reconciliation; this package only reads.
//
// File map: kafka.go (the broker), delta.go (Delta tables: txn versions,
// commitInfo rejections, pico_* columns), redshift.go (Redshift tables: ids, or an
// upsert target's applied offsets).
package source
