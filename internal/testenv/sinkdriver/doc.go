// Package sinkdriver runs a sink plugin for a test in one of two ways behind
// one small interface, so a behaviour test is written once and runs both
// in-process (fast, debuggable, race detector) and through the real .so in
// the C host (the ABI as the connector runtime calls it):
//
//   - InProcess opens instances through the SDK's Go API (sdk.Open,
//     sdk.Consume, ...), the calls the C shim makes. The test binary must have
//     registered the plugin (sdk.Register in an init).
//   - CHost starts the C host (shared/hostclient) process per Runtime and loads
//     the built library into it.
//
// A Runtime is one connector process: a test that wants "a restart" starts
// another one. Errors with a plugin status are *hostclient.StatusError in
// both drivers, so tests check codes and messages the same way.
//
// The driver knows nothing of any sink: the destinations (an emulator, a real
// cluster, an object store) belong to the sink's own test package, such as
// plugins/redshift/redshifttest.
package sinkdriver
