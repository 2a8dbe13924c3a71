// Package delta holds the end-to-end tests of the Delta Lake sink: the real
// libpicomq_connector_delta_sink.so in the C host, writing to tables that
// delta-rs (PyPI deltalake) created and then reads back, on file:// and on
// MinIO. The behaviour suite of plugins/delta/deltatest runs here through
// the C host on every store (suite_test.go); what stays in this package
// needs the C host itself (its process environment, a killed host) or is
// not yet in the suite. Run with `make e2e`.
package delta
