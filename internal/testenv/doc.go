// Package testenv finds what tests need outside their own package: the
// repository root, the libraries buildscripts/build.sh built, and the Delta
// conformance tables. Its sub-packages start the rest: services (PostgreSQL,
// MinIO, Azurite, fake-gcs-server from buildscripts/services.sh), pyenv
// (the Python virtualenv with delta-rs and pyarrow), testca (a CA and
// server certificates made in the test, for TLS tests) and hosttest (the C
// host built from source, with the options that test its contract checks).
//
// These are test-only helpers, for unit tests under plugins/ and shared/,
// for the suites under e2e/ and for the developer programs under tools/
// (benchmarks, demo). Nothing that ships in a plugin library imports them,
// and they import no plugin, so any test can use them without an upward
// import.
//
// Every helper that takes a testing.TB fails the test when what it looks
// for is missing, with a message saying how to provide it; none skips,
// because in CI a missing build, service or fixture is a broken build. The
// one exception is E2ELibrary, for the real-host cases of packages that
// `make unit` runs before anything is built (the runtime's): it skips while
// $PICOMQ_DIST is unset, and `make e2e`, which sets it, runs those cases
// and fails them when the build is missing.
//
// # Delta conformance tables
//
// DeltaTables returns shared/testdata/delta-tables, which sits beside the
// repository checkout, not in it (../shared/testdata/delta-tables from the
// repository root): tables written by Delta-Spark and delta-rs, small ones
// unpacked and large ones as .tar.zst, catalogued in its README.md. Set
// PICOMQ_DELTA_TABLES to use a copy elsewhere.
//
// Files: testenv.go (RepoRoot, DistDir, Library, DeltaTables), e2e.go
// (E2ELibrary).
package testenv
