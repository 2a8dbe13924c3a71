// Package rsemu is a test peer, a Redshift stand-in for tests, not part of
// the Redshift sink plugin: the plugin never imports it (its tests do), and
// it imports nothing of the plugin. It sits beside the sink as franz-go's
// kfake sits beside its client, so any test, in this repository or another,
// can import it.
//
// It is a PostgreSQL wire-protocol proxy in front of a real PostgreSQL that
// speaks enough Redshift for the Redshift sink — Redshift column types with byte-length semantics,
// pg_table_def, COPY from Parquet in S3, TRUNCATE that commits, the load
// error system views — and refuses the Redshift syntax it does not emulate
// loudly, so no test passes by accident.
//
// It is the Redshift test peer, as kfake is for Kafka: besides the protocol
// it has hooks for tests (Fault: fail, delay or drop the connection on
// statements matching a regular expression) and a log of every statement
// received. Config.CopyLatency and Config.CommitLatency model a real
// cluster's cost for benchmarks: a fixed time per COPY, and commits that
// wrote serialised through one cluster-wide commit queue (cost.go; README.md
// gives the values to use, 1s and 600ms, and where they come from). Both
// are 0 by default: nothing waits.
//
// Use it from a test:
//
//	svc := services.Require(t)
//	db := svc.NewDatabase(t)
//	emu := rsemu.NewTest(t, rsemu.Config{
//		BackendDSN: db.DSN,
//		S3Endpoint: svc.S3Endpoint, S3AccessKey: svc.S3AccessKey, S3SecretKey: svc.S3SecretKey,
//	})
//	conn, _ := pgx.Connect(ctx, emu.DSN(db.Name))
//	emu.FailNext(`(?i)^COPY`, 1, rsemu.SerializableViolation(100167))
//
// or by hand with the tools/rsemu command. README.md lists what is and is
// not emulated.
//
// Files:
//
//	server.go      Config, Server, listening, statement log, cancel forwarding
//	fault.go       fault hooks
//	cost.go        cost model: COPY latency, the commit queue, which statements write
//	session.go     one client connection: startup, simple and extended protocol, emulated statements
//	lexer.go       SQL tokenizer and statement splitter
//	plan.go        per-statement decision: pass through, rewrite, emulate or refuse
//	types.go       the Redshift type table
//	createtable.go CREATE TABLE parsing and its PostgreSQL form
//	copy.go        COPY parsing and IAM role checks
//	load.go        COPY execution: S3 listing, Parquet reading, value checks, load errors
//	copyin.go      the checked rows to the backend with PostgreSQL's COPY FROM STDIN
//	manifest.go    COPY … MANIFEST: the manifest's entries, mandatory files, content_length
//	catalog.go     the rsemu_catalog schema in the backend database
//	errors.go      Error and Redshift-shaped error constructors
//	credentials.go temporary credentials the emulated cluster accepts (IAM authentication)
//	iam.go         IAM: a fake of the AWS endpoints that issue them
package rsemu
