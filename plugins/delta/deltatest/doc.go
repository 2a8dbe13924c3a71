// Package deltatest holds the Delta sink's behaviour suite, written once
// against a sinkdriver.Driver and run on every store (Backends: a local
// directory, MinIO, Azurite, fake-gcs-server): in-process by plugins/delta
// and through the built .so in the C host by e2e/delta, as the Redshift
// suite (plugins/redshift/redshifttest) is. It also holds the delta-rs
// readers the suite and the rest of e2e/delta check tables with.
//
//   - suite.go: the test table (Tests, Run), batches, the tests that are no
//     store's business.
//   - store.go: Store, one test's bucket (container, directory) on one
//     backend, with its plugin_config, its delta-rs options and a listing.
//   - stores.go: the tests about stores: quick start, concurrent writers,
//     creation, templates, missing tables and buckets, credentials.
//   - group.go: the group commit tests, batches of several topic
//     partitions delivered at once (sinkdriver.ConsumeConcurrently), and the txn
//     readers (WantTxns with delta-rs, LogTxns from a file:// log).
//   - compaction.go: the tests of compaction = true, and TableLog: a
//     table's rows as delta-rs and DuckDB read them and its log replayed.
//   - valueschema.go: column_types, tables created and evolved from a
//     batch's value schema (ABI 1.3), read back with delta-rs.
//   - upsert.go: write_mode = upsert against a model of the table;
//     upsert_keys.go: keys in partition columns, the first commit of a
//     new table, copy-on-write of Spark-written files.
//   - read.go: the delta-rs scripts (Py, ReadRows, History, Facts).
package deltatest
