// Package redshift holds the end-to-end tests of the Redshift sink: the real
// libpicomq_connector_redshift_sink.so from dist/ in the C host (through the
// C ABI, as the connector runtime calls it), loading into the Redshift
// emulator (plugins/redshift/rsemu) in front of a fresh PostgreSQL database,
// with the Parquet files in a fresh MinIO bucket. The tests assert on table content
// read from the backend, on the status codes and messages the host sees, on
// the log lines it captures, and on the objects left in S3; pyarrow reads
// the Parquet files back.
//
// Needs dist/ (make build), the services (make services) and the Python env
// (buildscripts/pyenv.sh); a missing one fails the tests, never skips them.
// Run with `make e2e` or `go test ./e2e/redshift`.
//
// Files: helpers_test.go (the world: services, emulator, host), load_test.go
// (names, describe's buffer), replay_test.go (a crash at each
// step), faults_test.go (a stalled writer, per-record rejections, the error
// buffer), troubleshooting_test.go (the reproducible rows of the spec's
// troubleshooting table, the environment override), parquet_test.go
// (pyarrow reads the files), suite_test.go (the behaviour suite of
// plugins/redshift/redshifttest: the quick start, columns and payloads,
// replay, retries, permanent faults,
// pre-flight limits, schema mismatch, archive..., which plugins/redshift
// also runs in-process).
package redshift
