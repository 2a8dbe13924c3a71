// Package redshift is the PicoMQ Redshift sink: each batch is encoded as
// Parquet, uploaded to S3, COPYed into a staging table and moved into the
// target with a deduplicating INSERT, all inside one transaction per chunk,
// or per group of batches delivered at once for one table (group.go).
// The library libpicomq_connector_redshift_sink.so is built from cmd/sink;
// docs/redshift.md describes the behaviour and docs/redshift-config.md the
// configuration.
//
// Use Plugin() to register the sink (cmd/sink does) or to open it in-process
// in tests through the SDK's Go API.
//
// Layers, imports pointing down:
//
//   - rsql       column table, SQL text (upsert.go: the upsert load's),
//     pg_table_def check (no I/O, no SDK)
//   - rsparquet  pre-flight limit checks and Parquet encoding (no I/O, no SDK)
//   - rsjson     what Redshift's JSON_PARSE accepts, for SUPER payloads (no I/O, no SDK)
//   - rsiam      temporary credentials from AWS for auth = "iam", cached and
//     refreshed (the AWS calls only, no SDK)
//   - this package: configuration, the pgx pool and the load transaction,
//     the S3 client, and the sdk.Sink wiring
//   - cmd/sink   the c-shared main
//
// Files of this package:
//
//   - config.go   Config (the one declaration of plugin_config), its key
//     name constants, and its validation (with the spec's messages and
//     warnings) into parsed, the few values that need parsing
//   - the S3 client comes from shared/s3client (no retries, as the spec says)
//   - sink.go     Sink: Open, Consume (resolve, check, load), a batch loaded
//     alone per chunk, Close
//   - changes.go  write_mode = upsert: each record read as a change
//     (shared/changes), its key fields as the text of their key_<field>
//     columns; record errors rejected alone or FATAL
//   - group.go    group loads: with concurrent consume calls, batches for one
//     table queued behind a running load upload their files meanwhile and
//     load together (one manifest COPY, one INSERT, one commit); the next
//     load gathers the batches of the partitions the last one answered;
//     pipelined batches (Batch.Pred): upsert waits for the predecessor
//     (loadAfter), append needs nothing
//   - db.go       pool configuration, table creation and check (with
//     upsert, offsets_<table> too), the load transaction (append: the
//     deduplicating INSERT; upsert: rsql.Upsert's statements) and its
//     retries, error rendering
//   - auth.go     auth and the iam_* keys: their checks, and the pool's
//     BeforeConnect hook that logs in with rsiam's current credentials
//   - tls.go      the sslmode pgx put in effect (logged, named in errors) and
//     what to fix when a certificate does not verify
//   - store.go    S3 upload (HTTP 200 or an error), delete, archive
//   - metrics.go  the sink's counters and their declarations for describe(),
//     and the newest load per table (metrics()'s last_commits)
//   - audit.go    what picomq-connect audit needs: the config decoded, a
//     small pool (IAM too), each topic's table, ids streamed, and an
//     upsert target's applied offsets
//
// Tests: upsert_test.go holds write_mode = upsert's model test (a random
// changelog replayed in memory against the target) and its cases;
// pipelined_test.go the pipelined batches' (Pred set by the test);
// config_internal_test.go, tls_internal_test.go, group_internal_test.go, open_test.go and
// docs_test.go need no services (docs_test.go keeps docs/redshift-config.md in sync, -update
// rewrites it); the others run the sink in-process against the Redshift
// emulator (the rsemu test peer beside this package) and MinIO from
// buildscripts/services.sh, through the helpers in rig_test.go, and fail
// when those are not running. suite_test.go runs the behaviour suite of
// redshifttest in-process; e2e/redshift runs the same suite through the C
// host, and either can run against a real cluster (docs/redshift.md).
//
// Error classes: a record that can never fit its column, a text payload that
// is not text, or a topic the template cannot resolve is FATAL; everything
// else (connection, S3, COPY rejected, table missing or mismatched) is RETRY,
// because an operator can fix it and the offset must not move meanwhile.
// At open, what fails the same on every attempt is BAD_CONFIG: the
// configuration itself, a refused login, an IAM credentials call AWS
// refuses (access denied, unknown cluster), a TLS certificate that does not
// verify or a server without TLS when sslmode requires it.
package redshift
