// Package hostdriver drives real sink plugins inside a real non-Go process:
// the C host in cmd/picomq-host (shipped as dist/picomq-host by
// buildscripts/build.sh), which loads plugin libraries with dlopen and calls
// them through the C ABI of include/picomq_sink.h, as the connector runtime
// does. The e2e suites, the benchmarks and the demo under cmd/ use it. Use it
// where the whole path matters (C caller, borrowed memory, foreign threads,
// several Go runtimes in one process); use the SDK's own tests for anything
// that does not.
//
// A test builds the host once, starts it, loads libraries and drives
// instances:
//
//	bin := hostdriver.BuildHost(t)
//	h := hostdriver.StartTest(t, bin, hostdriver.Workers(8))
//	lib, err := h.Load(pluginPath)
//	inst, err := lib.Open(`{"key":"k","name":"n","version":1,"plugin_config":{}}`)
//	err = inst.Consume(hostdriver.Batch{Attempt: 1, Topic: "t", Schema: "json",
//		Records: []hostdriver.Record{{Offset: 1, Payload: []byte(`{}`)}}})
//	var se *hostdriver.StatusError
//	if errors.As(err, &se) && se.Code == hostdriver.StatusRetry { ... }
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
// started, to test that plugins read it at open.
//
// The wire protocol is documented in cmd/picomq-host/PROTOCOL.md. The status
// codes are the SDK's (shared/sdk), which are the header's.
//
// File map: host.go (process, request multiplexing, options), lib.go
// (libraries, instances, call options), batch.go (batches on the wire),
// logs.go (captured log lines), status.go (status codes and errors),
// protocol.go (framing), build.go (compiling the host), testing.go
// (StartTest).
package hostdriver
