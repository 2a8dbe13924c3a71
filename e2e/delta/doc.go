// Package delta holds the end-to-end tests of the Delta Lake sink: the real
// libpicomq_connector_delta_sink.so in the C host, writing to tables that
// delta-rs (PyPI deltalake) created and then reads back, on file:// and on
// MinIO. Run with `make e2e`.
package delta
