// Package hostclient is the Go client of the C host in cmd/picomq-host
// (shipped as dist/picomq-host by buildscripts/build.sh), which loads sink
// plugin libraries with dlopen and calls them through the C ABI of
// include/picomq_sink.h. The runtime (connect/child, connect/preflight)
// runs every plugin through it; the e2e suites, the benchmarks and the
// demos under cmd/ do too, to test the whole path (C caller, borrowed
// memory, foreign threads, several Go runtimes in one process).
//
// It ships in picomq-connect, so it imports only the standard library,
// shared/abi (the status codes and reject reasons it shares with the SDK)
// and internal/hostopt (its option settings).
// Building the host, starting one per test, the options that make requests
// the runtime never sends, and the benchmarks' process probes are in
// internal/testenv/hosttest, built on this package.
//
// A caller starts the host, loads libraries and drives instances:
//
//	h, err := hostclient.Start(ctx, "dist/picomq-host", hostclient.Workers(8))
//	lib, err := h.Load(pluginPath)
//	inst, err := lib.Open(`{"key":"k","name":"n","version":1,"plugin_config":{}}`)
//	err = inst.Consume(hostclient.Batch{Attempt: 1, Topic: "t", Schema: "json",
//		Records: []hostclient.Record{{Offset: 1, Payload: []byte(`{}`)}}})
//	var se *hostclient.StatusError
//	if errors.As(err, &se) && se.Code == hostclient.StatusRetry { ... }
//
// Every method is safe for concurrent use: requests are multiplexed by id
// over the host's stdin and stdout, and each runs on one of the host's worker
// threads, the least busy one unless OnWorker names it. If the host process
// dies, every pending and later call returns an *ExitError carrying the exit
// status or signal and the tail of the host's stderr; nothing hangs on a dead
// host.
//
// The host checks the header's contract on every call and reports a breach
// as a *StatusError with Code StatusContract: writing past a buffer, error
// text without a NUL or not UTF-8, a bad *out_len, a zero or duplicate
// handle. It overwrites all memory it lent a plugin with 0xA5 once the call
// returns, so a plugin that keeps pointers into host memory reads garbage.
// Log lines the plugins emit through the log callback are captured
// (Host.Logs, Instance.Logs, Host.WaitLog); a line logged after close
// returned is marked Late. Host.Setenv and Host.Unsetenv change the host
// process's environment the way a real host injects secrets after it
// started.
//
// The wire protocol is documented in cmd/picomq-host/PROTOCOL.md.
// protocol.go encodes and decodes it without doing I/O; host.go owns the
// process and its pipes. The settings behind Option and CallOption are in
// internal/hostopt, so that hosttest can add options which this
// package does not export.
//
// File map: host.go (process, pipes, request multiplexing, start options),
// lib.go (libraries, instances, call options), batch.go (batches, records,
// rejections), protocol.go (framing, request and frame encoding), logs.go
// (captured log lines), status.go (status codes and errors), pipe_linux.go
// and pipe_other.go (the request pipe's size).
package hostclient
