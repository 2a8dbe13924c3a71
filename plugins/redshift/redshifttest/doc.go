// Package redshifttest is the Redshift sink's behaviour suite: tests written
// once against a sinkdriver.Driver and an Env, run in-process by
// plugins/redshift (sinkdriver.InProcess) and through the built .so in the C
// host by e2e/redshift (sinkdriver.CHost), as franz-go's client tests run
// against kfake or a real broker alike.
//
// The destination is the Redshift emulator (rsemu) in front of a fresh
// PostgreSQL database and a fresh MinIO bucket from
// buildscripts/services.sh, or a real cluster when PICOMQ_TEST_REDSHIFT_DSN
// and the S3 settings of RealEnvVars are set (docs/redshift.md, "Testing
// against a real cluster"). Tests that need the emulator's fault injection
// or its statement log skip on a real cluster and say why.
//
// Files: env.go (the destination and readers), suite.go (Run and the test
// list), the tests by concern (replay.go, faults.go, tables.go).
package redshifttest
